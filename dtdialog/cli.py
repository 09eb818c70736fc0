"""The ``dtdialog`` command line: one sub-command module per job.

Each sub-command lives in ``dtdialog/commands/<name>.py`` and exposes
``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``. A module with ``PASS_THROUGH = True``
parses its own options: it gets the arguments after its name, unparsed, as ``args.argv``.
Every ``DTDialogError`` becomes a one-line ``error: ...`` message and exit code 2, and so does a storage
fault (``OSError``, ``sqlite3.Error``) or a ``RecursionError`` no command turned into one: no traceback ever
reaches the user.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from parsers.errors import one_line_errors
from parsers.storage import storage_error

COMMAND_MODULES = ("init", "parse", "index", "chat", "test", "eval", "serve", "sessions")


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level argument parser with every available sub-command."""
    parser = argparse.ArgumentParser(prog="dtdialog", description="Discourse-tree dialogue manager for customer support.")
    parser.add_argument("--version", action="version", version=f"dtdialog {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"dtdialog.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"dtdialog.commands.{name}":
                continue
            raise
        passes = getattr(module, "PASS_THROUGH", False)
        cmd = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP, add_help=not passes)
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run, _pass_through=passes)
    return parser


def version() -> str:
    """Return the installed distribution's version, or the source tree's ``__version__`` when it is not installed."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed_version

    try:
        return installed_version("dtdialog")
    except PackageNotFoundError:
        from dtdialog import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the process exit code (0 ok, 1 no result, 2 user error, 130 interrupted)."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args._pass_through:
        args.argv = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    # a fault of the disk or of the input that the command did not name itself: still one line, never a traceback
    return one_line_errors(lambda: args._run(args),
                           on_fault=lambda exc: unexpected_fault(exc, command=args.command))


def unexpected_fault(exc: BaseException, *, command: str) -> str:
    """Return the one-line message of a storage fault or an input too deeply nested that reached ``main``."""
    if isinstance(exc, RecursionError):
        return f"dtdialog {command}: the input is nested too deeply to process"
    known = storage_error(exc, what=f"dtdialog {command}")
    if known is not None:
        return str(known)
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return f"dtdialog {command}: {exc.strerror or exc}{where}"
    return f"dtdialog {command}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


if __name__ == "__main__":
    sys.exit(main())
