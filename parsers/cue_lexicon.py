"""The cue lexicon: relation + nuclearity statistics of discourse cues, derived from GUM train.

When two adjacent discourse units are joined, the parser describes the join by a
few cue features (the first word(s) of the right unit, the first word of the left
unit, the last word of the left unit, the clause type of each side's first EDU)
at a level (``s`` = inside a sentence, ``d`` = across sentences). The lexicon
holds, for each feature value seen in GUM train, the counts of the gold
``Relation|NUC`` labels of joins showing it; ``CueLexicon.predict`` combines them
naive-Bayes style. ``python -m parsers.build_lexicon`` rebuilds the shipped file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from parsers.errors import InputError
from parsers.nlp_base import AnalyzedText
from parsers.relations import ELABORATION, JOINT, SAME_UNIT

#: Openers that make a sentence-to-sentence join worth labelling from the lexicon; other
#: adjacent sentences are joined as Joint (on GUM dev the lexicon's guesses without
#: a marker were right about one time in ten, below the Joint baseline).
INTER_SENTENCE_MARKERS: frozenset[str] = frozenset({
    "however", "but", "so", "because", "then", "also", "therefore", "thus", "although", "though", "if", "when",
    "after", "before", "finally", "instead", "otherwise", "meanwhile", "still", "yet", "and", "or", "consequently",
    "hence", "nevertheless", "moreover", "furthermore", "additionally", "similarly", "likewise", "unless", "since",
    "while", "as",
    # replies and signposts whose GUM train labels are peaked (dev figures in docs/parsers.md)
    "yes", "no", "okay", "mhm", "right", "thank", "yeah", "image", "figure", "first",
})

#: The lexicon shipped with the package.
DEFAULT_LEXICON_PATH = Path(__file__).resolve().parent / "resources" / "cue_lexicon.json"
_VERBAL = frozenset({"VERB", "AUX"})


@dataclass(frozen=True)
class UnitView:
    """What the cue features need to know about one EDU: its words and its clause type."""

    words: tuple[str, ...]
    head_dep: str
    sent: int
    root_tag: str = ""  # fine POS tag of the root of the unit's sentence ("VBD": a past-tense narrative step)


def edu_view(doc: AnalyzedText, start: int, end: int) -> UnitView:
    """Return the ``UnitView`` of tokens ``[start, end)`` of ``doc``.

    ``head_dep`` is the dependency label of the unit's highest verb (``ROOT`` for a
    main clause), else of its highest token; ``frag`` when no token heads the unit.
    """
    toks = doc.tokens[start:end]
    words = tuple(t.text.lower() for t in toks if not t.is_punct)
    outside = [t for t in toks if t.head == t.i or not start <= t.head < end]
    dep = "frag"
    if any(t.head == t.i for t in toks):
        dep = "ROOT"
    else:
        verbs = [t for t in outside if t.pos in _VERBAL and not t.is_punct]
        heads = verbs or [t for t in outside if not t.is_punct]
        if heads and (verbs or len(heads) == 1):
            dep = heads[0].dep
            if dep == "dep" and verbs:
                dep = "conj"  # an unlabelled verb beside another is a coordination spaCy missed
    sent = next((t.sent for t in toks if not t.is_punct), toks[0].sent if toks else 0)
    root_tag = ""
    if 0 <= sent < len(doc.sentences):
        lo, hi = doc.sentences[sent]
        root_tag = next((t.tag for t in doc.tokens[lo:hi] if t.head == t.i), "")
    return UnitView(words=words, head_dep=dep, sent=sent, root_tag=root_tag)


def join_features(left: Sequence[UnitView], right: Sequence[UnitView]) -> list[str]:
    """Return the cue features of joining unit ``left`` (its EDUs) with the adjacent unit ``right``."""
    level = "s" if left[-1].sent == right[0].sent else "d"
    r_words = right[0].words
    l_words = left[0].words
    feats = [f"{level}|Rdep={right[0].head_dep}", f"{level}|Ldep={left[0].head_dep}"]
    if r_words:
        feats.append(f"{level}|R1={r_words[0]}")
        if len(r_words) > 1:
            feats.append(f"{level}|R2={r_words[0]} {r_words[1]}")
    if l_words:
        feats.append(f"{level}|L1={l_words[0]}")
    if left[-1].words:
        feats.append(f"{level}|Llast={left[-1].words[-1]}")
    # The clause type together with its opener separates e.g. "advcl+to" (purpose) from "advcl+when".
    feats.append(f"{level}|RdepR1={right[0].head_dep}+{r_words[0] if r_words else ''}")
    feats.append(f"{level}|Size={min(len(left), 3)}x{min(len(right), 3)}")
    return feats


def level_of(left: Sequence[UnitView], right: Sequence[UnitView]) -> str:
    """Return ``s`` when the join is inside one sentence, else ``d``."""
    return "s" if left[-1].sent == right[0].sent else "d"


@dataclass
class CueLexicon:
    """Label counts per cue feature, plus label totals per level; see the module docstring."""

    features: dict[str, dict[str, int]] = field(default_factory=dict)
    labels: dict[str, dict[str, int]] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    alpha: float = 0.5
    #: Weight of the label prior against the cue likelihoods: the cue features overlap (R1, R2 and RdepR1 share
    #: the opener), so naive Bayes over-counts them (the choice of 2 is in docs/parsers.md).
    prior_weight: float = 2.0

    def predict(self, feats: Sequence[str], level: str) -> tuple[str, str]:
        """Return the most likely ``(relation, nuclearity)`` for a join showing ``feats`` at ``level``.

        Falls back to Elaboration ``NS`` inside a sentence... or Joint ``NN`` when the level is unknown.
        """
        totals = self.labels.get(level)
        if not totals:
            return (ELABORATION, "NS") if level == "s" else (JOINT, "NN")
        n = sum(totals.values())
        best, best_score = "", -math.inf
        seen = [self.features[f] for f in feats if f in self.features]
        for label, count in sorted(totals.items()):
            score = self.prior_weight * math.log(count / n)
            for dist in seen:
                # Values per feature vary; a flat 50-way denominator keeps the smoothing comparable.
                score += math.log((dist.get(label, 0) + self.alpha) / (count + self.alpha * 50))
            if score > best_score:
                best, best_score = label, score
        relation, nuc = best.split("|")
        return relation, nuc

    def explain(self, feats: Sequence[str]) -> dict[str, dict[str, int]]:
        """Return the stored counts of each known feature in ``feats`` (for debugging and docs)."""
        return {f: self.features[f] for f in feats if f in self.features}

    # --- persistence --------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"meta": self.meta, "alpha": self.alpha, "prior_weight": self.prior_weight, "labels": self.labels,
                "features": self.features}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CueLexicon:
        try:
            return cls(features={k: dict(v) for k, v in data["features"].items()},
                       labels={k: dict(v) for k, v in data["labels"].items()},
                       meta=dict(data.get("meta", {})), alpha=float(data.get("alpha", 0.5)),
                       prior_weight=float(data.get("prior_weight", 2.0)))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise InputError(f"malformed cue lexicon: {exc}") from None

    def to_disk(self, path: Path | str) -> None:
        """Write the lexicon as JSON (``parsers.files.atomic_write``)."""
        from parsers.files import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True, indent=0))

    @classmethod
    def from_disk(cls, path: Path | str = DEFAULT_LEXICON_PATH) -> CueLexicon:
        """Return the lexicon stored at ``path``; ``InputError`` when missing or malformed."""
        path = Path(path)
        if not path.is_file():
            raise InputError(f"cue lexicon not found at {path}; rebuild it with python -m parsers.build_lexicon")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"malformed cue lexicon {path}: {exc}") from None
        return cls.from_dict(data)


SAME_UNIT_LABEL = (SAME_UNIT, "NN")
