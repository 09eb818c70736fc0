# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, cdivision=True
"""The SG feature's phrase alignment (``syntactic_generalization._align_python``), compiled.

Built at install when a C compiler is there (``setup.py``, optional); the Python alignment runs otherwise. It is
the same algorithm on the same IEEE doubles, so it returns the same path: a test checks the two against each
other on real and generated phrase pairs. Why compiled: a long real question aligns ~900 phrase pairs per
turn, each a small table in pure Python (~6 us), ~10% of such a turn.

The final score (``sum`` of the kept weights) is left to the caller: Python's ``sum`` of floats is not a plain
left-to-right loop on every version, and the score must be the one the Python alignment gives.
"""

from libc.math cimport fabs
from libc.stdlib cimport free, malloc


cdef inline bint _isclose(double a, double b) noexcept:
    # math.isclose(a, b) at its defaults (rel_tol 1e-9, abs_tol 0), computed as CPython does
    cdef double diff
    if a == b:
        return True
    diff = fabs(b - a)
    return diff <= fabs(1e-9 * b) or diff <= fabs(1e-9 * a)


def align_path(tuple l1, tuple t1, list same, list star, list nominal, tuple l2, tuple t2,
               frozenset nominal_pos, frozenset content_pos):
    """Return ``(lemmas, pos, weights)`` of the best monotone alignment of two same-type phrases, edge wildcards
    trimmed, or None when no real content word is left. ``same``/``star``/``nominal`` are the first phrase's word
    weights (``_word_weights``)."""
    cdef Py_ssize_t n = len(l1), m = len(l2), width = m + 1, i, j, start, end
    cdef double score, right, diagonal
    # best[i * width + j]: the best weight aligning l1[i:] with l2[j:]; compatible/equal: per (i, j), row-major
    cdef double *best = <double *> malloc((n + 1) * width * sizeof(double))
    cdef char *compatible = <char *> malloc(n * m + 1)
    cdef char *equal = <char *> malloc(n * m + 1)
    cdef double *weight_same = <double *> malloc((n + 1) * sizeof(double))
    cdef double *weight_star = <double *> malloc((n + 1) * sizeof(double))
    cdef char *nominal2 = <char *> malloc(m + 1)
    cdef bint nominal_i
    cdef object lemma_i, pos_i
    try:
        if not (best and compatible and equal and weight_same and weight_star and nominal2):
            raise MemoryError()
        for j in range(m):
            nominal2[j] = t2[j] in nominal_pos
        for i in range(n):
            lemma_i, pos_i, nominal_i = l1[i], t1[i], nominal[i]
            weight_same[i], weight_star[i] = same[i], star[i]
            for j in range(m):
                compatible[i * m + j] = t2[j] == pos_i or (nominal_i and nominal2[j])
                equal[i * m + j] = l2[j] == lemma_i
        for j in range(width):
            best[n * width + j] = 0.0
        for i in range(n - 1, -1, -1):
            best[i * width + m] = 0.0
            for j in range(m - 1, -1, -1):
                # max(below, right), then the diagonal: a strict > keeps the first on ties, as the Python does
                score = best[(i + 1) * width + j]
                right = best[i * width + j + 1]
                if right > score:
                    score = right
                if compatible[i * m + j]:
                    diagonal = (weight_same[i] if equal[i * m + j] else weight_star[i]) + best[(i + 1) * width + j + 1]
                    if diagonal > score:
                        score = diagonal
                best[i * width + j] = score
        lemmas, pos, weights = [], [], []
        i = j = 0
        while i < n and j < m:
            diagonal = weight_same[i] if equal[i * m + j] else weight_star[i]
            if compatible[i * m + j] and _isclose(best[i * width + j], diagonal + best[(i + 1) * width + j + 1]):
                lemmas.append(l1[i] if equal[i * m + j] else "*")
                pos.append(t1[i])
                weights.append(diagonal)
                i += 1
                j += 1
            elif _isclose(best[i * width + j], best[(i + 1) * width + j]):
                i += 1
            else:
                j += 1
    finally:
        free(best)
        free(compatible)
        free(equal)
        free(weight_same)
        free(weight_star)
        free(nominal2)
    start, end = 0, len(lemmas)
    while start < end and lemmas[start] == "*":
        start += 1
    while end > start and lemmas[end - 1] == "*":
        end -= 1
    for i in range(start, end):
        if lemmas[i] != "*" and pos[i] in content_pos:
            return tuple(lemmas[start:end]), tuple(pos[start:end]), weights[start:end]
    return None
