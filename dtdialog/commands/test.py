"""``dtdialog test FILE``: run conversation tests (YAML or JSONL) against an answer index; report per turn.

Exit code 0 when every turn passed, 1 when some failed, 2 for bad input (the file, its expectations, the index).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from dtdialog.setup.engine_args import add_engine_arguments, spec_from_args
from parsers.errors import InputError
from parsers.files import check_replaceable

NAME = "test"
HELP = "run conversation tests (YAML or JSONL: customer turns with expectations) against the index"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, nargs="?", default=None, metavar="FILE",
                        help="conversation tests, .yaml/.yml or .jsonl (default: the built-in corpus's tests "
                             "when no --index is given)")
    add_engine_arguments(parser)
    parser.add_argument("--junit", type=Path, default=None, metavar="PATH", help="also write a JUnit XML report here")
    parser.add_argument("--failures-only", action="store_true", help="list only the failed turns")
    parser.add_argument("--quiet", action="store_true", help="no progress bar if the index must be built first")


def tests_file(args: argparse.Namespace, spec) -> Path:
    """Return the conversation test file to run against the engine ``spec``.

    Without FILE: the built-in corpus's own tests for its index; inside a project (``dtdialog.yaml`` in the working
    folder, ``dtdialog init``) its tests for its index, built from its data first when missing, as ``dtdialog chat``
    does. A test file for another index must be named.
    """
    if args.file is not None:
        return args.file
    if spec.index_path is None and spec.corpus is None and spec.backend == "sqlite":
        from data.builtin import builtin_tests_path

        return builtin_tests_path()
    from dtdialog.setup.project import find_project

    project = find_project()
    if project is not None and spec.index_path is not None and Path(spec.index_path) == Path(project.index):
        return project.tests
    raise InputError("give the conversation test FILE to run against this index")


def run(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from dtdialog.dialogue.conversation_tests import (
        failed_tests,
        load_tests,
        report_lines,
        run_tests,
        summary,
        write_junit,
    )
    from dtdialog.setup.assembly import build_engine

    spec = spec_from_args(args)
    tests = load_tests(tests_file(args, spec))  # a bad file fails before the engine loads
    if args.junit is not None:
        try:
            check_replaceable(args.junit)  # before the tests run: a refusal costs nothing
        except InputError as exc:
            raise InputError(f"--junit {exc}") from None
    # a throw-away session store unless --sessions names one: test sessions are not the team's conversations
    with tempfile.TemporaryDirectory(prefix="dtdialog-test-") as tmp:
        if args.sessions is None:
            spec = replace(spec, sessions_path=str(Path(tmp) / "sessions.sqlite"))
        engine = build_engine(spec, progress=not args.quiet)
        try:
            outcomes = run_tests(engine.manager, tests)
        finally:
            engine.close()
    for line in report_lines([o for o in outcomes if not o.passed or o.known_failure] if args.failures_only
                             else outcomes):
        print(line)
    print(summary(outcomes))
    if args.junit is not None:
        write_junit(args.junit, outcomes)
        print(f"JUnit report written to {args.junit}", file=sys.stderr)
    return 1 if failed_tests(outcomes) else 0
