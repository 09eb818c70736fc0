"""``eval.gc_bench``: one-line errors, and both modes timed end to end on the built-in corpus's index."""

from __future__ import annotations

import json

import pytest

from eval import gc_bench


@pytest.mark.parametrize("argv", [["--modes", "never"], ["--fill", "-1"], ["--questions", "0"]])
def test_bad_options_and_a_missing_index_are_one_line_errors(argv, tmp_path, capsys):
    index = tmp_path / "answers.sqlite"
    index.write_bytes(b"")
    assert gc_bench.main(["--index", str(index), *argv]) == 2
    assert gc_bench.main(["--index", str(tmp_path / "none.sqlite")]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2 and all(e.startswith("error: ") for e in errors) and "no index at" in errors[1]


@pytest.fixture(scope="module")
def builtin_index(tmp_path_factory):
    """The built-in corpus's learned-ranker index, unpacked from the shipped bundle (as a first chat does)."""
    from index.dense import dense_available

    if not dense_available():
        pytest.skip("the [dense] extra (onnxruntime, tokenizers) is not installed")
    from data.builtin import load_builtin_corpus
    from dtdialog.setup.prebuilt import install_builtin
    from parsers.base import get_parser

    path = tmp_path_factory.mktemp("gc-bench") / "answers.sqlite"
    if not install_builtin(path, parser=get_parser("rules"), dialogues=load_builtin_corpus()):
        pytest.skip("the shipped bundle does not match this code (python -m dtdialog.setup.make_prebuilt)")
    return path


@pytest.mark.timeout(300)
def test_both_modes_time_their_turns_and_count_what_the_freezes_kept(builtin_index, tmp_path, capsys):
    out, picture = tmp_path / "gc.json", tmp_path / "gc.png"
    assert gc_bench.main(["--index", str(builtin_index), "--fill", "60", "--questions", "6", "--data-dir",
                          str(tmp_path), "--json", str(out), "--plot", str(picture)]) == 0
    results = json.loads(out.read_text())
    assert [r["mode"] for r in results] == list(gc_bench.MODES)
    for r in results:
        assert r["turns"]["turns"] == 6 and len(r["walls_ms"]) == 6 and r["filled"] == 60
        assert r["questions"].startswith("built-in") and r["kept_by_freezes"] >= 0
        assert all(p > 0 for p in r["full_collections_ms"]) and 0 <= r["collection_share"] < 1
        assert r["frozen_objects"] > 10_000  # the loaded engine
        assert 100 < r["rss_after_turns_mb"] <= r["peak_rss_mb"]
    assert picture.stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "survivors:" in printed and "load-only:" in printed
