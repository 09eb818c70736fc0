"""Reject: after "no, that didn't help", the next answer must be new and still fit the same part.

The next answer is ranked for the same DT-Q part, so its rhetorical agreement with that part counts as it did
for the first (a hard agreement filter would drop the right answer wherever the question's parse is off, as
on first steps). It must be new: not a near-duplicate of any answer already shown (the same Jaccard test the
candidate stage applies between hits). When none is left that the confidence rule accepts, the dialogue moves
on to the question's next part, or asks for the detail that would separate what remains.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from dtdialog.selection.stages.candidates import DUPLICATE_JACCARD, jaccard


def fresh_candidates(ranked: Sequence[Any], shown: Sequence[frozenset[str]],
                     terms_of: Callable[[Any], frozenset[str]], *, limit: int) -> list[Any]:
    """Return the first ``limit`` candidates of ``ranked`` (best first) that repeat none of the ``shown`` answers'
    terms: a turn only ever looks at the best few (the answer, its runner-up, the options)."""
    out = []
    for cand in ranked:
        terms = terms_of(cand)
        if any(jaccard(terms, seen) >= DUPLICATE_JACCARD for seen in shown):
            continue
        out.append(cand)
        if len(out) == limit:
            break
    return out


def next_part(part_index: int, n_parts: int) -> int | None:
    """Return the index of the question's part after ``part_index``, or None when it was the last."""
    return part_index + 1 if part_index + 1 < n_parts else None
