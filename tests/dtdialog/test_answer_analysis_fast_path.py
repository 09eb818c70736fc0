"""An answer's analysis takes shortcuts (one-pass tree rebuild, EDU terms memo, synonym lengths);
each gives what the plain code gives, on every answer of the built-in corpus and on broken trees.

The plain code is written out here as it was before the shortcuts: the general tree reader
(``parsers.tree._nodes_from_any_list``), ``EDU`` built by its ``__init__``, the synonym scan over every n-gram length,
terms stemmed per call, and ``analyze`` over ``tree.non_default_nodes()``.
"""

from __future__ import annotations

import json
import random
from itertools import chain

import pytest
from plain_analysis import plain_normalise

from dtdialog.selection.agreement import AnswerAnalysis, AnswerRelation, RhetoricalAgreement
from dtdialog.understanding.entities import EntityNormalizer
from parsers import tree as tree_module
from parsers.errors import InputError
from parsers.tree import EDU, DiscourseTree, Node, nodes_from_list, nodes_to_list


@pytest.fixture(scope="module")
def stored_trees(builtin_rules_index) -> list[dict]:
    """Every answer DT of the built-in corpus as the index stores it (through JSON, as a read gives it back)."""
    from index.sqlite_index import SqliteIndex

    index = SqliteIndex(builtin_rules_index)
    try:
        trees = [json.loads(json.dumps(doc.tree)) for doc in index.documents() if doc.tree]
    finally:
        index.close()
    assert len(trees) > 300
    return trees


def _plain_edu(data: dict) -> EDU:
    return EDU(index=int(data["index"]), text=str(data["text"]), start=int(data["start"]), end=int(data["end"]),
               sentence=int(data.get("sentence", 0)), lemmas=tuple(data.get("lemmas", ())),
               entities=tuple(data.get("entities", ())))


def _plain_tree(data: dict) -> DiscourseTree:
    return DiscourseTree(text=str(data.get("text", "")), edus=tuple(_plain_edu(e) for e in data["edus"]),
                         root=tree_module._nodes_from_any_list(data["nodes"]), parser=str(data.get("parser", "")),
                         meta=dict(data.get("meta") or {}))


def _fields(node: Node) -> list[tuple]:
    """Every node's fields with their types, pre-order: what ``==`` compares, and that nothing else differs."""
    return [(type(n), n.__dict__.copy(), [type(v) for v in n.__dict__.values()]) for n in node.walk()]


def _plain_terms_of_edu(normalizer: EntityNormalizer, edu: EDU) -> frozenset[str]:
    from index.vocabulary import entity_words, is_entity_word, stem

    words = [w for lemma in edu.lemmas for w in entity_words(lemma)] if edu.lemmas else entity_words(edu.text)
    terms = plain_normalise(normalizer, [stem(w) for w in words if is_entity_word(w)])
    for phrase in edu.entities:
        stems = [stem(w) for w in entity_words(phrase) if is_entity_word(w)]
        if len(stems) > 1:
            terms.add(" ".join(stems))
        terms.update(plain_normalise(normalizer, stems))
    return frozenset(terms)


def _plain_analysis(normalizer: EntityNormalizer, tree: DiscourseTree) -> AnswerAnalysis:
    per_edu = [_plain_terms_of_edu(normalizer, e) for e in tree.edus]
    rels = [AnswerRelation(relation=node.relation or "", edus=tree.edus[node.first: node.last + 1],
                           terms=frozenset().union(*per_edu[node.first: node.last + 1]))
            for node in tree.non_default_nodes()]
    return AnswerAnalysis(relations=tuple(rels), terms=frozenset().union(*per_edu), tree=tree)


def test_stored_trees_rebuild_as_the_general_reader_builds_them(stored_trees):
    took_the_shortcut = 0
    for data in stored_trees:
        plain, fast = _plain_tree(data), DiscourseTree.from_dict(data)
        took_the_shortcut += tree_module._nodes_from_plain_list(data["nodes"]) is not None
        assert fast == plain
        assert _fields(fast.root) == _fields(plain.root)
        assert [e.__dict__ for e in fast.edus] == [e.__dict__ for e in plain.edus]
        assert [type(e) for e in fast.edus] == [EDU] * len(plain.edus)
        assert nodes_to_list(fast.root) == data["nodes"] and fast.to_dict() == plain.to_dict()
    assert took_the_shortcut == len(stored_trees)  # every stored tree is in the one-pass form


def _broken(nodes: list[dict], rng: random.Random) -> list:
    """Return a copy of ``nodes`` with one thing changed: often invalid, sometimes valid in an unusual spelling."""
    out = json.loads(json.dumps(nodes))
    inner = [e for e in out if "edu" not in e]
    leaves = [e for e in out if "edu" in e]
    entry = rng.choice(inner) if inner else out[0]
    kind = rng.randrange(16)
    if kind == 0 and len(entry.get("children", ())) > 1:
        entry["children"][0], entry["children"][1] = entry["children"][1], entry["children"][0]  # not adjacent
    elif kind == 1:
        entry["nuclearity"] = "S" * len(entry.get("children", ()))  # no nucleus
    elif kind == 2:
        entry["relation"] = "Nonsense"
    elif kind == 3:
        entry["relation"] = rng.choice(["contrast", " Cause ", "same_unit", "JOINT"])  # valid, another spelling
    elif kind == 4:
        entry["nuclearity"] = list(entry.get("nuclearity", ""))  # valid: a list of marks
    elif kind == 5:
        entry.pop(rng.choice(["relation", "nuclearity", "children"]), None)
    elif kind == 6 and entry.get("children"):
        entry["children"][-1] = True  # a bool is no child index
    elif kind == 7 and entry.get("children"):
        entry["children"].append(len(out))  # out of range
    elif kind == 8 and entry.get("children"):
        entry["children"].append(entry["children"][0])  # a child twice
    elif kind == 9 and leaves:
        rng.choice(leaves)["edu"] = str(rng.choice(leaves)["edu"])  # valid: int() reads it
    elif kind == 10 and leaves:
        rng.choice(leaves)["edu"] = rng.choice([None, "x", 1.5, True, -1])
    elif kind == 11:
        out.append({"edu": 0})  # nobody's child
    elif kind == 12:
        out[rng.randrange(len(out))] = rng.choice([[], "node", 3])
    elif kind == 13 and entry.get("children"):
        entry["children"] = entry["children"][:1]  # one child
    elif kind == 14:
        entry["nuclearity"] = entry.get("nuclearity", "") + "N"  # one mark too many
    elif kind == 15 and len(out) > 1:
        out = out[:-1]  # a dangling child index
    return out


def _outcome(read, entries) -> tuple:
    try:
        return ("ok", _fields(read(entries)))
    except InputError as exc:
        return ("error", str(exc))


def test_broken_and_unusual_node_lists_read_as_the_general_reader_reads_them(stored_trees):
    rng = random.Random(16)
    outcomes = set()
    for data in stored_trees:
        for _ in range(6):
            entries = _broken(data["nodes"], rng)
            expected = _outcome(tree_module._nodes_from_any_list, json.loads(json.dumps(entries)))
            assert _outcome(nodes_from_list, entries) == expected, entries
            outcomes.add(expected[0])
    for odd in ([], {}, None, "nodes", [{"relation": "Joint", "nuclearity": "NN", "children": [1, 2]}, {"edu": 0}]):
        assert _outcome(nodes_from_list, odd) == _outcome(tree_module._nodes_from_any_list, odd)
    assert outcomes == {"ok", "error"}  # both kinds were met


def test_leaves_past_the_shared_ones_are_built(stored_trees):
    count = len(tree_module._LEAVES) + 3
    entries = [{"relation": "Joint", "nuclearity": "N" * count, "children": list(range(1, count + 1))},
               *({"edu": i} for i in range(count))]
    assert _fields(nodes_from_list(entries)) == _fields(tree_module._nodes_from_any_list(entries))


def test_analysis_equals_the_plain_analysis_with_cold_and_warm_memos(stored_trees):
    normalizer = EntityNormalizer()
    agreement = RhetoricalAgreement(normalizer=normalizer)
    plain_normalizer = EntityNormalizer()
    trees = [DiscourseTree.from_dict(data) for data in stored_trees]
    before = normalizer._edu_terms.cache_info()  # one memo for the class: other tests' normalisers filled it too
    for _ in range(2):  # first every EDU is new to the memo, then every one is a hit
        for tree in trees:
            fast, plain = agreement.analyze(tree), _plain_analysis(plain_normalizer, tree)
            assert fast == plain and fast.tree is tree
            assert [(r.relation, r.edus, r.terms) for r in fast.relations] == \
                   [(r.relation, r.edus, r.terms) for r in plain.relations]
            # the same order of iteration too: the topic weights and other dicts are filled in it
            assert [list(t) for t in map(normalizer.terms_of_edu, tree.edus)] == \
                   [list(_plain_terms_of_edu(plain_normalizer, e)) for e in tree.edus]
            assert list(fast.terms) == list(plain.terms)
    info = normalizer._edu_terms.cache_info()
    assert info.misses > before.misses  # this normaliser's EDUs were new to the memo
    assert info.hits - before.hits >= sum(len(tree.edus) for tree in trees)  # and all found there the second time


def test_edu_terms_memo_keys_on_what_the_terms_are_made_of():
    normalizer = EntityNormalizer()
    plain = EntityNormalizer()
    base = EDU(index=0, text="Check the ECU wiring", start=0, end=20, sentence=0,
               lemmas=("check", "ecu", "wiring"), entities=("ecu wiring",))
    variants = [
        base,
        EDU(index=3, text="another text, same lemmas", start=5, end=30, sentence=2, lemmas=base.lemmas,
            entities=base.entities),
        EDU(index=0, text="Check the ECU wiring", start=0, end=20, sentence=0, lemmas=base.lemmas, entities=()),
        EDU(index=0, text="check ecu wiring", start=0, end=16, sentence=0),  # no lemmas: the text's words
        EDU(index=0, text="check ecu wiring", start=0, end=16, sentence=0, lemmas=(), entities=("ecu wiring",)),
        # a text equal to a lemma: the two kinds of key must not meet
        EDU(index=0, text="alternator", start=0, end=10, sentence=0),
        EDU(index=0, text="x", start=0, end=1, sentence=0, lemmas=("alternator",)),
        # lists where tuples belong (hand-built EDUs): not memoised, same terms
        EDU(index=0, text="Check the ECU wiring", start=0, end=20, sentence=0, lemmas=["check", "ecu", "wiring"],
            entities=["ecu wiring"]),
    ]
    for _ in range(2):
        for edu in variants:
            assert normalizer.terms_of_edu(edu) == _plain_terms_of_edu(plain, edu)
    assert "engin control modul" in normalizer.terms_of_edu(base)  # the synonym list applied (ecu)


@pytest.mark.parametrize("synonyms", [
    None,  # the built-in car list
    {"ecm": ["ecu", "engine computer", "engine control module", "engine control unit module"],
     "engine": ["motor"], "control arm": ["a-arm", "control"], "check engine light": ["cel", "engine light"]},
])
def test_synonym_scan_tries_only_the_lengths_an_alias_has(stored_trees, synonyms):
    normalizer = EntityNormalizer(synonyms=synonyms)
    plain = EntityNormalizer(synonyms=synonyms)
    from dtdialog.understanding.entities import _content_stems_of

    edus = [e for data in stored_trees for e in data["edus"]]
    probes = [tuple(chain.from_iterable(map(_content_stems_of, e.get("lemmas", ())))) for e in edus]
    probes += [_content_stems_of(p) for e in edus for p in e.get("entities", ())]
    probes += [tuple(_content_stems_of(t)) for t in ("the engine control unit module failed", "engine control",
                                                     "check engine light engine light cel", "control arm a-arm",
                                                     "engine computer engine", "ecu", "")]
    matched = 0
    for stems in probes:
        fast = normalizer._normalise(stems)
        assert fast == plain_normalise(plain, stems)
        matched += fast != set(stems)
    assert matched > 10  # synonyms were met, not only plain stems


def test_broken_edus_give_the_errors_edu_init_gave(stored_trees):
    data = stored_trees[0]
    edu = data["edus"][0]
    broken = [{k: v for k, v in edu.items() if k != "index"}, {**edu, "start": "x"}, {**edu, "end": None},
              {**edu, "lemmas": 3}, {**edu, "sentence": "2"}, {**edu, "text": None}, ["index", 0], "edu"]
    for item in broken:
        try:
            expected = ("ok", _plain_edu(item).__dict__)
        except (KeyError, TypeError, ValueError) as exc:
            expected = ("error", f"malformed discourse tree JSON: {exc}")
        try:
            got = ("ok", DiscourseTree.from_dict({**data, "edus": [item, *data["edus"][1:]]}).edus[0].__dict__)
        except InputError as exc:
            got = ("error", str(exc))
        assert got == expected, item
