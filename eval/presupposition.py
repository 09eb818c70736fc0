"""How often the presupposition rule flags an answer that was right where it was given.

Each logged answer is read against what its own dialogue had said before it (the question, the customer's replies
and the earlier answers): a logged answer was written for that conversation, so every flag here is a false positive
of ``dtdialog.understanding.presupposition`` (or a logged answer that itself took something for granted). Mechanics' accepted
answers are all first answers; the built-in corpus also has later ones.

``python -m eval.presupposition --dataset mechanics,builtin [--out DIR]`` prints the flag rate per dataset and kind
and the flagged answers' phrases; ``--data FILE --format F`` reads a dialogue file of your own instead.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from eval.data_args import add_data_arguments, check_data_arguments, dataset_names, load_data_file, load_dataset
from eval.datasets import DatasetUnavailable, EvalSet
from eval.entry import one_line_errors
from eval.provenance import provenance, provenance_lines
from parsers.errors import InputError
from parsers.files import atomic_write_text, check_out_dir


@dataclass
class FlagRate:
    """Answers read and flagged on one dataset, by kind of presupposed fact, with a few flagged examples."""

    dataset: str
    answers: int = 0
    flagged: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    examples: list[str] = field(default_factory=list)
    skipped: str = ""


def measure(eval_set: EvalSet, *, examples: int = 12) -> FlagRate:
    """Return how many logged answers of ``eval_set``'s test dialogues the rule flags against their own context."""
    from dtdialog.understanding.entities import EntityNormalizer
    from dtdialog.understanding.presupposition import common_ground, misfit

    normalizer, pool = EntityNormalizer(), eval_set.pool_by_id()
    out, kinds = FlagRate(dataset=eval_set.name), Counter()
    for dialogue in eval_set.dialogues:
        said, customer = [dialogue.question], [dialogue.question]
        for i, answer_id in enumerate(dialogue.answer_ids):
            text = pool[answer_id].text
            ground = common_ground(said, normalizer, customer=customer)
            found = misfit(text, ground, normalizer)
            out.answers += 1
            if found is not None:
                out.flagged += 1
                kinds[found.fact.kind] += 1
                if len(out.examples) < examples:
                    out.examples.append(f"{answer_id}: {found.explain()}")
            said += [text, *dialogue.followups[i:i + 1]]
            customer += dialogue.followups[i:i + 1]
    out.kinds = dict(kinds)
    return out


def render(results: Sequence[FlagRate], command: str, header: Sequence[str] = ()) -> str:
    """Return the Markdown report."""
    lines = ["# Logged answers the presupposition rule flags against their own dialogue", "",
             f"Command: `{command}`", "", *header, "", "| dataset | answers | flagged | share | by kind |", "|---|---|---|---|---|"]
    for r in results:
        if r.skipped:
            lines.append(f"| {r.dataset} | skipped: {r.skipped} | | | |")
            continue
        share = 100 * r.flagged / max(r.answers, 1)
        kinds = ", ".join(f"{k}: {n}" for k, n in sorted(r.kinds.items()))
        lines.append(f"| {r.dataset} | {r.answers} | {r.flagged} | {share:.1f}% | {kinds} |")
    for r in results:
        if r.examples:
            lines += ["", f"{r.dataset}, flagged:", ""] + [f"- {e}" for e in r.examples]
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace, *, command: str) -> int:
    if args.out:
        check_out_dir(args.out)  # before the slow part
    check_data_arguments(args)
    results, sets = [], []
    names = dataset_names(args.dataset) if args.data is None else []
    if args.data is not None:
        sets.append(load_data_file(args))
        results.append(measure(sets[-1]))
    for name in names:
        try:
            sets.append(load_dataset(name, args))
            results.append(measure(sets[-1]))
        except DatasetUnavailable as exc:
            results.append(FlagRate(dataset=name, skipped=str(exc)))
    if not results or all(r.skipped for r in results):
        raise InputError("none of the datasets is there" + (f": {results[0].skipped}" if results else ""))
    prov = provenance(sets)
    report = render(results, command, provenance_lines(prov))
    print(report)
    if args.out:
        out = Path(args.out)
        check_out_dir(out).mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / "presupposition.md", report)
        atomic_write_text(out / "presupposition.json", json.dumps([asdict(r) | {"provenance": prov} for r in results],
                                                                         indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run; return the exit code (2: a one-line error)."""
    parser = argparse.ArgumentParser(prog="python -m eval.presupposition", description=__doc__.splitlines()[0])
    add_data_arguments(parser, dataset_default="mechanics,builtin", dataset_help="comma-separated: mechanics, builtin, ...")
    parser.add_argument("--out", default=None, help="directory for presupposition.md and presupposition.json")
    args = parser.parse_args(argv)
    command = "python -m eval.presupposition " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    return one_line_errors(lambda: run(args, command=command))


if __name__ == "__main__":
    sys.exit(main())
