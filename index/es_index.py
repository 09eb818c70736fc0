"""The Elasticsearch answer index, through the official ``elasticsearch`` client (8.x or 9.x, matching the server).

Documents are bulk-indexed with ``helpers.bulk`` into an index with an explicit mapping
(``index.es_query.INDEX_MAPPINGS``); searches send ``index.es_query.build_search_body``.
A rebuild (``ElasticsearchIndex.rebuild``) loads a fresh concrete index and then moves the
alias ``index_name`` onto it in one ``update_aliases`` call, so searchers never see a half-built index.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

from index.base import AnswerDocument, AnswerIndex, SearchHit, SearchQuery
from index.es_query import INDEX_MAPPINGS, INDEX_SETTINGS, build_search_body, document_source, hits_from_response
from parsers.errors import DTDialogError, InputError, ModelNotAvailableError

#: Seconds to wait for the server on each request.
REQUEST_TIMEOUT = 30


class BackendUnavailableError(DTDialogError, ConnectionError):
    """The search server cannot be reached or refused the request."""


def _client_class():
    try:
        from elasticsearch import Elasticsearch
    except ImportError:
        raise ModelNotAvailableError("the elasticsearch client is not installed: pip install 'dtdialog[es]'") from None
    return Elasticsearch


class ElasticsearchIndex(AnswerIndex):
    """Answers in an Elasticsearch index (or alias) ``index_name`` on the server at ``url``."""

    backend = "elasticsearch"

    def __init__(self, url: str, *, index_name: str = "dtdialog-answers", client: Any = None) -> None:
        if not index_name or index_name != index_name.lower() or any(c in index_name for c in ' "*\\<|,>/?'):
            raise InputError(f"invalid Elasticsearch index name {index_name!r}: use lower-case letters, digits and '-'")
        self.url = url
        self.index_name = index_name
        if client is None:
            try:
                client = _client_class()(url, request_timeout=REQUEST_TIMEOUT, max_retries=0)
            except ValueError as exc:
                raise InputError(f"invalid Elasticsearch URL {url!r}: {exc}") from None
        self.client = client
        self._call("connect", lambda: self.client.info())

    # --- error translation -------------------------------------------------
    def _call(self, what: str, fn):
        from elastic_transport import ConnectionError as TransportConnectionError
        from elastic_transport import ConnectionTimeout
        from elasticsearch import ApiError

        try:
            return fn()
        except (TransportConnectionError, ConnectionTimeout) as exc:
            raise BackendUnavailableError(f"cannot reach Elasticsearch at {self.url}: {_one_line(exc)} "
                                          "(is the server running? see docs/index.md)") from None
        except ApiError as exc:
            if getattr(exc, "status_code", None) == 404 and what in ("search", "count", "get"):
                raise InputError(f"Elasticsearch index {self.index_name!r} not found at {self.url}; "
                                 f"build it with `dtdialog index build --backend elasticsearch ...`") from None
            raise BackendUnavailableError(f"Elasticsearch {what} failed at {self.url}: {_one_line(exc)}") from None

    # --- writing -------------------------------------------------------------
    def create(self, *, name: str | None = None) -> str:
        """Create the concrete index ``name`` (default ``index_name``) with the explicit mapping; return its name."""
        target = name or self.index_name
        self._call("create", lambda: self.client.indices.create(
            index=target, settings=INDEX_SETTINGS, mappings=INDEX_MAPPINGS))
        return target

    def add(self, documents: Iterable[AnswerDocument], *, index: str | None = None) -> int:
        """Bulk-index documents (same id replaces); return how many were indexed. Refreshes the index."""
        from elasticsearch import helpers

        target = index or self.index_name

        def actions() -> Iterator[dict[str, Any]]:
            for doc in documents:
                yield {"_op_type": "index", "_index": target, "_id": doc.id, "_source": document_source(doc)}

        def run() -> int:
            ok, errors = helpers.bulk(self.client, actions(), chunk_size=500, raise_on_error=False)
            if errors:
                first = errors[0]
                raise InputError(f"Elasticsearch rejected {len(errors)} document(s); first: {_one_line(first)}")
            self.client.indices.refresh(index=target)
            return int(ok)

        return self._call("bulk indexing", run)

    def rebuild(self, documents: Iterable[AnswerDocument]) -> int:
        """Index ``documents`` into a new concrete index, then point the alias ``index_name`` at it.

        Old concrete indices behind the alias are deleted only after the switch. If anything fails,
        the new index is deleted and the alias still points at the old one. Returns the count indexed.
        """
        concrete = f"{self.index_name}-{time.strftime('%Y%m%d%H%M%S')}-{time.time_ns() % 1_000_000:06d}"
        self.create(name=concrete)
        try:
            added = self.add(documents, index=concrete)
            self._switch_alias(concrete)
        except BaseException:
            self._call("cleanup", lambda: self.client.indices.delete(index=concrete, ignore_unavailable=True))
            raise
        return added

    def _switch_alias(self, concrete: str) -> None:
        indices = self.client.indices
        old: list[str] = []
        if self._call("alias lookup", lambda: bool(indices.exists_alias(name=self.index_name))):
            old = list(_body(self._call("alias lookup", lambda: indices.get_alias(name=self.index_name))))
        elif self._call("index lookup", lambda: bool(indices.exists(index=self.index_name))):
            # A plain index holds the name: it must go before the alias can take it.
            self._call("delete", lambda: indices.delete(index=self.index_name))
        actions: list[dict[str, Any]] = [{"remove": {"index": o, "alias": self.index_name}} for o in old]
        actions.append({"add": {"index": concrete, "alias": self.index_name}})
        self._call("alias switch", lambda: indices.update_aliases(actions=actions))
        for o in old:
            self._call("delete", lambda o=o: indices.delete(index=o, ignore_unavailable=True))

    # --- reading -------------------------------------------------------------
    def search(self, query: SearchQuery) -> list[SearchHit]:
        """Return up to ``query.size`` hits, best first, with matched keywords, RR terms and EDU phrases."""
        body = build_search_body(query)
        response = self._call("search", lambda: self.client.search(index=self.index_name, **body))
        return hits_from_response(_body(response))

    def get(self, doc_id: str) -> AnswerDocument | None:
        """Return the document with ``doc_id``, or None."""
        from elasticsearch import NotFoundError

        def fetch():
            try:
                return self.client.get(index=self.index_name, id=doc_id)
            except NotFoundError:
                return None

        response = self._call("get", fetch)
        if response is None:
            return None
        source = dict(_body(response)["_source"])
        source.pop("rr_tokens", None)
        return AnswerDocument.from_dict(source)

    def count(self) -> int:
        """Return the number of indexed documents."""
        return int(_body(self._call("count", lambda: self.client.count(index=self.index_name)))["count"])

    def delete_index(self) -> None:
        """Delete the index (or every index behind the alias) ``index_name``."""
        indices = self.client.indices
        if self._call("alias lookup", lambda: bool(indices.exists_alias(name=self.index_name))):
            for name in _body(self._call("alias lookup", lambda: indices.get_alias(name=self.index_name))):
                self._call("delete", lambda name=name: indices.delete(index=name, ignore_unavailable=True))
        else:
            self._call("delete", lambda: indices.delete(index=self.index_name, ignore_unavailable=True))

    def close(self) -> None:
        """Close the client's connections."""
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing must never raise
            pass


def _body(response: Any) -> dict[str, Any]:
    """Return the JSON body of a client response (``ObjectApiResponse.body``) or a plain dict."""
    return dict(getattr(response, "body", response))


def _one_line(exc: object) -> str:
    return " ".join(str(exc).split())[:300]
