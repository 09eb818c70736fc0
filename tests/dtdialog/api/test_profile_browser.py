"""A finance FAQ bot speaks finance everywhere: the CLI, the API and the chat page in Debian Chromium.

The index is built from ../shared/data/faq with a finance profile written here; no car word may appear in what the
bot says (CLI transcript, API JSON) or in the page's title and visible text after a chat turn.
"""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from api_helpers import keep_session_tokens

from dtdialog.cli import main

CAR_WORDS = re.compile(r"\b(car|cars|vehicle|engine|mechanic)\b", re.IGNORECASE)
PROFILE = """\
name: brokerage assistant
domain: investment account
greeting: "Hi! Ask me about your investment account - logging in, transfers, statements or taxes."
page_title: Brokerage account help
placeholder: "e.g. I cannot log in to my account although I reset my password."
"""
# The FAQ's one car word is a "tax-advantaged retirement savings vehicle" in an IRA answer: the questions stay off
# IRAs, so every car word found would be the bot's own wording.
QUESTION = "How do I reset my password if I forgot my username?"
TURNS = ["hello", QUESTION, "xqzt vbnm plkj wrtz", "I want to talk to a human"]

pytestmark = [pytest.mark.browser, pytest.mark.shared_data, pytest.mark.slow]


def _no_car_words(text: str, where: str) -> None:
    found = sorted({m.group(0) for m in CAR_WORDS.finditer(text)})
    assert not found, f"car wording {found} in {where}: {text[:2000]}"


@pytest.fixture(scope="module")
def faq_csv(shared_data: Path) -> Path:
    path = shared_data / "faq" / "fidelity_faq_answer_anatomy.csv"
    if not path.is_file():
        pytest.skip(f"the finance FAQ is not at {path}")
    return path


def test_finance_faq_profile_shows_no_car_wording(faq_csv, browser, tmp_path, monkeypatch, capsys):
    from eval.load_test import local_server
    from index.dense import dense_available

    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    profile = tmp_path / "finance.yaml"
    profile.write_text(PROFILE, encoding="utf-8")
    index = tmp_path / "faq.sqlite"
    build = ["index", "build", "--corpus", str(faq_csv), "--format", "csv", "--profile", str(profile),
             "--out", str(index), "--quiet"]
    # with the vectors made once here, the CLI and the server both rank with the default (learned) ranker
    assert main(build + (["--dense"] if dense_available() else [])) == 0
    built = capsys.readouterr()
    _no_car_words(built.out + built.err, "the index build's report")

    # the CLI: greeting, small talk, an answer, gibberish, the hand-off
    script = tmp_path / "turns.txt"
    script.write_text("\n".join(TURNS) + "\n", encoding="utf-8")
    assert main(["chat", "--index", str(index), "--script", str(script), "--quiet"]) == 0
    chat = capsys.readouterr()
    assert chat.out.startswith("bot> Hi! Ask me about your investment account")
    assert chat.out.count("bot> ") == len(TURNS) + 1
    _no_car_words(chat.out + chat.err, "the CLI chat")

    with local_server(index=index, startup_timeout=900, workdir=tmp_path) as url:
        # the API: its profile, a session and every turn's JSON (with the explanation the page asks for)
        bodies = []
        with keep_session_tokens(httpx.Client(base_url=url, timeout=120)) as client:
            profile_json = client.get("/profile").json()
            assert profile_json["title"] == "Brokerage account help"
            bodies.append(client.get("/profile").text)
            session = client.post("/sessions")
            bodies.append(session.text)
            sid = session.json()["session_id"]
            for text in TURNS:
                turn = client.post(f"/sessions/{sid}/messages", params={"explain": "true"}, json={"text": text})
                assert turn.status_code == 200, turn.text
                bodies.append(turn.text)
            bodies.append(client.get(f"/sessions/{sid}").text)
        for body in bodies:
            _no_car_words(body, "an API response")

        # the page: title, heading, greeting and placeholder from the profile, then a chat turn
        page = browser.new_page(bypass_csp=True, viewport={"width": 1400, "height": 1000})
        page.goto(url + "/")
        page.wait_for_load_state("networkidle")
        page.locator("#greeting").wait_for()
        assert page.title() == "Brokerage account help"
        assert page.locator("#greeting").inner_text() == profile_json["greeting"]
        assert page.locator("#message").get_attribute("placeholder") == profile_json["placeholder"]
        page.keyboard.type(QUESTION)
        page.keyboard.press("Enter")
        page.locator("#transcript li.msg.bot").first.wait_for(timeout=120_000)
        page.wait_for_load_state("networkidle")
        _no_car_words(page.title(), "the page title")
        _no_car_words(page.locator("body").inner_text(), "the page's visible text")
        page.close()
