"""The Elasticsearch answer index, through the official ``elasticsearch`` client (8.x or 9.x, matching the server).

Documents are bulk-indexed with ``helpers.bulk`` into an index with an explicit mapping
(``index.es_query.INDEX_MAPPINGS``); searches send ``index.es_query.build_search_body``.
A rebuild (``ElasticsearchIndex.rebuild``) loads a fresh concrete index and then moves the
alias ``index_name`` onto it in one ``update_aliases`` call, so searchers never see a half-built index.

Dense vectors (optional): ``rebuild(documents, dense=store)`` with a ``index.dense_store.DenseStore``
of the same answers creates the concrete index with a cosine ``dense_vector`` field ``embedding`` and
a float ``hub`` (hubness) field and writes both with every document. The BM25 ``TermStats`` the learned
ranker reads go to a companion index ``<concrete>-meta`` (one stored, unindexed document) named in
the mapping's ``_meta``. Why not the ``_meta`` itself: mapping ``_meta`` lives in the cluster state,
which every node holds and republishes on each change, and the document frequencies grow with the
vocabulary (tens of thousands of entries on a real corpus); a document costs nothing there. Why a
name in ``_meta`` rather than a second alias: the pointer belongs to the concrete index, so the one
alias switch moves answers, vectors and statistics together and a reader never mixes two builds.
``hybrid_search`` then sends one ``knn`` + ``bool`` (or RRF) request (``index.es_knn.hybrid_request``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from index.base import AnswerDocument, AnswerIndex, SearchHit, SearchQuery, checked_documents
from index.es_knn import (
    EMBEDDING_FIELD,
    HUB_FIELD,
    META_DOC_ID,
    META_INDEX_MAPPINGS,
    META_KEY,
    NAMED_SCORES_VERSION,
    SG_FIELD,
    DenseHit,
    dense_hits_from_response,
    dense_index_mappings,
    hybrid_request,
    knn_request,
    meta_index_name,
)
from index.es_query import INDEX_MAPPINGS, INDEX_SETTINGS, build_search_body, document_source, hits_from_response
from index.es_url import without_credentials
from parsers.errors import DTDialogError, InputError, ModelNotAvailableError

if TYPE_CHECKING:
    import numpy as np

    from index.dense_store import DenseStore, TermStats

#: Seconds to wait for the server on each request.
REQUEST_TIMEOUT = 30
#: Documents per request when every id or text is read (``ids``, ``answer_texts``).
SCAN_PAGE = 1000


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
        #: the server as error messages name it: never its password
        self.url = without_credentials(url)
        self.index_name = index_name
        if client is None:
            try:
                client = _client_class()(url, request_timeout=REQUEST_TIMEOUT, max_retries=0)
            except ValueError as exc:
                raise InputError(f"invalid Elasticsearch URL {self.url!r}: {exc}") from None
        self.client = client
        info = self._call("connect", lambda: self.client.info())
        #: (major, minor) of the server; (99, 0) when it does not say (assume a current one)
        self.server_version = _version(info)

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
    def create(self, *, name: str | None = None, dense: DenseStore | None = None, sg: bool = False) -> str:
        """Create the concrete index ``name`` (default ``index_name``) with the explicit mapping; return its name.

        With ``dense``, the mapping also has the ``embedding``/``hub`` fields, and the companion
        ``<name>-meta`` index gets the store's model and term statistics; if that fails, both are deleted.
        """
        target = name or self.index_name
        if dense is None:
            self._call("create", lambda: self.client.indices.create(
                index=target, settings=INDEX_SETTINGS, mappings=INDEX_MAPPINGS))
            return target
        from index.dense_store import HUB_K

        meta = meta_index_name(target)
        mappings = dense_index_mappings(dims=dense.dimension, model=dense.model, meta_index=meta, count=len(dense),
                                        hub_k=HUB_K, sg=sg)
        self._call("create", lambda: self.client.indices.create(index=target, settings=INDEX_SETTINGS,
                                                                mappings=mappings))
        try:
            self._call("create", lambda: self.client.indices.create(
                index=meta, settings={"number_of_shards": 1, "number_of_replicas": 0}, mappings=META_INDEX_MAPPINGS))
            document = {"model": dense.model, "dims": dense.dimension, "count": len(dense),
                        "terms": dense.terms.to_dict() if dense.terms is not None else None}
            self._call("meta write", lambda: self.client.index(index=meta, id=META_DOC_ID, document=document,
                                                               refresh=True))
        except BaseException:
            self._drop(target, dense=True)
            raise
        return target

    def add(self, documents: Iterable[AnswerDocument], *, index: str | None = None,
            dense: DenseStore | None = None, sg=None) -> int:
        """Bulk-index documents (same id replaces); return how many were indexed. Refreshes the index.

        With ``dense`` (an index created with vectors), each document also carries its vector and
        hubness from the store; a document the store lacks raises ``InputError``. With ``sg`` (an
        ``index.sg_store.SGPhraseStore`` of the same answers), it carries its SG phrases too.
        """
        from elasticsearch import helpers

        target = index or self.index_name

        def actions() -> Iterator[dict[str, Any]]:
            for doc in checked_documents(documents):
                source = document_source(doc)
                if dense is not None:
                    source.update(dense_fields(dense, doc.id))
                encoded = sg.encoded(doc.id) if sg is not None else None
                if encoded is not None:
                    source[SG_FIELD] = encoded
                yield {"_op_type": "index", "_index": target, "_id": doc.id, "_source": source}

        def run() -> int:
            ok, errors = helpers.bulk(self.client, actions(), chunk_size=500, raise_on_error=False)
            if errors:
                first = errors[0]
                raise InputError(f"Elasticsearch rejected {len(errors)} document(s); first: {_one_line(first)}")
            self.client.indices.refresh(index=target)
            return int(ok)

        return self._call("bulk indexing", run)

    def rebuild(self, documents: Iterable[AnswerDocument], *, dense: DenseStore | None = None, sg=None) -> int:
        """Index ``documents`` into a new concrete index, then point the alias ``index_name`` at it.

        Old concrete indices behind the alias (and their ``-meta`` companions) are deleted only after
        the switch. If anything fails, the new index is deleted and the alias still points at the old
        one. ``dense``: store vectors, hubness and term statistics too (see the module docstring);
        ``sg`` (with ``dense``): the answers' SG phrases as well. Returns the count indexed.
        """
        concrete = f"{self.index_name}-{time.strftime('%Y%m%d%H%M%S')}-{time.time_ns() % 1_000_000:06d}"
        self.create(name=concrete, dense=dense, sg=sg is not None and dense is not None)
        try:
            added = self.add(documents, index=concrete, dense=dense, sg=sg if dense is not None else None)
            self._switch_alias(concrete)
        except BaseException:
            self._drop(concrete, dense=dense is not None)
            raise
        return added

    def _drop(self, concrete: str, *, dense: bool) -> None:
        self._call("cleanup", lambda: self.client.indices.delete(index=concrete, ignore_unavailable=True))
        if dense:
            self._call("cleanup", lambda: self.client.indices.delete(index=meta_index_name(concrete),
                                                                     ignore_unavailable=True))

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
            # an older build may have stored vectors: its statistics go with it
            self._call("delete", lambda o=o: indices.delete(index=meta_index_name(o), ignore_unavailable=True))

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

    # --- dense vectors ------------------------------------------------------
    def dense_info(self) -> dict[str, Any] | None:
        """Return the dense description from the mapping's ``_meta`` (``model``, ``dims``, ``meta_index``,
        ``count``, ``hub_k``, plus ``index``: the concrete index), or None when the index stores no vectors."""
        response = self._call("get", lambda: self.client.indices.get_mapping(index=self.index_name))
        for concrete, entry in sorted(_body(response).items()):
            meta = (dict(entry).get("mappings") or {}).get("_meta") or {}
            if META_KEY in meta:
                return {**meta[META_KEY], "index": concrete}
        return None

    @property
    def has_vectors(self) -> bool:
        """Return True when the index (behind the alias) was built with dense vectors."""
        return self.dense_info() is not None

    def term_stats(self, info: dict[str, Any] | None = None) -> TermStats | None:
        """Return the BM25 ``TermStats`` stored with the vectors (``info``: a ``dense_info()``), or None."""
        from elasticsearch import NotFoundError

        from index.dense_store import TermStats

        info = info if info is not None else self.dense_info()
        if info is None:
            return None

        def fetch():
            try:
                return self.client.get(index=info["meta_index"], id=META_DOC_ID)
            except NotFoundError:
                return None

        response = self._call("meta read", fetch)
        terms = (_body(response).get("_source") or {}).get("terms") if response is not None else None
        return TermStats.from_dict(terms) if terms else None

    def hybrid_hits(self, query: SearchQuery, vector: Sequence[float], *, k: int,
                    mode: str = "union") -> list[DenseHit]:
        """Send one hybrid request (``index.es_knn.hybrid_request``); return its hits with cosine, vector and hub.

        Servers before 8.8 cannot report the lexical query's own score: there the request has no kNN
        boost and a hit's lexical score is its ``_score``, which includes the kNN part (at most 1) for
        hits both parts found, and kNN-only hits can be cut by lexical ones (``hybrid_request``).
        """
        if self.server_version >= NAMED_SCORES_VERSION:
            body = hybrid_request(query, vector, k=k, mode=mode)
            params: dict[str, Any] = {"include_named_queries_score": True}
        else:  # no per-query scores before 8.8: no boost either, so ``_score`` stays the lexical score
            body = hybrid_request(query, vector, k=k, mode=mode, knn_boost=None)
            params = {}
        response = self._call("search", lambda: self.client.search(index=self.index_name, **params, **body))
        return dense_hits_from_response(_body(response), vector)

    def hybrid_search(self, query: SearchQuery, vector: Sequence[float], *, k: int,
                      mode: str = "union") -> list[SearchHit]:
        """Return the union of the lexical top ``query.size`` and the kNN top ``k`` from ONE request.

        Hits come in server order; a hit the lexical query matched keeps its lexical score, a hit only
        kNN found has score 0. Every hit's ``matched["cosine"]`` holds its cosine to ``vector``
        (six decimals, from the returned stored vector); ``hybrid_hits`` gives the float and the vector.
        """
        out = []
        for d in self.hybrid_hits(query, vector, k=k, mode=mode):
            out.append(SearchHit(document=d.hit.document, score=d.hit.score,
                                 matched={**d.hit.matched, "cosine": [f"{d.cosine:.6f}"]}))
        return out

    def knn_hits(self, vector: Sequence[float], *, k: int, exclude_ids: Sequence[str] = ()) -> list[DenseHit]:
        """Return the kNN top ``k`` (score 0, cosine from the stored vectors), best first, none of ``exclude_ids``."""
        body = knn_request(vector, k=k, exclude_ids=list(exclude_ids))
        response = self._call("search", lambda: self.client.search(index=self.index_name, **body))
        return dense_hits_from_response(_body(response), vector)

    def fetch_vectors(self, ids: Sequence[str]) -> dict[str, tuple[np.ndarray | None, float]]:
        """Return ``{id: (unit vector or None, hub)}`` for the stored ``ids`` in one ``mget`` (absent ids left out)."""
        import numpy as np

        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        response = self._call("get", lambda: self.client.mget(index=self.index_name, ids=ids,
                                                              source_includes=[EMBEDDING_FIELD, HUB_FIELD]))
        out: dict[str, tuple[np.ndarray | None, float]] = {}
        for doc in _body(response).get("docs", []):
            if not doc.get("found"):
                continue
            source = doc.get("_source") or {}
            values = source.get(EMBEDDING_FIELD)
            out[str(doc["_id"])] = (np.asarray(values, dtype=np.float32) if values is not None else None,
                                    float(source.get(HUB_FIELD) or 0.0))
        return out

    def fetch_sg_phrases(self, ids: Sequence[str]) -> dict[str, str]:
        """Return ``{id: encoded SG phrase list}`` for the stored ``ids`` that have one, in one ``mget``."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        response = self._call("get", lambda: self.client.mget(index=self.index_name, ids=ids,
                                                              source_includes=[SG_FIELD]))
        return {str(doc["_id"]): str((doc.get("_source") or {})[SG_FIELD]) for doc in _body(response).get("docs", [])
                if doc.get("found") and (doc.get("_source") or {}).get(SG_FIELD) is not None}

    def count(self) -> int:
        """Return the number of indexed documents."""
        return int(_body(self._call("count", lambda: self.client.count(index=self.index_name)))["count"])

    def ids(self) -> list[str]:
        """Return every document id, in id order."""
        return [doc_id for doc_id, _ in self._scan(False)]

    def answer_texts(self) -> tuple[list[str], list[str]]:
        """Return ``(ids, texts)`` of every document, in id order, a page of texts per request."""
        pairs = list(self._scan(["text"]))
        return [doc_id for doc_id, _ in pairs], [str(source.get("text", "")) for _, source in pairs]

    def _scan(self, source: list[str] | bool) -> Iterator[tuple[str, dict[str, Any]]]:
        """Yield ``(id, _source)`` of every document in id order, ``SCAN_PAGE`` per request.

        ``search_after`` on the ``id`` keyword pages past the 10,000-hit window without a scroll
        context to clean up; ``source`` is the ``_source`` filter (False: ids only).
        """
        after: list[Any] | None = None
        while True:
            body: dict[str, Any] = {"size": SCAN_PAGE, "query": {"match_all": {}}, "sort": [{"id": "asc"}],
                                    "_source": source}
            if after is not None:
                body["search_after"] = after
            response = self._call("search", lambda body=body: self.client.search(index=self.index_name, **body))
            hits = _body(response).get("hits", {}).get("hits", [])
            for hit in hits:
                yield str(hit["_id"]), dict(hit.get("_source") or {})
            if len(hits) < SCAN_PAGE:
                return
            after = hits[-1]["sort"]

    def delete_index(self) -> None:
        """Delete the index (or every index behind the alias) ``index_name``."""
        indices = self.client.indices
        if self._call("alias lookup", lambda: bool(indices.exists_alias(name=self.index_name))):
            for name in _body(self._call("alias lookup", lambda: indices.get_alias(name=self.index_name))):
                self._call("delete", lambda name=name: indices.delete(index=name, ignore_unavailable=True))
                self._call("delete", lambda name=name: indices.delete(index=meta_index_name(name),
                                                                      ignore_unavailable=True))
        else:
            self._call("delete", lambda: indices.delete(index=self.index_name, ignore_unavailable=True))

    def close(self) -> None:
        """Close the client's connections."""
        try:
            self.client.close()
        except Exception:  # noqa: BLE001 - closing must never raise
            pass


def dense_fields(store: DenseStore, doc_id: str) -> dict[str, Any]:
    """Return the ``embedding`` and ``hub`` source fields of ``doc_id`` from ``store``; ``InputError`` when absent."""
    row = int(store.rows([doc_id])[0])
    if row < 0:
        raise InputError(f"answer {doc_id!r} has no vector in the dense store: encode the same answers you index")
    return {EMBEDDING_FIELD: [round(v, 7) for v in store.vectors[row].tolist()],
            HUB_FIELD: round(float(store.hub[row]), 6)}


def _version(info: Any) -> tuple[int, int]:
    """Return ``(major, minor)`` from an ``info()`` response, or ``(99, 0)`` when it cannot be read."""
    try:
        major, minor = str(_body(info)["version"]["number"]).split(".")[:2]
        return int(major), int(minor)
    except (KeyError, TypeError, ValueError):
        return 99, 0


def _body(response: Any) -> dict[str, Any]:
    """Return the JSON body of a client response (``ObjectApiResponse.body``) or a plain dict."""
    return dict(getattr(response, "body", response))


def _one_line(exc: object) -> str:
    return " ".join(str(exc).split())[:300]
