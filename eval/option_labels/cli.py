"""``python -m eval.option_labels``: the labels of the built-in index's clarifications, and the judged changes."""

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

JUDGED_PATH = Path(__file__).with_name("judged_changes.jsonl")
VERDICTS = ("better", "worse", "same")


def current_labels(*, progress: bool = True) -> dict[str, list[str]]:
    """Return ``{"id id id": [label, label, label]}`` for every run of three consecutive built-in answers."""
    from tqdm import tqdm

    from dtdialog.selection.clarification import build_options
    from dtdialog.setup.assembly import EngineSpec, build_engine

    engine = build_engine(EngineSpec(ranker="rules"), progress=progress)
    try:
        selector = engine.selector
        docs = {d.id: d for d in selector.index.documents()}
        ids = sorted(docs)
        out = {}
        for k in tqdm(range(len(ids) - 2), desc="labels", unit="trio", disable=not progress):
            trio = [docs[i] for i in ids[k:k + 3]]
            pending = build_options([(d.id, selector.answer_edus(d), selector.answer_tree(d)) for d in trio],
                                    normalizer=selector)
            out[" ".join(d.id for d in trio)] = [o.label for o in pending.options[:-1]]
        return out
    finally:
        engine.close()


def load_json(path: Path, what: str):
    if not path.is_file():
        raise InputError(f"{path}: no such {what} file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not JSON ({exc.msg})") from None


def load_judged(path: Path) -> dict[tuple[str, str], str]:
    """Return ``{(before, after): verdict}`` from a JSONL file of judged label changes."""
    if not path.is_file():
        raise InputError(f"{path}: no such judged file")
    judged = {}
    for number, row in read_objects(path):
        if row.get("verdict") not in VERDICTS or not all(isinstance(row.get(k), str) for k in ("before", "after")):
            raise InputError(f"{path}:{number}: needs 'before', 'after' and 'verdict' (better, worse or same)")
        judged[(row["before"], row["after"])] = row["verdict"]
    return judged


def changes(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Return the distinct (old label, new label) pairs of the option sets both runs hold."""
    return sorted({(old, new) for key in after.keys() & before.keys()
                   for old, new in zip(before[key], after[key]) if old != new})


def markdown(labels: dict, pairs: list[tuple[str, str]], judged: dict, *, command: str) -> str:
    verdicts = Counter(judged.get(pair, "not judged") for pair in pairs)
    lines = ["# Clarification labels", "", f"Command: `{command}`", "", f"Commit {git_commit()}.", "",
             f"{len(labels)} option sets of three built-in answers; {len(pairs)} distinct labels changed against "
             "the other run.", "", "| verdict | changes |", "|---|---|",
             *(f"| {v} | {verdicts[v]} |" for v in (*VERDICTS, "not judged") if verdicts[v]), "",
             "Changes judged worse or not judged:", ""]
    lines += [f"- {judged.get(p, 'not judged')}: \"{p[0]}\" -> \"{p[1]}\"" for p in pairs
              if judged.get(p, "worse") == "worse" or p not in judged] or ["- none"]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> int:
    out = Path(check_out_dir(args.out))
    judged = load_judged(args.judged)
    before = load_json(args.before, "labels") if args.before else None
    labels = current_labels(progress=not args.no_progress)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "labels.json", json.dumps(labels, indent=1) + "\n")
    if before is not None:
        text = markdown(labels, changes(before, labels), judged, command=command)
        atomic_write_text(out / "option_labels.md", text)
        print(text, end="")
    else:
        print(f"{len(labels)} option sets written to {out / 'labels.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error)."""
    parser = argparse.ArgumentParser(prog="python -m eval.option_labels", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="runs/option_labels", help="where labels.json (and the comparison) go")
    parser.add_argument("--before", type=Path, help="labels.json of another checkout: list the labels that differ")
    parser.add_argument("--judged", type=Path, default=JUDGED_PATH, help="judged changes (JSONL; default: shipped)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    command = "python -m eval.option_labels " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command.strip()))
