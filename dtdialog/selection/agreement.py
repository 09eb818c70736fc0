"""Rhetorical agreement between a question part and a candidate answer (paper section 3.3).

A non-default relation R_q(EDU_q...) of the question part is *addressed* by the answer when
the answer has a non-default relation R_a(EDU_a...) such that

* R_a is listed for R_q in the compatibility table (data: ``resources/agreement_table.json``,
  or a user file), and
* the two relations share an entity: terms(EDUs of R_q) ∩ terms(EDUs of R_a) ≠ ∅, on stems of
  lemmas, noun phrases and car synonyms (``dtdialog.understanding.entities``). We compare the whole span of
  each relation (nucleus and satellite) since the paper's EDU_q1/EDU_a1 pairing does not say
  which side of each relation carries the entity.

The verdict is positive when the addressed fraction reaches ``ratio`` (1.0: all of them); the
score is that fraction scaled by the overlap strength; chains read like
``Contrast[replaced battery] -> Condition[no fuel pressure]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from dtdialog.understanding.entities import EntityNormalizer, short_phrase
from parsers.errors import ConfigError
from parsers.relations import RELATIONS, canonical, is_default
from parsers.tree import EDU, DiscourseTree, RelationInstance

#: Where the shared entity must be: in the compatible answer relation's own EDUs (the paper's rule), or
#: anywhere in the answer (a relaxed rule for parsers whose relation spans are short).
RELATION_SCOPE = "relation"
ANSWER_SCOPE = "answer"
OVERLAP_SCOPES = (RELATION_SCOPE, ANSWER_SCOPE)
BUILTIN_TABLE = Path(__file__).resolve().parent.parent / "resources" / "agreement_table.json"
#: An overlap of this many terms counts as full entity strength.
FULL_OVERLAP = 3


@dataclass
class AgreementResult:
    """The agreement of one answer with one question part."""

    verdict: bool
    score: float
    addressed: int
    required: int
    chains: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    overlap: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        # what ``dataclasses.asdict`` gives (fresh lists), without its deep copy of every string: a turn's trace
        # holds this for each of its 20 candidates shown
        return {"verdict": self.verdict, "score": self.score, "addressed": self.addressed, "required": self.required,
                "chains": list(self.chains), "missing": list(self.missing), "overlap": list(self.overlap)}


@dataclass(frozen=True)
class Requirement:
    """A question relation the answer must address, with the entity terms it must share."""

    relation: str
    edus: tuple[EDU, ...]
    terms: frozenset[str]

    def label(self, prefer: Iterable[str] = ()) -> str:
        preferred = frozenset(prefer)
        return self._plain_label if not preferred else f"{self.relation}[{short_phrase(self.edus, prefer=preferred)}]"

    @cached_property
    def _plain_label(self) -> str:
        """The label without preferred terms: the same for every candidate that misses this requirement."""
        return f"{self.relation}[{short_phrase(self.edus)}]"


@dataclass(frozen=True)
class AnswerRelation:
    relation: str
    edus: tuple[EDU, ...]
    terms: frozenset[str]


@dataclass(frozen=True)
class AnswerAnalysis:
    """An answer DT reduced to what agreement needs: its non-default relations and all its terms.

    ``tree`` is the DT it was made from, so whoever shows the answer's tree need not parse it again.
    """

    relations: tuple[AnswerRelation, ...]
    terms: frozenset[str]
    tree: DiscourseTree | None = field(default=None, compare=False, repr=False)


class AgreementTable:
    """Question relation -> the answer relations that address it (default relations never do)."""

    def __init__(self, rows: dict[str, Sequence[str]], *, why: dict[str, str] | None = None,
                 source: str = "<dict>") -> None:
        self.source = source
        self.rows: dict[str, tuple[str, ...]] = {}
        self.why = dict(why or {})
        for q_rel, answers in rows.items():
            q = self._relation(q_rel, source)
            if is_default(q):
                raise ConfigError(f"{source}: default relation {q} cannot be a row (it raises no issue)")
            if isinstance(answers, str) or not isinstance(answers, Sequence):
                raise ConfigError(f"{source}: row {q_rel!r} must list answer relations")
            targets = []
            for a_rel in answers:
                a = self._relation(a_rel, source)
                if is_default(a):
                    raise ConfigError(f"{source}: default relation {a} cannot address {q} (paper: it must be non-default)")
                targets.append(a)
            self.rows[q] = tuple(dict.fromkeys(targets))

    @staticmethod
    def _relation(name: Any, source: str) -> str:
        if not isinstance(name, str):
            raise ConfigError(f"{source}: relation names must be strings, got {name!r}")
        try:
            return canonical(name)
        except ConfigError:
            raise ConfigError(f"{source}: unknown relation {name!r}; known: {', '.join(RELATIONS)}") from None

    def addresses(self, question_relation: str, answer_relation: str) -> bool:
        """Return True when ``answer_relation`` addresses ``question_relation`` per the table."""
        return answer_relation in self.rows.get(question_relation, ())

    def to_dict(self) -> dict[str, Any]:
        return {"rows": {q: {"addressed_by": list(a), "why": self.why.get(q, "")} for q, a in self.rows.items()}}

    @classmethod
    def from_dict(cls, data: dict[str, Any], *, source: str = "<dict>") -> AgreementTable:
        """Return the table in ``{"rows": {Q: {"addressed_by": [...], "why": ...}}}`` (or ``{Q: [...]}``)."""
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: agreement table must be a JSON object")
        raw = data.get("rows", data)
        if not isinstance(raw, dict):
            raise ConfigError(f"{source}: 'rows' must be an object")
        rows: dict[str, Sequence[str]] = {}
        why: dict[str, str] = {}
        for q, spec in raw.items():
            if q.startswith("_"):
                continue
            if isinstance(spec, dict):
                rows[q] = spec.get("addressed_by", [])
                why[q] = str(spec.get("why", ""))
            else:
                rows[q] = spec
        if not rows:
            raise ConfigError(f"{source}: agreement table has no rows")
        table = cls(rows, why=why, source=source)
        table.why = {canonical(k): v for k, v in why.items()}
        return table

    @classmethod
    def load(cls, path: str | Path | None = None) -> AgreementTable:
        """Return the table in ``path`` (default: the built-in one); bad files raise ``ConfigError``."""
        source = Path(path) if path is not None else BUILTIN_TABLE
        try:
            data = json.loads(source.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read agreement table {source}: {exc.strerror}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"agreement table {source} is not valid JSON: {exc}") from None
        except RecursionError:
            raise ConfigError(f"agreement table {source} is not valid JSON (nested too deeply)") from None
        return cls.from_dict(data, source=str(source))


class RhetoricalAgreement:
    """Checks rhetorical agreement; thread-safe (immutable table, cached pure term functions)."""

    def __init__(self, *, table: AgreementTable | None = None, normalizer: EntityNormalizer | None = None,
                 ratio: float = 1.0, overlap_scope: str = RELATION_SCOPE) -> None:
        if not 0.0 <= ratio <= 1.0:
            raise ConfigError(f"agreement ratio must be in [0, 1], got {ratio}")
        if overlap_scope not in OVERLAP_SCOPES:
            raise ConfigError(f"overlap scope must be one of {', '.join(OVERLAP_SCOPES)}, got {overlap_scope!r}")
        self.overlap_scope = overlap_scope
        self.table = table or AgreementTable.load()
        self.normalizer = normalizer or EntityNormalizer()
        self.ratio = ratio

    def requirements(self, relations: Iterable[RelationInstance], *,
                     context_terms: Iterable[str] = ()) -> list[Requirement]:
        """Return one requirement per non-default question relation; ``context_terms`` join every one.

        Context terms are how a follow-up such as "It did at first" borrows the entities of
        the answer it replies to (pronouns carry none of their own).
        """
        extra = frozenset(context_terms)
        return [Requirement(relation=r.relation, edus=r.edus, terms=self.normalizer.terms_of_edus(r.edus) | extra)
                for r in relations if not is_default(r.relation)]

    def analyze(self, tree: DiscourseTree) -> AnswerAnalysis:
        """Return the non-default relations of an answer DT with their terms."""
        # terms per EDU once; a relation's terms are the union over its span (nested relations share EDUs)
        terms_of_edu, edus = self.normalizer.terms_of_edu, tree.edus
        per_edu = [terms_of_edu(e) for e in edus]
        rels = tuple(AnswerRelation(relation=node.relation or "", edus=edus[node.first: node.last + 1],
                                    terms=frozenset().union(*per_edu[node.first: node.last + 1]))
                     for node in tree.non_default_nodes())
        return AnswerAnalysis(relations=rels, terms=frozenset().union(*per_edu), tree=tree)

    def check(self, requirements: Sequence[Requirement], answer: AnswerAnalysis | DiscourseTree, *,
              fallback_terms: Iterable[str] = ()) -> AgreementResult:
        """Return the agreement of ``answer`` with ``requirements``.

        With no requirement (a factual question) the verdict is whether the answer shares any
        entity with ``fallback_terms`` (the question's terms), and the score its overlap strength.
        """
        view = answer if isinstance(answer, AnswerAnalysis) else self.analyze(answer)
        if not requirements:
            shared = self.normalizer.overlap(fallback_terms, view.terms)
            fallback = frozenset(fallback_terms)
            return AgreementResult(verdict=bool(shared) or not fallback,
                                   score=min(1.0, len(shared) / FULL_OVERLAP) if fallback else 1.0,
                                   addressed=0, required=0, overlap=sorted(shared))
        chains: list[str] = []
        missing: list[str] = []
        strengths: list[float] = []
        all_shared: set[str] = set()
        for req in requirements:
            best: tuple[int, AnswerRelation, frozenset[str]] | None = None
            for rel in view.relations:
                if not self.table.addresses(req.relation, rel.relation):
                    continue
                shared = req.terms & rel.terms
                if shared and (best is None or len(shared) > best[0]):
                    best = (len(shared), rel, shared)
            if best is None and self.overlap_scope == ANSWER_SCOPE:
                # relaxed: a compatible relation anywhere, entities shared with the answer as a whole
                shared = req.terms & view.terms
                compatible = [r for r in view.relations if self.table.addresses(req.relation, r.relation)]
                if shared and compatible:
                    best = (len(shared), compatible[0], shared)
            if best is None:
                missing.append(req.label())
                continue
            _, rel, shared = best
            all_shared |= shared
            strengths.append(min(1.0, len(shared) / FULL_OVERLAP))
            chains.append(f"{req.label(shared)} -> {rel.relation}[{short_phrase(rel.edus, prefer=shared)}]")
        addressed = len(strengths)
        fraction = addressed / len(requirements)
        strength = sum(strengths) / addressed if addressed else 0.0
        return AgreementResult(verdict=fraction >= self.ratio - 1e-9 and addressed > 0,
                               score=round(fraction * (0.7 + 0.3 * strength), 6),
                               addressed=addressed, required=len(requirements), chains=chains,
                               missing=missing, overlap=sorted(all_shared))
