"""How far two independent judges agree: on which questions state tried actions, and on each candidate's labels."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sklearn.metrics import cohen_kappa_score

from eval.jsonl import read_objects
from parsers.errors import InputError


@dataclass(frozen=True)
class LabelAgreement:
    """Agreement on one binary label: items both judged, share agreeing, Cohen's kappa."""

    label: str
    items: int
    agree: float
    kappa: float

    def to_dict(self) -> dict:
        return {"label": self.label, "items": self.items, "agree": round(self.agree, 3), "kappa": round(self.kappa, 3)}


@dataclass
class Agreement:
    """The two judges' agreement per label, and the items they disagree on (question id, candidate id, label)."""

    questions: int
    labels: list[LabelAgreement]
    disagreements: list[tuple[str, str, str]] = field(default_factory=list)


def read_judgments(path: str | Path) -> dict[str, dict]:
    """Return a judged JSONL file as question id -> judgment (raw, as the judge wrote it)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such judgments file")
    return {str(row.get("id")): row for _, row in read_objects(path)}


def agreement(first: dict[str, dict], second: dict[str, dict]) -> Agreement:
    """Return the agreement of two judgments over the questions both judged."""
    common = sorted(set(first) & set(second))
    if not common:
        raise InputError("the two judgments share no question")
    pairs: dict[str, tuple[list[bool], list[bool]]] = {"states_tried": ([], []), "relevant": ([], []),
                                                        "repeats_tried": ([], [])}
    disagreements = []
    for qid in common:
        a, b = first[qid], second[qid]
        _add(pairs, "states_tried", bool(a.get("states_tried")), bool(b.get("states_tried")), qid, "", disagreements)
        if not (a.get("states_tried") and b.get("states_tried")):
            continue
        theirs = {c["id"]: c for c in b.get("candidates", [])}
        for c in a.get("candidates", []):
            other = theirs.get(c["id"])
            if other is None:
                continue
            for label in ("relevant", "repeats_tried"):
                if isinstance(c.get(label), bool) and isinstance(other.get(label), bool):
                    _add(pairs, label, c[label], other[label], qid, c["id"], disagreements)
    labels = [_label(name, *values) for name, values in pairs.items() if values[0]]
    return Agreement(questions=len(common), labels=labels, disagreements=disagreements)


def _add(pairs, label, a, b, qid, cid, disagreements) -> None:
    pairs[label][0].append(a)
    pairs[label][1].append(b)
    if a != b:
        disagreements.append((qid, cid, label))


def _label(name: str, a: list[bool], b: list[bool]) -> LabelAgreement:
    agree = sum(x == y for x, y in zip(a, b, strict=True)) / len(a)
    # kappa is undefined when both judges gave one value throughout; they then agree completely
    kappa = 1.0 if len(set(a) | set(b)) == 1 else float(cohen_kappa_score(a, b))
    return LabelAgreement(label=name, items=len(a), agree=agree, kappa=kappa)
