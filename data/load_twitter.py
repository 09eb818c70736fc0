"""Twitter customer-care conversations (IBM document-prediction data, ``../shared/data/support_dialogues``).

The file is a JSON array (JSONL also accepted). ``dialogContent`` turns by the client become Q (the first)
and C; agent turns become A; the final ``agentURL.url_utterance`` is the last A. Leading ``@handle``
mentions are removed and consecutive turns of one role are merged.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from data.load_common import RecordErrors, iter_json_records, normalize_space
from data.model import ANSWER, CUSTOMER, QUESTION, Dialogue, Turn

_LEADING_MENTIONS = re.compile(r"^(?:@\w+[\s,:]*)+")


def load_twitter(path: Path, errors: RecordErrors) -> list[Dialogue]:
    """Return one dialogue per conversation; conversations without a client turn or final reply are reported."""
    dialogues: list[Dialogue] = []
    for number, (lineno, record) in enumerate(iter_json_records(path, errors), start=1):
        try:
            dialogues.append(_dialogue(record, number, path))
        except (ValueError, TypeError, AttributeError) as exc:
            errors.report(path, lineno, str(exc))
    return dialogues


def _dialogue(record: dict[str, Any], number: int, path: Path) -> Dialogue:
    content = record.get("dialogContent")
    if not isinstance(content, list) or not content:
        raise ValueError("missing or empty 'dialogContent'")
    pairs: list[tuple[str, str]] = []
    for i, message in enumerate(content):
        if not isinstance(message, dict):
            raise ValueError(f"dialogContent[{i}] is not an object")
        speaker = next((k for k in message if k.startswith(("client", "agent"))), None)
        if speaker is None:
            raise ValueError(f"dialogContent[{i}] has neither a client nor an agent key")
        text = clean_tweet(message.get("message"))
        if text:
            pairs.append(("client" if speaker.startswith("client") else "agent", text))
    agent_url = record.get("agentURL")
    if not isinstance(agent_url, dict):
        raise ValueError("missing 'agentURL'")
    final = clean_tweet(agent_url.get("url_utterance"))
    if not final:
        raise ValueError("missing or empty 'agentURL.url_utterance'")
    pairs.append(("agent", final))
    if pairs[0][0] != "client":
        raise ValueError("the conversation starts with an agent turn; expected the customer's question first")
    turns: list[Turn] = []
    for speaker, text in pairs:
        role = ANSWER if speaker == "agent" else (QUESTION if not turns else CUSTOMER)
        if turns and (turns[-1].role == role or (turns[-1].role == QUESTION and role == CUSTOMER)):
            turns[-1] = Turn(turns[-1].role, f"{turns[-1].text}\n{text}")
        else:
            turns.append(Turn(role, text))
    header = record.get("dialogHeader") if isinstance(record.get("dialogHeader"), dict) else {}
    session = str(header.get("sessionID") or f"{path.stem}-{number}")
    meta = {"source": path.name, "company": header.get("company"), "url": agent_url.get("url"),
            "doc_id": agent_url.get("doc_id")}
    return Dialogue(id=f"twitter-{session}", turns=tuple(turns), meta=meta)


def clean_tweet(message: Any) -> str:
    """Return a tweet's text with HTML entities decoded and the leading ``@handle`` mentions removed."""
    if message is None:
        return ""
    if not isinstance(message, str):
        raise ValueError(f"message is {type(message).__name__}, expected text")
    return normalize_space(_LEADING_MENTIONS.sub("", html.unescape(message).strip()))
