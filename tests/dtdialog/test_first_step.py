"""The first DT-Q step: whole-question retrieval in keyword chunks and soft agreement (docs/engine.md sections 2, 4)."""

from __future__ import annotations

from engine_helpers import make_index

from dtdialog.selection.agreement import AgreementResult
from dtdialog.selection.scoring import RankedCandidate, RuleScorer
from dtdialog.selection.selector import KEYWORDS_PER_SEARCH, LexicalGenerator
from dtdialog.setup.engine_config import EngineConfig, RetrievalConfig, RuleScoringConfig
from index.base import AnswerDocument, SearchQuery


def _cand(doc_id: str, retrieval: float, verdict: bool) -> RankedCandidate:
    doc = AnswerDocument(id=doc_id, dialogue_id=doc_id.split("#")[0], position=1, text=doc_id)
    agreement = AgreementResult(verdict=verdict, score=1.0 if verdict else 0.0, addressed=int(verdict), required=1)
    return RankedCandidate(document=doc, retrieval_score=retrieval, agreement=agreement)


def _ids(kept: list[RankedCandidate]) -> list[str]:
    return [c.id for c in kept]


def test_first_step_demotes_instead_of_dropping_and_agreement_breaks_near_ties():
    scorer = RuleScorer(config=EngineConfig())
    cands = [_cand("a#1", 10.0, False), _cand("b#1", 9.8, True), _cand("c#1", 5.0, False)]
    first = scorer.score(plan=None, part_index=0, followups=[], candidates=cands)
    assert _ids(first) == ["b#1", "a#1", "c#1"]  # near tie: the agreeing answer wins, nobody is dropped
    clear = [_cand("a#1", 10.0, False), _cand("b#1", 5.0, True)]
    assert _ids(scorer.score(plan=None, part_index=0, followups=[], candidates=clear))[0] == "a#1"
    # a follow-up step keeps the hard filter
    assert _ids(scorer.score(plan=None, part_index=0, followups=["it did at first"], candidates=cands)) == ["b#1"]
    hard = RuleScorer(config=EngineConfig(rules=RuleScoringConfig(soft_first_step=False)))
    assert _ids(hard.score(plan=None, part_index=0, followups=[], candidates=cands)) == ["b#1"]


def test_chunked_search_sums_the_bm25_of_every_keyword(tmp_path):
    words = [f"part{i}" for i in range(KEYWORDS_PER_SEARCH + 6)]
    docs = {
        "x#1": ("Elaboration", "NS", [" ".join(words[:3]) + " here.", "Nothing else."]),
        # only words beyond the first chunk: a single search pruned to 12 tokens could miss it
        "y#1": ("Elaboration", "NS", [" ".join(words[-5:]) + " there.", "More."]),
        "z#1": ("Elaboration", "NS", ["Unrelated brakes squeal.", "Rotors."]),
    }
    index = make_index(tmp_path / "i.sqlite", docs)
    try:
        gen = LexicalGenerator(index=index)
        query = SearchQuery(size=10).with_keywords(*words)
        hits = gen.generate(plan=None, part_index=0, query=query, followups=[], size=10)
        ids = [h.document.id for h in hits]
        assert set(ids) == {"x#1", "y#1"}
        for hit in hits:
            parts = [index.search(SearchQuery(size=10).with_keywords(*words[i:i + KEYWORDS_PER_SEARCH]))
                     for i in range(0, len(words), KEYWORDS_PER_SEARCH)]
            expected = sum(h.score for found in parts for h in found if h.document.id == hit.document.id)
            assert abs(hit.score - expected) < 1e-9
    finally:
        index.close()


def test_config_validates_the_new_options():
    import pytest

    from parsers.errors import ConfigError

    with pytest.raises(ConfigError):
        RuleScoringConfig(first_step_agreement_weight=2.0)
    with pytest.raises(ConfigError):
        RuleScoringConfig(soft_first_step="yes")
    with pytest.raises(ConfigError):
        RetrievalConfig(whole_question=1)



def test_chunked_lexical_search_sums_chunk_scores_and_loads_only_the_best(tmp_path):
    """A long keyword list is searched in chunks; only the final best answers are decoded, with the whole query's matches."""
    import pytest
    from engine_helpers import ANSWERS

    index = make_index(tmp_path / "ix.sqlite", ANSWERS)
    words = ("battery", "start", "crank", "click", "starter", "solenoid", "spark", "fuel", "plug", "coil", "relay",
             "fuse", "pump", "pressure", "ground", "cable")
    assert len(words) > KEYWORDS_PER_SEARCH
    expected: dict[str, float] = {}
    for start in range(0, len(words), KEYWORDS_PER_SEARCH):
        for doc_id, score in index.search_scores(SearchQuery(keywords=words[start:start + KEYWORDS_PER_SEARCH], size=5)):
            expected[doc_id] = expected.get(doc_id, 0.0) + score
    decoded = []
    original = index.hits_for

    def recording(scored, q):
        decoded.append([i for i, _ in scored])
        return original(scored, q)

    index.hits_for = recording
    hits = LexicalGenerator(index=index).generate(plan=None, part_index=0, query=SearchQuery(keywords=words, size=5),
                                                  followups=(), size=5)
    best = sorted(expected, key=lambda i: (-expected[i], i))[:5]
    assert best and [h.document.id for h in hits] == best
    assert [h.score for h in hits] == pytest.approx([expected[i] for i in best])
    assert decoded == [best]  # one load, of the final answers only
    assert all(h.matched.get("keywords") for h in hits)
    index.close()
