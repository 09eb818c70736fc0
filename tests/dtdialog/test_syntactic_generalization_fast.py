"""The SG feature's fast path (question indexed once per turn, answers scored from stored phrase keys) against the
plain code it replaced, kept here as the oracle, on real questions and answers of the built-in corpus: equal to the bit."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

import dtdialog.selection.syntactic_generalization as sgm
from dtdialog.selection.syntactic_generalization import (
    CONTENT_POS,
    PHRASE_WEIGHTS,
    CommonPhrase,
    SyntacticGeneralizer,
    generalize_phrase_lists,
    generalize_phrases,
    raw_score,
    reduce_by_subsumption,
    word_weight,
)
from parsers.errors import ModelNotAvailableError
from parsers.phrase_chunks import PhraseChunk

# --- the plain code, as it was before the fast path -----------------------------------------------------------


def _plain_generalize_phrases(p1: PhraseChunk, p2: PhraseChunk) -> CommonPhrase | None:
    if p1.kind != p2.kind or not (p1.content & p2.content):
        return None
    l1, t1, l2, t2 = p1.lemmas, p1.pos, p2.lemmas, p2.pos
    n, m = len(l1), len(l2)
    same = [word_weight(lem, t) for lem, t in zip(l1, t1)]
    star = [word_weight("*", t) for t in t1]
    nominal = [t in ("NOUN", "PROPN") for t in t1]
    nominal2 = [t in ("NOUN", "PROPN") for t in t2]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            score = max(best[i + 1][j], best[i][j + 1])
            if t2[j] == t1[i] or (nominal[i] and nominal2[j]):
                score = max(score, (same[i] if l2[j] == l1[i] else star[i]) + best[i + 1][j + 1])
            best[i][j] = score
    lemmas, pos, weights, i, j = [], [], [], 0, 0
    while i < n and j < m:
        aligned = t2[j] == t1[i] or (nominal[i] and nominal2[j])
        w = same[i] if l2[j] == l1[i] else star[i]
        if aligned and math.isclose(best[i][j], w + best[i + 1][j + 1]):
            lemmas.append(l1[i] if l1[i] == l2[j] else "*")
            pos.append(t1[i])
            weights.append(w)
            i, j = i + 1, j + 1
        elif math.isclose(best[i][j], best[i + 1][j]):
            i += 1
        else:
            j += 1
    start, end = 0, len(lemmas)
    while start < end and lemmas[start] == "*":
        start += 1
    while end > start and lemmas[end - 1] == "*":
        end -= 1
    lemmas, pos = lemmas[start:end], pos[start:end]
    if not any(lem != "*" and p in CONTENT_POS for lem, p in zip(lemmas, pos)):
        return None
    return CommonPhrase(kind=p1.kind, lemmas=tuple(lemmas), pos=tuple(pos), score=sum(weights[start:end]))


def _plain_generalize_phrase_lists(q: Sequence[PhraseChunk], a: Sequence[PhraseChunk]) -> list[CommonPhrase]:
    by_lemma: dict[tuple[str, str], list[int]] = {}
    for idx, p in enumerate(a):
        for lem in p.content:
            by_lemma.setdefault((p.kind, lem), []).append(idx)
    found = []
    for p in q:
        for idx in sorted({idx for lem in p.content for idx in by_lemma.get((p.kind, lem), ())}):
            g = _plain_generalize_phrases(p, a[idx])
            if g is not None:
                found.append(g)
    return reduce_by_subsumption(found)


def _plain_self_score(phrases: Sequence[PhraseChunk]) -> float:
    return sum(PHRASE_WEIGHTS.get(p.kind, 0.0) * sum(word_weight(lem, t) for lem, t in zip(p.lemmas, p.pos))
               for p in set(phrases))


def _plain_score(q: Sequence[PhraseChunk], a: Sequence[PhraseChunk]) -> float:
    qs, as_ = _plain_self_score(q), _plain_self_score(a)
    if qs <= 0 or as_ <= 0:
        return 0.0
    return min(1.0, raw_score(_plain_generalize_phrase_lists(q, a)) / math.sqrt(qs * as_))


# --- real inputs ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def real():
    """(generalizer, questions, answer ids, answer texts, loaded phrase store) of built-in dialogues (spaCy)."""
    from data.builtin import load_builtin_corpus
    from index.sg_store import SGPhraseStore, build_sg_store
    from parsers.nlp_spacy import load_spacy

    try:
        nlp = load_spacy()
    except ModelNotAvailableError as exc:
        pytest.skip(f"no spaCy model: {exc}")
    dialogues = load_builtin_corpus()[:30]
    questions = [d.question for d in dialogues]
    answers = list(dict.fromkeys(t.text for d in dialogues for t in d.turns if t.role != "C"))
    ids = [f"a{i}" for i in range(len(answers))]
    built = build_sg_store(ids=ids, texts=answers, nlp=nlp, progress=False)
    store = SGPhraseStore.from_dict(built.to_dict())  # as a serving process loads it
    return SyntacticGeneralizer(nlp=nlp), questions, ids, answers, store


def test_stored_keys_and_phrases_decode_as_the_checked_decoder_does(real):
    from index.sg_store import _decode

    _, _, ids, _, store = real
    for doc_id in ids:
        plain = _decode(store.encoded(doc_id))
        assert store.phrases(doc_id) == plain
        assert [hash(p) for p in store.phrases(doc_id)] == [hash(p) for p in plain]
        assert [p.content for p in store.phrases(doc_id)] == [p.content for p in plain]
        assert store.phrase_keys(doc_id) == tuple((p.kind, p.lemmas, p.pos) for p in plain)
        assert store.phrase_keys(doc_id) is store.phrase_keys(doc_id)  # cached: the self-similarity is kept by it
    assert store.phrase_keys("missing") is None and store.phrases("missing") is None


def test_fast_scores_equal_the_plain_code_on_real_questions_and_answers(real):
    sg, questions, ids, _, store = real
    sgm._PAIR_MEMO.clear()
    checked = nonzero = 0
    for _ in range(2):  # the second pass reads the alignment memo and the remembered self-similarities
        for q in questions:
            qp, qs = sg.analyze(q)
            assert qs == _plain_self_score(qp)
            for doc_id in ids:
                chunks = store.phrases(doc_id)
                expected = _plain_score(qp, chunks)
                assert sg.score_keys(q, store.phrase_keys(doc_id)) == expected, (q, doc_id)
                assert sg.score_phrases(q, chunks) == expected, (q, doc_id)
                assert generalize_phrase_lists(qp, chunks) == _plain_generalize_phrase_lists(qp, chunks)
                checked += 1
                nonzero += expected > 0
    assert checked and 0 < nonzero < checked  # both answers that share phrases and answers that share none


def test_generalize_phrases_equals_the_plain_code_on_real_phrase_pairs(real):
    sg, questions, ids, _, store = real
    answer_phrases = [p for doc_id in ids[:40] for p in store.phrases(doc_id)]
    compared = 0
    for q in questions:
        for p1 in sg.analyze(q)[0]:
            for p2 in answer_phrases:
                assert generalize_phrases(p1, p2) == _plain_generalize_phrases(p1, p2)
                compared += p1.kind == p2.kind and bool(p1.content & p2.content)
    assert compared


def test_a_trusted_phrase_chunk_is_the_checked_one():
    plain = PhraseChunk.from_list(["NP", ["the", "fuel", "pump"], ["DET", "NOUN", "NOUN"]])
    fast = PhraseChunk._trusted("NP", ("the", "fuel", "pump"), ("DET", "NOUN", "NOUN"))
    assert fast == plain and hash(fast) == hash(plain) and fast.content == plain.content == {"fuel", "pump"}
    assert repr(fast) == repr(plain) and {fast, plain} == {plain}
    made = CommonPhrase._of("NP", ("fuel", "pump"), ("NOUN", "NOUN"), 2.0)
    assert made == CommonPhrase(kind="NP", lemmas=("fuel", "pump"), pos=("NOUN", "NOUN"), score=2.0)


class _PhrasesOnly:
    """A phrase store as one written before ``phrase_keys`` (only ``prime`` and ``phrases``)."""

    def __init__(self, store) -> None:
        self._store = store

    def prime(self, ids) -> None:
        self._store.prime(ids)

    def phrases(self, doc_id):
        return self._store.phrases(doc_id)


def test_signal_extractor_sg_is_the_same_from_keys_from_phrases_and_from_parsing(real, monkeypatch):
    from dtdialog.ranking.signals import SignalExtractor
    from dtdialog.selection.agreement import AgreementResult
    from dtdialog.selection.scoring import RankedCandidate
    from index.base import AnswerDocument

    sg, questions, ids, answers, store = real
    monkeypatch.setattr(sgm, "_DEFAULT", sg)
    texts = dict(zip(ids, answers))
    agreement = AgreementResult(verdict=True, score=1.0, addressed=1, required=1)
    candidates = [RankedCandidate(document=AnswerDocument(id=i, dialogue_id="d", position=1, text=texts[i]),
                                  retrieval_score=1.0, agreement=agreement) for i in ids[:25]]
    for q in questions[:6]:
        from_keys = SignalExtractor(use_sg=True, sg_store=store)._sg(q, candidates)
        from_phrases = SignalExtractor(use_sg=True, sg_store=_PhrasesOnly(store))._sg(q, candidates)
        parsed = SignalExtractor(use_sg=True)._sg(q, candidates)
        assert from_keys == from_phrases == parsed

