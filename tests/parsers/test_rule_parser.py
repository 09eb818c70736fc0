"""The default rule-based parser: the paper's example, bad input, EDU content, batching, determinism."""

from __future__ import annotations

import pytest

from parsers.base import get_parser
from parsers.cue_lexicon import edu_view, join_features
from parsers.errors import ConfigError, InputError
from parsers.relations import ATTRIBUTION, BACKGROUND, CAUSE, CONCESSION, CONTRAST, SAME_UNIT, is_default
from parsers.rule_parser import RuleParser
from parsers.segmenter import segment
from parsers.text_input import MAX_CHARS
from parsers.tree import DiscourseTree

PAPER = ("I have checked the spark plugs, replaced the battery, also replaced ignition coils and the solenoid, "
         "but I still could not start my car.")


@pytest.fixture(scope="module")
def parser() -> RuleParser:
    return RuleParser()


def test_registered_and_the_default(parser, monkeypatch):
    assert isinstance(get_parser("rules"), RuleParser)
    monkeypatch.delenv("DTDIALOG_PARSER", raising=False)
    assert get_parser().name == "rules"


def test_paper_example_contrast_between_actions_and_failure(parser):
    tree = parser.parse(PAPER)
    nodes = tree.nodes_with_relation(CONCESSION) + tree.nodes_with_relation(CONTRAST)
    assert nodes, tree.to_compact()
    node = nodes[0]
    sides = [" ".join(e.text for e in tree.edus_of(child)) for child in node.children]
    actions, failure = sides[0], sides[-1]
    for act in ("checked the spark plugs", "replaced the battery", "replaced ignition coils"):
        assert act in actions
    assert "could not start my car" in failure
    assert "could not start" not in actions
    # The failure is what the text is about: it is the nucleus of a concession.
    if node.relation == CONCESSION:
        assert node.nuclearity[-1] == "N"


def test_paper_example_edus_and_content(parser):
    tree = parser.parse(PAPER)
    assert len(tree.edus) >= 3
    assert "".join(e.text for e in tree.edus).replace(" ", "") == PAPER.replace(" ", "")
    first = tree.edus[0]
    assert "spark" in first.lemmas and "check" in first.lemmas
    assert all(lemma == lemma.lower() for e in tree.edus for lemma in e.lemmas)
    assert "i" not in first.lemmas and "the" not in first.lemmas
    entities = {ent for e in tree.edus for ent in e.entities}
    assert "spark plugs" in entities and "battery" in entities
    assert not any(ent.startswith(("the ", "my ")) for ent in entities)
    for e in tree.edus:
        assert tree.text[e.start:e.end] == e.text


@pytest.mark.parametrize("text", ["", "   \n\t", "<p> </p>", b""])
def test_empty_input_is_refused(parser, text):
    with pytest.raises(InputError, match="empty"):
        parser.parse(text)


def test_invalid_utf8_is_refused(parser):
    with pytest.raises(InputError, match="UTF-8"):
        parser.parse(b"engine \xff\xfe noise")


def test_huge_input_is_refused_with_limit(parser):
    with pytest.raises(InputError, match="100,000"):
        parser.parse("The car stalls. " * (MAX_CHARS // 10))


@pytest.mark.parametrize("text", ["Hello", "Help!", "🚗", "🚗💨😤", "𝔸"])
def test_single_word_or_emoji_gives_one_edu(parser, text):
    tree = parser.parse(text)
    assert len(tree.edus) == 1 and tree.root.is_leaf
    assert tree.edus[0].text == text


def test_emoji_inside_text_keeps_offsets(parser):
    text = "My car 🚗 stalls when it rains 🌧, but it starts fine in the sun ☀."
    tree = parser.parse(text)
    assert len(tree.edus) >= 2
    for e in tree.edus:
        assert tree.text[e.start:e.end] == e.text
    assert "🚗" in tree.edus[0].text


def test_html_fragment_is_parsed_as_text(parser):
    tree = parser.parse("<p>The engine <b>overheats</b> when I drive uphill,</p><p>but the coolant is full.</p>")
    assert "<" not in tree.text
    assert any("overheats" in e.text for e in tree.edus)
    assert tree.non_default_nodes()


def test_conditional_and_causal_cues(parser):
    tree = parser.parse("If the battery is weak, replace it. The car would not start because the fuel pump failed.")
    assert tree.nodes_with_relation("Condition")
    rels = set(tree.relations())
    assert rels & {"Cause", "Explanation"}, tree.to_compact()


def test_right_dependents_attach_before_left_ones(parser):
    tree = parser.parse("If the battery is weak, the car will not start because the starter needs current.")
    assert tree.root.relation == "Condition" and tree.root.nuclearity == ("S", "N")
    assert tree.root.children[1].span == (1, 2)


def test_marked_sentence_joins_its_predecessor_first(parser):
    tree = parser.parse("The engine idles rough. The fuel economy dropped. However, the plugs are new. "
                        "I drive mostly in the city.")
    first_of = [e.sentence for e in tree.edus]
    s1 = (first_of.index(1), len(first_of) - 1 - first_of[::-1].index(2))
    node = next(n for n in tree.relation_nodes() if n.span == s1)
    assert not is_default(node.relation or ""), tree.to_compact()


def test_parse_many_matches_parse(parser):
    texts = [PAPER, "The brakes squeal. I replaced the pads last week.", "Hello"]
    batched = list(parser.parse_many(texts, batch_size=2))
    single = [parser.parse(t) for t in texts]
    assert [t.to_dict() for t in batched] == [t.to_dict() for t in single]


def test_parse_many_rejects_bad_text(parser):
    with pytest.raises(InputError):
        list(parser.parse_many(["fine text", "  "]))


def test_deterministic_and_json_round_trip(parser):
    a = parser.parse(PAPER)
    b = parser.parse(PAPER)
    assert a.to_json() == b.to_json()
    back = DiscourseTree.from_json(a.to_json())
    assert back == a
    assert back.to_compact() == a.to_compact()


def test_to_nltk_export(parser):
    tree = parser.parse(PAPER)
    nt = tree.to_nltk()
    assert nt.label() == f"{tree.root.relation}[{''.join(tree.root.nuclearity)}]"
    assert len(nt.leaves()) == len(tree.edus)


def test_paragraphs_are_joined_after_their_sentences(parser):
    text = "The car stalls. It happens at idle.\n\nI also hear a click. It comes from the starter."
    tree = parser.parse(text)
    spans = {(n.first, n.last) for n in tree.relation_nodes()}
    n_first = max(e.index for e in tree.edus if e.start < text.index("\n\n")) + 1
    assert (0, n_first - 1) in spans and (n_first, len(tree.edus) - 1) in spans


def test_interrupted_clause_is_same_unit(parser):
    tree = parser.parse("The old car, which I bought last year, broke down yesterday.")
    assert tree.root.relation == "Same-Unit"
    assert tree.nodes_with_relation("Elaboration")[0].span == (0, 1)


MULTI_CLAUSE = "Although the pads are new, the brakes squeal when I stop, so I took it to the shop."


def test_multi_clause_answer_edus_and_labels(parser):
    tree = parser.parse(MULTI_CLAUSE)
    assert [e.text for e in tree.edus] == [
        "Although the pads are new,", "the brakes squeal", "when I stop,", "so I took it to the shop."]
    labels = {n.span: (n.relation, "".join(n.nuclearity)) for n in tree.relation_nodes()}
    assert labels == {
        # "when" opens a circumstance: in GUM train "s|R1=when" joins are Background|NS 76 of 138 times.
        (1, 2): (BACKGROUND, "NS"),
        # spaCy reads "the brakes squeal" as a ccomp of "took", and ccomp joins are Attribution|SN in GUM.
        (0, 2): (ATTRIBUTION, "SN"),
        # spaCy tags "squeal" ADV, so EDU 1 has no verb: the clause it heads is a fragment, joined as Same-Unit.
        (0, 3): (SAME_UNIT, "NN"),
    }


def test_multi_clause_answer_labels_come_from_the_cue_lexicon(parser):
    tree = parser.parse(MULTI_CLAUSE)
    doc = parser.nlp.analyze(MULTI_CLAUSE)
    views = [edu_view(doc, s.start, s.end) for s in segment(doc, parser.segmenter) if s.end > s.start]
    when_counts = parser.lexicon.features["s|R1=when"]
    assert max(when_counts, key=when_counts.get) == f"{BACKGROUND}|NS"
    for node in tree.relation_nodes():
        left, right = node.children
        implied = parser.lexicon.predict(join_features(views[left.first: left.last + 1],
                                                       views[right.first: right.last + 1]), "s")
        if node.relation == SAME_UNIT:
            # The fragment rule overrides the lexicon, which would have read "so" as a cause.
            assert implied == (CAUSE, "SN")
        else:
            assert (node.relation, "".join(node.nuclearity)) == implied


def _depth(tree: DiscourseTree) -> int:
    depth: dict[int, int] = {}
    for node in list(tree.root.walk())[::-1]:
        depth[id(node)] = 0 if node.is_leaf else 1 + max(depth[id(c)] for c in node.children)
    return depth[id(tree.root)]


@pytest.mark.parametrize("text", [
    "he went home and she came back and " * 150,  # one run-on sentence of many clauses
    "The car stalls. " * 450,  # many sentences, no paragraphs
])
def test_long_texts_keep_the_tree_shallow(parser, text):
    tree = parser.parse(text)
    assert len(tree.edus) > 100
    assert _depth(tree) < 300  # JSON, pictures and the index recurse over the tree
    assert DiscourseTree.from_json(tree.to_json()) == tree


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError):
        RuleParser(max_chars=0)
    with pytest.raises(ConfigError):
        RuleParser(sentence_branching="diagonal")
    with pytest.raises(InputError, match="lexicon"):
        RuleParser(lexicon_path="/nonexistent/lexicon.json")


def test_sentences_join_by_continuation_and_narrative_tense(parser):
    # A sentence opening with a back-pointing pronoun elaborates the one before it ...
    tree = parser.parse("The starter clicks when I turn the key. It sounds like a relay. The lights work fine.")
    pairs = [n for n in tree.nodes_with_relation("Elaboration") if len({e.sentence for e in tree.edus_of(n)}) == 2]
    assert pairs, tree.to_compact()
    assert "It sounds like a relay" in " ".join(e.text for e in tree.edus_of(pairs[0]))
    # ... and past-tense main clauses in a row narrate a sequence.
    tree = parser.parse("The engine stalled on the highway. I called a tow truck. The mechanic replaced the pump.")
    assert tree.nodes_with_relation("Temporal"), tree.to_compact()


def test_the_nucleus_chain_is_the_main_clause_in_text_order():
    from dataclasses import replace

    from tree_helpers import concession_tree

    from parsers.tree import Node

    tree = concession_tree(["I checked the plugs", "and replaced the battery,", "but it still will not start."])
    assert [e.index for e in tree.nucleus_chain_edus()] == [2]
    # the satellite as the nucleus instead: the multinuclear Joint's two EDUs, in text order
    flipped = replace(tree, root=Node.relate("Concession", list(tree.root.children), "NS"))
    assert [e.index for e in flipped.nucleus_chain_edus()] == [0, 1]
