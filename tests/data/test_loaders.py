"""Corpus loaders: every format on small files written here, malformed records with file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from data.load_common import LoadIssue, decode_legacy, html_to_text
from data.loaders import FORMATS, load_corpus
from parsers.errors import ConfigError, InputError


def write(path: Path, text: str, newline: str = "\n") -> Path:
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


# --- CSV -------------------------------------------------------------------
CSV = 'QUESTION,ANSWER\n"Why does my car pull left?","<p>Check the <b>tire pressure</b>.</p><p>Then the alignment &amp; brakes.</p>"\n' \
      '"Is a clunk, ""when turning"", bad?","<ul><li>CV joint</li><li>strut mount</li></ul>"\n'


def test_csv_cr_line_endings_html_answers(tmp_path: Path) -> None:
    path = write(tmp_path / "faq.csv", CSV, newline="\r")
    dialogues = load_corpus(path, fmt="csv")
    assert [d.id[:4] for d in dialogues] == ["faq-", "faq-"] and dialogues[0].id != dialogues[1].id
    first = dialogues[0]
    assert [t.role for t in first.turns] == ["Q", "A"]
    assert first.turns[1].text == "Check the tire pressure.\nThen the alignment & brakes."
    assert dialogues[1].question == 'Is a clunk, "when turning", bad?'
    assert dialogues[1].turns[1].text == "CV joint\nstrut mount"


def test_csv_ids_come_from_content_not_row_position(tmp_path: Path) -> None:
    header, first, second = CSV.rstrip("\n").split("\n")
    ids = {d.question: d.id for d in load_corpus(write(tmp_path / "faq.csv", CSV), fmt="csv")}
    added = '"Is rust on the brake discs bad?","Light rust wipes off on the first stops."'
    moved = load_corpus(write(tmp_path / "faq.csv", "\n".join([header, added, second, first]) + "\n"), fmt="csv")
    assert {d.question: d.id for d in moved if d.question in ids} == ids
    # case and spacing do not change a row's id; an identical row gets its own id
    respaced = first.replace("Why does my car pull left?", "why  does my car PULL left?")
    twice = load_corpus(write(tmp_path / "faq.csv", "\n".join([header, respaced, first]) + "\n"), fmt="csv")
    assert [d.id for d in twice] == [ids["Why does my car pull left?"], ids["Why does my car pull left?"] + "-2"]


def test_csv_id_column_names_the_rows(tmp_path: Path) -> None:
    path = write(tmp_path / "faq.csv", 'question,ID,answer\n"Why?",pull-left,"Tires."\n"How?",cv:joint/2,"Joint."\n')
    assert [d.id for d in load_corpus(path, fmt="csv")] == ["pull-left", "cv:joint/2"]
    assert load_corpus(path, fmt="csv")[0].answer_id(1) == "pull-left#1"


@pytest.mark.parametrize(("rows", "message"), [
    ('"Why?",a,"Tires."\n"How?",a,"Joint."\n', r"faq\.csv:3: id 'a' is used twice \(first on line 2\)"),
    ('"Why?",a,"Tires."\n"How?", ,"Joint."\n', r"faq\.csv:3: empty id"),
    ('"Why?",a b,"Tires."\n', r"faq\.csv:2: id 'a b' may hold only letters, digits and \._:/@~- \(no spaces, no '#'\)"),
    ('"Why?",a#1,"Tires."\n', r"faq\.csv:2: id 'a#1' may hold only"),
])
def test_a_bad_csv_id_is_one_line_naming_the_row(tmp_path: Path, rows: str, message: str) -> None:
    path = write(tmp_path / "faq.csv", "QUESTION,ID,ANSWER\n" + rows)
    with pytest.raises(InputError, match=message) as info:
        load_corpus(path, fmt="csv")
    assert "\n" not in str(info.value)


def test_csv_empty_answer_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "faq.csv", CSV + '"What about the belt?",""\n', newline="\r")
    with pytest.raises(InputError, match=r"faq\.csv:4: empty ANSWER cell"):
        load_corpus(path, fmt="csv")
    issues: list[LoadIssue] = []
    dialogues = load_corpus(path, fmt="csv", on_error="skip", issues=issues)
    assert len(dialogues) == 2
    assert [(i.line, i.message) for i in issues] == [(4, "empty ANSWER cell")]


def test_csv_without_required_header(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.csv", "Q,A\nx,y\n")
    with pytest.raises(InputError, match=r"bad\.csv:1: CSV header lacks column\(s\) QUESTION, ANSWER"):
        load_corpus(path, fmt="csv")


def test_csv_legacy_encoding_mojibake_is_repaired(tmp_path: Path) -> None:
    # UTF-8 "you’ll" read as cp1252 then saved as Mac Roman: the shape of the paper's FAQ export.
    text = 'QUESTION,ANSWER\r"Can I log in?","You\u2019ll need a password."\r'
    broken = text.encode("utf-8").decode("cp1252").encode("mac_roman")
    path = tmp_path / "legacy.csv"
    path.write_bytes(broken)
    assert load_corpus(path, fmt="csv")[0].turns[1].text == "You\u2019ll need a password."
    assert decode_legacy("caf\u00e9".encode("cp1252")) == "caf\u00e9"


def test_html_to_text_drops_scripts_and_keeps_blocks() -> None:
    # entities are decoded before markup is stripped: an encoded tag is removed, never turned into a live one
    assert html_to_text("<div>a<script>x()</script></div><br>b &lt;c&gt;") == "a\nb"
    assert html_to_text("<p>if a &lt; b</p>") == "if a < b"


def test_csv_answers_keep_their_link_targets(tmp_path: Path) -> None:
    # the finance FAQ's answers point customers at pages: "Your Profile" alone would point nowhere
    answer = ('<p>Change it at <a href="https://example.com/profile?a=1&amp;para=2" id="L1">Your Profile</a>, '
              "read the <a href='/privacy'>Privacy Policy</a>, visit <a href=http://m.example.com>http://m.example.com</a>"
              ' or <a href="mailto:help@example.com"><b>write to us</b></a>.</p>')
    path = write(tmp_path / "faq.csv", f'QUESTION,ANSWER\n"How do I change my password?","{answer.replace(chr(34), chr(34) * 2)}"\n')
    text = load_corpus(path, fmt="csv")[0].turns[1].text
    assert text == ("Change it at Your Profile (https://example.com/profile?a=1&para=2), read the Privacy Policy, "
                    "visit http://m.example.com or write to us (help@example.com).")


@pytest.mark.shared_data
def test_finance_faq_links_survive(shared_data: Path) -> None:
    path = shared_data / "faq" / "fidelity_faq_answer_anatomy.csv"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    dialogues = load_corpus(path, fmt="csv", on_error="skip")
    linked = [d for d in dialogues if "(https://" in d.turns[1].text or "(http://" in d.turns[1].text]
    assert len(linked) >= 50, len(linked)  # 95 of its answers link to an absolute URL


# --- JSONL -----------------------------------------------------------------
def dialogue_record(did: str, *turns: tuple[str, str]) -> str:
    return json.dumps({"id": did, "turns": [{"role": r, "text": t} for r, t in turns]})


def test_jsonl_dialogues_and_directory(tmp_path: Path) -> None:
    write(tmp_path / "a.jsonl", dialogue_record("d1", ("Q", "no start"), ("A", "check battery"), ("C", "ok"),
                                                ("A", "check starter")) + "\n\n")
    write(tmp_path / "b.jsonl", dialogue_record("d2", ("Q", "noise"), ("A", "check belt")) + "\n")
    one = load_corpus(tmp_path / "a.jsonl", fmt="jsonl")
    assert [a for a, _ in one[0].answers()] == [1, 3]
    assert [d.id for d in load_corpus(tmp_path, fmt="jsonl")] == ["d1", "d2"]


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", r"bad\.jsonl:2: not valid JSON"),
    ("[1, 2]", r"bad\.jsonl:2: expected a JSON object, got list"),
    ('{"id": "x", "turns": [{"role": "Z", "text": "t"}]}', r"bad\.jsonl:2: unknown turn role 'Z'"),
    ('{"id": "x", "turns": [{"role": "A", "text": "t"}]}', r"bad\.jsonl:2: the first turn must be the question"),
    ('{"id": "x"}', r"bad\.jsonl:2: malformed dialogue record"),
    ('{"id": "x", "turns": [{"role": "Q", "text": "  "}]}', r"bad\.jsonl:2: turn 0 has empty text"),
])
def test_jsonl_malformed_line(tmp_path: Path, line: str, message: str) -> None:
    path = write(tmp_path / "bad.jsonl", dialogue_record("ok", ("Q", "q"), ("A", "a")) + "\n" + line + "\n")
    with pytest.raises(InputError, match=message):
        load_corpus(path, fmt="jsonl")
    issues: list[LoadIssue] = []
    assert [d.id for d in load_corpus(path, fmt="jsonl", on_error="skip", issues=issues)] == ["ok"]
    assert [i.line for i in issues] == [2]


def test_jsonl_without_an_id_gets_one_from_its_turns(tmp_path: Path) -> None:
    def record(question: str) -> str:
        return json.dumps({"turns": [{"role": "Q", "text": question}, {"role": "A", "text": "check the fuse"}]})

    first = load_corpus(write(tmp_path / "logs.jsonl", record("no horn") + "\n" + record("no lights") + "\n"),
                        fmt="jsonl")
    swapped = load_corpus(write(tmp_path / "logs.jsonl", record("no lights") + "\n" + record("no horn") + "\n"),
                          fmt="jsonl")
    assert {d.question: d.id for d in first} == {d.question: d.id for d in swapped}
    assert all(d.id.startswith("logs-") for d in first) and first[0].id != first[1].id
    twice = load_corpus(write(tmp_path / "logs.jsonl", record("no horn") + "\n" + record("no horn") + "\n"),
                        fmt="jsonl")
    assert [d.id for d in twice] == [first[0].id, first[0].id + "-2"]


def test_jsonl_duplicate_id(tmp_path: Path) -> None:
    rec = dialogue_record("same", ("Q", "q"), ("A", "a"))
    with pytest.raises(InputError, match=r"dup\.jsonl:2: duplicate dialogue id 'same' \(first on line 1\)"):
        load_corpus(write(tmp_path / "dup.jsonl", rec + "\n" + rec + "\n"), fmt="jsonl")


# --- mechanics -------------------------------------------------------------
def test_mechanics_title_body_answer_and_meta(tmp_path: Path) -> None:
    rec = {"id": "auto_1", "title": "Car shakes at idle", "body": "It started after an oil change.",
           "answer": "Check the  motor mounts.", "category": "causal", "tags": ["engine", "idle"], "score": 5}
    bad = {"id": "auto_2", "title": "No answer here", "body": "", "answer": ""}
    path = write(tmp_path / "mech.jsonl", json.dumps(rec) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(InputError, match=r"mech\.jsonl:2: field 'answer' is empty"):
        load_corpus(path, fmt="mechanics")
    (dialogue,) = load_corpus(path, fmt="mechanics", on_error="skip")
    assert dialogue.id == "auto_1"
    assert dialogue.question == "Car shakes at idle.\nIt started after an oil change."
    assert dialogue.turns[1].text == "Check the motor mounts."
    assert dialogue.meta["category"] == "causal" and dialogue.meta["tags"] == ["engine", "idle"]


# --- Twitter ---------------------------------------------------------------
def twitter_record(content: list[dict], final: str | None, session: str = "S1") -> dict:
    return {"agentURL": {"url": "https://help.example/1", "url_utterance": final, "doc_id": "7"},
            "dialogContent": content, "dialogHeader": {"company": "Acme", "sessionID": session}}


def test_twitter_turns_roles_and_final_agent_reply(tmp_path: Path) -> None:
    content = [
        {"client": "bob", "message": "@Acme my app crashes &amp; logs me out"},
        {"client1": "bob", "message": "since the update"},
        {"agent": "Acme", "message": "@bob Which phone do you use?"},
        {"client": "bob", "message": "@Acme an old one"},
    ]
    path = tmp_path / "tw.json"
    path.write_text(json.dumps([twitter_record(content, "@bob Reinstall it: https://help.example/1")], indent=1))
    (dialogue,) = load_corpus(path, fmt="twitter")
    assert [(t.role, t.text) for t in dialogue.turns] == [
        ("Q", "my app crashes & logs me out\nsince the update"),
        ("A", "Which phone do you use?"),
        ("C", "an old one"),
        ("A", "Reinstall it: https://help.example/1"),
    ]
    assert dialogue.id == "twitter-S1" and dialogue.meta["company"] == "Acme"


def test_twitter_malformed_record_reports_its_line(tmp_path: Path) -> None:
    good = twitter_record([{"client": "a", "message": "help"}], "done", session="A")
    bad = twitter_record([{"client": "b", "message": "help"}], None, session="B")
    path = tmp_path / "tw.json"
    path.write_text(json.dumps([good, bad], indent=1))
    bad_line = path.read_text().split("\n").index(" {", 2) + 1
    with pytest.raises(InputError, match=rf"tw\.json:{bad_line}: missing or empty 'agentURL.url_utterance'"):
        load_corpus(path, fmt="twitter")
    issues: list[LoadIssue] = []
    assert len(load_corpus(path, fmt="twitter", on_error="skip", issues=issues)) == 1
    assert issues[0].line == bad_line


def test_twitter_broken_json_array(tmp_path: Path) -> None:
    path = write(tmp_path / "tw.json", '[\n {"dialogContent": [}\n]\n')
    with pytest.raises(InputError, match=r"tw\.json:2: not valid JSON"):
        load_corpus(path, fmt="twitter")


# --- IRC -------------------------------------------------------------------
def test_irc_roles_merge_addressee_and_split(tmp_path: Path) -> None:
    rec = {"id": "train/1", "split": "dev", "turns": [
        {"speaker": "ann", "role": "asker", "text": "wifi drops after suspend"},
        {"speaker": "ann", "role": "asker", "text": "on 20.04"},
        {"speaker": "bob", "role": "helper", "text": "ann: reload the module"},
        {"speaker": "cy", "role": "helper", "text": "or check dmesg"},
        {"speaker": "ann", "role": "asker", "text": "bob: that worked"},
    ]}
    (dialogue,) = load_corpus(write(tmp_path / "irc.jsonl", json.dumps(rec) + "\n"), fmt="irc")
    assert [(t.role, t.text) for t in dialogue.turns] == [
        ("Q", "wifi drops after suspend\non 20.04"),
        ("A", "reload the module\nor check dmesg"),
        ("C", "that worked"),
    ]
    assert dialogue.meta["split"] == "dev" and dialogue.id == "irc-train/1"


@pytest.mark.parametrize(("turns", "message"), [
    ([{"speaker": "b", "role": "helper", "text": "hi"}], "starts with a helper turn"),
    ([{"speaker": "a", "role": "asker", "text": "hi"}], "has no helper reply"),
    ([{"speaker": "a", "role": "boss", "text": "hi"}], "has role 'boss'"),
    ([], "missing or empty 'turns'"),
])
def test_irc_malformed_thread(tmp_path: Path, turns: list, message: str) -> None:
    path = write(tmp_path / "irc.jsonl", "\n" + json.dumps({"id": "t", "split": "train", "turns": turns}) + "\n")
    with pytest.raises(InputError, match=rf"irc\.jsonl:2: .*{message}"):
        load_corpus(path, fmt="irc")


# --- common checks ---------------------------------------------------------
def test_missing_empty_binary_and_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="corpus file not found"):
        load_corpus(tmp_path / "none.jsonl", fmt="jsonl")
    with pytest.raises(InputError, match="is empty"):
        load_corpus(write(tmp_path / "empty.jsonl", "\n  \n"), fmt="jsonl")
    binary = tmp_path / "x.jsonl"
    binary.write_bytes(b"\x00\x01\x02PK")
    with pytest.raises(InputError, match="binary"):
        load_corpus(binary, fmt="jsonl")
    with pytest.raises(ConfigError, match="unknown corpus format 'xml'"):
        load_corpus(binary, fmt="xml")
    with pytest.raises(ConfigError, match="unknown on_error"):
        load_corpus(binary, fmt="jsonl", on_error="ignore")
    assert set(FORMATS) == {"csv", "jsonl", "mechanics", "twitter", "irc"}


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(dialogue_record("a", ("Q", "q"), ("A", "a")).encode() + b"\n{\"id\": \"\xff\"}\n")
    with pytest.raises(InputError, match=r"bad\.jsonl:2: not UTF-8"):
        load_corpus(path, fmt="jsonl")


def test_limit(tmp_path: Path) -> None:
    lines = "\n".join(dialogue_record(f"d{i}", ("Q", "q"), ("A", "a")) for i in range(5))
    assert [d.id for d in load_corpus(write(tmp_path / "c.jsonl", lines), fmt="jsonl", limit=2)] == ["d0", "d1"]


# --- the real shared files -------------------------------------------------
@pytest.mark.shared_data
@pytest.mark.parametrize(("fmt", "relative", "at_least"), [
    ("csv", "faq/fidelity_faq_answer_anatomy.csv", 450),
    ("mechanics", "mechanics_qa/mechanics_qa_dev.jsonl", 450),
    ("twitter", "support_dialogues/twitter_customer_care_dev.json", 500),
    ("irc", "support_dialogues/ubuntu_irc_threads_train_dev.jsonl", 1900),
])
def test_shared_files_load(shared_data: Path, fmt: str, relative: str, at_least: int) -> None:
    path = shared_data / relative
    if not path.is_file():
        pytest.skip(f"{path} not present")
    issues: list[LoadIssue] = []
    dialogues = load_corpus(path, fmt=fmt, on_error="skip", issues=issues)
    assert len(dialogues) >= at_least
    assert all(d.turns[0].role == "Q" and d.answers() for d in dialogues)
    assert len(issues) < len(dialogues) * 0.02  # a few genuinely empty rows, never a systematic failure
