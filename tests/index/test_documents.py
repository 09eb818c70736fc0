"""Index documents: keywords, entities, relations and RR[EDU] terms taken from a hand-built discourse tree."""

from __future__ import annotations

from index.base import AnswerDocument, RRTerm
from index.documents import build_document, keywords_of, relations_of, rr_terms_of
from parsers.tree import EDU, DiscourseTree, Node


def tree() -> DiscourseTree:
    # [I replaced the battery]  Contrast  [but the car still won't start]   Elaboration  [The lights work.]
    edus = (
        EDU(0, "I replaced the battery", 0, 22, 0, lemmas=("I", "replace", "the", "battery"), entities=("battery",)),
        EDU(1, "but the car still won't start.", 23, 53, 0,
            lemmas=("but", "the", "car", "still", "will", "not", "start", "."), entities=("Car",)),
        EDU(2, "The lights work.", 54, 70, 1, lemmas=("the", "light", "work", ".")),
    )
    contrast = Node.relate("Contrast", [Node.leaf(0), Node.leaf(1)], "NN")
    root = Node.relate("Elaboration", [contrast, Node.leaf(2)], "NS")
    return DiscourseTree(text="I replaced the battery but the car still won't start. The lights work.",
                         edus=edus, root=root, parser="hand")


def test_keywords_are_lemmatized_content_words() -> None:
    assert keywords_of(tree()) == ["replace", "battery", "car", "start", "light", "work"]


def test_rr_terms_only_for_non_default_relations() -> None:
    assert rr_terms_of(tree()) == [RRTerm("Contrast", ("replace", "battery", "car", "start"))]
    assert relations_of(tree()) == ["Contrast"]


def test_build_document_fields_and_round_trip() -> None:
    t = tree()
    doc = build_document(doc_id="d#1", dialogue_id="d", position=1, text=t.text, tree=t, meta={"source": "x"})
    assert doc.keywords == ("replace", "battery", "car", "start", "light", "work")
    assert doc.entities == ("battery", "car")
    assert doc.relations == ("Contrast",)
    assert doc.rr_edu == (RRTerm("Contrast", ("replace", "battery", "car", "start")),)
    assert doc.to_dict()["rr_edu"] == ["Contrast [replace battery car start]"]  # stored as text, as before
    assert doc.meta == {"source": "x", "rr_phrases": ["Contrast [I replaced the battery but the car still won't start.]"],
                        "role": "opening", "stands_alone": True, "position_reason": ""}  # the dialogue position
    assert DiscourseTree.from_dict(doc.tree) == t
    assert AnswerDocument.from_dict(doc.to_dict()) == doc


def test_single_edu_answer_has_no_rr_terms() -> None:
    t = DiscourseTree.single("Check the fuse.", EDU(0, "Check the fuse.", 0, 15, 0))
    doc = build_document(doc_id="a#1", dialogue_id="a", position=1, text=t.text, tree=t)
    assert doc.keywords == ("check", "fuse")  # no lemmas from the parser: lower-cased words are used
    assert doc.rr_edu == () and doc.relations == ()
