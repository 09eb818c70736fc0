"""``dtdialog serve``: run the HTTP API and the web chat page with uvicorn."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from dtdialog.setup.engine_args import add_engine_arguments, spec_from_args
from parsers.errors import ConfigError

NAME = "serve"
#: On SIGTERM/Ctrl-C, seconds uvicorn lets requests in flight finish before cancelling them; the engine
#: then gets ``EngineService.close``'s few seconds: the process is gone within 10 s, even with a turn running.
SHUTDOWN_GRACE_S = 4
HELP = "Run the search API and the web chat page (FastAPI + uvicorn)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    add_engine_arguments(parser)
    parser.add_argument("--rebuild-root", type=Path, action="append", default=None, dest="rebuild_roots",
                        help="folder POST /index/rebuild may read a corpus from (repeatable; default: none)")
    parser.add_argument("--max-body-bytes", type=int, default=None, help="request body limit (default 1000000)")
    parser.add_argument("--max-text-chars", type=int, default=None, help="text limit per request field (default 100000)")
    loading = parser.add_mutually_exclusive_group()
    loading.add_argument("--preload", action="store_true",
                         help="load the engine before the port opens (a bad index stops the start-up with one error "
                              "line); default: it loads in the background while the port is open, and /healthz says "
                              "when it is ready")
    loading.add_argument("--lazy", action="store_true",
                         help="do not load the engine at start-up: the first request loads it (and waits for it)")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument("--workers", type=int, default=1,
                        help="server processes on the port (default 1; at most 4 per CPU core): they share the index, "
                             "the sessions and the per-client rates; each has its own --engine-threads")
    _protection_arguments(parser)
    _quota_arguments(parser)
    _connection_arguments(parser)


def _protection_arguments(parser: argparse.ArgumentParser) -> None:
    security = parser.add_argument_group("index protection")
    security.add_argument("--api-key-file", type=Path, default=None,
                          help="file holding the key that enables index writes (or set $DTDIALOG_API_KEY); "
                               "without a key, POST /index/* answers 403")
    security.add_argument("--forwarded-allow-ips", default="", metavar="ADDRESSES",
                          help="comma-separated addresses of reverse proxies whose X-Forwarded-For names the client "
                               "(default: none, every client is its connection's address; uvicorn's "
                               "FORWARDED_ALLOW_IPS is not read)")
    security.add_argument("--allowed-hosts", default=None, metavar="NAMES",
                          help="comma-separated Host names answered besides localhost, 127.0.0.1, ::1 and --host "
                               "(*.example.com for a domain, * for any); other Host headers get 400")


def _quota_arguments(parser: argparse.ArgumentParser) -> None:
    quotas = parser.add_argument_group("quotas (per client: remote address, or API key)")
    quotas.add_argument("--session-rate", default=None, help="new sessions per client (default 10/minute; off)")
    quotas.add_argument("--turn-rate", default=None, help="turns per client (default 30/minute; off)")
    quotas.add_argument("--search-rate", default=None, help="/search and /parse requests per client (default 30/minute; off)")
    quotas.add_argument("--global-session-rate", default=None,
                        help="new sessions from all clients together (default 300/minute; off)")
    quotas.add_argument("--ipv6-prefix", type=int, default=None,
                        help="IPv6 clients are counted by this prefix length (default 64)")
    quotas.add_argument("--max-sessions", type=int, default=None, help="live sessions at most (default 10000)")
    quotas.add_argument("--session-ttl", default=None,
                        help="idle time after which a session expires and is purged, e.g. 7d, 12h (default 7d; 0: never)")
    quotas.add_argument("--engine-seconds", type=float, default=None,
                        help="engine seconds per client per minute (default 10; 0: no budget)")
    quotas.add_argument("--max-pending", type=int, default=None,
                        help="requests of one client waiting for the engine at once (default 8)")
    quotas.add_argument("--engine-wait", type=float, default=None,
                        help="seconds a request may wait for the engine before 503 engine_busy (default 30)")
    quotas.add_argument("--engine-threads", type=int, default=None,
                        help="engine calls run at once, one thread each (1-16, default 2); searches, parses and "
                             "index reads hold at most all but one, so a customer's turn never waits behind them; "
                             "index writes run alone; 1: one call at a time")


def _connection_arguments(parser: argparse.ArgumentParser) -> None:
    connections = parser.add_argument_group("connections (per server process)")
    connections.add_argument("--header-timeout", type=float, default=None, metavar="SECONDS",
                             help="time a client has to send a request's head before 408 and close (default 10)")
    connections.add_argument("--body-timeout", type=float, default=None, metavar="SECONDS",
                             help="time a client has to send a request's body once its head is in (default 30)")
    connections.add_argument("--max-connections-per-client", type=int, default=None, metavar="N",
                             help="connections one client address (IPv6: its /64) may hold open; more are refused "
                                  "(default 32; a --forwarded-allow-ips proxy is not capped)")
    connections.add_argument("--max-connections", type=int, default=None, metavar="N",
                             help="connections held open at most (default 2048, lowered to what `ulimit -n` allows)")


#: Bind addresses that name no host: every interface.
ANY_INTERFACE = ("0.0.0.0", "::", "")


def allowed_hosts(host: str, extra: str | None) -> tuple[str, ...]:
    """Return the Host names to answer: the loopback names, the bound ``host`` when it names one, and ``extra``."""
    from dtdialog.api.settings import LOCAL_HOSTS

    names = list(LOCAL_HOSTS)
    if host.strip("[]") not in ANY_INTERFACE:
        names.append(host.strip("[]"))
    names += [n.strip() for n in (extra or "").split(",") if n.strip()]
    return tuple(dict.fromkeys(names))


def forwarded_allow_ips(value: str) -> list[str]:
    """Return the proxy addresses of ``--forwarded-allow-ips`` (IP addresses or networks; ``*`` trusts any peer)."""
    import ipaddress

    names = [n.strip() for n in value.split(",") if n.strip()]
    for name in names:
        if name == "*":
            continue
        try:
            ipaddress.ip_network(name, strict=False)
        except ValueError:
            raise ConfigError(f"--forwarded-allow-ips: {name!r} is not an IP address or network") from None
    return names


def api_key(key_file: Path | None) -> str | None:
    """Return the key of ``--api-key-file`` (None: ``$DTDIALOG_API_KEY`` decides); both given and different is an error."""
    import os

    from dtdialog.api.settings import API_KEY_ENV, read_api_key_file

    if key_file is None:
        return None
    key = read_api_key_file(key_file)
    env = os.environ.get(API_KEY_ENV, "").strip()
    if env and env != key:
        raise ConfigError(f"both ${API_KEY_ENV} and --api-key-file give a key, and they differ; give one")
    if key_file.stat().st_mode & 0o077:
        logging.getLogger("dtdialog.api").warning("the API key file %s is readable by other users (chmod 600 it)", key_file)
    return key


def settings_from_args(args: argparse.Namespace):
    """Return the ``ApiSettings`` the options describe: the engine of ``spec_from_args`` and the server's options."""
    from dtdialog.api import ApiSettings

    return ApiSettings.from_env(
        engine=spec_from_args(args), max_body_bytes=args.max_body_bytes, max_text_chars=args.max_text_chars,
        rebuild_roots=tuple(args.rebuild_roots or ()), preload=args.preload,
        warm_up_in_background=not (args.preload or args.lazy), api_key=api_key(args.api_key_file),
        allowed_hosts=allowed_hosts(args.host, args.allowed_hosts), session_rate=args.session_rate,
        turn_rate=args.turn_rate, search_rate=args.search_rate, global_session_rate=args.global_session_rate,
        ipv6_prefix=args.ipv6_prefix, max_sessions=args.max_sessions,
        session_ttl=args.session_ttl, engine_seconds=args.engine_seconds, max_pending=args.max_pending,
        engine_wait=args.engine_wait, engine_threads=args.engine_threads, workers=args.workers,
        header_timeout=args.header_timeout, body_timeout=args.body_timeout,
        max_connections_per_client=args.max_connections_per_client, max_connections=args.max_connections,
    )


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted; return 0. The API key comes from ``--api-key-file`` or ``DTDIALOG_API_KEY``, never argv."""
    import uvicorn

    from dtdialog.api import create_app
    from dtdialog.api.app import LOG_FORMAT

    if not 0 < args.port < 65536:
        raise ConfigError(f"--port must be between 1 and 65535, got {args.port}")
    proxies = forwarded_allow_ips(args.forwarded_allow_ips)
    logging.basicConfig(level=args.log_level.upper(), format=LOG_FORMAT)
    settings = settings_from_args(args)
    if args.host.strip("[]") in ANY_INTERFACE and "*" not in settings.allowed_hosts:
        logging.getLogger("dtdialog.api").warning(
            "serving on every interface, but only requests whose Host header is one of %s are answered "
            "(add the names clients use with --allowed-hosts)", ", ".join(settings.allowed_hosts))
    if settings.workers > 1:
        return serve_workers(settings, args, proxies)
    from dtdialog.api import connection_guard, log_flood, open_files, worker_sockets

    budget = open_files.connection_budget(settings.max_connections)
    # the port is taken first: in use, it is one `error:` line before the engine loads
    with worker_sockets.single_listener(args.host, args.port, budget.backlog) as listener:
        app = create_app(settings)
        service = app.state.service
        if settings.preload:
            # loaded before serving: a file that is not an index is one `error:` line (exit 2), not a traceback
            try:
                service.submit(service.warm_up).result()
            except BaseException:
                service.close()
                raise
        # uvicorn trusts X-Forwarded-For from loopback unless told otherwise: any process on this host could then
        # pick the address its quotas are counted under
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level=args.log_level, access_log=False,
                                timeout_graceful_shutdown=SHUTDOWN_GRACE_S, proxy_headers=bool(proxies),
                                forwarded_allow_ips=proxies or None, backlog=budget.backlog,
                                http=connection_guard.GuardedH11Protocol, timeout_keep_alive=connection_guard.KEEP_ALIVE_S)
        connection_guard.configure(connection_guard.limits_of(settings, budget.max_connections))
        log_flood.install()  # after uvicorn.Config, which replaces its loggers' handlers
        logging.getLogger("uvicorn.error").info("Uvicorn running on http://%s:%d (Press CTRL+C to quit)",
                                                args.host, args.port)
        try:
            uvicorn.Server(config).run(sockets=[listener])
        except KeyboardInterrupt:  # uvicorn re-raises the signal once it has shut down, as uvicorn.run swallows it
            pass
    return 0


def serve_workers(settings, args: argparse.Namespace, proxies: list[str]) -> int:
    """Serve with ``settings.workers`` processes on one port (uvicorn's multi-process mode); return 0.

    The port is taken first and the engine loaded once in a process of its own (building the index if it is
    missing: workers racing to build it would find it locked), so a port in use or a bad index is one ``error:``
    line before anything listens. Each worker gets the settings as data (``WORKER_SETTINGS_ENV``), a quota folder
    shared by all, fresh for this start, and a listening socket of its own (``dtdialog.api.worker_sockets``).
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from dtdialog.api import log_flood, worker_sockets

    if not worker_sockets.supported():  # the workers share uvicorn's one socket, bound after the engine is ready
        app, options = _worker_app(settings, args, proxies)
        uvicorn.run(app, **options)
        return 0
    # each worker listens on a socket of its own (dtdialog.api.worker_sockets says why); this one holds the port
    # from the start, so a port in use is one error line before the engine is loaded
    with worker_sockets.reserve(args.host, args.port):
        app, options = _worker_app(settings, args, proxies)
        config = uvicorn.Config(app, **options)
        log_flood.install()
        logging.getLogger("uvicorn.error").info("Uvicorn running on http://%s:%d with %d workers (Press CTRL+C to quit)",
                                                args.host, args.port, settings.workers)
        try:
            Multiprocess(config, sockets=[worker_sockets.WorkerListener(args.host, args.port, config.backlog)]).run()
        except KeyboardInterrupt:
            pass
    return 0


def _worker_app(settings, args: argparse.Namespace, proxies: list[str]) -> tuple[str, dict]:
    """Load the engine once, hand the workers their settings (``WORKER_SETTINGS_ENV``); return uvicorn's app and
    options for them."""
    import dataclasses
    import json
    import os

    from dtdialog.api import connection_guard, open_files
    from dtdialog.api.app import WORKER_SETTINGS_ENV

    settings = dataclasses.replace(settings, shared_dir=shared_quota_dir(args.port))
    prepare_engine(settings)
    if settings.engine.corpus is not None and settings.index_path is not None:
        # --corpus with --index rebuilds the index at every load: built now, the workers open it (N rebuilds of
        # one file at once would find it locked)
        settings = dataclasses.replace(settings, engine=dataclasses.replace(settings.engine, corpus=None))
    os.environ[WORKER_SETTINGS_ENV] = json.dumps({"settings": settings.to_worker_data(), "log_level": args.log_level})
    return "dtdialog.api.app:worker_app", {
        "factory": True, "workers": settings.workers, "host": args.host, "port": args.port,
        "log_level": args.log_level, "access_log": False, "timeout_graceful_shutdown": SHUTDOWN_GRACE_S,
        "proxy_headers": bool(proxies), "forwarded_allow_ips": proxies or None,
        # by name: the config is pickled into each worker, which sets the guard's limits (``worker_app``)
        "http": connection_guard.PROTOCOL_NAME, "timeout_keep_alive": connection_guard.KEEP_ALIVE_S,
        # the limit raised here holds in the workers, which size their connection caps by it too
        "backlog": open_files.backlog_for(open_files.raise_open_files_limit())}


def shared_quota_dir(port: int) -> Path:
    """Return the folder of the quota state the workers of the server on ``port`` share, emptied of an earlier
    start's counters (one server at a time can listen on a port)."""
    from dtdialog.api.shared_quotas import RATES_FILE
    from dtdialog.runtime.paths import data_home

    folder = data_home() / "workers" / f"port-{port}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for stale in folder.glob(RATES_FILE + "*"):
            stale.unlink()
    except OSError as exc:
        raise ConfigError(f"cannot prepare the workers' shared folder {folder}: {exc.strerror}") from None
    return folder


def prepare_engine(settings) -> None:
    """Load the engine once in a process of its own (index built, vectors encoded); its problem is a ``ConfigError``."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # a clean interpreter, as uvicorn's workers are
    receive, send = context.Pipe(duplex=False)
    process = context.Process(target=_prepare, args=(settings.to_worker_data(), send), name="dtdialog-prepare")
    process.start()
    send.close()
    try:
        problem = receive.recv()
    except EOFError:
        problem = f"the engine could not be loaded (the loading process exited with code {process.exitcode})"
    process.join()
    if problem:
        raise ConfigError(problem)


def _prepare(data: dict, send) -> None:
    """Load the engine of the settings ``data`` and send None, or the one-line problem (run in a child process)."""
    from dtdialog.api.service import EngineService
    from dtdialog.api.settings import ApiSettings
    from parsers.errors import DTDialogError

    service = EngineService(ApiSettings.from_worker_data(data))
    try:
        service.submit(service.warm_up).result()
        send.send(None)
    except DTDialogError as exc:
        send.send(str(exc))
    finally:
        service.close()
        send.close()
