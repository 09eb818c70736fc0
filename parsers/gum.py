"""Readers for the GUM RST corpus: binarised ``.dis`` trees and ``splits.tsv``.

GUM's ``.dis`` texts are tokenised (tokens separated by spaces); a document's
text is its EDU texts joined by single spaces, so EDU character spans are exact.
Relation labels are mapped into the inventory with ``relations.from_gum``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from parsers.errors import InputError
from parsers.relations import from_gum
from parsers.tree import EDU, NUCLEUS, SATELLITE, DiscourseTree, Node

#: Where GUM is looked for when no path is given: ``$DTDIALOG_GUM_DIR`` or ``../shared/data/gum_rst``.
DEFAULT_GUM_DIR = Path(os.environ.get("DTDIALOG_GUM_DIR", "../shared/data/gum_rst"))
#: Genres licensed BY-NC-SA (or withheld): excluded from anything we train and ship.
NON_COMMERCIAL_GENRES = frozenset({"fiction", "essay", "letter", "podcast", "whow", "reddit"})

_TOKEN = re.compile(r"\(|\)|_!.*?_!|[^\s()]+", re.S)
_SENT_END = re.compile(r"[.!?][\"')\]]*$")


@dataclass(frozen=True)
class GumDocument:
    """One GUM document: its name, genre, split and gold tree."""

    name: str
    genre: str
    split: str
    tree: DiscourseTree


def _sexpr(text: str) -> list:
    stack: list[list] = [[]]
    for tok in _TOKEN.findall(text):
        if tok == "(":
            stack.append([])
        elif tok == ")":
            if len(stack) < 2:
                raise InputError("unbalanced parentheses in .dis file")
            done = stack.pop()
            stack[-1].append(done)
        else:
            stack[-1].append(tok)
    if len(stack) != 1 or not stack[0]:
        raise InputError("unbalanced or empty .dis file")
    return stack[0][0]


def _fields(node: list) -> dict[str, list]:
    return {item[0]: item[1:] for item in node[1:] if isinstance(item, list) and item and isinstance(item[0], str)}


def _children(node: list) -> list[list]:
    return [item for item in node[1:] if isinstance(item, list) and item and item[0] in ("Nucleus", "Satellite")]


def read_dis(text: str, *, name: str = "") -> DiscourseTree:
    """Return the ``DiscourseTree`` of a GUM/RST-DT style ``.dis`` string.

    Raises ``InputError`` on malformed input.
    """
    root = _sexpr(text)
    leaves: list[str] = []

    def build(node: list) -> Node:
        f = _fields(node)
        if "leaf" in f:
            raw = f.get("text", ["_!_!"])[0]
            leaves.append(raw[2:-2].strip() if raw.startswith("_!") else raw)
            return Node.leaf(len(leaves) - 1)
        kids = _children(node)
        if len(kids) < 2:
            raise InputError(f"{name}: inner node with {len(kids)} children")
        built = [build(k) for k in kids]
        marks = tuple(NUCLEUS if k[0] == "Nucleus" else SATELLITE for k in kids)
        labels = [_fields(k).get("rel2par", ["span"])[0] for k in kids]
        label = next((lab for lab in labels if lab != "span"), "joint-other")
        return Node.relate(from_gum(label), built, marks)

    tree_root = build(root)
    edus = []
    pos = 0
    sentence = 0
    for i, t in enumerate(leaves):
        edus.append(EDU(index=i, text=t, start=pos, end=pos + len(t), sentence=sentence))
        pos += len(t) + 1
        if _SENT_END.search(t):
            sentence += 1
    return DiscourseTree(text=" ".join(leaves), edus=tuple(edus), root=tree_root, parser="gold", meta={"doc": name})


def read_splits(gum_dir: Path | str = DEFAULT_GUM_DIR) -> dict[str, str]:
    """Return document name -> split (train/dev/test) from ``splits.tsv``."""
    path = Path(gum_dir) / "splits.tsv"
    if not path.is_file():
        raise InputError(f"GUM splits not found at {path}; pass --gum or set DTDIALOG_GUM_DIR")
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def genre_of(name: str) -> str:
    """Return the genre of a GUM document name such as ``GUM_academic_art``."""
    parts = name.split("_")
    return parts[1] if len(parts) > 2 else ""


def iter_gum(gum_dir: Path | str = DEFAULT_GUM_DIR, *, split: str | None = None,
             exclude_genres: frozenset[str] = frozenset()) -> Iterator[GumDocument]:
    """Yield GUM documents (sorted by name) from ``lisp_binary/*.dis``, optionally one split only."""
    splits = read_splits(gum_dir)
    folder = Path(gum_dir) / "lisp_binary"
    for path in sorted(folder.glob("*.dis")):
        name = path.stem
        doc_split = splits.get(name, "")
        genre = genre_of(name)
        if (split and doc_split != split) or genre in exclude_genres:
            continue
        try:
            tree = read_dis(path.read_text(encoding="utf-8"), name=name)
        except InputError as exc:
            raise InputError(f"{path}: {exc}") from None
        yield GumDocument(name=name, genre=genre, split=doc_split, tree=tree)
