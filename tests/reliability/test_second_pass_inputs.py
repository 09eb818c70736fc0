"""Second reliability pass: inputs that still got through, each reproduced as the probe found it.

* entity-first stripping was bypassed by entities without their ``;`` (``&ltimg ...&gt``, ``&#60img ...&#62``);
* a lone surrogate in a conversation-test file (YAML or JSONL) or undecodable bytes typed into ``chat`` reached
  the encoder and ended in a traceback or "internal error (TypeError)";
* the chat page had no Content-Security-Policy and could be framed.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dtdialog.understanding import intents
from parsers.text_input import clean_text, strip_html

PAYLOADS = ["&ltimg src=x onerror=alert(1)&gt my brakes squeal", "&#60img src=x onerror=alert(1)&#62 my brakes squeal",
            "&#x3Cimg src=x onerror=alert(1)&#x3E my brakes squeal", "&ampltimg src=x onerror=alert(1)&ampgt my brakes"]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_entities_without_a_semicolon_never_come_out_as_markup(payload):
    for out in (strip_html(payload), clean_text(payload)):
        assert "<img" not in out.replace(" ", "") and "onerror" not in out, out
        assert "my brakes" in out


def test_plain_text_with_ampersands_is_left_alone():
    text = "AT&T said R&D checked it, fish & chips, a < b"
    assert strip_html(text) == text


def test_a_lone_surrogate_is_cleaned_from_a_turn():
    clean, problem = intents.sanitize("my car \ud800 stalls", max_chars=100)
    assert problem is None and clean == "my car stalls"
    clean.encode("utf-8")  # what every encoder and the session store need


@pytest.mark.parametrize("suffix, body", [
    (".yaml", 'tests:\n  - name: s\n    turns:\n      - customer: "my car \\ud800 stalls at idle"\n'),
    (".jsonl", json.dumps({"name": "s", "turns": [{"customer": "my car \ud800 stalls at idle"}]}) + "\n"),
])
def test_a_conversation_test_file_with_a_lone_surrogate_runs(tmp_path, suffix, body):
    path = tmp_path / f"t{suffix}"
    path.write_text(body, encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "dtdialog", "test", str(path), "--ranker", "rules", "--quiet"],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert "Traceback" not in run.stderr and "TypeError" not in run.stdout + run.stderr, run.stderr[-2000:]
    assert run.returncode in (0, 1) and "1 test(s)" in run.stdout


def test_undecodable_bytes_typed_into_chat_get_an_answer_not_an_internal_error(tmp_path):
    run = subprocess.run([sys.executable, "-m", "dtdialog", "chat", "--ranker", "rules", "--quiet"],
                         input=b"my car \xff\xfe stalls at idle when it is warm\n", capture_output=True, timeout=600,
                         cwd=tmp_path)
    out = run.stdout.decode("utf-8", "replace") + run.stderr.decode("utf-8", "replace")
    assert run.returncode == 0 and "internal error" not in out and "Traceback" not in out, out[-2000:]


def test_the_chat_page_sends_a_content_security_policy_and_may_not_be_framed():
    from fastapi.testclient import TestClient

    from dtdialog.api.app import PAGE_HEADERS, create_app

    with TestClient(create_app(), base_url="http://localhost") as client:
        page = client.get("/")
    assert page.status_code == 200
    assert page.headers["X-Frame-Options"] == "DENY"
    csp = page.headers["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
    assert PAGE_HEADERS["Content-Security-Policy"] == csp
