"""Probe finding 8: "never a traceback" failed on the command line for JSONL nested 100,000 deep (``RecursionError``),
``chat --trace-json DIR`` (``IsADirectoryError``) and ``serve --preload`` on a file that is not an index; a lone
surrogate in ``POST /index/documents`` was a 500 (``UnicodeEncodeError``). Each is now a one-line error: exit 2 on
the command line, a 422 with its own code in the API.
"""

from __future__ import annotations

import subprocess

import pytest
from reliability_helpers import assert_one_line_error, dtdialog_command, python_env

DEEP = 100_000


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(dtdialog_command(*args), capture_output=True, text=True, env=python_env())


@pytest.mark.timeout(300)
@pytest.mark.parametrize("fmt, content", [
    ("jsonl", "[" * DEEP + "\n"),
    ("jsonl", '{"id": "d1", "turns": ' + "[" * DEEP + "\n"),
    ("twitter", "[" + "[" * DEEP + "\n"),
    ("mechanics", "{" + '"a":{' * DEEP + "\n"),
], ids=["jsonl-array", "jsonl-turns", "twitter-array", "mechanics-object"])
def test_json_nested_100k_deep_is_one_line(tmp_path, fmt, content):
    corpus = tmp_path / f"deep.{fmt}"
    corpus.write_text(content)
    proc = _run("index", "build", "--format", fmt, "--corpus", str(corpus), "--out", str(tmp_path / "out.sqlite"),
                "--quiet")
    assert_one_line_error(proc, "nested too deeply")


@pytest.mark.timeout(300)
def test_an_engine_spec_nested_100k_deep_is_one_line(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text("[" * DEEP)
    assert_one_line_error(_run("chat", "--engine", str(spec), "--script", "/dev/null"), "nested too deeply")


@pytest.mark.timeout(300)
def test_chat_trace_json_naming_a_folder_is_one_line(small_index, tmp_path):
    folder = tmp_path / "traces"
    folder.mkdir()
    proc = _run("chat", "--index", str(small_index), "--sessions", str(tmp_path / "s.sqlite"), "--ranker", "rules",
                "--trace-json", str(folder), "--script", "/dev/null")
    assert_one_line_error(proc, "--trace-json", "folder")


@pytest.mark.timeout(300)
def test_serve_preload_on_a_file_that_is_not_an_index_is_one_line(tmp_path):
    notes = tmp_path / "notes.sqlite"
    notes.write_text("meeting notes\n" * 50)
    proc = _run("serve", "--preload", "--index", str(notes), "--sessions", str(tmp_path / "s.sqlite"), "--port", "1")
    assert_one_line_error(proc, "not a dtdialog index")


@pytest.mark.parametrize("field", ["text", "id", "dialogue_id", "question"])
def test_a_lone_surrogate_is_a_422_with_its_own_code(make_client, index_copy, field):
    client = make_client(index_path=index_copy)
    answer = {"text": "Check the horn fuse first, because a blown fuse is the usual cause.", "id": "horn-1#1",
              "dialogue_id": "horn-1", "question": "Why is my horn silent?"}
    answer[field] = answer[field][:5] + "\\ud800" + answer[field][5:]  # JSON allows the escape; UTF-8 cannot hold it
    body = '{"answers": [{' + ", ".join(f'"{k}": "{v}"' for k, v in answer.items()) + "}]}"
    before = client.get("/index").json()["documents"]
    response = client.post("/index/documents", content=body.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_unicode"
    assert client.get("/index").json()["documents"] == before


@pytest.mark.parametrize("path, body", [
    ("/parse", '{"text": "The car \\udc80 stalls."}'),
    ("/search", '{"query": "battery \\ud800 dead"}'),
])
def test_lone_surrogates_elsewhere_are_422_too(make_client, path, body):
    response = make_client().post(path, content=body.encode(), headers={"content-type": "application/json"})
    assert response.status_code == 422 and response.json()["error"]["code"] == "invalid_unicode", response.text
