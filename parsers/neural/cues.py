"""Explicit discourse cues as inputs of the neural parser's tree heads (the cue-aware relation head).

The cue words are the project's connective list (``parsers.cue_lexicon.INTER_SENTENCE_MARKERS``) plus the
unit openers of the shipped cue lexicon that open many GUM train joins, mostly non-default ones ("to", "by",
"without", "despite", ...). A model stores the list it was trained with, so a later lexicon change cannot shift
its inputs. Each EDU gets two one-hot blocks over the list: the cue words among its first ``OPENING`` words,
and its last word; a split ``(i, k, j)`` reads them at the four EDUs bounding its two spans.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parsers.nlp_base import Token
from parsers.relations import is_default

#: Words at an EDU's start read for cues ("and so", "but still": the connective is often second).
OPENING = 2
#: A lexicon opener joins the cue words when it opens at least this many train joins at one level...
MIN_OPENER_COUNT = 15
#: ...of which at least this share carry a non-default relation (the relations DT-Q splits on).
MIN_NON_DEFAULT = 0.7
#: EDUs a split's cues are read at: the first and last EDU of the left span, then of the right span.
BOUNDARY_EDUS = 4


def cue_words(lexicon=None) -> list[str]:
    """Return the sorted cue words: the connective list plus the lexicon's strongly non-default openers."""
    from parsers.cue_lexicon import INTER_SENTENCE_MARKERS, CueLexicon

    lexicon = lexicon if lexicon is not None else CueLexicon.from_disk()
    words = set(INTER_SENTENCE_MARKERS)
    for feature, counts in lexicon.features.items():
        _, _, rest = feature.partition("|")
        if not rest.startswith("R1="):
            continue
        total = sum(counts.values())
        non_default = sum(c for label, c in counts.items() if not is_default(label.split("|")[0]))
        if total >= MIN_OPENER_COUNT and non_default >= MIN_NON_DEFAULT * total:
            words.add(rest[3:])
    return sorted(words)


def edu_cues(tokens: Sequence[Token], bounds: Sequence[tuple[int, int]], words: Sequence[str]) -> np.ndarray:
    """Return per EDU ``[start, end)`` the one-hot cue words of its opening and of its last word
    (``2 * len(words)`` columns; punctuation is skipped)."""
    index = {w: c for c, w in enumerate(words)}
    n = len(words)
    out = np.zeros((len(bounds), 2 * n), dtype=np.float32)
    for r, (a, b) in enumerate(bounds):
        text = [t.text.lower() for t in tokens[a:b] if not t.is_punct and not t.text.isspace()]
        for w in text[:OPENING]:
            if w in index:
                out[r, index[w]] = 1.0
        if text and text[-1] in index:
            out[r, n + index[text[-1]]] = 1.0
    return out


def pair_cues(cues: np.ndarray, i: np.ndarray, k: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Return the cue inputs of splits ``(i, k, j)``: the EDU cues at ``i``, ``k``, ``k+1`` and ``j``."""
    return np.concatenate([cues[i], cues[k], cues[k + 1], cues[j]], axis=1)


def pair_cue_dim(n_words: int) -> int:
    """Return the width of ``pair_cues`` for ``n_words`` cue words."""
    return BOUNDARY_EDUS * 2 * n_words
