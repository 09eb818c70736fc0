"""Bound what one text can cost the parser, in one linear pass before any NLP runs.

spaCy's tokenizer splits affixes off a whitespace-free run one character at a time, re-scanning the run each
time: a 4,000-character run of brackets, quotes, dots or emoji takes seconds, while the same characters spread over
words take milliseconds. Brackets nested thousands deep also make the segmenter and the tree as deep. Text that
nobody writes to be read, so shaping it loses nothing a reader would miss:

* a run of more than ``MAX_RUN`` characters without whitespace is cut into pieces of ``MAX_RUN`` (a long URL is
  still one line of text to a reader, and its words stay words);
* brackets nested deeper than ``MAX_NESTING`` are dropped (their text stays);
* a character other than a letter or digit repeated more than ``MAX_REPEAT`` times in a row is kept
  ``MAX_REPEAT`` times ("!!!!!!!!" reads as "!!!").
"""

from __future__ import annotations

import re

#: Characters in a whitespace-free run before a space is put in (a 64-character URL path stays whole).
MAX_RUN = 64
#: Bracket depth kept; deeper brackets are dropped, their text kept.
MAX_NESTING = 8
#: Times a character other than a letter or digit may repeat in a row.
MAX_REPEAT = 3
_OPEN, _CLOSE = "([{", ")]}"
_REPEATS = re.compile(rf"([^\w\s])\1{{{MAX_REPEAT},}}")
_LONG_RUN = re.compile(rf"\S{{{MAX_RUN + 1},}}")


def nesting_depth(text: str) -> int:
    """Return the deepest bracket nesting of ``text`` (unbalanced closers count as nothing)."""
    depth = deepest = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif ch in _CLOSE and depth:
            depth -= 1
    return deepest


def _flatten(text: str, limit: int) -> str:
    out: list[str] = []
    depth = 0
    for ch in text:
        if ch in _OPEN:
            depth += 1
            if depth > limit:
                continue
        elif ch in _CLOSE and depth:
            depth -= 1
            if depth >= limit:
                continue
        out.append(ch)
    return "".join(out)


def _cut(match: re.Match[str]) -> str:
    run = match.group(0)
    return " ".join(run[i:i + MAX_RUN] for i in range(0, len(run), MAX_RUN))


def bound_parse_cost(text: str) -> str:
    """Return ``text`` with repeats collapsed, brackets deeper than ``MAX_NESTING`` dropped and over-long
    whitespace-free runs cut; text within the bounds comes back unchanged (the same object)."""
    if _REPEATS.search(text):
        text = _REPEATS.sub(lambda m: m.group(1) * MAX_REPEAT, text)
    # counting opening brackets is C-speed; the character walk runs only on text that could nest too deep
    if sum(text.count(c) for c in _OPEN) > MAX_NESTING and nesting_depth(text) > MAX_NESTING:
        text = _flatten(text, MAX_NESTING)
    return _LONG_RUN.sub(_cut, text) if _LONG_RUN.search(text) else text
