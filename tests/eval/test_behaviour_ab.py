"""The behaviour A/B: both checkouts run the same evaluations, and every figure but timings and paths is compared."""

from __future__ import annotations

import json

import pytest

from eval import behaviour_ab
from eval.behaviour_ab import Evaluation, compare, flatten, main, read_report


def test_flatten_keys_nested_values_by_path():
    assert flatten({"a": {"b": [1, {"c": 2}]}, "d": "x"}) == {"a.b.0": 1, "a.b.1.c": 2, "d": "x"}


def test_timings_paths_and_commits_are_no_behaviour_but_a_figure_is():
    before = {"rows.dtq.p1": 0.765, "rows.dtq.p95_ms": 164.2, "seconds.closed/dtq": 52.8, "setup.commit": "abc",
              "ranker.path": "/a/models/x.joblib", "note": "/a/x"}
    after = {"rows.dtq.p1": 0.766, "rows.dtq.p95_ms": 99.0, "seconds.closed/dtq": 40.1, "setup.commit": "def",
             "ranker.path": "/b/models/x.joblib", "note": "/b/x"}
    result = compare(before, after)
    assert result["differing"] == [{"key": "rows.dtq.p1", "before": 0.765, "after": 0.766}]
    assert result["compared"] == 2  # the figure and the note; the paths in it differ only by the checkout
    assert compare(before, before)["differing"] == []


def test_a_float_summed_in_another_order_is_the_same_and_the_set_up_is_apart():
    before = {"threshold": 0.16892318808016052, "provenance.ranker.name": "auto", "p1": 0.5}
    after = {"threshold": 0.16892318808016032, "provenance.ranker.name": "learned", "p1": 0.5}
    result = compare(before, after)
    assert result["differing"] == [] and result["compared"] == 2
    assert result["setup"] == [{"key": "provenance.ranker.name", "before": "auto", "after": "learned"}]


def test_a_value_on_one_side_only_differs():
    assert compare({"a": 1}, {"a": 1, "b": 2})["differing"] == [{"key": "b", "before": None, "after": 2}]


def test_csv_reports_are_keyed_by_row_and_column(tmp_path):
    (tmp_path / "r.csv").write_text("dataset,metric,value\nbuiltin,P@1,0.8\n")
    assert read_report(tmp_path / "r.csv") == {"0.dataset": "builtin", "0.metric": "P@1", "0.value": "0.8"}


def _checkout(path, value):
    (path / "dtdialog").mkdir(parents=True)
    (path / "dtdialog" / "__init__.py").write_text("")
    (path / "figure.txt").write_text(value)
    return path


def _fake(monkeypatch):
    # an evaluation that reports the checkout's figure and a timing that always differs
    script = ("import json, pathlib, sys, time; out = pathlib.Path(sys.argv[1]); "
              "out.joinpath('results.json').write_text(json.dumps({'p1': open('figure.txt').read(), "
              "'seconds': time.time()}))")
    fake = Evaluation("fake", ("-c", script, "{out}"), ("results.json",))
    monkeypatch.setattr(behaviour_ab, "EVALUATIONS", (fake,))


def test_equal_checkouts_pass_and_a_changed_figure_fails(tmp_path, monkeypatch, capsys):
    _fake(monkeypatch)
    before, same, changed = (_checkout(tmp_path / n, v) for n, v in (("a", "0.7"), ("b", "0.7"), ("c", "0.8")))
    assert main(["--before", str(before), "--after", str(same), "--out", str(tmp_path / "ab1"), "--no-progress"]) == 0
    report = json.loads((tmp_path / "ab1" / "results.json").read_text())
    assert report["evaluations"]["fake"] == {"compared": 1, "differing": [], "setup": []}
    assert main(["--before", str(before), "--after", str(changed), "--out", str(tmp_path / "ab2"),
                 "--no-progress"]) == 1
    assert "`results.json:p1` '0.7' -> '0.8'" in capsys.readouterr().out


def test_reuse_compares_the_reports_left_without_running(tmp_path, monkeypatch, capsys):
    _fake(monkeypatch)
    before, after = _checkout(tmp_path / "a", "0.7"), _checkout(tmp_path / "b", "0.7")
    args = ["--before", str(before), "--after", str(after), "--out", str(tmp_path / "ab"), "--no-progress"]
    assert main(args) == 0
    report = tmp_path / "ab" / "after" / "fake" / "results.json"
    report.write_text(report.read_text().replace('"0.7"', '"0.9"'))
    (after / "figure.txt").write_text("0.7")  # a run would write 0.7 again: only a comparison of the files sees 0.9
    assert main([*args, "--reuse"]) == 1
    assert "'0.7' -> '0.9'" in capsys.readouterr().out


def test_a_relative_out_is_this_folders_not_the_checkouts(tmp_path, monkeypatch):
    _fake(monkeypatch)
    before, after = _checkout(tmp_path / "a", "0.7"), _checkout(tmp_path / "b", "0.7")
    monkeypatch.chdir(tmp_path)
    assert main(["--before", "a", "--after", "b", "--out", "ab", "--no-progress"]) == 0
    assert (tmp_path / "ab" / "before" / "fake" / "results.json").is_file()
    assert not (before / "ab").exists() and not (after / "ab").exists()


def test_a_failing_evaluation_is_one_line_naming_its_log(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(behaviour_ab, "EVALUATIONS", (Evaluation("fake", ("-c", "raise SystemExit(3)"), ()),))
    before, after = _checkout(tmp_path / "a", "1"), _checkout(tmp_path / "b", "1")
    assert main(["--before", str(before), "--after", str(after), "--out", str(tmp_path / "ab"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fake failed" in err and "run.log" in err


def test_unknown_evaluations_and_non_checkouts_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--before", ".", "--after", ".", "--only", "nonsense"])
    assert "unknown evaluation(s) nonsense" in capsys.readouterr().err
    assert main(["--before", str(tmp_path), "--after", ".", "--out", str(tmp_path / "ab")]) == 2
    assert "is not a dtdialog checkout" in capsys.readouterr().err
