"""Hybrid retrieval and learned ranking: dense + lexical candidates, a scikit-learn ranker over named features.

* ``HybridGenerator`` - union of the lexical and dense top-k (a ``CandidateGenerator``);
* ``LearnedScorer`` / ``RankerModel`` - the shipped model as a ``CandidateScorer``;
* ``features`` - the named features; ``signals`` - how they are computed from a step;
* ``factory`` - the learned ranking parts; ``dtdialog.setup.assembly.build_engine`` joins them into an engine, and
  falls back to the rules with one logged warning when the ``[dense]`` extra or the vectors are missing.

Heavy imports (scikit-learn, torch) happen only when these are used.
"""

from __future__ import annotations

from dtdialog.ranking.factory import ranking_status

__all__ = ["ranking_status"]
