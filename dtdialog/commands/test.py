"""``dtdialog test FILE``: run conversation tests (YAML or JSONL) against an answer index; report per turn.

Exit code 0 when every turn passed, 1 when some failed, 2 for bad input (the file, its expectations, the index).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from parsers.errors import InputError
from parsers.files import check_replaceable

NAME = "test"
HELP = "run conversation tests (YAML or JSONL: customer turns with expectations) against the index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, nargs="?", default=None, metavar="FILE",
                        help="conversation tests, .yaml/.yml or .jsonl (default: the built-in corpus's tests "
                             "when no --index is given)")
    parser.add_argument("--index", type=Path, default=None,
                        help="SQLite index file to test (default: the built-in corpus's index, as dtdialog chat)")
    parser.add_argument("--parser", default=None, help="RST parser name (default: as dtdialog chat)")
    parser.add_argument("--ranker", choices=("auto", "learned", "rules"), default=None,
                        help="answer ranking (default: $DTDIALOG_RANKER or auto, as dtdialog chat)")
    parser.add_argument("--junit", type=Path, default=None, metavar="PATH", help="also write a JUnit XML report here")
    parser.add_argument("--failures-only", action="store_true", help="list only the failed turns")
    parser.add_argument("--quiet", action="store_true", help="no progress bar if the index must be built first")


@dataclass(frozen=True)
class TestTarget:
    """What ``dtdialog test`` runs: the test file and the index (None: the built-in corpus's, as chat); in a
    project whose index is not built yet, the corpus to build it from and the project's profile."""

    tests: Path
    index: Path | None
    corpus: Path | None = None
    corpus_format: str | None = None
    profile: Path | None = None


def resolve_target(args: argparse.Namespace) -> TestTarget:
    """Return the test file and index the options name, filling in the defaults.

    Without FILE and ``--index``: inside a project (``dtdialog.yaml`` in the working folder, ``dtdialog init``) its
    test file runs against its index, built from its data first when missing, as ``dtdialog chat`` does; elsewhere
    the built-in corpus's own test file runs against its index. A test file for another index must be named.
    """
    if args.index is None:
        from dtdialog.project import engine_target

        target = engine_target(index=None, corpus=None, corpus_format=None, profile=None)
        if target.project is not None:
            return TestTarget(tests=args.file or target.project.tests, index=target.index, profile=target.profile,
                              corpus=target.corpus, corpus_format=target.corpus_format)
    if args.file is not None:
        tests = args.file
    elif args.index is None:
        from data.builtin import builtin_tests_path

        tests = builtin_tests_path()
    else:
        raise InputError("give the conversation test FILE to run against --index")
    if args.index is not None and not args.index.exists():
        raise InputError(f"index {args.index} not found (build it with dtdialog index build --out {args.index})")
    return TestTarget(tests=tests, index=args.index)


def run(args: argparse.Namespace) -> int:
    from dtdialog.assembly import EngineSpec, build_engine
    from dtdialog.conversation_tests import load_tests, report_lines, run_tests, summary, write_junit

    target = resolve_target(args)
    tests = load_tests(target.tests)  # a bad file fails before the engine loads
    if args.junit is not None:
        try:
            check_replaceable(args.junit)  # before the tests run: a refusal costs nothing
        except InputError as exc:
            raise InputError(f"--junit {exc}") from None
    # a throw-away session store: test sessions are not the team's conversations
    with tempfile.TemporaryDirectory(prefix="dtdialog-test-") as tmp:
        spec = EngineSpec(parser=args.parser, index_path=target.index, ranker=args.ranker, corpus=target.corpus,
                          corpus_format=target.corpus_format or "builtin", profile=target.profile,
                          sessions_path=str(Path(tmp) / "sessions.sqlite"))
        engine = build_engine(spec, progress=not args.quiet)
        try:
            outcomes = run_tests(engine.manager, tests)
        finally:
            engine.close()
    for line in report_lines([o for o in outcomes if not o.passed] if args.failures_only else outcomes):
        print(line)
    print(summary(outcomes))
    if args.junit is not None:
        write_junit(args.junit, outcomes)
        print(f"JUnit report written to {args.junit}", file=sys.stderr)
    return 0 if all(o.passed for o in outcomes) else 1
