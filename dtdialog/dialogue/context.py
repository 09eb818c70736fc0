"""What the dialogue's units read: answer selection (``SelectorPort``) and the manager's settings (``DialogueContext``).

``DialogueManager`` is the context: the units read its attributes on every call, so a caller that swaps the
manager's ``config``, ``scope`` or calibrator changes the next turn, as it always has.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from dtdialog.dialogue.abstain import ConfidenceRule
from dtdialog.dialogue.replies import Replies
from dtdialog.setup.engine_config import EngineConfig
from dtdialog.understanding.constraints import Constraint
from dtdialog.understanding.subtrees import QuestionPlan
from dtdialog.understanding.tried import TriedAction
from index.base import AnswerDocument
from parsers.tree import EDU, DiscourseTree

if TYPE_CHECKING:
    from dtdialog.selection.selector import RankOutcome
    from dtdialog.understanding.scope import ScopeGate


@runtime_checkable
class SelectorPort(Protocol):
    """What the manager needs from answer selection; ``AnswerSelector`` provides it.

    The manager never reaches into an index or a normaliser: documents, terms and constraint
    checks all come through here, so any selector with these methods can run sessions.
    """

    config: EngineConfig

    def plan(self, question: str) -> QuestionPlan: ...

    def rank_outcome(self, *, question: str | QuestionPlan, step: int = 0, followups: Sequence[str] = (),
                     exclude_ids: Sequence[str] = (), constraints: Sequence[str | Constraint] = (),
                     size: int = 10, context_ids: Sequence[str] = (),
                     tried: Sequence[TriedAction] = ()) -> RankOutcome: ...

    def document(self, doc_id: str) -> AnswerDocument | None: ...

    def terms_of_text(self, text: str) -> frozenset[str]: ...

    def terms_of_edus(self, edus: Sequence[EDU]) -> frozenset[str]: ...

    def violates(self, doc: AnswerDocument, constraints: Sequence[Constraint]) -> bool: ...

    def answer_edus(self, doc: AnswerDocument) -> Sequence[EDU]: ...

    def answer_terms(self, doc: AnswerDocument) -> frozenset[str]: ...

    def answer_tree(self, doc: AnswerDocument) -> DiscourseTree: ...

    def tried_in(self, text: str) -> list[TriedAction]: ...


class DialogueContext(Protocol):
    """The manager's parts every unit of a turn reads: selection, settings, wording, scope gate, confidence rule."""

    selector: SelectorPort
    config: EngineConfig
    replies: Replies
    scope: ScopeGate | None

    @property
    def rule(self) -> ConfidenceRule: ...
