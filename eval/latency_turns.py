"""Time every built-in question's first turn and its logged follow-up over one index; the child of ``eval.latency_ab``.

    PYTHONPATH=CHECKOUT python eval/latency_turns.py --index INDEX.sqlite --out TURNS.json

Run as a file with another checkout first on the path, so the same turns are timed on that checkout's code. It
imports only what every version of the engine has, and writes ``{dialogue id: [first ms, follow-up ms or null,
first reply kind]}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def _engine_parts():
    try:
        from dtdialog.setup.assembly import EngineSpec, build_engine, engine_parser_name
    except ImportError:  # checkouts from before the folder-per-job layout
        from dtdialog.assembly import EngineSpec, build_engine, engine_parser_name
    return EngineSpec, build_engine, engine_parser_name


def _freeze() -> None:
    try:
        from dtdialog.runtime.gc_tuning import freeze_loaded
    except ImportError:  # checkouts from before the folder-per-job layout
        from dtdialog.gc_tuning import freeze_loaded
    freeze_loaded()  # as a serving process does


def time_turns(index_path: Path) -> dict[str, list]:
    from data.builtin import load_builtin_corpus
    from index.sqlite_index import SqliteIndex
    from parsers.base import get_parser

    EngineSpec, build_engine, engine_parser_name = _engine_parts()
    parser = get_parser(engine_parser_name())
    parser.parse("The car starts.")
    out: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="dtq-latency-") as tmp:
        spec = EngineSpec(ranker="learned", sessions_path=str(Path(tmp) / "sessions.sqlite"))
        engine = build_engine(spec, progress=False, parser=parser, index=SqliteIndex(index_path), index_path=index_path)
        try:
            _freeze()
            manager = engine.manager
            dialogues = load_builtin_corpus()
            for d in dialogues[:3]:  # warm-up: model, spaCy, SQLite pages
                manager.handle(session_id=manager.start_session(), text=d.question)
            for d in dialogues:
                sid = manager.start_session()
                start = time.perf_counter()
                result = manager.handle(session_id=sid, text=d.question)
                first = (time.perf_counter() - start) * 1000
                reply = next((t.text for t in d.turns[1:] if t.role == "C"), None)
                follow = None
                if reply and result.kind == "answer":
                    start = time.perf_counter()
                    manager.handle(session_id=sid, text=reply)
                    follow = (time.perf_counter() - start) * 1000
                out[d.id] = [round(first, 3), None if follow is None else round(follow, 3), str(result.kind)]
        finally:
            engine.close()
    return out


def foreign_packages(checkout: Path) -> list[str]:
    """Return the engine's modules loaded from outside ``checkout``: timing them would time other code."""
    _engine_parts()  # the modules a timing run imports first
    root = checkout.resolve()
    return sorted(name for name, module in list(sys.modules.items())
                  if name.split(".")[0] in ("dtdialog", "parsers", "index", "data")
                  and getattr(module, "__file__", None) and not Path(module.__file__).resolve().is_relative_to(root))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="eval/latency_turns.py", description=__doc__.split("\n")[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if not args.index.is_file():
        print(f"error: no index at {args.index}", file=sys.stderr)
        return 2
    foreign = foreign_packages(Path.cwd())
    if foreign:
        print(f"error: {foreign[0]} and {len(foreign) - 1} more imported from outside the checkout {Path.cwd()} (an "
              "editable install of another checkout shadows it: pip uninstall dtdialog, then run again)",
              file=sys.stderr)
        return 2
    args.out.write_text(json.dumps(time_turns(args.index)) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
