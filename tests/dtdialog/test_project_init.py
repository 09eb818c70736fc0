"""``dtdialog init DIR`` and projects (dtdialog.setup.project), and the profile an index build stores with the index."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from dtdialog.cli import main
from dtdialog.setup.profile import PROFILE_INFO_KEY, Profile, builtin_profile, generic_profile
from dtdialog.setup.project import PROJECT_FILE, find_project, load_project
from parsers.errors import ConfigError

CAR_WORDS = re.compile(r"\b(car|cars|vehicle|engine|mechanic)\b", re.IGNORECASE)
FAQ = """QUESTION,ANSWER
"How do I water a cactus in winter?","Water a cactus once a month in winter, because it rests and rots in wet soil. If the pot has no hole, move it to one that drains."
"Why are the leaves of my fern turning brown?","Brown fern leaves mean the air is too dry, so mist the fern every morning. If the tips stay brown, move it away from the heater."
"""


@pytest.fixture(autouse=True)
def _home(tmp_path, monkeypatch):
    monkeypatch.setenv("DTDIALOG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("DTDIALOG_INDEX", raising=False)


def _stored_info(path: Path) -> dict:
    from index.sqlite_index import SqliteIndex

    index = SqliteIndex(path)
    try:
        return index.info()
    finally:
        index.close()


def _chat_json(capsys, argv: list[str], turns: list[str], tmp_path: Path) -> list[dict]:
    script = tmp_path / "turns.txt"
    script.write_text("\n".join(turns) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["chat", *argv, "--script", str(script), "--json", "--quiet", "--ranker", "rules"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_init_makes_a_project_that_builds_chats_and_holds_passing_tests(tmp_path, monkeypatch, capsys):
    project_dir = tmp_path / "bot"
    assert main(["init", str(project_dir)]) == 0
    project = find_project(project_dir)
    assert project is not None and project.root == project_dir.resolve()
    assert project.format == "csv" and project.data.is_file() and project.tests.is_file()
    assert project.index == project_dir.resolve() / ".dtdialog" / "index.sqlite"
    assert (project_dir / "README.md").is_file()
    assert not CAR_WORDS.search(project.config.read_text()), "the project template speaks a car-free domain"

    monkeypatch.chdir(project_dir)
    capsys.readouterr()
    assert main(["index", "build", "--quiet"]) == 0  # no flags: the project's data, format, index and profile
    assert "indexed 8 of 8 answers" in capsys.readouterr().out
    assert Profile.from_dict(_stored_info(project.index)[PROFILE_INFO_KEY]) == project.profile
    assert main(["index", "search", "router red lights", "--json"]) == 0  # the project's index, no --index
    top = json.loads(capsys.readouterr().out.splitlines()[0])
    assert top["id"].startswith("faq-") and top["id"].endswith("#1")  # a content id: not the row's position
    assert "Red lights mean" in top["text"]

    script = tmp_path / "turns.txt"
    script.write_text("The lights on my router are all red and nothing works.\n", encoding="utf-8")
    assert main(["chat", "--script", str(script), "--quiet", "--ranker", "rules"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == f"bot> {project.profile.greeting}"
    assert not CAR_WORDS.search(out), out

    # the shipped conversation tests pass, run by `dtdialog test` with no flags (the project's tests and index)
    junit = tmp_path / "junit.xml"
    assert main(["test", "--ranker", "rules", "--junit", str(junit)]) == 0
    out = capsys.readouterr().out
    turns = sum(len(case["turns"]) for case in yaml.safe_load(project.tests.read_text(encoding="utf-8"))["tests"])
    assert out.count("PASS ") == turns and "FAIL" not in out
    assert 'failures="0"' in junit.read_text(encoding="utf-8")


def _rewrite_rows(path: Path, change) -> None:
    header, *rows = path.read_text(encoding="utf-8").splitlines()
    new_header, new_rows = change(header, rows)
    path.write_text("\n".join([new_header, *new_rows]) + "\n", encoding="utf-8")


def test_the_skeleton_tests_pass_after_the_rows_are_reordered_and_added_to(tmp_path, monkeypatch, capsys):
    project_dir = tmp_path / "bot"
    assert main(["init", str(project_dir)]) == 0
    monkeypatch.chdir(project_dir)
    data = project_dir / "data" / "faq.csv"
    gift = '"Do you sell gift cards?","Yes, every shop sells gift cards for any amount."'
    _rewrite_rows(data, lambda header, rows: (header, [*reversed(rows), gift]))
    assert main(["index", "build", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["test", "--ranker", "rules"]) == 0, capsys.readouterr().out

    # an ID column names the rows: a test expects the answer by its row's ID, wherever the row is
    ids = iter(f"row-{n}" for n in range(100))
    _rewrite_rows(data, lambda header, rows: (
        f"ID,{header}", [("router-red" if "Red lights mean" in row else next(ids)) + "," + row for row in rows]))
    tests = tmp_path / "by_id.yaml"
    tests.write_text(yaml.safe_dump({"tests": [{"name": "router", "turns": [
        {"customer": "The lights on my router are all red and nothing works.",
         "expect": {"kind": "answer", "answer_id": "router-red", "answer_contains": "red lights mean"}}]}]}),
        encoding="utf-8")
    assert main(["index", "build", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["test", str(tests), "--ranker", "rules"]) == 0, capsys.readouterr().out


def test_dtdialog_test_in_a_project_builds_its_missing_index_and_reports_failures(tmp_path, monkeypatch, capsys):
    project_dir = tmp_path / "bot"
    assert main(["init", str(project_dir)]) == 0
    monkeypatch.chdir(project_dir)
    project = load_project(project_dir / PROJECT_FILE)
    failing = tmp_path / "failing.yaml"
    failing.write_text(yaml.safe_dump({"tests": [{"name": "wrong on purpose", "turns": [
        {"customer": "The lights on my router are all red and nothing works.",
         "expect": {"contains": "no such phrase in any answer"}}]}]}), encoding="utf-8")
    assert not project.index.exists()
    assert main(["test", str(failing), "--ranker", "rules", "--quiet"]) == 1  # the project's index, built first
    assert project.index.exists()
    assert "FAIL wrong on purpose / turn 1" in capsys.readouterr().out


def test_chat_in_a_project_builds_its_missing_index_with_its_profile(tmp_path, monkeypatch, capsys):
    project_dir = tmp_path / "bot"
    assert main(["init", str(project_dir)]) == 0
    monkeypatch.chdir(project_dir)
    project = load_project(project_dir / PROJECT_FILE)
    assert not project.index.exists()
    results = _chat_json(capsys, [], ["hello"], tmp_path)
    assert results[0]["kind"] == "out_of_scope" and project.profile.domain in results[0]["reply"]
    assert _stored_info(project.index)[PROFILE_INFO_KEY]["greeting"] == project.profile.greeting


def test_init_refuses_a_folder_that_is_not_empty(tmp_path, capsys):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    assert main(["init", str(target)]) == 2
    err = capsys.readouterr().err
    assert "not empty" in err and len(err.strip().splitlines()) == 1
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]  # nothing written
    assert main(["init", str(target), "--force"]) == 0
    assert (target / PROJECT_FILE).is_file() and (target / "notes.txt").read_text() == "mine"
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert main(["init", str(tmp_path / "file")]) == 2


@pytest.mark.parametrize("text, message", [
    ("data: d.csv\nformat: pdf\n", "format must be one of"),
    ("format: csv\n", "data must be a path"),
    ("data: d.csv\nformat: csv\nindx: x\n", "unknown key(s) indx"),
    ("data: d.csv\nformat: csv\nprofile: {greting: hi}\n", "unknown key(s) greting"),
])
def test_a_bad_project_file_is_one_line_error(tmp_path, text, message):
    (tmp_path / PROJECT_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        find_project(tmp_path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_no_project_outside_a_project_folder(tmp_path):
    assert find_project(tmp_path) is None


def test_index_build_stores_the_profile_given_or_the_generic_one(tmp_path, capsys):
    corpus = tmp_path / "plants.csv"
    corpus.write_text(FAQ, encoding="utf-8")
    profile = tmp_path / "plants.yaml"
    profile.write_text('domain: houseplant\ngreeting: "Hi! Which plant is unhappy?"\n'
                       "synonyms: {cactus: [succulent]}\n", encoding="utf-8")
    out = tmp_path / "plants.sqlite"
    assert main(["index", "build", "--corpus", str(corpus), "--format", "csv", "--profile", str(profile),
                 "--out", str(out), "--quiet"]) == 0
    stored = Profile.from_dict(_stored_info(out)[PROFILE_INFO_KEY])
    assert stored.greeting == "Hi! Which plant is unhappy?" and stored.synonyms == {"cactus": ("succulent",)}

    results = _chat_json(capsys, ["--index", str(out)], ["hi", "I have to talk to a human"], tmp_path)
    assert "houseplant questions" in results[0]["reply"]
    assert results[1]["kind"] == "handoff" and not CAR_WORDS.search(results[1]["reply"])
    script = tmp_path / "one.txt"
    script.write_text("How often should I water my succulent in winter?\n", encoding="utf-8")
    assert main(["chat", "--index", str(out), "--script", str(script), "--quiet", "--ranker", "rules"]) == 0
    transcript = capsys.readouterr().out
    assert transcript.splitlines()[0] == "bot> Hi! Which plant is unhappy?"
    assert "once a month" in transcript

    # the synonyms reach the engine's entity matching: "succulent" is the same entity as "cactus"
    from dtdialog.setup.assembly import EngineSpec, build_engine

    engine = build_engine(EngineSpec(index_path=str(out), ranker="rules"), progress=False, warm=False)
    try:
        assert engine.profile == stored
        terms = engine.selector.normalizer.terms_of_text("my succulent")
        assert terms & engine.selector.normalizer.terms_of_text("a cactus")
    finally:
        engine.close()

    plain = tmp_path / "plain.sqlite"
    assert main(["index", "build", "--corpus", str(corpus), "--format", "csv", "--out", str(plain), "--quiet"]) == 0
    assert Profile.from_dict(_stored_info(plain)[PROFILE_INFO_KEY]) == generic_profile()
    results = _chat_json(capsys, ["--index", str(plain)], ["hello"], tmp_path)
    assert not CAR_WORDS.search(results[0]["reply"]), results


def test_a_bad_profile_stops_the_build_before_anything_is_written(tmp_path, capsys):
    corpus = tmp_path / "plants.csv"
    corpus.write_text(FAQ, encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text("greting: hi\n", encoding="utf-8")
    out = tmp_path / "out.sqlite"
    assert main(["index", "build", "--corpus", str(corpus), "--format", "csv", "--profile", str(bad),
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "greting" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_the_builtin_index_speaks_the_car_profile(tmp_path):
    from dtdialog.setup.assembly import EngineSpec, build_engine

    engine = build_engine(EngineSpec(ranker="rules", sessions_path=str(tmp_path / "s.sqlite")), progress=False,
                          warm=False)
    try:
        assert engine.profile == builtin_profile()
        assert engine.manager.replies.greeting == builtin_profile().greeting
    finally:
        engine.close()
