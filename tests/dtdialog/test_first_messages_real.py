"""Real first messages are read as messages: no courtesy word or mention turns a problem into small talk.

Every opening of the shared sets - the mechanics questions (the title alone, as a chat user types it, and with
its body), the Reddit car posts, the Twitter and IRC first customer turns - must open a question. Posts longer
than one turn's limit get the "too long" prompt instead; they are counted apart, never misrouted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dtdialog.dialogue import transitions
from dtdialog.dialogue.session import NEW
from dtdialog.understanding import intents
from eval.datasets import load_eval_set
from eval.out_of_scope import reddit_texts

pytestmark = pytest.mark.shared_data


def _misrouted(texts: list[str]) -> tuple[list[str], int]:
    """Return (the texts that would not open a question, how many were over the turn limit)."""
    bad, too_long = [], 0
    for text in texts:
        clean, problem = intents.sanitize(text, max_chars=intents.MAX_TURN_CHARS)
        if problem == intents.TOO_LONG:
            too_long += 1
        elif problem is None and not transitions.opens_question(NEW, intents.classify(clean, opening=True)):
            bad.append(clean[:120])
    return bad, too_long


def _mechanics(shared_data: Path) -> list[str]:
    rows = [json.loads(line) for line in (shared_data / "mechanics_qa" / "mechanics_qa_dev.jsonl").open(encoding="utf-8")]
    return [r["title"] for r in rows] + [f"{r['title']}\n{r['body']}" for r in rows]


def test_mechanics_openings_all_open_a_question(shared_data):
    bad, _ = _misrouted(_mechanics(shared_data))
    assert bad == []


def test_reddit_car_posts_all_open_a_question(shared_data):
    texts = [text for _, text, _ in reddit_texts(shared_data)]
    assert len(texts) > 1500
    bad, _ = _misrouted(texts)
    assert bad == []


@pytest.mark.parametrize("name", ["twitter", "irc"])
def test_first_customer_turns_all_open_a_question(shared_data, name):
    texts = [d.question for d in load_eval_set(name, data_dir=shared_data).dialogues]
    bad, _ = _misrouted(texts)
    assert bad == [], f"{len(bad)} of {len(texts)}"
