"""Adapter for the neural isanlp-rst parser (Chistova 2024), registered as ``"isanlp"``.

``isanlp_rst.parser.Parser(model_dir=..., hf_model_version="gumrrg"|"rstdt")``
returns ``{"rst": [DiscourseUnit, ...]}``: binary trees whose nodes have
``id, left, right, relation, nuclearity ("NS"/"SN"/"NN"), start, end, text``;
leaves have ``left``/``right`` of None (relation ``"elementary"``). This module
converts such trees into ``DiscourseTree`` with the relation inventory's labels.
``isanlp_rst`` is imported only when an ``IsanlpParser`` is built, and only from a
local model folder (``model_dir`` or ``$DTDIALOG_ISANLP_MODEL_DIR``): nothing is
downloaded at run time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from parsers.base import RSTParser, register_parser
from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.relations import (
    ATTRIBUTION,
    BACKGROUND,
    CAUSE,
    CONDITION,
    CONTRAST,
    ELABORATION,
    ENABLEMENT,
    EVALUATION,
    EXPLANATION,
    JOINT,
    MANNER_MEANS,
    ORGANIZATION,
    SAME_UNIT,
    SUMMARY,
    TOPIC_COMMENT,
    from_gum,
    from_rstdt,
)
from parsers.text_input import MAX_CHARS, clean_text
from parsers.tree import EDU, DiscourseTree, Node

ENV_MODEL_DIR = "DTDIALOG_ISANLP_MODEL_DIR"
LABEL_SETS = ("gumrrg", "rstdt")

#: GUM coarse classes (isanlp's ``gumrrg`` labels may omit the fine subtype) -> inventory.
GUM_CLASS_TO_INVENTORY: dict[str, str] = {
    "adversative": CONTRAST, "attribution": ATTRIBUTION, "causal": CAUSE, "context": BACKGROUND,
    "contingency": CONDITION, "elaboration": ELABORATION, "evaluation": EVALUATION, "explanation": EXPLANATION,
    "joint": JOINT, "mode": MANNER_MEANS, "organization": ORGANIZATION, "purpose": ENABLEMENT,
    "restatement": SUMMARY, "topic": TOPIC_COMMENT, "same-unit": SAME_UNIT, "sameunit": SAME_UNIT,
}
_SENT_END = re.compile(r"[.!?][\"')\]]*$")


def map_label(label: str, label_set: str = "gumrrg") -> str:
    """Return the inventory relation of an isanlp label (``"joint_m"``, ``"adversative-concession_r"``,
    ``"elaboration"``, ``"Elaboration"``, ``"same-unit"``); ``ConfigError`` if unknown.
    """
    if label_set not in LABEL_SETS:
        raise ConfigError(f"unknown isanlp label set {label_set!r}; use one of {', '.join(LABEL_SETS)}")
    key = label.strip().lower().replace("_", "-")
    for suffix in ("-r", "-m"):
        if key.endswith(suffix):
            key = key[: -len(suffix)]
    if label_set == "rstdt":
        return from_rstdt(key)
    try:
        return from_gum(key)
    except ConfigError:
        pass
    if key in GUM_CLASS_TO_INVENTORY:
        return GUM_CLASS_TO_INVENTORY[key]
    raise ConfigError(f"unknown isanlp {label_set} relation label {label!r}")


def _leaves(du: Any) -> list[Any]:
    out, stack = [], [du]
    while stack:
        node = stack.pop()
        if node.left is None and node.right is None:
            out.append(node)
        else:
            stack.extend(n for n in (node.right, node.left) if n is not None)
    return out


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def discourse_unit_to_tree(du: Any | Sequence[Any], text: str, *, label_set: str = "gumrrg",
                           parser: str = "isanlp") -> DiscourseTree:
    """Return the ``DiscourseTree`` of an isanlp ``DiscourseUnit`` tree (or a list of them, joined as Joint).

    EDU spans come from the leaves' ``start``/``end`` character offsets into ``text``
    (trimmed of whitespace). Raises ``InputError`` for malformed trees and
    ``ConfigError`` for unknown labels.
    """
    roots = list(du) if isinstance(du, (list, tuple)) else [du]
    if not roots:
        raise InputError("isanlp returned no discourse units")
    leaves = [leaf for root in roots for leaf in _leaves(root)]
    index_of = {id(leaf): i for i, leaf in enumerate(leaves)}
    edus = []
    sentence = 0
    for i, leaf in enumerate(leaves):
        try:
            start, end = int(leaf.start), int(leaf.end)
        except (TypeError, ValueError):
            raise InputError(f"discourse unit {getattr(leaf, 'id', i)} has no character span") from None
        if not 0 <= start <= end <= len(text):
            raise InputError(f"discourse unit {getattr(leaf, 'id', i)} span {start}-{end} is outside the text")
        start, end = _trimmed(text, start, end)
        edus.append(EDU(index=i, text=text[start:end], start=start, end=end, sentence=sentence))
        if _SENT_END.search(text[start:end]):
            sentence += 1

    def build(node: Any) -> Node:
        if node.left is None and node.right is None:
            return Node.leaf(index_of[id(node)])
        if node.left is None or node.right is None:
            raise InputError(f"discourse unit {getattr(node, 'id', '?')} has only one child")
        nuc = str(node.nuclearity or "").upper()
        if nuc not in ("NS", "SN", "NN"):
            raise InputError(f"discourse unit {getattr(node, 'id', '?')} has nuclearity {node.nuclearity!r}")
        return Node.relate(map_label(str(node.relation), label_set), [build(node.left), build(node.right)], nuc)

    nodes = [build(r) for r in roots]
    root = nodes[-1]
    for left in reversed(nodes[:-1]):
        root = Node.relate(JOINT, [left, root], "NN")
    return DiscourseTree(text=text, edus=tuple(edus), root=root, parser=parser, meta={"label_set": label_set})


class IsanlpParser(RSTParser):
    """The isanlp-rst neural parser from a local model folder (``model_dir`` or ``$DTDIALOG_ISANLP_MODEL_DIR``)."""

    name = "isanlp"

    def __init__(self, *, model_dir: str | Path | None = None, label_set: str = "gumrrg",
                 hf_model_name: str = "tchewik/isanlp_rst_v3", cuda_device: int = -1,
                 max_chars: int = MAX_CHARS) -> None:
        if label_set not in LABEL_SETS:
            raise ConfigError(f"unknown isanlp label set {label_set!r}; use one of {', '.join(LABEL_SETS)}")
        folder = model_dir or os.environ.get(ENV_MODEL_DIR)
        if not folder:
            raise ModelNotAvailableError(
                f"isanlp-rst needs a local model: download tchewik/isanlp_rst_v3 ({label_set}) on a connected "
                f"machine and set {ENV_MODEL_DIR} to its folder (pip install isanlp-rst)")
        if not Path(folder).is_dir():
            raise ModelNotAvailableError(f"isanlp-rst model folder {folder} does not exist ({ENV_MODEL_DIR})")
        try:
            from isanlp_rst.parser import Parser
        except ImportError:
            raise ModelNotAvailableError("isanlp-rst is not installed: pip install isanlp-rst") from None
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never download at run time
        self.model_dir = str(folder)
        self.label_set = label_set
        self.max_chars = max_chars
        self._parser = Parser(model_dir=self.model_dir, hf_model_name=hf_model_name,
                              hf_model_version=label_set, cuda_device=cuda_device)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "model_dir": self.model_dir, "label_set": self.label_set}

    def parse(self, text: str | bytes) -> DiscourseTree:
        """Return the isanlp-rst tree of ``text`` in the inventory's labels."""
        cleaned = clean_text(text, max_chars=self.max_chars)
        result = self._parser(cleaned)
        units = result.get("rst") if isinstance(result, dict) else result
        if not units:
            edu = EDU(index=0, text=cleaned, start=0, end=len(cleaned), sentence=0)
            return DiscourseTree.single(cleaned, edu, parser=self.name)
        return discourse_unit_to_tree(units, cleaned, label_set=self.label_set, parser=self.name)


@register_parser("isanlp")
def make_isanlp_parser(**config: Any) -> IsanlpParser:
    """Return an ``IsanlpParser`` built from ``config`` (``model_dir``, ``label_set``, ...)."""
    return IsanlpParser(**config)
