"""The plain code the entity-term shortcuts stand for, shared by the tests that check them against it."""

from __future__ import annotations


def plain_normalise(normalizer, stems) -> set[str]:
    """``EntityNormalizer._normalise`` as it was: the synonym scan trying every n-gram length, longest first."""
    synonyms, longest = normalizer._synonym_index()[:2]
    out, i = set(), 0
    while i < len(stems):
        for n in range(min(longest, len(stems) - i), 0, -1):
            key = tuple(stems[i:i + n])
            if key in synonyms:
                out.add(" ".join(synonyms[key]))
                out.update(t for t in synonyms[key] if t)
                if n > 1:
                    out.update(key)
                i += n
                break
        else:
            out.add(stems[i])
            i += 1
    return out
