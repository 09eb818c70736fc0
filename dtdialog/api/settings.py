"""Service configuration, validated when it is built so a bad option fails at start-up, not on the first request."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from dtdialog.api.ip_groups import IPV6_PREFIX
from parsers.errors import ConfigError
from parsers.text_input import MAX_CHARS

API_KEY_ENV = "DTDIALOG_API_KEY"
#: Host headers always answered: this machine's own names (a DNS-rebinding page never sends these).
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
#: Settings read as per-client rates (``limits`` notation: "30/minute", "5/second;100/hour"); None: unlimited.
RATE_FIELDS = ("session_rate", "turn_rate", "search_rate", "global_session_rate")
_OFF = ("", "off", "none", "0")
#: Most engine threads: more only adds contention for the GIL and memory (each thread opens its own connections).
MAX_ENGINE_THREADS = 16


def _default_sessions_path() -> Path:
    # The same store as `dtdialog chat`, so a session can be continued from either.
    from dtdialog.runtime.paths import sessions_path

    return sessions_path()


def _default_engine():
    from dtdialog.setup.assembly import EngineSpec

    return EngineSpec()


#: ``EngineSpec`` fields ``ApiSettings(...)`` also takes as keywords, a shorthand the tests and embedding code use:
#: they make ``engine`` (``ApiSettings(index_path=p)`` is ``ApiSettings(engine=EngineSpec(index_path=p))``).
ENGINE_KEYWORDS = ("index_path", "backend", "index_url", "corpus", "corpus_format", "parser", "ranker", "profile",
                   "sessions_path")


@dataclass
class _ApiSettingsFields:
    """Everything ``create_app`` needs: the engine it serves (``engine``) and the server's own settings.

    ``engine.sessions_path`` None means the store ``dtdialog chat`` uses (``$DTDIALOG_HOME/sessions.sqlite``).
    ``api_key`` None means index writes (``POST /index/*``) and the answer history are refused (403
    ``index_writes_disabled``); ``GET /index`` stays open then.
    ``rebuild_roots`` lists the server-side folders ``POST /index/rebuild`` may read a corpus from.
    Quotas (``docs/api.md``, "Quotas"): per-client rates, a cap on live sessions, idle-session expiry,
    a per-client budget of engine seconds and a bounded wait for the engine.
    """

    #: the ``EngineSpec`` of the served engine; with both an index path and a corpus the engine rebuilds the
    #: index from the corpus at start-up
    engine: Any = field(default_factory=_default_engine)
    api_key: str | None = None
    max_body_bytes: int = 1_000_000
    #: limit of a text that is not a dialogue turn (parse, search, indexed answers); turns have the engine's
    #: own limit (``EngineConfig.dialogue.max_input_chars``), which the sessions endpoint applies
    max_text_chars: int = MAX_CHARS
    max_documents_per_request: int = 200
    rebuild_roots: tuple[Path, ...] = ()
    #: load the engine before serving (``dtdialog serve --preload``: a bad index stops the start-up)
    preload: bool = False
    #: load the engine at start-up on an engine thread while the port is already open (``dtdialog serve``'s
    #: default; ``/healthz`` says ``loading`` until it is done); False with ``preload`` False: on first use
    warm_up_in_background: bool = False
    #: ``/healthz`` answers 503 once one engine call has run for longer than this (the engine is hung or stalled)
    health_stall_seconds: float = 30.0
    #: Host headers answered (DNS-rebinding guard): exact names, ``*.example.com`` for a domain, ``*`` for any
    allowed_hosts: tuple[str, ...] = LOCAL_HOSTS
    #: per-client rates of ``POST /sessions``, of turns, and of ``/search`` + ``/parse`` (None: unlimited)
    session_rate: str | None = "10/minute"
    turn_rate: str | None = "30/minute"
    search_rate: str | None = "30/minute"
    #: new sessions from all clients together (429 ``server_busy`` beyond): many addresses cannot crowd out the
    #: conversations already going on; None: unlimited
    global_session_rate: str | None = "300/minute"
    #: IPv6 clients are counted by this prefix length (one /64 is one household or server), IPv4 by address
    ipv6_prefix: int = IPV6_PREFIX
    #: live (not expired) sessions at most; ``POST /sessions`` answers 503 ``session_limit_reached`` beyond
    max_sessions: int = 10_000
    #: seconds (or "7d") a session may stay idle before it expires and is purged; 0: sessions never expire
    session_ttl: float | str = 7 * 86400.0
    #: engine seconds one client may use per minute (429 ``engine_budget_exceeded`` beyond); 0: no budget
    engine_seconds: float = 10.0
    #: engine calls one client may have waiting at once (429 ``too_many_pending`` beyond)
    max_pending: int = 8
    #: seconds a request may wait for the engine before it gets 503 ``engine_busy``
    engine_wait: float = 30.0
    #: engine calls run at once, each on its own thread (1-16); searches, parses and index reads hold at most
    #: all but one, so a turn never waits behind them; 1: one call at a time, shared by all
    engine_threads: int = 2
    #: server processes on one port (``dtdialog serve --workers``, 1 to ``max_workers()``); 1: one process
    workers: int = 1
    #: folder of the quota state the workers share (rate counters, session admission lock); None: per process.
    #: ``dtdialog serve --workers N`` (N > 1) sets it, fresh for each start.
    shared_dir: Path | None = None
    #: seconds a connection may take to send a request's head, and then its body, before it is closed (408);
    #: the connections one client (an address; IPv6: its /64) and this process may hold open at once
    #: (``dtdialog.api.connection_guard``; the total is lowered to what the open-file limit allows)
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections_per_client: int = 32
    max_connections: int = 2048

    def __post_init__(self) -> None:
        from dataclasses import replace

        from dtdialog.setup.assembly import EngineSpec

        if isinstance(self.engine, dict):
            self.engine = EngineSpec.from_dict(self.engine)
        if not isinstance(self.engine, EngineSpec):
            raise ConfigError("engine must be an engine spec")
        if self.engine.sessions_path is None:
            self.engine = replace(self.engine, sessions_path=str(_default_sessions_path()))
        self.shared_dir = Path(self.shared_dir) if self.shared_dir is not None else None
        self.rebuild_roots = tuple(Path(p).resolve() for p in self.rebuild_roots)
        if self.api_key is not None and len(self.api_key) < 8:
            raise ConfigError(f"the API key ({API_KEY_ENV}) must be at least 8 characters long")
        for name in ("max_body_bytes", "max_text_chars", "max_documents_per_request"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        stall = self.health_stall_seconds
        if isinstance(stall, bool) or not isinstance(stall, (int, float)) or not 0 < stall < float("inf"):
            raise ConfigError(f"health_stall_seconds must be a positive number of seconds, got {stall!r}")
        if self.max_text_chars > MAX_CHARS:
            raise ConfigError(f"max_text_chars must be at most the parser's limit of {MAX_CHARS} characters, "
                              f"got {self.max_text_chars}")
        if self.max_body_bytes < self.max_text_chars:
            raise ConfigError("max_body_bytes must be at least max_text_chars, or no maximal text could be sent")
        if self.sessions_path.exists() and self.sessions_path.is_dir():
            raise ConfigError(f"the sessions path {self.sessions_path} is a folder; give a file path")
        self._check_hosts()
        self._check_quotas()

    def _check_hosts(self) -> None:
        hosts = (self.allowed_hosts,) if isinstance(self.allowed_hosts, str) else tuple(self.allowed_hosts or ())
        cleaned = tuple(dict.fromkeys(str(h).strip().lower().strip("[]") for h in hosts))
        if not cleaned:
            raise ConfigError("allowed_hosts is empty: no request could be answered (use '*' to allow any host)")
        for host in cleaned:
            if not host or any(c in host for c in " /@?#") or host.count(":") == 1 or (host != "*" and "*" in host[1:]) \
                    or (host.startswith("*") and host != "*" and not host.startswith("*.")):
                raise ConfigError(f"allowed host {host!r} is not a host name (without port), an address, "
                                  "'*.domain' or '*'")
        self.allowed_hosts = cleaned

    def _check_quotas(self) -> None:
        for name in RATE_FIELDS:
            value = getattr(self, name)
            if value is None or str(value).strip().lower() in _OFF:
                setattr(self, name, None)
                continue
            try:
                from limits import parse_many

                parse_many(str(value))
            except ImportError:
                raise ConfigError("rate limits need the 'limits' package: pip install 'dtdialog[api]'") from None
            except ValueError:
                raise ConfigError(f"{name} must be a rate such as '30/minute' or '5/second;100/hour', "
                                  f"or 'off', got {value!r}") from None
            setattr(self, name, str(value).strip())
        from dtdialog.runtime.durations import parse_duration

        self.session_ttl = parse_duration(self.session_ttl, what="session_ttl")
        for name in ("max_sessions", "max_pending"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        prefix = self.ipv6_prefix
        if not isinstance(prefix, int) or isinstance(prefix, bool) or not 16 <= prefix <= 128:
            raise ConfigError(f"ipv6_prefix must be an integer from 16 to 128, got {prefix!r}")
        threads = self.engine_threads
        if not isinstance(threads, int) or isinstance(threads, bool) or not 1 <= threads <= MAX_ENGINE_THREADS:
            raise ConfigError(f"engine_threads must be an integer from 1 to {MAX_ENGINE_THREADS}, got {threads!r}")
        workers, most = self.workers, max_workers()
        if not isinstance(workers, int) or isinstance(workers, bool) or not 1 <= workers <= most:
            raise ConfigError(f"workers must be an integer from 1 to {most} (4 per CPU core), got {workers!r}")
        for name in ("max_connections_per_client", "max_connections"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        for name, low in (("engine_seconds", 0.0), ("engine_wait", 0.001), ("header_timeout", 0.001),
                          ("body_timeout", 0.001)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value < float("inf"):
                raise ConfigError(f"{name} must be a number of seconds of at least {low:g}, got {value!r}")

    @property
    def index_path(self) -> Path | None:
        """The engine's SQLite index file (None: the built-in corpus's, or the one built from its corpus)."""
        return Path(self.engine.index_path) if self.engine.index_path is not None else None

    @property
    def backend(self) -> str:
        """The engine's index backend."""
        return self.engine.backend

    @property
    def sessions_path(self) -> Path:
        """The engine's session store."""
        return Path(self.engine.sessions_path)

    @classmethod
    def from_env(cls, **overrides: Any) -> ApiSettings:
        """Return settings whose API key comes from ``DTDIALOG_API_KEY`` unless ``api_key`` is given; None values in ``overrides`` are ignored."""
        values = {k: v for k, v in overrides.items() if v is not None}
        if "api_key" not in values:
            env_key = os.environ.get(API_KEY_ENV, "").strip()
            values["api_key"] = env_key or None
        return cls(**values)

    def to_worker_data(self) -> dict[str, Any]:
        """Return the settings as JSON values for the worker processes (API key included: the environment
        variable carrying them is as private as ``DTDIALOG_API_KEY``); ``from_worker_data`` reads them back."""
        data = self.to_dict()
        data["api_key"] = self.api_key
        return data

    @classmethod
    def from_worker_data(cls, data: dict[str, Any]) -> ApiSettings:
        """Return the settings ``to_worker_data`` gave (validated again)."""
        from dtdialog.setup.assembly import EngineSpec

        data = dict(data)
        data["engine"] = EngineSpec.from_dict(data["engine"])
        data["rebuild_roots"] = tuple(data.get("rebuild_roots") or ())
        data["allowed_hosts"] = tuple(data.get("allowed_hosts") or ())
        return cls(**data)

    def to_dict(self) -> dict[str, Any]:
        """Return the settings as plain values, with the API key masked."""
        data = asdict(self)
        data["engine"] = self.engine.to_dict()
        data["api_key"] = "***" if self.api_key else None
        for key, value in data.items():
            if isinstance(value, Path):
                data[key] = str(value)
        data["rebuild_roots"] = [str(p) for p in self.rebuild_roots]
        data["allowed_hosts"] = list(self.allowed_hosts)
        return data


class ApiSettings(_ApiSettingsFields):
    """The API's settings (``_ApiSettingsFields``); the ``ENGINE_KEYWORDS`` are accepted as a shorthand for
    ``engine``, never beside it."""

    def __init__(self, engine: Any = None, **values: Any) -> None:
        given = {name: values.pop(name) for name in ENGINE_KEYWORDS if name in values}
        if engine is None:
            from dtdialog.setup.assembly import EngineSpec

            engine = EngineSpec(**given)
        elif given:
            raise ConfigError(f"give the engine spec or its fields ({', '.join(given)}), not both")
        super().__init__(engine=engine, **values)


def max_workers() -> int:
    """Return the most server processes ``workers`` may ask for: 4 per CPU core this process may use."""
    return 4 * len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 4 * (os.cpu_count() or 1)


def read_api_key_file(path: str | Path) -> str:
    """Return the API key stored in the file ``path`` (surrounding whitespace removed); ``ConfigError`` when unusable."""
    path = Path(path)
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a UTF-8 text file"
        raise ConfigError(f"cannot read the API key file {path}: {reason}") from None
    if not key or any(c.isspace() for c in key):
        raise ConfigError(f"the API key file {path} must hold one key on one line, without spaces")
    return key
