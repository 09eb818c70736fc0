"""Open an answer index by backend name: ``open_index(backend="sqlite", path=...)``."""

from __future__ import annotations

import os
from pathlib import Path

from index.base import AnswerIndex
from parsers.errors import ConfigError
from parsers.home import data_home

BACKENDS = ("sqlite", "elasticsearch")
DEFAULT_INDEX_NAME = "dtdialog-answers"
#: Environment variables: where the default SQLite index lives, and the default Elasticsearch URL.
INDEX_PATH_ENV = "DTDIALOG_INDEX"
ES_URL_ENV = "ELASTICSEARCH_URL"


def default_index_path() -> Path:
    """Return the SQLite index path used when none is given: ``$DTDIALOG_INDEX`` or ``data_home()/answers.sqlite``
    (``$DTDIALOG_HOME``, default ``~/.cache/dtdialog``)."""
    env = os.environ.get(INDEX_PATH_ENV)
    return Path(env).expanduser() if env else data_home() / "answers.sqlite"


def open_index(
    *,
    backend: str = "sqlite",
    path: str | Path | None = None,
    url: str | None = None,
    index_name: str = DEFAULT_INDEX_NAME,
) -> AnswerIndex:
    """Return a read-only-for-search index of ``backend``.

    ``sqlite`` opens ``path`` (default ``default_index_path()``; ``InputError`` when missing);
    ``elasticsearch`` connects to ``url`` (default ``$ELASTICSEARCH_URL``). Raises ``ConfigError``
    for an unknown backend or a missing URL.
    """
    if backend == "sqlite":
        from index.sqlite_index import SqliteIndex

        return SqliteIndex(Path(path) if path else default_index_path(), readonly=True)
    if backend == "elasticsearch":
        from index.es_index import ElasticsearchIndex

        return ElasticsearchIndex(es_url(url), index_name=index_name)
    raise ConfigError(f"unknown index backend {backend!r}; expected one of {', '.join(BACKENDS)}")


def es_url(url: str | None) -> str:
    """Return ``url`` or ``$ELASTICSEARCH_URL``; raises ``ConfigError`` when neither is set.

    A ``url`` without credentials (a saved engine spec keeps none) takes the user and password of
    ``$ELASTICSEARCH_URL`` when that names the same server (``index.es_url.with_credentials_of``).
    """
    from index.es_url import with_credentials_of

    env = os.environ.get(ES_URL_ENV)
    if not (url or env):
        raise ConfigError(f"no Elasticsearch URL: pass --es-url or set {ES_URL_ENV} (e.g. http://localhost:9200)")
    return with_credentials_of(url, env) if url else env
