"""``dtdialog serve``: run the HTTP API and the web chat page with uvicorn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from parsers.errors import ConfigError

NAME = "serve"
#: On SIGTERM/Ctrl-C, seconds uvicorn lets requests in flight finish before cancelling them; the engine
#: then gets ``EngineService.close``'s few seconds: the process is gone within 10 s, even with a turn running.
SHUTDOWN_GRACE_S = 4
HELP = "Run the search API and the web chat page (FastAPI + uvicorn)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    parser.add_argument("--index", type=Path, default=None,
                        help="SQLite answer index (default: $DTDIALOG_INDEX or ~/.cache/dtdialog/answers.sqlite)")
    parser.add_argument("--backend", default="sqlite", help="index backend: sqlite or elasticsearch")
    parser.add_argument("--es-url", default=None, help="Elasticsearch URL for --backend elasticsearch")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="dialogue corpus to index at start-up (default: the built-in corpus, indexed once)")
    parser.add_argument("--format", dest="corpus_format", default=None,
                        help="format of --corpus: jsonl (default), csv, mechanics, twitter or irc")
    parser.add_argument("--parser", default=None, help="RST parser name (default: $DTDIALOG_PARSER or the built-in)")
    parser.add_argument("--ranker", choices=("auto", "learned", "rules"), default=None,
                        help="answer ranking: auto (default, or $DTDIALOG_RANKER), learned or rules")
    parser.add_argument("--sessions", type=Path, default=None,
                        help="SQLite file holding the sessions (default: $DTDIALOG_HOME/sessions.sqlite, shared with `dtdialog chat`)")
    parser.add_argument("--rebuild-root", type=Path, action="append", default=None, dest="rebuild_roots",
                        help="folder POST /index/rebuild may read a corpus from (repeatable; default: none)")
    parser.add_argument("--max-body-bytes", type=int, default=None, help="request body limit (default 1000000)")
    parser.add_argument("--max-text-chars", type=int, default=None, help="text limit per request field (default 100000)")
    parser.add_argument("--preload", action="store_true", help="load the engine at start-up instead of on first use")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return 0. The API key comes from ``DTDIALOG_API_KEY`` (never from the command line)."""
    import uvicorn

    from dtdialog.api import ApiSettings, create_app

    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, got {args.port}")
    settings = ApiSettings.from_env(
        index_path=args.index, backend=args.backend, index_url=args.es_url, corpus=args.corpus, corpus_format=args.corpus_format,
        parser=args.parser, ranker=args.ranker,
        sessions_path=args.sessions, max_body_bytes=args.max_body_bytes, max_text_chars=args.max_text_chars,
        rebuild_roots=tuple(args.rebuild_roots or ()), preload=args.preload,
    )
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.host not in ("127.0.0.1", "localhost", "::1") and not settings.api_key:
        logging.getLogger("dtdialog.api").warning(
            "serving on %s without DTDIALOG_API_KEY: the index-management endpoints are open", args.host)
    app = create_app(settings)
    service = app.state.service
    if settings.preload:
        # loaded before listening: a file that is not an index is one `error:` line (exit 2), not a start-up traceback
        try:
            service.submit(service.warm_up).result()
        except BaseException:
            service.close()
            raise
    uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
    return 0
