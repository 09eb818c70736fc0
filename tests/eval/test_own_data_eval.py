"""``dtdialog eval --data FILE --format F``: both evaluations on a team's own dialogue file, and missing data."""

from __future__ import annotations

import csv
import json

import pytest

from dtdialog.cli import main

#: Home-network support dialogues written for this test: Q, A1, C1, A2 or just Q, A.
DIALOGUES = [
    ("wifi-1", ["My wifi drops every evening although the router was restarted.",
                "Evening drops usually come from channel congestion when neighbours come home. Move the 2.4 GHz band "
                "to channel 1, 6 or 11, whichever is least used.",
                "I changed the channel but it still drops.",
                "Then update the router firmware, because older firmware drops clients when the lease renews."]),
    ("print-1", ["My printer prints blank pages even though the ink cartridge is new.",
                 "A new cartridge often still has its protective tape over the nozzles. Peel off the tape and run a "
                 "head cleaning from the printer menu."]),
    ("mail-1", ["I cannot send e-mail from my phone, but receiving works fine.",
                "When receiving works and sending fails, the outgoing server settings are wrong. Set the SMTP port to "
                "587 with STARTTLS and turn on authentication.",
                "Now it says authentication failed.",
                "Your provider needs an app password when two-step verification is on. Create one on your account "
                "security page and use it instead of your normal password."]),
    ("laptop-1", ["My laptop battery drains in two hours even when I only browse.",
                  "Run a battery report and compare the full charge capacity with the design capacity. Below half, "
                  "the battery is worn and should be replaced."]),
    ("vpn-1", ["The VPN connects but no website loads while it is on.",
               "That is usually DNS. Send DNS through the tunnel in the VPN client's settings."]),
    ("tv-1", ["My smart TV says no internet although the phone on the same wifi works.",
              "Reset the TV network settings and enter the wifi password again; if that fails, set the TV's DNS "
              "manually, because some TVs fail on the router's DNS."]),
]
ROLES = ("Q", "A", "C", "A")


@pytest.fixture()
def own_logs(tmp_path):
    path = tmp_path / "our_logs.jsonl"
    path.write_text("".join(json.dumps({"id": did, "turns": [{"role": r, "text": t} for r, t in zip(ROLES, texts)]})
                            + "\n" for did, texts in DIALOGUES), encoding="utf-8")
    return path


def test_own_file_gets_the_reconstruction_and_the_selective_evaluation(own_logs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["eval", "--data", str(own_logs), "--format", "jsonl", "--methods", "keyword", "--systems", "bm25",
                 "--bootstrap", "20", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out.split()
    assert str(out / "results.md") in printed and str(out / "selective" / "results.json") in printed
    md = (out / "results.md").read_text(encoding="utf-8")
    assert "### our_logs" in md and f"{own_logs} (jsonl)" in md and "own data" not in md
    rows = list(csv.DictReader((out / "results.csv").open(encoding="utf-8")))
    q_a = [r for r in rows if r["metric"] == "Q-A"]
    assert q_a and q_a[0]["n"] == str(len(DIALOGUES))
    # the two dialogues with a follow-up are the only ones reconstructed at step 2
    assert [r["n"] for r in rows if r["metric"] == "Q-A1-C1-A2"] == ["2"]
    [selective] = json.loads((out / "selective" / "results.json").read_text(encoding="utf-8"))
    assert selective["dataset"] == "our_logs" and selective["n"] == len(DIALOGUES)
    op = selective["systems"]["bm25"]["operating"]
    assert op["answered_right"] + op["answered_wrong"] + op["abstained"] == len(DIALOGUES)


def test_systems_none_runs_the_reconstruction_only(own_logs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["eval", "--data", str(own_logs), "--format", "jsonl", "--methods", "keyword", "--systems", "none",
                 "--bootstrap", "20", "--out", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    assert (out / "results.md").is_file() and not (out / "selective").exists()


@pytest.mark.parametrize("argv", [
    ["eval", "--data", "{tmp}/missing.jsonl", "--format", "jsonl"],
    ["eval", "selective", "--data", "{tmp}/missing.jsonl", "--format", "jsonl"],
    ["eval", "--dataset", "mechanics", "--data-dir", "{tmp}/no-shared-data"],
    ["eval", "selective", "--dataset", "twitter", "--data-dir", "{tmp}/no-shared-data"],
    ["eval", "selective", "--dataset", "all", "--data-dir", "{tmp}/no-shared-data"],
    ["eval", "position", "--dataset", "irc", "--data-dir", "{tmp}/no-shared-data"],
    ["eval", "position", "--dataset", "irc,twitter", "--data-dir", "{tmp}/no-shared-data"],
])
def test_missing_data_is_a_one_line_error_with_exit_2(argv, tmp_path, capsys):
    out = tmp_path / "out"
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and err.count("\n") == 1 and "skipped" not in err
    assert "not found" in err
    assert not out.exists()
