"""What a rebuild of a SQLite index carries over from the index it replaces: answers added through the API and
the answers' version history.

A rebuild starts from a corpus file, which knows nothing of the answers an operator added or edited through
``POST /index/documents``. Dropping them silently would undo that work at the next nightly build, so every
rebuild (the CLI's and ``POST /index/rebuild``) reads them from the old file, under the build lock, and writes
them into the new one before the atomic swap: kept by default, or, when the caller asks to drop them, kept only
in the history, where ``restore`` can bring one back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from index.base import AnswerDocument, check_id
from parsers.errors import InputError

#: What a rebuild does with the answers added through the API.
API_ANSWER_POLICIES = ("keep", "drop")


def is_api_answer(doc: AnswerDocument) -> bool:
    """Return True for an answer that was added or replaced through the API."""
    return (doc.meta or {}).get("source") == "api"


def _safe_ids(doc: AnswerDocument) -> bool:
    try:
        check_id(doc.id)
        check_id(doc.dialogue_id, field="dialogue_id")
    except InputError:
        return False
    return True


@dataclass
class CarryOver:
    """The builder's finish step of a rebuild: the old history, then the API answers (kept, or only into the history).

    An API answer whose id is no longer a safe id (added before ids were checked) cannot be stored again; it is
    moved into the history like the others with ``drop`` rather than failing the whole rebuild.
    """

    api_answers: list[AnswerDocument] = field(default_factory=list)
    past: list[Any] = field(default_factory=list)
    drop: bool = False
    kept: int = 0

    @property
    def dropped(self) -> int:
        """Return how many API answers went only into the history."""
        return len(self.api_answers) - self.kept

    def __call__(self, new_index: Any) -> None:
        new_index.import_history(self.past)
        keep = [] if self.drop else [d for d in self.api_answers if _safe_ids(d)]
        kept_ids = {d.id for d in keep}
        for doc in self.api_answers:
            if doc.id not in kept_ids:
                new_index.keep_version(doc)  # dropped, not lost: ``restore`` brings a safe one back
        if keep:
            # added after the corpus: an answer the API replaced stays replaced, the corpus text goes to the history
            new_index.add(keep)
        self.kept = len(keep)


def read_carry_over(out: str | Path, *, api_answers: str = "keep") -> CarryOver:
    """Return what a rebuild of ``out`` must carry over from the index there now (nothing when there is none).

    Call it holding the build lock of ``out``, so that no API write lands in the old file after it was read.
    """
    from index.index_files import is_index_file
    from index.sqlite_index import SqliteIndex

    if api_answers not in API_ANSWER_POLICIES:
        raise InputError(f"api_answers must be one of {', '.join(API_ANSWER_POLICIES)}, got {api_answers!r}")
    if not is_index_file(out):
        return CarryOver(drop=api_answers == "drop")
    with SqliteIndex(out) as old:
        return CarryOver(api_answers=[d for d in old.documents() if is_api_answer(d)], past=old.export_history(),
                         drop=api_answers == "drop")
