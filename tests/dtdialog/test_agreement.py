"""The rhetorical agreement rules: every row of the compatibility table, and the entity-overlap rule."""

from __future__ import annotations

import json

import pytest
from engine_helpers import build_tree

from dtdialog.selection.agreement import AgreementTable, RhetoricalAgreement
from dtdialog.understanding.entities import EntityNormalizer
from parsers.errors import ConfigError
from parsers.relations import RELATIONS, is_default

TABLE = AgreementTable.load()
NON_DEFAULT = [r for r in RELATIONS if not is_default(r)]
QUESTION_EDUS = ("I replaced the fuel pump relay", "the engine still stalls at idle")
ANSWER_SHARED = ("Test the fuel pump relay with a meter", "the engine idles rough when it sticks")
ANSWER_UNRELATED = ("Rotate the tires every season", "the tread wears evenly then")


def _agreement() -> RhetoricalAgreement:
    return RhetoricalAgreement(table=TABLE, normalizer=EntityNormalizer(synonyms={}, use_builtin=False))


def _nuclearity(relation: str) -> str:
    return "NN" if relation in ("Contrast", "Comparison", "Joint", "Same-Unit") else "NS"


def _check(q_rel: str, a_rel: str, answer_edus=ANSWER_SHARED):
    agreement = _agreement()
    q = build_tree((q_rel, _nuclearity(q_rel), list(QUESTION_EDUS)))
    a = build_tree((a_rel, _nuclearity(a_rel), list(answer_edus)))
    reqs = agreement.requirements([q.instance(q.root)])
    return agreement.check(reqs, a)


def test_every_non_default_relation_has_a_documented_row():
    assert set(TABLE.rows) == set(NON_DEFAULT)
    for relation, answers in TABLE.rows.items():
        assert answers, relation
        assert TABLE.why.get(relation), f"row {relation} has no 'why'"
        assert not any(is_default(a) for a in answers)


def test_paper_contrast_row():
    # the paper: Attribution and Enablement, for example, can address Contrast
    for a_rel in ("Contrast", "Concession", "Condition", "Cause", "Attribution", "Enablement"):
        assert TABLE.addresses("Contrast", a_rel)


@pytest.mark.parametrize("q_rel", sorted(TABLE.rows))
def test_row_positive_every_listed_relation_addresses(q_rel):
    for a_rel in TABLE.rows[q_rel]:
        result = _check(q_rel, a_rel)
        assert result.verdict, (q_rel, a_rel, result)
        assert result.addressed == result.required == 1
        assert result.chains and result.chains[0].startswith(f"{q_rel}[") and f"-> {a_rel}[" in result.chains[0]
        assert result.score > 0


@pytest.mark.parametrize("q_rel", sorted(TABLE.rows))
def test_row_negative_unlisted_relation_does_not_address(q_rel):
    unlisted = [r for r in NON_DEFAULT if r not in TABLE.rows[q_rel]]
    assert unlisted, f"row {q_rel} lists every relation: it would not discriminate"
    for a_rel in unlisted + ["Elaboration", "Joint"]:
        result = _check(q_rel, a_rel)
        assert not result.verdict, (q_rel, a_rel)
        assert result.addressed == 0 and result.missing
        assert result.score == 0


def test_entity_overlap_rule_positive_and_negative():
    shared = _check("Contrast", "Condition", ANSWER_SHARED)
    assert shared.verdict and {"fuel", "pump", "relay", "engin"} & set(shared.overlap)
    unrelated = _check("Contrast", "Condition", ANSWER_UNRELATED)
    assert not unrelated.verdict and unrelated.overlap == []
    assert unrelated.missing == ["Contrast[replaced fuel pump relay]"]


def test_entity_overlap_uses_lemmas_and_stems():
    # "batteries"/"battery", "started"/"start" meet through stemming of lemmas
    agreement = _agreement()
    q = build_tree(("Contrast", "NN", ["I put in new batteries", "but it never started"]))
    a = build_tree(("Condition", "SN", ["If the car will not start", "charge it overnight first"]))
    result = agreement.check(agreement.requirements([q.instance(q.root)]), a)
    assert result.verdict and "start" in result.overlap


def test_entity_overlap_uses_synonyms():
    synonyms = {"ecm": ["ecu", "engine computer"]}
    q = build_tree(("Contrast", "NN", ["I swapped the ECU", "but the fault remains"]))
    a = build_tree(("Condition", "SN", ["If the engine computer has no power", "look at the main relay"]))
    without = RhetoricalAgreement(table=TABLE, normalizer=EntityNormalizer(synonyms={}, use_builtin=False))
    assert not without.check(without.requirements([q.instance(q.root)]), a).verdict
    with_syn = RhetoricalAgreement(table=TABLE, normalizer=EntityNormalizer(synonyms=synonyms))
    result = with_syn.check(with_syn.requirements([q.instance(q.root)]), a)
    assert result.verdict and "ecm" in result.overlap


def test_entity_overlap_uses_noun_phrases():
    from parsers.tree import EDU, DiscourseTree, Node

    def tree(texts, entities, relation):
        edus = tuple(EDU(index=i, text=t, start=0, end=len(t), sentence=0, entities=tuple(e))
                     for i, (t, e) in enumerate(zip(texts, entities)))
        return DiscourseTree(text=" ".join(texts), edus=edus, root=Node.relate(relation, [Node.leaf(0), Node.leaf(1)], "NN"))

    agreement = _agreement()
    q = tree(["I cleaned the throttle body", "but it still idles rough"], [["the throttle body"], []], "Contrast")
    a = tree(["Although a throttle body often needs it", "vacuum leaks cause this too"], [["a throttle body"], []],
             "Contrast")
    result = agreement.check(agreement.requirements([q.instance(q.root)]), a)
    assert result.verdict and "throttl bodi" in result.overlap  # the phrase itself is a shared term


def test_every_relation_must_be_addressed_with_default_ratio():
    agreement = _agreement()
    q = build_tree(("Joint", "NN", [("Contrast", "NN", ["I replaced the fuel pump", "but it still stalls"]),
                                     ("Condition", "SN", ["when the tank is low", "the gauge flickers"])]))
    reqs = agreement.requirements([q.instance(n) for n in q.non_default_nodes()])
    a = build_tree(("Cause", "NS", ["The fuel pump stalls", "because its relay sticks"]))
    result = agreement.check(reqs, a)
    assert result.required == 2 and result.addressed == 1 and not result.verdict
    lenient = RhetoricalAgreement(table=TABLE, normalizer=agreement.normalizer, ratio=0.5)
    assert lenient.check(reqs, a).verdict


def test_factual_question_needs_only_entity_overlap():
    agreement = _agreement()
    a = build_tree(("Elaboration", "NS", ["Brake fluid is hygroscopic", "so replace it every two years"]))
    assert agreement.check([], a, fallback_terms=agreement.normalizer.terms_of_text("brake fluid")).verdict
    assert not agreement.check([], a, fallback_terms=agreement.normalizer.terms_of_text("tire pressure")).verdict


def test_user_table_from_path(tmp_path):
    path = tmp_path / "table.json"
    path.write_text(json.dumps({"rows": {"Contrast": {"addressed_by": ["Temporal"], "why": "test"}}}))
    table = AgreementTable.load(path)
    assert table.addresses("Contrast", "Temporal") and not table.addresses("Contrast", "Condition")


@pytest.mark.parametrize("content", [
    "not json", json.dumps([1, 2]), json.dumps({"rows": {}}), json.dumps({"rows": {"Contrast": ["Elaboration"]}}),
    json.dumps({"rows": {"Joint": ["Contrast"]}}), json.dumps({"rows": {"Contrastt": ["Contrast"]}}),
])
def test_bad_user_table_is_a_config_error(tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError):
        AgreementTable.load(path)


def test_missing_table_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        AgreementTable.load(tmp_path / "nope.json")


def test_answer_scope_relaxes_only_the_place_of_the_shared_entity():
    q = build_tree(("Contrast", "NN", ["I replaced the fuel pump relay", "but it still stalls"]))
    # the compatible Condition shares nothing itself; the fuel pump is named in a default Elaboration
    a = build_tree(("Elaboration", "NS", [("Condition", "SN", ["If it dies when warm", "look at the wiring"]),
                                          "A bad fuel pump relay does that."]))
    norm = EntityNormalizer(synonyms={}, use_builtin=False)
    strict = RhetoricalAgreement(table=TABLE, normalizer=norm)
    relaxed = RhetoricalAgreement(table=TABLE, normalizer=norm, overlap_scope="answer")
    reqs = strict.requirements([q.instance(q.root)])
    assert not strict.check(reqs, a).verdict
    assert relaxed.check(reqs, a).verdict
    unrelated = build_tree(("Elaboration", "NS", [("Temporal", "NS", ["Stop", "then wait"]), "A bad fuel pump relay."]))
    assert not relaxed.check(reqs, unrelated).verdict  # still needs a compatible relation
    with pytest.raises(ConfigError):
        RhetoricalAgreement(table=TABLE, normalizer=norm, overlap_scope="everywhere")
