"""Dependencies by need: the base install runs the product without the evaluation's rank-bm25 and matplotlib."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

#: Runs the ``dtdialog`` command line in a process where matplotlib and rank-bm25 cannot be imported.
WITHOUT_EXTRAS = ("import sys; sys.modules.update(matplotlib=None, rank_bm25=None)\n"
                  "from dtdialog.cli import main\n"
                  "sys.exit(main(sys.argv[1:]))\n")
TEXT = "The car does not start, although I replaced the battery."


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_rank_bm25_and_matplotlib_are_in_extras_that_ci_installs():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    assert not _names(project["dependencies"]) & {"rank-bm25", "matplotlib"}
    assert "matplotlib" in _names(extras["plots"])
    assert "rank-bm25" in _names(extras["eval"]) and "dtdialog[plots]" in extras["eval"]
    # the README's and .ci/run's install command, .[all,test], brings both: the tests use them
    assert "eval" in re.search(r"dtdialog\[([^\]]*)\]", extras["all"][0])[1].split(",")
    assert '".[all,test]"' in (REPO / ".ci" / "run").read_text(encoding="utf-8")


def _run(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WITHOUT_EXTRAS, *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=600)


def test_the_product_runs_without_the_eval_extra(tmp_path):
    svg = _run("parse", TEXT, "--image", "tree.svg", "--parser", "rules", cwd=tmp_path)
    assert svg.returncode == 0, svg.stderr
    assert (tmp_path / "tree.svg").read_text(encoding="utf-8").startswith("<svg")

    png = _run("parse", TEXT, "--image", "tree.png", "--parser", "rules", cwd=tmp_path)
    assert png.returncode == 2 and png.stdout == "" and not (tmp_path / "tree.png").exists()
    assert png.stderr.strip() == ("error: a .png picture needs matplotlib: pip install 'dtdialog[plots]' "
                                  "(or write .svg, which needs nothing)")

    script = tmp_path / "turns.txt"
    script.write_text("My car does not start in the morning.\n", encoding="utf-8")
    chat = _run("chat", "--script", str(script), "--ranker", "rules", "--quiet", cwd=tmp_path)
    assert chat.returncode == 0, chat.stderr
    assert chat.stdout.count("bot> ") >= 2
