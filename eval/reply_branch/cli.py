"""``python -m eval.reply_branch``: the reply reader against replies judged by reading, and the false alarms it
would raise between them.

The reader may say nothing (0): then the engine keeps the logged follow-up. It errs when it calls a judged ``yes`` a
no or the other way round; such an error can make the engine hold back the right follow-up, so it is counted apart.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import Counter
from pathlib import Path

from eval.entry import one_line_errors
from eval.jsonl import read_objects
from eval.provenance import git_commit
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

JUDGED_PATH = Path(__file__).with_name("judged_polarity.jsonl")
_READ = {1: "yes", -1: "no", 0: "says nothing"}


def load_judged(path: Path) -> list[dict]:
    """Return the judged replies of ``path`` (JSONL: question, reply, judged = yes / no / unclear)."""
    if not path.is_file():
        raise InputError(f"{path}: no such judged file")
    rows = []
    for number, row in read_objects(path):
        if row.get("judged") not in ("yes", "no", "unclear") or not all(
                isinstance(row.get(k), str) for k in ("question", "reply")):
            raise InputError(f"{path}:{number}: needs 'question', 'reply' and 'judged' (yes, no or unclear)")
        rows.append(row)
    if not rows:
        raise InputError(f"{path}: no judged replies")
    return rows


def measure(rows: list[dict]) -> dict:
    """Return the confusion of judged against read, precision where the reader commits, and the errors."""
    from dtdialog.understanding.entities import EntityNormalizer
    from dtdialog.understanding.reply_branch import reply_polarity

    terms = EntityNormalizer().terms_of_text
    confusion: Counter[tuple[str, str]] = Counter()
    errors = []
    for row in rows:
        read = _READ[reply_polarity(row["reply"], row["question"], terms)]
        confusion[(row["judged"], read)] += 1
        if {row["judged"], read} == {"yes", "no"}:
            errors.append({**row, "read": read})
    clear = sum(n for (judged, read), n in confusion.items() if judged != "unclear" and read != "says nothing")
    right = sum(n for (judged, read), n in confusion.items() if judged == read)
    return {"replies": len(rows), "confusion": {f"{j} read as {r}": n for (j, r), n in sorted(confusion.items())},
            "committed": sum(n for (_, read), n in confusion.items() if read != "says nothing"),
            "precision_on_clear": round(right / clear, 3) if clear else None, "errors": errors}


def markdown(result: dict, *, command: str) -> str:
    lines = ["# Reading a reply to the bot's yes/no question", "", f"Command: `{command}`", "",
             f"Commit {git_commit()}.", "",
             f"{result['replies']} replies judged by reading ({JUDGED_PATH.name}; guidelines in "
             "`eval/reply_branch/__init__.py`). The reader commits on "
             f"{result['committed']}; where the judge said yes or no, it is right on "
             f"{result['precision_on_clear']:.1%} of those it commits on.", "",
             "| judged | count |", "|---|---|", *(f"| {k} | {n} |" for k, n in result["confusion"].items()), "",
             "Errors (a yes read as no or the other way):", ""]
    lines += [f"- {e['question']} / \"{e['reply']}\": judged {e['judged']}, read {e['read']}"
              for e in result["errors"]] or ["- none"]
    return "\n".join(lines) + "\n"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judged", type=Path, default=JUDGED_PATH, help="judged replies (JSONL; default: shipped)")
    parser.add_argument("--out", help="write reply_branch.md and .json to this directory")


def run(args: argparse.Namespace, *, command: str) -> int:
    if args.out:
        check_out_dir(args.out)
    result = measure(load_judged(args.judged))
    text = markdown(result, command=command)
    print(text, end="")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "reply_branch.md", text)
        atomic_write_text(out / "reply_branch.json", json.dumps(result, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error)."""
    parser = argparse.ArgumentParser(prog="python -m eval.reply_branch", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    command = "python -m eval.reply_branch " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command.strip()))
