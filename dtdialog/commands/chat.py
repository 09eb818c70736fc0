"""``dtdialog chat``: the support chatbot, interactive or replaying a script of user turns.

Run in a project folder (``dtdialog.yaml``, ``dtdialog init``) with no corpus or index option, it answers from the
project's index (built from its data on first use) in the project profile's wording.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import traceback
from pathlib import Path

from dtdialog.setup.engine_args import add_engine_arguments, spec_from_args
from parsers.errors import DTDialogError, InputError, StorageError
from parsers.storage import storage_error

NAME = "chat"
HELP = ("chat with the support assistant (the project's index in a dtdialog.yaml folder, else the built-in "
        "car-repair corpus); --script replays user turns")
QUIT_WORDS = frozenset({"quit", "exit", "/quit", "/exit", "bye"})
#: A script file larger than this is refused (it is a list of user turns, not a corpus).
MAX_SCRIPT_BYTES = 5_000_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_engine_arguments(parser)
    parser.add_argument("--script", type=Path, default=None,
                        help="replay user turns from this file (one per line; blank lines and '#' lines skipped)")
    parser.add_argument("--session", default=None, metavar="ID", help="resume the session with this id")
    parser.add_argument("--explain", nargs="?", const="summary", default=None, choices=("summary", "details"),
                        help="print each turn's trace (DT-Q, queries, scores, chains) and why the reply was chosen, "
                             "in plain words; --explain=details adds the ranker's per-feature contributions")
    parser.add_argument("--explain-details", dest="explain", action="store_const", const="details",
                        help="the same as --explain=details")
    # chat --json: one JSON object per bot turn, for scripts and tests
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object per bot turn (kind, reply, confidence, state, answer_id, options) "
                             "instead of the you>/bot> transcript")
    parser.add_argument("--trace-json", type=Path, default=None,
                        help="append every turn's trace as one JSON line to this file")
    parser.add_argument("--agreement-table", default=None, help="JSON compatibility table replacing the built-in one")
    parser.add_argument("--overlap-scope", choices=("relation", "answer"), default="relation",
                        help="where an answer must share an entity with a question relation: in the compatible "
                             "relation itself (the paper's rule, default) or anywhere in the answer")
    parser.add_argument("--clarify-margin", type=float, default=None, metavar="X",
                        help="offer a choice when the top answers score within X of each other (0..1)")
    parser.add_argument("--clarify-ratio", type=float, default=None, metavar="R",
                        help="an option must also score at least R of the best and cover the question's topic "
                             "at least R as well as the best (0..1; 0 offers every close answer)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar while building the index")
    parser.add_argument("--no-why", dest="why", action="store_false",
                        help="do not print the short plain-language reason under each answer")
    parser.add_argument("--save-engine", type=Path, default=None, metavar="SPEC.json",
                        help="write the engine the other options describe as a JSON spec, then exit; beside "
                             "--engine, re-save that spec over its corpus as it is now")


def _read_script(path: Path) -> list[str]:
    try:
        size = path.stat().st_size
        if size > MAX_SCRIPT_BYTES:
            raise InputError(f"script {path} is {size} bytes; a script holds user turns (max {MAX_SCRIPT_BYTES})")
        raw = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read script {path}: {exc.strerror}") from None
    if b"\x00" in raw:
        raise InputError(f"script {path} is a binary file, expected text with one user turn per line")
    text = raw.decode("utf-8", errors="replace")
    return [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _open_trace(path: Path):
    """Return the ``--trace-json`` file opened for appending; a path that cannot be written is a one-line error."""
    from parsers.files import open_append

    try:
        return open(open_append(path), "a", encoding="utf-8")  # noqa: SIM115 - closed by the caller's finally
    except OSError as exc:
        raise storage_error(exc, what=f"cannot write the trace file {path}") or InputError(
            f"cannot write the trace file {path}: {exc.strerror or exc}") from None


def _print_result(result, *, explain: str | None, out, history: list[dict] | None = None, why: bool = True) -> None:
    from dtdialog.dialogue.customer_why import customer_why

    lines = result.reply.splitlines() or [""]
    print(f"bot> {lines[0]}", file=out)
    for line in lines[1:]:
        print(f"     {line}", file=out)
    reason = customer_why(result.trace or {}, history) if why else None
    if reason:
        print(f"     (why: {reason[:1].lower()}{reason[1:].rstrip('.')})", file=out)
    if explain:
        from dtdialog.dialogue.trace import format_trace

        print(format_trace(result.trace, details=explain == "details", history=history), file=out)
    out.flush()


class _WarmUp:
    """``Engine.warm_up`` (spaCy, the query encoder, the domain profile), then ``freeze_loaded``, in a thread.

    Nothing of it is needed to show the first prompt: it loads while the user reads the greeting and types,
    and ``wait`` joins it before the first turn. A failure is raised there, as ``build_engine`` would have.
    """

    def __init__(self, engine) -> None:
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(engine,), name="dtdialog-warm-up")
        self._thread.start()

    def _run(self, engine) -> None:
        from dtdialog.runtime.gc_tuning import freeze_loaded

        try:
            engine.warm_up()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread by wait()
            self._error = exc
        freeze_loaded()  # a chat process serves turns from here on: keep the loaded engine out of full collections

    def join(self) -> None:
        """Block until the warm-up is done (what it raised is no one's business any more: the chat is over)."""
        self._thread.join()

    def wait(self) -> None:
        """Block until the warm-up is done; raise what it raised (once)."""
        self._thread.join()
        error, self._error = self._error, None
        if error is not None:
            raise error


def run(args: argparse.Namespace) -> int:
    from dtdialog.setup.assembly import build_engine

    spec = engine_spec(args)
    if args.save_engine is not None:
        spec.save(args.save_engine)
        print(f"engine spec written to {args.save_engine}", file=sys.stderr)
        return 0
    script = _read_script(args.script) if args.script is not None else None
    if args.trace_json is not None and args.trace_json.is_dir():  # before the engine loads: fail fast
        raise InputError(f"--trace-json {args.trace_json} is a folder; give a file path")
    engine = build_engine(spec, progress=not args.quiet, warm=False)
    warm = _WarmUp(engine)
    manager = engine.manager
    out = sys.stdout
    try:
        if args.session:
            record = manager.session(args.session)
            session_id = record.id
            print(f"resuming session {session_id} ({record.state}, {len(record.transcript)} messages)", file=sys.stderr)
            last_bot = next((m["text"] for m in reversed(record.transcript) if m.get("role") == "bot"), None)
            if last_bot and script is None:  # remind an interactive user where the conversation stopped
                print(f"bot> {manager.replies.last_time.format(text=last_bot.splitlines()[0][:300])}", file=out)
        else:
            session_id = manager.start_session()
            print(f"session {session_id} (resume with --session {session_id})", file=sys.stderr)
            if not args.json:
                print(f"bot> {manager.replies.greeting}", file=out)
        trace_file = _open_trace(args.trace_json) if args.trace_json else None
        try:
            if script is not None:
                for line in script:
                    if not args.json:
                        print(f"you> {_shown(line)}", file=out)
                    warm.wait()
                    _turn(manager, session_id, line, args, out, trace_file)
            else:
                _interactive(manager, session_id, args, out, trace_file, ready=warm.wait)
        finally:
            if trace_file:
                trace_file.close()
        return 0
    finally:
        try:
            warm.join()  # never close the index under a warm-up still reading it
        finally:
            engine.close()


#: The chat options beside ``ENGINE_OPTIONS`` that shape the engine, with their defaults.
CHAT_ENGINE_OPTIONS = {"agreement_table": None, "overlap_scope": "relation", "clarify_margin": None,
                       "clarify_ratio": None}


def engine_spec(args: argparse.Namespace):
    """Return the ``EngineSpec`` the chat options describe (or the saved one ``--engine`` names)."""
    from dtdialog.setup.engine_config import AgreementConfig, ClarifyConfig, EngineConfig

    if args.engine is not None:  # --save-engine beside it re-saves the spec over its corpus as it is now
        return spec_from_args(args, extra_options=CHAT_ENGINE_OPTIONS, accept_corpus=args.save_engine is not None)
    clarify = {name: getattr(args, name) for name in ("clarify_margin", "clarify_ratio")
               if getattr(args, name) is not None}
    config = EngineConfig(agreement=AgreementConfig(agreement_table=args.agreement_table,
                                                    overlap_scope=args.overlap_scope),
                          clarify=ClarifyConfig(**clarify))
    return spec_from_args(args, extra_options=CHAT_ENGINE_OPTIONS, config=config)


def _shown(line: str, limit: int = 300) -> str:
    clean = "".join(ch if ch.isprintable() else " " for ch in line)
    return clean if len(clean) <= limit else clean[:limit] + f"... [{len(line)} characters]"


def _turn(manager, session_id: str, text: str, args, out, trace_file) -> None:
    import json

    from dtdialog.dialogue.customer_why import needs_history

    try:
        result = manager.handle(session_id=session_id, text=text)
    except StorageError:
        raise  # disk full, read-only, locked: no later turn could be saved either, so stop with the one-line error
    except DTDialogError as exc:
        print(f"bot> {manager.replies.turn_failed.format(error=exc)}", file=out)
        return
    except Exception as exc:  # noqa: BLE001 - a chat must never crash; the session was saved by the last turn
        if os.environ.get("DTDIALOG_DEBUG"):
            traceback.print_exc()
        print(f"bot> {manager.replies.internal_error.format(error=type(exc).__name__)}", file=out)
        return
    # an answer picked from options was ranked on an earlier turn: the explanations look there
    history = manager.session(session_id).traces[:-1] if args.explain or needs_history(result.trace or {}) else None
    if args.json:
        print(json.dumps(_turn_json(result, history), ensure_ascii=False), file=out, flush=True)
    else:
        _print_result(result, explain=args.explain, out=out, history=history, why=getattr(args, "why", True))
    if trace_file is not None:
        trace_file.write(json.dumps(result.trace, ensure_ascii=False) + "\n")
        trace_file.flush()


def _turn_json(result, history: list[dict] | None = None) -> dict:
    """Return what ``--json`` prints for one bot turn (``why``: the customer's plain reason for an answer)."""
    from dtdialog.dialogue.customer_why import customer_why

    return {"kind": result.kind, "reply": result.reply, "confidence": result.confidence, "state": result.state,
            "answer_id": result.answer_id, "options": [o.to_dict() for o in result.options],
            "reason": (result.trace.get("decision") or {}).get("reason"), "why": customer_why(result.trace, history)}


def _interactive(manager, session_id: str, args, out, trace_file, *, ready) -> None:
    while True:
        try:
            line = input("you> ")
        except EOFError:
            print(file=out)
            break
        except KeyboardInterrupt:
            print(file=out)
            break
        if not line.strip():
            print(f"bot> {manager.replies.empty_line}", file=out)
            continue
        if line.strip().lower() in QUIT_WORDS:
            break
        try:
            ready()  # the background warm-up, joined before the first turn
            _turn(manager, session_id, line, args, out, trace_file)
        except KeyboardInterrupt:
            print(file=out)
            break
    print(f"bye - session {session_id} is saved (resume with --session {session_id})", file=sys.stderr)
