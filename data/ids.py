"""Dialogue ids for a team's own files: the file's explicit ``id`` when it has one, else one derived from content.

A derived id is ``{file stem}-{digest of the normalised turn texts}``, so it survives adding, removing and
reordering other rows; an answer's id is then ``{dialogue id}#{turn position}`` (``Dialogue.answer_id``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

#: What an explicit id may hold: ``index.base.ID_REGEX`` without ``#``, which separates the answer's turn position.
EXPLICIT_ID = re.compile(r"[A-Za-z0-9._:/@~-]+")
#: Hex digits of a derived id's digest: 40 bits, so a clash needs about a million answers to become likely.
DIGEST_CHARS = 10
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def content_digest(texts: Sequence[str]) -> str:
    """Return the short digest of ``texts`` with case and whitespace normalised (a respaced row keeps its id)."""
    normalised = "\x1f".join(" ".join(text.casefold().split()) for text in texts)
    return hashlib.sha256(normalised.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def id_prefix(stem: str) -> str:
    """Return a file stem made safe for an id (``my faq`` -> ``my_faq``)."""
    return _UNSAFE.sub("_", stem).strip("_") or "row"


def explicit_id_problem(value: str) -> str | None:
    """Return why ``value`` cannot be an explicit id (empty, or a character outside ``EXPLICIT_ID``), or None."""
    if not value:
        return "empty id"
    if not EXPLICIT_ID.fullmatch(value):
        return f"id {value!r} may hold only letters, digits and ._:/@~- (no spaces, no '#')"
    return None


@dataclass
class FileIds:
    """The ids taken in one file: an explicit id used twice is refused, a derived one is made unique (identical
    rows get ``-2``, ``-3``... after their shared digest). ``claim`` records an id once its record is accepted."""

    prefix: str
    #: id -> the line of the record that holds it
    lines: dict[str, int] = field(default_factory=dict)

    def explicit(self, value: str) -> str:
        """Return ``value`` if it can be the next record's id; raises ``ValueError`` saying why it cannot."""
        problem = explicit_id_problem(value)
        if problem is None and value in self.lines:
            problem = f"id {value!r} is used twice (first on line {self.lines[value]})"
        if problem:
            raise ValueError(problem)
        return value

    def derived(self, texts: Sequence[str]) -> str:
        """Return the content id of a record whose turns are ``texts``, unique among the ids claimed so far."""
        base = f"{self.prefix}-{content_digest(texts)}"
        candidate, n = base, 1
        while candidate in self.lines:
            n += 1
            candidate = f"{base}-{n}"
        return candidate

    def claim(self, value: str, line: int) -> None:
        self.lines[value] = line
