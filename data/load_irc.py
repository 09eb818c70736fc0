"""Ubuntu IRC support threads JSONL (Kummerfeld et al. disentanglement data, ``../shared/data/support_dialogues``).

Asker turns become Q (the first) and C, helper turns become A; consecutive turns of one role are merged
and a leading ``nick:`` addressee is removed. ``meta["split"]`` keeps the record's split: ``train`` or ``dev``, the
held-out split the evaluation tests on (``test`` names it too).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from data.load_common import RecordErrors, iter_jsonl, normalize_space
from data.model import ANSWER, CUSTOMER, QUESTION, Dialogue, Turn

ROLE_OF = {"asker": "asker", "helper": "helper"}
#: Split name -> stored split: the data ships train and dev, and dev is the held-out split (``test`` is its alias).
SPLITS = {"train": "train", "dev": "dev", "test": "dev"}


def irc_split(name: object) -> str:
    """Return the stored split of a split name (none: ``train``); raises ``ValueError`` for another name."""
    if name is None or name == "":
        return "train"
    if str(name).strip().lower() not in SPLITS:
        raise ValueError(f"split {name!r}; expected one of {', '.join(SPLITS)}")
    return SPLITS[str(name).strip().lower()]


def load_irc(path: Path, errors: RecordErrors) -> list[Dialogue]:
    """Return one dialogue per thread; threads without turns, an asker first or a helper reply are reported."""
    dialogues: list[Dialogue] = []
    for lineno, record in iter_jsonl(path, errors):
        try:
            dialogues.append(_dialogue(record))
        except (ValueError, TypeError, AttributeError) as exc:
            errors.report(path, lineno, str(exc))
    return dialogues


def _dialogue(record: dict[str, Any]) -> Dialogue:
    thread_id = str(record.get("id") or "").strip()
    if not thread_id:
        raise ValueError("missing field 'id'")
    raw = record.get("turns")
    if not isinstance(raw, list) or not raw:
        raise ValueError("missing or empty 'turns'")
    speakers = {str(t.get("speaker")) for t in raw if isinstance(t, dict) and t.get("speaker")}
    turns: list[Turn] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ValueError(f"turns[{i}] is not an object")
        if item.get("role") not in ROLE_OF:
            raise ValueError(f"turns[{i}] has role {item.get('role')!r}; expected asker or helper")
        text = _strip_addressee(normalize_space(str(item.get("text") or "")), speakers)
        if not text:
            continue
        role = ANSWER if item["role"] == "helper" else (QUESTION if not turns else CUSTOMER)
        if not turns and role == ANSWER:
            raise ValueError("the thread starts with a helper turn; expected the asker's question first")
        if turns and (turns[-1].role == role or (turns[-1].role == QUESTION and role == CUSTOMER)):
            turns[-1] = Turn(turns[-1].role, f"{turns[-1].text}\n{text}")
        else:
            turns.append(Turn(role, text))
    if not any(t.role == ANSWER for t in turns):
        raise ValueError("the thread has no helper reply")
    prefix = thread_id.split("/", 1)[0] if "/" in thread_id else ""
    split = irc_split(record.get("split") or (prefix if prefix in SPLITS else None))
    meta = {"split": split, "speakers": sorted(speakers)}
    return Dialogue(id=f"irc-{thread_id}", turns=tuple(turns), meta=meta)


def _strip_addressee(text: str, speakers: set[str]) -> str:
    # "PPCUser: there's no ppc live cd" -> "there's no ppc live cd": the nick is addressing, not content.
    match = re.match(r"^([^\s:,]+)[:,]\s*", text)
    if match and match.group(1) in speakers:
        return text[match.end():]
    return text
