"""``python -m eval.already_tried``: rank each judged question's candidates with each method and report the shares."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from eval.already_tried.agreement import agreement, read_judgments
from eval.already_tried.gold import JUDGMENTS_PATH, SECOND_JUDGE_PATH, GoldSet, load_gold_file, load_shipped
from eval.already_tried.measure import MethodResult, first_answers, paired_against, score, subset
from eval.already_tried.report import markdown, plot, table
from eval.entry import one_line_errors
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

DEFAULT_METHODS = ("keyword", "dense", "hybrid", "dtq", "dtq-no-dt")
BASE = "dense"
LONG_WORDS = 80


def run(args: argparse.Namespace, *, command: str) -> int:
    from dtdialog.setup.assembly import engine_parser_name
    from eval.methods import available_methods, get_method
    from eval.provenance import encoder_runtime, git_commit, ranker_model

    if args.out:
        check_out_dir(args.out)  # before the slow part
    gold = load_gold_file(args.data) if args.data else load_shipped(args.data_dir)
    if args.limit is not None:
        if args.limit < 1:
            raise InputError(f"--limit must be at least 1, got {args.limit}")
        gold = GoldSet(name=gold.name, questions=gold.questions[:args.limit], pool=gold.pool, judged=gold.judged)
    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in names if m not in available_methods()]
    if unknown and args.methods != ",".join(DEFAULT_METHODS):
        raise InputError(f"unknown method {unknown[0]!r}; choose from {', '.join(available_methods())}")
    names = [m for m in names if m in available_methods()]
    results = [_run_method(get_method(name), name, gold) for name in names]
    questions = gold.questions
    base = next((r for r in results if r.method == BASE), None)
    long = [len(q.question.split()) >= LONG_WORDS for q in questions]
    sections = [(f"All {len(questions)} questions that state what was tried", _section(results, questions, base))]
    sections.append((f"Questions of {LONG_WORDS} words or more ({sum(long)})",
                     _section([subset(questions, r, long) for r in results],
                              [q for q, k in zip(questions, long, strict=True) if k], None if base is None else
                              subset(questions, base, long))))
    for source in sorted({q.id.split(":", 1)[0] for q in questions} - {""}):
        keep = [q.id.split(":", 1)[0] == source for q in questions]
        if 0 < sum(keep) < len(questions):
            sections.append((f"{source} ({sum(keep)})", _section(
                [subset(questions, r, keep) for r in results], [q for q, k in zip(questions, keep, strict=True) if k],
                None if base is None else subset(questions, base, keep))))
    extraction = None if args.no_extraction else _reading(questions)
    agree = _agreement(args)
    ranker = ranker_model()
    header = [f"Data: {gold.name}: {len(questions)} questions state what was tried, of {gold.judged} judged; "
              f"pool {len(gold.pool)} answers. Parser {engine_parser_name(None)}; encoder {encoder_runtime()}; "
              f"ranker {ranker['version'] or ranker['name']}; commit {git_commit()}."]
    report = markdown(command=command, header=header, sections=sections, extraction=extraction, agreement=agree)
    print(report)
    if args.out:
        out = check_out_dir(Path(args.out))
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "already_tried.md", report)
        atomic_write_text(out / "already_tried.json", json.dumps({
            "command": command, "header": header, "extraction": extraction, "agreement": agree,
            "methods": {r.method: {"label": r.label, "repeats": r.repeats.to_dict(),
                                   "relevant_new": r.relevant_new.to_dict(), "relevant": r.relevant.to_dict(),
                                   "unranked": r.unranked, "first": r.first} for r in results},
            "questions": [q.id for q in questions]}, indent=1))
        plot(out / "already_tried.png", results)
    return 0


def _reading(questions) -> dict:
    """Return how the engine reads what was tried (extraction) and which candidates repeat it (the demotion rule)."""
    from dtdialog.setup.assembly import engine_parser_name
    from eval.already_tried.extraction import score_extraction, score_repeats
    from parsers.base import get_parser

    parser = get_parser(engine_parser_name(None))
    return {**score_extraction(questions, parser).to_dict(), "repeat_reading": score_repeats(questions, parser).to_dict()}


def _agreement(args: argparse.Namespace) -> dict | None:
    """Return the two judges' agreement when a second judge's file is given (or shipped beside the judgments)."""
    second = args.second or (SECOND_JUDGE_PATH if not args.data and SECOND_JUDGE_PATH.is_file() else None)
    if not second:
        return None
    found = agreement(read_judgments(args.data or JUDGMENTS_PATH), read_judgments(second))
    return {"questions": found.questions, "labels": [a.to_dict() for a in found.labels],
            "disagreements": found.disagreements}


def _run_method(method, name: str, gold: GoldSet) -> MethodResult:
    from tqdm import tqdm

    method.fit(pool=gold.pool)
    try:
        with tqdm(total=len(gold.questions), desc=name, unit="q", file=sys.stderr, leave=False) as bar:
            first = first_answers(gold, method, progress=bar)
    finally:
        method.close()
    return score(MethodResult(method=name, label=method.describe(), first=first), gold.questions)


def _section(results, questions, base) -> list[str]:
    against = {r.method: paired_against(r, base, questions) for r in results if base is not None and r.method != BASE}
    return table(results, against, BASE)


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.already_tried", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error)."""
    parser = argparse.ArgumentParser(prog=prog,
                                     description="the redundant-advice benchmark (docs/already_tried.md)")
    parser.add_argument("--data", type=Path, default=None,
                        help="a self-contained judged JSONL file of your own (default: the shipped judgments)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="shared data directory (default $DTDIALOG_SHARED_DATA or ../shared/data)")
    parser.add_argument("--methods", default=",".join(DEFAULT_METHODS),
                        help="comma-separated ranking methods (eval.methods); unavailable defaults are skipped")
    parser.add_argument("--second", type=Path, default=None,
                        help="a second judge's judgments of some of the same questions: report the agreement")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--no-extraction", action="store_true", help="skip scoring the engine's tried-action reading")
    parser.add_argument("--out", default=None, help="directory for already_tried.md, .json and .png")
    args = parser.parse_args(argv)
    command = command or f"{prog} " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))
