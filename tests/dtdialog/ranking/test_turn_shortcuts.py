"""The turn's shortcuts (memoised entity stems, cached requirement labels, batched reads, the one-pass tree
rebuild and answer analysis) give what the plain code gave.

Issue 16 made the "rest" of a learned-ranker turn cheaper without moving a result. This runs the same dialogue
turns twice in one engine: with the shortcuts, then with each replaced by the plain code it stands for (written
out here as it was before) and every cache they feed emptied, and wants the same replies, candidates, scores (to
1e-9), features, agreement chains and traces. Unlike ``test_turn_regression`` it does not depend on the encoder's
rounding: both runs share one encoder.
"""

from __future__ import annotations

import sys
from dataclasses import asdict
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/dtdialog: the plain code shared with its tests
from plain_analysis import plain_normalise  # noqa: E402

QUESTIONS = 30


def _plain_stems(normalizer, words, phrases):
    """``EntityNormalizer._terms`` before the shortcuts: content words filtered, stemmed and scanned per call."""
    from index.vocabulary import entity_words, is_entity_word, stem

    terms = plain_normalise(normalizer, [stem(w) for w in words if is_entity_word(w)])
    for phrase in phrases:
        stems = [stem(w) for w in entity_words(phrase) if is_entity_word(w)]
        if len(stems) > 1:
            terms.add(" ".join(stems))
        terms.update(plain_normalise(normalizer, stems))
    return frozenset(terms)


def _plain_short_phrase(edus, *, prefer=(), max_words=4):
    from index.vocabulary import entity_words, is_entity_word, stem

    preferred = set(prefer)
    words = [w for e in edus for w in entity_words(e.text) if is_entity_word(w)]
    chosen = [i for i, w in enumerate(words) if stem(w) in preferred]
    seen = {words[i] for i in chosen}
    for i, w in enumerate(words):
        if len(chosen) >= max_words:
            break
        if i not in chosen and w not in seen:
            chosen.append(i)
            seen.add(w)
    picked: list[str] = []
    for i in sorted(chosen[:max_words]):
        if words[i] not in picked:
            picked.append(words[i])
    return " ".join(picked)


def _use_plain_code(monkeypatch, engine) -> None:
    """Swap every shortcut of the turn for the plain code and empty the caches the shortcuts filled."""
    from dtdialog.selection import agreement
    from dtdialog.selection.stages import already_tried
    from dtdialog.understanding.entities import EntityNormalizer
    from index.base import AnswerIndex
    from index.sqlite_index import SqliteIndex
    from index.terms import rr_tokens
    from index.vocabulary import entity_words, search_tokens
    from parsers import tree

    class PlainNormalizer(EntityNormalizer):
        def terms_of_text(self, text):
            return _plain_stems(self, tuple(entity_words(text)), ())

        def terms_of_edu(self, edu):
            words = tuple(w for lemma in edu.lemmas for w in entity_words(lemma)) if edu.lemmas \
                else tuple(entity_words(edu.text))
            return _plain_stems(self, words, tuple(edu.entities))

    def plain_edu(cls, data):
        return cls(index=int(data["index"]), text=str(data["text"]), start=int(data["start"]), end=int(data["end"]),
                   sentence=int(data.get("sentence", 0)), lemmas=tuple(data.get("lemmas", ())),
                   entities=tuple(data.get("entities", ())))

    def plain_analyze(self, tree):
        per_edu = [self.normalizer.terms_of_edu(e) for e in tree.edus]
        rels = [agreement.AnswerRelation(relation=node.relation or "", edus=tree.edus[node.first: node.last + 1],
                                         terms=frozenset().union(*per_edu[node.first: node.last + 1]))
                for node in tree.non_default_nodes()]
        return agreement.AnswerAnalysis(relations=tuple(rels), terms=frozenset().union(*per_edu), tree=tree)

    # stored trees through the general reader and EDU's own __init__, analyses over ``non_default_nodes``
    monkeypatch.setattr(tree, "_nodes_from_plain_list", lambda entries: None)
    monkeypatch.setattr(tree.EDU, "from_dict", classmethod(plain_edu))
    monkeypatch.setattr(agreement.RhetoricalAgreement, "analyze", plain_analyze)
    selector = engine.manager.selector
    plain = PlainNormalizer(synonyms=selector.normalizer._synonyms)
    selector.normalizer = selector.agreement.normalizer = plain
    selector._analyses.clear()
    already_tried._cache.clear()
    monkeypatch.setattr(agreement, "short_phrase", _plain_short_phrase)
    monkeypatch.setattr(agreement.Requirement, "label",
                        lambda self, prefer=(): f"{self.relation}[{_plain_short_phrase(self.edus, prefer=prefer)}]")
    monkeypatch.setattr(agreement.AgreementResult, "to_dict", asdict)
    monkeypatch.setattr(SqliteIndex, "get_many", AnswerIndex.get_many)
    monkeypatch.setattr(SqliteIndex, "_stem_tokens", staticmethod(
        lambda words, relation: rr_tokens(relation, words.split()) if relation
        else [p for w in words.split() for p in search_tokens(w)]))
    selector.index._stem_sets.clear()


def _turns(engine) -> list[dict]:
    """Return every turn of the first questions and their logged first reply: the result, trace and all scores."""
    from data.builtin import load_builtin_corpus

    scored: list[list] = []
    score = engine.scorer.score

    def recording(**kwargs):
        kept = score(**kwargs)
        scored.append([(c.id, c.score, c.retrieval_score, dict(c.features), dict(c.matched), c.agreement.to_dict())
                       for c in kept])
        return kept

    engine.scorer.score = recording
    out = []
    manager = engine.manager
    try:
        for dialogue in load_builtin_corpus()[:QUESTIONS]:
            session = manager.start_session()
            texts = [dialogue.question, *[t.text for t in dialogue.turns[1:] if t.role == "C"][:1]]
            for text in texts:
                scored.clear()
                result = manager.handle(session_id=session, text=text).to_dict()
                for volatile in ("session_id", "elapsed_ms"):
                    result.pop(volatile, None)
                    result["trace"].pop(volatile, None)
                out.append({**result, "scored": list(scored)})
                if result["kind"] != "answer":
                    break
    finally:
        engine.scorer.score = score
    return out


@pytest.mark.dense
def test_turns_with_the_shortcuts_equal_the_plain_code(dense_index: Path, tmp_path: Path, monkeypatch) -> None:
    from dtdialog.setup.assembly import EngineSpec, build_engine, engine_parser_name
    from index.sqlite_index import SqliteIndex
    from parsers.base import get_parser

    spec = EngineSpec(ranker="learned", sessions_path=str(tmp_path / "sessions.sqlite"))
    engine = build_engine(spec, progress=False, parser=get_parser(engine_parser_name()),
                          index=SqliteIndex(dense_index), index_path=dense_index)
    try:
        fast = _turns(engine)
        _use_plain_code(monkeypatch, engine)
        plain = _turns(engine)
    finally:
        engine.close()
    assert len(fast) == len(plain) > QUESTIONS  # follow-ups ran too
    assert sum(bool(t["scored"] and t["scored"][0]) for t in fast) >= QUESTIONS // 2  # most turns rank something
    for new, old in zip(fast, plain):
        assert {k: v for k, v in new.items() if k != "scored"} == {k: v for k, v in old.items() if k != "scored"}
        assert [[c[0] for c in step] for step in new["scored"]] == [[c[0] for c in step] for step in old["scored"]]
        for step_new, step_old in zip(new["scored"], old["scored"]):
            for a, b in zip(step_new, step_old):
                assert a[1:3] == pytest.approx(b[1:3], abs=1e-9, rel=0)
                assert a[3] == pytest.approx(b[3], abs=1e-9, rel=0)
                assert a[4:] == b[4:]
