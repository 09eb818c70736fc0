"""``eval.encoder_compare`` without its torch reference: a one-line error, never a traceback."""

from __future__ import annotations

import sys

from eval.encoder_compare import main


def test_missing_torch_is_a_one_line_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # as on an install without the [train] extra
    assert main(["--queries", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the torch reference needs the [train] extra") and err.count("\n") == 1
