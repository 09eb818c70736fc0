"""Stage 4: rhetorical agreement of every candidate with the step's requirements (paper section 3.3)."""

from __future__ import annotations

from dataclasses import dataclass

from dtdialog.selection.agreement import AgreementResult, RhetoricalAgreement
from dtdialog.selection.stages.candidates import Candidate, CandidatePool
from dtdialog.selection.stages.plan import StepPlan
from dtdialog.selection.stages.record import StepRecord


@dataclass(frozen=True)
class AgreedCandidate:
    """A candidate with its agreement verdict, chains and missing relations."""

    candidate: Candidate
    agreement: AgreementResult


def check_agreement(step: StepPlan, pool: CandidatePool, *, agreement: RhetoricalAgreement,
                    record: StepRecord) -> list[AgreedCandidate]:
    """Return every candidate of ``pool`` with its agreement, in pool order (none is dropped here)."""
    agreed = [AgreedCandidate(candidate=c, agreement=agreement.check(step.requirements, c.analysis,
                                                                     fallback_terms=step.fallback_terms))
              for c in pool.candidates]
    record.agreeing = sum(1 for a in agreed if a.agreement.verdict)
    return agreed
