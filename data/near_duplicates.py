"""Near-identical paragraphs in a corpus: pairs of texts that share most of their word 8-grams.

A corpus written by hand drifts into templates ("Start by checking the battery ...") when it grows; the built-in
corpus's test uses this to keep every answer its own. Shingles are lower-cased word 8-grams; two texts are near
duplicates when their Jaccard similarity reaches ``threshold``. Candidate pairs come from an inverted index of
shingles, so a corpus of thousands of texts is compared in seconds.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Sequence

SHINGLE = 8
THRESHOLD = 0.3
_WORD = re.compile(r"[a-z0-9']+")


def shingles(text: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    """Return the word ``size``-grams of ``text`` (a text shorter than ``size`` words is one shingle)."""
    words = _WORD.findall(text.lower())
    if len(words) <= size:
        return frozenset({tuple(words)}) if words else frozenset()
    return frozenset(tuple(words[i:i + size]) for i in range(len(words) - size + 1))


def near_duplicates(texts: Sequence[str], *, threshold: float = THRESHOLD) -> list[tuple[int, int, float]]:
    """Return ``(i, j, jaccard)`` for every pair of ``texts`` at or above ``threshold``, most similar first."""
    sets = [shingles(t) for t in texts]
    index: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i, s in enumerate(sets):
        for sh in s:
            index[sh].append(i)
    shared: Counter[tuple[int, int]] = Counter()
    for owners in index.values():
        if 1 < len(owners) <= 50:  # a shingle in more than 50 texts is a stock phrase, not a copied paragraph
            for a in range(len(owners)):
                for b in range(a + 1, len(owners)):
                    shared[(owners[a], owners[b])] += 1
    out = []
    for (i, j), n in shared.items():
        union = len(sets[i]) + len(sets[j]) - n
        score = n / union if union else 0.0
        if score >= threshold:
            out.append((i, j, round(score, 3)))
    return sorted(out, key=lambda x: -x[2])
