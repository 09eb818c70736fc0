"""Dialogue position (issue 13, item 4): does step 1 deliver answers that can open a dialogue?

For each dataset (built-in, Twitter, IRC: the source position of every answer is known) this

* fits the engine's ``dtq`` method on the candidate pool (``eval.methods.dtq``, as ``eval.reconstruct`` does);
* scores the follow-up detector stored in the index (``index.position``: ``stands_alone`` False = "reads as a
  follow-up") against the true role: precision and recall of "follow-up";
* ranks every test dialogue's question alone (step 1) under each ``step1_position`` mode and reports the share
  of delivered (top-1) answers that were follow-ups in their source, that read as follow-ups, and step-1
  accuracy (the logged first answer on top).

``python -m eval.position --dataset builtin,twitter,irc --out DIR`` writes ``position.md`` and ``position.json``.
``--detector-only`` runs no ranking: it parses each answer's opening and scores the detector alone (``detector.md``),
also on ``mechanics``, whose accepted answers all open their question (every answer read as a follow-up there is a
false positive); ``--data FILE --format F`` reads a team's own dialogue file instead of a named dataset.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from dtdialog.setup.engine_args import POOL_ENGINE_OPTIONS, add_engine_arguments
from eval.data_args import add_data_arguments, check_data_arguments, dataset_names, load_data_file, load_dataset
from eval.datasets import DatasetUnavailable, EvalSet, PoolAnswer
from eval.entry import one_line_errors
from eval.provenance import provenance, provenance_lines
from parsers.errors import ConfigError, InputError
from parsers.files import atomic_write_text, check_out_dir

DATASETS = ("builtin", "twitter", "irc", "mechanics")
#: the detector reads an answer's first EDU and where it attaches: the opening sentences are enough to parse
DETECTOR_SENTENCES = 2
MODES = ("off", "standalone", "opening")


@dataclass
class Detector:
    """Confusion counts of "reads as a follow-up" against "was a follow-up"."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 0.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 0.0


@dataclass
class StepOne:
    """What step 1 delivered under one mode: counts over the test dialogues with a delivered answer."""

    mode: str
    margin: float = 0.0
    delivered: int = 0
    followups: int = 0
    not_standalone: int = 0
    correct: int = 0
    demoted_steps: int = 0
    #: delivered a follow-up although an opening scored within the margin of the best (the issue's target: 0)
    followups_with_opener: int = 0
    #: delivered a follow-up although the best opening, put first, was confident (calibrated P >= abstain_below)
    followups_with_confident_opener: int = 0


@dataclass
class DatasetPosition:
    dataset: str
    n_dialogues: int = 0
    n_pool: int = 0
    ranker: str = ""
    detector: Detector = field(default_factory=Detector)
    steps: list[StepOne] = field(default_factory=list)
    skipped: str = ""


def true_roles(pool: Sequence[PoolAnswer]) -> dict[str, str]:
    """Return ``id -> opening|followup``: an answer opens its dialogue when no pool answer of it sits earlier."""
    first: dict[str, int] = {}
    for a in pool:
        first[a.dialogue_id] = min(a.position, first.get(a.dialogue_id, a.position))
    return {a.id: "opening" if a.position == first[a.dialogue_id] else "followup" for a in pool}


def measure(eval_set: EvalSet, *, ranker: str | None, modes: Sequence[str], progress: bool,
            margins: Sequence[float] = (), parser: str | None = None) -> DatasetPosition:
    """Return the detector's accuracy and the step-1 position figures of ``eval_set`` under each mode and
    ``opening_margin`` (``margins``; default the engine's); ``parser``: the RST parser's name (default the engine's)."""
    from dtdialog.setup.engine_config import PositionConfig
    from eval.methods.dtq import DTQMethod
    from index.position import position_of

    out = DatasetPosition(dataset=eval_set.name, n_dialogues=len(eval_set.dialogues), n_pool=len(eval_set.pool))
    roles = true_roles(eval_set.pool)
    method = DTQMethod(ranker=ranker, progress=progress, parser=parser)
    method.fit(pool=eval_set.pool)
    try:
        out.ranker = method.resolved_ranker
        selector = method._selector  # the engine the method built; only its config's position mode changes
        stands = {}
        for doc_id, role in roles.items():
            doc = selector.document(doc_id)
            if doc is None:
                continue
            stands[doc_id] = position_of(doc).stands_alone
            _count(out.detector, was=role == "followup", reads=not stands[doc_id])
        base = selector.config
        default_margins = (base.position.opening_margin,)
        for mode in modes:
            for margin in (margins or default_margins) if mode != "off" else default_margins:
                selector.config = replace(base, position=PositionConfig(step1_position=mode, opening_margin=margin))
                out.steps.append(_step_one(eval_set, selector, mode, roles, stands, margin=margin))
        selector.config = base
    finally:
        method.close()
    return out


@dataclass
class DetectorOnly:
    """The text-based detector alone on one dataset's pool: counts, and a few answers of each kind of error."""

    dataset: str
    n_pool: int = 0
    followups: int = 0
    detector: Detector = field(default_factory=Detector)
    examples: dict[str, list[str]] = field(default_factory=dict)
    skipped: str = ""

    @property
    def false_positive_rate(self) -> float:
        """Share of the answers that opened their dialogue which the detector reads as follow-ups."""
        d = self.detector
        return d.fp / (d.fp + d.tn) if d.fp + d.tn else 0.0


def measure_detector(eval_set: EvalSet, parser, *, examples: int = 5) -> DetectorOnly:
    """Return how well ``index.position.detect_position`` tells logged follow-ups from first answers in ``eval_set``.

    Each answer's opening sentences are parsed with ``parser`` (the engine's); no ranking is run.
    """
    from index.position import detect_position

    roles = true_roles(eval_set.pool)
    # only the test dialogues' answers: IRC's pool adds the train split, from which the formulas were chosen
    tested = {d.id for d in eval_set.dialogues}
    answers = [a for a in eval_set.pool if a.dialogue_id in tested]
    out = DetectorOnly(dataset=eval_set.name, n_pool=len(answers))
    kinds: dict[str, list[str]] = {"tp": [], "fp": [], "fn": []}
    for answer in answers:
        try:
            tree = parser.parse(opening_text(answer.text))
        except InputError:
            continue
        was, position = roles[answer.id] == "followup", detect_position(tree, role=roles[answer.id])
        reads = not position.stands_alone
        out.followups += was
        _count(out.detector, was=was, reads=reads)
        kind = "tp" if was and reads else "fp" if reads else "fn" if was else ""
        if kind and len(kinds[kind]) < examples:
            kinds[kind].append(f"{answer.id}: {position.reason or '-'} | {' '.join(answer.text.split())[:110]}")
    out.examples = kinds
    return out


def opening_text(text: str, sentences: int = DETECTOR_SENTENCES) -> str:
    """Return the first ``sentences`` sentences of ``text`` (what the detector needs of an answer)."""
    import re

    parts = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=sentences)
    return " ".join(parts[:sentences])


def render_detector(results: Sequence[DetectorOnly], command: str) -> str:
    """Return the Markdown report of the detector-only measurement."""
    lines = ["# Does an answer's opening point back to earlier turns?", "", f"Command: `{command}`", "",
             "`index.position.detect_position` on each answer's opening sentences (the engine's parser), against the "
             "answer's true role in its source dialogue (a follow-up: an answer turn came before it).", "",
             "| dataset | answers of its test dialogues | follow-ups | read as follow-ups | precision | recall | first answers read as "
             "follow-ups |", "|---|---|---|---|---|---|---|"]
    lines += _rows(results, 7, lambda r, d: f"| {r.dataset} | {r.n_pool} | {r.followups} | {d.tp + d.fp} | "
                   f"{100 * d.precision:.1f} | {100 * d.recall:.1f} | {d.fp} of {d.fp + d.tn} "
                   f"({100 * r.false_positive_rate:.1f}%) |")
    for r in results:
        for kind, title in (("tp", "caught"), ("fp", "first answers read as follow-ups"), ("fn", "missed")):
            if r.examples.get(kind):
                lines += ["", f"{r.dataset}, {title}:", ""] + [f"- {e}" for e in r.examples[kind]]
    return "\n".join(lines) + "\n"


def _rows(results: Sequence, columns: int, row) -> list[str]:
    """Return one table row per result: ``row(result, its detector)``, or the reason it was skipped."""
    return [f"| {r.dataset} | skipped: {r.skipped} |" + " |" * (columns - 2) if r.skipped else row(r, r.detector)
            for r in results]


def _count(det: Detector, *, was: bool, reads: bool) -> None:
    det.tp += was and reads
    det.fp += reads and not was
    det.fn += was and not reads
    det.tn += not was and not reads


def _step_one(eval_set: EvalSet, selector, mode: str, roles: dict[str, str], stands: dict[str, bool], *,
              margin: float) -> StepOne:
    res = StepOne(mode=mode, margin=margin)
    for d in eval_set.dialogues:
        try:
            outcome = selector.rank_outcome(question=d.question, step=0, size=10)
        except InputError:
            continue
        if not outcome.candidates:
            continue
        top = outcome.candidates[0].document.id
        res.delivered += 1
        res.followups += roles.get(top) == "followup"
        res.not_standalone += not stands.get(top, True)
        res.correct += top == d.answer_ids[0]
        res.demoted_steps += bool(outcome.record.position)
        if roles.get(top) == "followup":
            best = max(c.features.get("score_before_position", c.score) for c in outcome.candidates)
            res.followups_with_opener += any(roles.get(c.document.id) == "opening" and best - c.score <= margin
                                             for c in outcome.candidates)
            res.followups_with_confident_opener += _confident_opening(selector, outcome.candidates, roles)
    return res


def _confident_opening(selector, ranked, roles: dict[str, str]) -> bool:
    """Return True when the best opening of ``ranked``, put first, reaches the engine's abstention threshold."""
    opener = next((c for c in ranked if roles.get(c.document.id) == "opening"), None)
    if opener is None or selector.calibrator is None:
        return False
    value = selector.calibrator.confidence([opener, *(c for c in ranked if c is not opener)])
    return value is not None and value >= selector.config.abstention.abstain_below


def render(results: Sequence[DatasetPosition], command: str) -> str:
    """Return the Markdown report of ``results``."""
    lines = ["# Dialogue position at step 1", "", f"Command: `{command}`", "",
             "Follow-up detector (`index.position`, stored per answer): \"reads as a follow-up\" against the "
             "answer's true role in its source dialogue.", "",
             "| dataset | pool | follow-ups | precision | recall |", "|---|---|---|---|---|"]
    lines += _rows(results, 5, lambda r, d: f"| {r.dataset} | {r.n_pool} | {d.tp + d.fn} | {100 * d.precision:.1f} | "
                   f"{100 * d.recall:.1f} |")
    lines += ["", "Step 1 (the question alone), top-1 answer of the engine's `dtq` ranking over the pool; percent of "
              "delivered answers.", "",
              "| dataset | ranker | mode | opening margin | delivered | was a follow-up | ... although an opening was "
              "within the margin | ... although an opening was confident | reads as a follow-up | step-1 acc | "
              "steps reordered |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for s in r.steps:
            n = max(s.delivered, 1)
            margin = "-" if s.mode == "off" else f"{s.margin:g}"
            lines.append(f"| {r.dataset} | {r.ranker} | {s.mode} | {margin} | {s.delivered} | "
                         f"{100 * s.followups / n:.1f} | {s.followups_with_opener} | {s.followups_with_confident_opener} | "
                         f"{100 * s.not_standalone / n:.1f} | "
                         f"{100 * s.correct / n:.1f} | {s.demoted_steps} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> int:
    names = dataset_names(args.dataset)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    bad = [n for n in names if n not in DATASETS] + [m for m in modes if m not in MODES]
    if (bad or not names or not modes) and not args.data:
        raise ConfigError(f"unknown dataset or mode {', '.join(bad) or '(none given)'}; datasets: "
                          f"{', '.join(DATASETS)}; modes: {', '.join(MODES)}")
    try:
        margins = [float(m) for m in args.margins.split(",") if m.strip()] if args.margins else []
    except ValueError:
        raise ConfigError(f"--margins must be comma-separated numbers, got {args.margins!r}") from None
    if args.out:
        check_out_dir(args.out)  # before the slow part
    parser = _engine_parser(args.parser) if args.detector_only else None
    results: list = []
    sets: list[EvalSet] = []
    for name, eval_set, skipped in _eval_sets(args, names):
        sets += [eval_set] if eval_set is not None else []
        if skipped:
            results.append((DetectorOnly if parser else DatasetPosition)(dataset=name, skipped=skipped))
        elif parser is not None:
            results.append(measure_detector(eval_set, parser))
        else:
            results.append(measure(eval_set, ranker=args.ranker, modes=modes, progress=args.progress,
                                   margins=margins, parser=args.parser))
    if all(r.skipped for r in results):
        raise InputError(f"none of the datasets {', '.join(names)} is there: {results[0].skipped}")
    # the ranker the engine resolved to, when one ran; else the option, resolved as the engine would
    ranker = next((r.ranker for r in results if getattr(r, "ranker", "")), args.ranker)
    prov = provenance(sets, parser=args.parser, ranker=ranker)
    report = render_detector(results, command) if parser else render(results, command)
    report = report.replace("\n\n", "\n\n" + "\n".join(provenance_lines(prov)) + "\n\n", 1)
    print(report)
    if args.out:
        _write(Path(args.out), "detector" if parser else "position", report, results, prov)
    return 0


def _eval_sets(args: argparse.Namespace, names: list[str]):
    """Yield ``(name, eval set or None, why it was skipped)``: the ``--data`` file, else each named dataset."""
    check_data_arguments(args)
    if args.data:
        eval_set = load_data_file(args)
        yield eval_set.name, eval_set.limited(args.limit), ""
        return
    for name in names:
        try:
            yield name, load_dataset(name, args).limited(args.limit), ""
        except DatasetUnavailable as exc:
            if len(names) == 1:
                raise  # the one dataset asked for is absent: an error, not a report of nothing
            yield name, None, str(exc)


def _engine_parser(name: str | None = None):
    from dtdialog.setup.assembly import engine_parser_name
    from parsers.base import get_parser

    return get_parser(engine_parser_name(name))


def _write(out: Path, stem: str, report: str, results: Sequence, prov: dict) -> None:
    check_out_dir(out).mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / f"{stem}.md", report)
    data = [asdict(r) | {"precision": r.detector.precision, "recall": r.detector.recall, "provenance": prov}
            for r in results]
    atomic_write_text(out / f"{stem}.json", json.dumps(data, indent=2))


def main(argv: list[str] | None = None, *, prog: str = "python -m eval.position", command: str | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error, 130: interrupted)."""
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    add_data_arguments(parser, dataset_default="builtin,twitter,irc",
                       dataset_help="comma-separated: builtin, twitter, irc, mechanics")
    parser.add_argument("--detector-only", action="store_true",
                        help="only score the text-based follow-up detector (no ranking): precision, recall and the "
                             "first answers it reads as follow-ups")
    parser.add_argument("--modes", default=",".join(MODES), help="step1_position modes to compare")
    parser.add_argument("--margins", default=None,
                        help="comma-separated opening_margin values to compare (default: the engine's)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N test dialogues per dataset")
    parser.add_argument("--out", default=None, help="directory for position.md and position.json")
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=False)
    add_engine_arguments(parser, only=POOL_ENGINE_OPTIONS)
    args = parser.parse_args(argv)
    command = command or "python -m eval.position " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
