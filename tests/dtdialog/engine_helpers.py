"""Hand-built discourse trees and a parser that returns them, for engine tests independent of any RST parser."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from index.base import AnswerDocument
from index.documents import build_document
from parsers.base import RSTParser
from parsers.tree import EDU, DiscourseTree, Node

Spec = Any  # a str (one EDU) or (relation, nuclearity, [child specs])


def build_tree(spec: Spec, *, parser: str = "hand") -> DiscourseTree:
    """Return the tree of ``spec``: a string is an EDU; ``(relation, "NS", [children])`` a relation node."""
    edus: list[EDU] = []
    pos = [0]

    def build(node: Spec) -> Node:
        if isinstance(node, str):
            start = pos[0]
            edus.append(EDU(index=len(edus), text=node, start=start, end=start + len(node), sentence=0))
            pos[0] = start + len(node) + 1
            return Node.leaf(len(edus) - 1)
        relation, nuclearity, children = node
        return Node.relate(relation, [build(c) for c in children], nuclearity)

    root = build(spec)
    text = " ".join(e.text for e in edus)
    return DiscourseTree(text=text, edus=tuple(edus), root=root, parser=parser)


class TableParser(RSTParser):
    """Returns the hand-built tree registered for a text; any other text becomes a one-EDU tree."""

    name = "table"

    def __init__(self, specs: Sequence[Spec] = ()) -> None:
        self.trees: dict[str, DiscourseTree] = {}
        for spec in specs:
            self.add(spec)

    def add(self, spec: Spec) -> DiscourseTree:
        tree = build_tree(spec)
        self.trees[tree.text] = tree
        return tree

    def parse(self, text: str) -> DiscourseTree:
        if text in self.trees:
            return self.trees[text]
        return DiscourseTree.single(text, EDU(index=0, text=text, start=0, end=len(text), sentence=0), parser="table")


def make_doc(doc_id: str, spec: Spec) -> AnswerDocument:
    """Return the index document of a hand-built answer ``"dialogue#position"``."""
    tree = build_tree(spec)
    dialogue_id, position = doc_id.rsplit("#", 1)
    return build_document(doc_id=doc_id, dialogue_id=dialogue_id, position=int(position), text=tree.text, tree=tree)


def make_index(path: Path, docs: dict[str, Spec]):
    """Return a writable SQLite index at ``path`` holding the hand-built answers ``docs``."""
    from index.sqlite_index import SqliteIndex

    index = SqliteIndex(path, readonly=False)
    index.add([make_doc(doc_id, spec) for doc_id, spec in docs.items()])
    return index


# --- a small car-repair world for manager tests ---------------------------------
PAPER_Q = ("Contrast", "NN", [("Joint", "NNN", ["I have checked the spark plugs,", "replaced the battery,",
                                                  "also replaced ignition coils and the solenoid,"]),
                               "but I still could not start my car."])
PAPER_C1 = ("Contrast", "NN", ["It did at first", "but not anymore. What should I do?"])
BRAKE_Q = ("Contrast", "NN", ["I replaced the brake pads,", "but the brakes still squeal when I stop."])
CONSTRAINT_Q = ("Elaboration", "NS", [("Contrast", "NN", ["I replaced the timing chain tensioner,",
                                                          "but the engine still rattles at start."]),
                                      "I can't remove the engine."])
ANSWERS = {
    "nostart#1": ("Condition", "SN", ["If the engine gets spark from the new plugs, coils and battery and gets fuel,",
                                      "the car should start for a couple seconds on starting fluid."]),
    "nostart#3": ("Contrast", "NN", ["Check the fuel pressure at the rail.",
                                     ("Condition", "SN", ["But if there is no fuel pressure,",
                                                          "look at the fuel pump and its relay for a fault."])]),
    "coil#1": ("Cause", "NS", ["A car may not start with new coils",
                               "because their connectors were swapped."]),
    "battery#1": ("Elaboration", "NS", ["Replace the battery terminals.", "Clean the battery posts and the car cables."]),
    "brakes#1": ("Condition", "SN", ["If the brakes squeal after new pads,", "put brake grease on the pad backing plates."]),
    "brakes#3": ("Cause", "NS", ["New brake pads squeal", "because the rotors were not resurfaced when you stop."]),
    "chain#1": ("Condition", "SN", ["If the engine rattles at start after a new tensioner,",
                                    "you have to remove the engine to reach the timing chain guides."]),
    "chain#3": ("Cause", "NS", ["An engine rattle at start after a tensioner job",
                                "often comes from low oil pressure, so check the oil pump pickup first."]),
}


def car_world(tmp_path: Path, **config: Any):
    """Return (selector, manager, parser) over the hand-built answers, sessions in ``tmp_path/sessions.sqlite``."""
    from dtdialog.dialogue.manager import DialogueManager
    from dtdialog.dialogue.session_store import SessionStore
    from dtdialog.selection.selector import AnswerSelector
    from dtdialog.setup.engine_config import EngineConfig

    parser = TableParser([PAPER_Q, PAPER_C1, BRAKE_Q, CONSTRAINT_Q])
    index = make_index(tmp_path / "answers.sqlite", ANSWERS)
    cfg = EngineConfig.from_dict(config)
    selector = AnswerSelector(index=index, parser=parser, config=cfg)
    manager = DialogueManager(selector=selector, store=SessionStore(tmp_path / "sessions.sqlite"), config=cfg)
    return selector, manager, parser


def text_of(spec: Spec) -> str:
    """Return the text of a hand-built tree spec."""
    return build_tree(spec).text
