"""``python -m eval.coverage``: what the bot does with real questions - answer, clarify, abstain or refuse.

Each question opens a fresh session of the engine ``dtdialog chat`` builds (the same engine options, the corpus
format as ``--corpus-format``: ``--format`` is the question file's), as its first message. The report gives the share of each outcome with 95% CIs, and, when judged verdicts are shipped
(``judged_answers.jsonl``, ``judged_abstentions.jsonl``), the share of judged first answers that are relevant and
right. ``--out DIR`` also writes seeded samples for judging by reading (they quote the questions: keep them out of
the repository).
"""

from __future__ import annotations

import argparse
import json
import random
import shlex
import sys
import tempfile
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np

from eval.coverage.questions import MARKS_PATH, QUESTION_FORMATS, file_questions, held_out_questions
from eval.entry import one_line_errors
from eval.metrics import bootstrap_ratio
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir

HERE = Path(__file__).resolve().parent
JUDGED_ANSWERS = HERE / "judged_answers.jsonl"
JUDGED_ABSTENTIONS = HERE / "judged_abstentions.jsonl"
JUDGED_QUESTIONS = HERE / "judged_questions.jsonl"
#: the reply kinds of a first message, grouped as the report counts them
OUTCOMES = {"answer": "answered", "clarify": "clarified", "ask_detail": "clarified", "abstain": "abstained",
            "fallback": "abstained", "handoff": "abstained", "out_of_scope": "refused"}
ORDER = ("answered", "clarified", "abstained", "refused", "other")


def outcome(kind: str) -> str:
    return OUTCOMES.get(kind, "other")


def run(args: argparse.Namespace, *, command: str) -> int:
    from tqdm import tqdm

    from dtdialog.setup.assembly import build_engine
    from dtdialog.setup.engine_args import spec_from_args
    from eval.datasets import default_data_dir
    from eval.provenance import provenance_lines

    if args.limit is not None and args.limit < 1:
        raise InputError(f"--limit must be at least 1, got {args.limit}")
    if args.out:
        check_out_dir(args.out)
    if args.format is not None and args.data is None:
        raise InputError("--format is the --data question file's format (the corpus's is --corpus-format)")
    if args.data is not None:
        questions, pool_note = file_questions(args.data, args.format), str(args.data)
    else:
        questions, marked = held_out_questions(args.data_dir or default_data_dir(), args.marks)
        pool_note = (f"held-out half of the shared Reddit car posts: {len(questions)} of {marked} marked by reading as "
                     "asking for help with a car problem")
    if args.limit:
        questions = questions[:args.limit]
    rows = []
    with tempfile.TemporaryDirectory(prefix="dtdialog-coverage-") as tmp:
        spec = replace(spec_from_args(args), sessions_path=str(Path(tmp) / "sessions.sqlite"))
        engine = build_engine(spec, progress=not args.no_progress)
        prov = _provenance(engine, spec, questions=len(questions), source=str(args.data or "reddit held-out half"))
        try:
            for q in tqdm(questions, desc="questions", unit="q", file=sys.stderr, disable=args.no_progress):
                session = engine.manager.start_session()
                r = engine.manager.handle(session_id=session, text=q.text[:4000])
                rows.append({"id": q.id, "kind": str(r.kind), "outcome": outcome(str(r.kind)),
                             "answer_id": r.answer_id or "", "reply": r.reply,
                             "detail": r.trace.get("decision", {}).get("missing_detail") or ""})
        finally:
            engine.close()
    counts = Counter(r["outcome"] for r in rows)
    shares = {name: _share([r["outcome"] == name for r in rows]) for name in ORDER}
    judged = judged_figures(rows)
    lines = ["# Coverage: what the bot does with real questions", "", f"Command: `{command}`", "",
             f"Questions: {pool_note}. Engine: the one `dtdialog chat` builds with these options.", "",
             *provenance_lines(prov), "", "| outcome | questions | share [95% CI] |", "|---|---|---|"]
    lines += [f"| {name} | {counts.get(name, 0)} | {_pct(shares[name])} |" for name in ORDER]
    answered_or_clarified = _share([r["outcome"] in ("answered", "clarified") for r in rows])
    lines += ["", f"Answered or clarified: {_pct(answered_or_clarified)}.", ""]
    lines += _asked_lines(rows)
    lines += judged["lines"]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        out = check_out_dir(Path(args.out))
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "coverage.md", report)
        atomic_write_text(out / "coverage.json", json.dumps({
            "command": command, "provenance": prov, "questions": len(rows), "counts": dict(counts), "shares": shares,
            "answered_or_clarified": answered_or_clarified, "judged": judged["figures"],
            "outcomes": [{k: r[k] for k in ("id", "outcome", "answer_id", "detail")} for r in rows]}, indent=1))
        write_samples(out, rows, {q.id: q.text for q in questions}, engine_answers=_answer_texts(spec),
                      n_answers=args.sample, n_abstentions=args.abstain_sample, seed=args.seed)
    return 0


def _provenance(engine, spec, *, questions: int, source: str) -> dict:
    """Return the report's provenance: the questions asked, and the engine's own answers as its pool."""
    from eval.provenance import provenance

    data = {"name": "coverage", "data": source, "questions": questions,
            "pool": {"kind": "engine", "size": engine.index.count(), "source": spec.corpus or "built-in corpus"}}
    return provenance([data], parser=spec.parser, ranker=engine.ranker, model_path=spec.ranker_model)


def judged_figures(rows: list[dict]) -> dict:
    """Return the judged verdicts that still apply (the same first answer as this run) and their shares."""
    figures: dict = {}
    lines: list[str] = []
    by_id = {r["id"]: r for r in rows}
    if JUDGED_ANSWERS.is_file():
        verdicts = _read_jsonl(JUDGED_ANSWERS)
        current = [v for v in verdicts if by_id.get(v["id"], {}).get("answer_id") == v["answer_id"]]
        right = [v["verdict"] == "right" for v in current]
        figures["answers"] = {"judged": len(verdicts), "current": len(current), "right": _share(right)}
        lines.append(f"Judged first answers (a seeded sample, judged by reading): {len(current)} of {len(verdicts)} "
                     f"still given; relevant and right: {_pct(figures['answers']['right'])}.")
    if JUDGED_QUESTIONS.is_file():
        verdicts = _read_jsonl(JUDGED_QUESTIONS)
        current = [v for v in verdicts if by_id.get(v["id"], {}).get("detail") == v["detail"]]
        told = sum(1 for v in verdicts if by_id.get(v["id"], {}).get("detail") == "told")
        fits = [v["verdict"] == "fits" for v in current]
        figures["questions"] = {"judged": len(verdicts), "current": len(current), "told": told, "fits": _share(fits),
                                "verdicts": dict(Counter(v["verdict"] for v in current))}
        lines.append(f"Judged follow-up questions of abstentions: {len(current)} of {len(verdicts)} still asked, "
                     f"{_pct(figures['questions']['fits'])} of them fit the post "
                     f"({_counts(figures['questions']['verdicts'])}); {told} now ask nothing (told a lot).")
    if JUDGED_ABSTENTIONS.is_file():
        verdicts = _read_jsonl(JUDGED_ABSTENTIONS)
        nothing = [v["nothing_fitting"] for v in verdicts]
        figures["abstentions"] = {"judged": len(verdicts), "nothing_fitting": sum(nothing)}
        lines.append(f"Judged abstentions: {sum(nothing)} of {len(verdicts)} had nothing fitting in the corpus.")
    return {"figures": figures, "lines": lines}


def _asked_lines(rows: list[dict]) -> list[str]:
    """Return the table of what the bot asked when it abstained (the detail kinds of ``dtdialog.dialogue.abstain``)."""
    asked = Counter(r["detail"] for r in rows if r["outcome"] == "abstained" and r["detail"])
    if not asked:
        return []
    total = sum(asked.values())
    return ["| abstained and asked | questions | share of abstentions |", "|---|---|---|",
            *(f"| {kind} | {n} | {100 * n / total:.1f}% |" for kind, n in asked.most_common()), ""]


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _counts(counts: dict) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"


def write_samples(out: Path, rows: list[dict], texts: dict[str, str], *, engine_answers: dict[str, str],
                  n_answers: int, n_abstentions: int, seed: int) -> None:
    """Write seeded samples of answered and abstained questions, with the texts a judge reads."""
    rng = random.Random(seed)
    for name, keep, n in (("sample_answers.jsonl", "answered", n_answers),
                          ("sample_abstentions.jsonl", "abstained", n_abstentions)):
        chosen = [r for r in rows if r["outcome"] == keep]
        chosen = rng.sample(chosen, min(n, len(chosen)))
        atomic_write_text(out / name, "".join(json.dumps({
            "id": r["id"], "question": texts[r["id"]], "answer_id": r["answer_id"],
            "answer": engine_answers.get(r["answer_id"], r["reply"]), "reply": r["reply"]}) + "\n" for r in chosen))


def _answer_texts(spec) -> dict[str, str]:
    """Return the built-in corpus's answers by id (the samples show the whole answer, not only the reply)."""
    if spec.corpus is not None:
        return {}
    from data.builtin import load_builtin_corpus
    from eval.datasets import split_dialogue

    return {a.id: a.text for d in load_builtin_corpus() for a in split_dialogue(d)[1]}


def _share(flags) -> dict:
    values = np.asarray(flags, dtype=float)
    value, low, high = bootstrap_ratio(values, np.ones(len(values)))
    return {"value": round(value, 4), "low": round(low, 4), "high": round(high, 4), "n": len(values)}


def _pct(s: dict) -> str:
    return f"{100 * s['value']:.1f}% [{100 * s['low']:.1f}, {100 * s['high']:.1f}]" if s["n"] else "—"


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.coverage", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error)."""
    from dtdialog.setup.engine_args import add_engine_arguments

    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None,
                        help="a question file (JSONL, CSV or text) instead of the held-out Reddit half")
    # checked on reading, so a bad name is the evaluations' one-line error, not argparse's usage block
    parser.add_argument("--format", default=None, help=f"format of --data: {', '.join(QUESTION_FORMATS)} (default: "
                        "by its suffix, .jsonl, .csv, else one question per line); the engine's corpus format is "
                        "--corpus-format")
    parser.add_argument("--data-dir", type=Path, default=None, help="shared data directory")
    parser.add_argument("--marks", type=Path, default=MARKS_PATH, help="which held-out posts ask for car help")
    parser.add_argument("--limit", type=int, default=None, help="only the first N questions")
    parser.add_argument("--sample", type=int, default=100, help="answered questions in the judging sample")
    parser.add_argument("--abstain-sample", type=int, default=20, help="abstentions in the judging sample")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--out", default=None, help="directory for coverage.md/.json and the judging samples")
    parser.add_argument("--no-progress", action="store_true")
    add_engine_arguments(parser, data_format=True)
    args = parser.parse_args(argv)
    command = command or f"{prog} " + " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
