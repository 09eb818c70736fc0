"""An in-memory Elasticsearch at the HTTP level, for unit tests of ``ElasticsearchIndex`` without a server.

The real ``elasticsearch`` client (and its ``helpers.bulk``) talks to ``FakeElasticsearch`` through
a transport node class, so tests see the exact requests the client serialises (``requests``) and
the index code parses responses shaped like the server's. The fake keeps indices, aliases and
documents, enforces ``dynamic: strict`` mappings on bulk writes, and answers searches with a
deliberately small engine: exact cosine kNN over the stored vectors, and lexical ``should`` clauses
scored by token overlap (enough to tell lexical from kNN-only hits, not a BM25 re-implementation).
Imported by name (pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from elastic_transport import ApiResponseMeta, BaseNode, HttpHeaders
from elastic_transport._node._base import NodeApiResponse

_TOKEN = re.compile(r"[a-z0-9]+")


@dataclass
class Request:
    """One recorded HTTP request: method, path, query parameters and the decoded JSON (or NDJSON lines) body."""

    method: str
    path: str
    params: dict[str, str]
    body: Any


class FakeElasticsearch:
    """The server state and request log; ``client()`` returns a real ``Elasticsearch`` client wired to it."""

    def __init__(self, *, version: str = "8.15.0") -> None:
        self.version = version
        self.requests: list[Request] = []
        self.indices: dict[str, dict[str, Any]] = {}
        self.aliases: dict[str, set[str]] = {}
        #: request kinds (``bulk``, ``update_aliases``, ``search``...) answered with a 500 error
        self.fail: set[str] = set()
        #: report named-query scores when the request asks (``include_named_queries_score``)
        self.named_scores = True

    def client(self):
        """Return an ``elasticsearch.Elasticsearch`` whose every request lands in this fake."""
        from elasticsearch import Elasticsearch

        node = type("BoundFakeNode", (_FakeNode,), {"server": self})
        return Elasticsearch("http://fake-es:9200", node_class=node, max_retries=0)

    def requests_to(self, suffix: str, method: str | None = None) -> list[Request]:
        """Return the recorded requests whose path ends with ``suffix`` (and whose method is ``method``)."""
        return [r for r in self.requests if r.path.endswith(suffix) and (method is None or r.method == method)]

    # --- dispatch ----------------------------------------------------------------------------
    def handle(self, method: str, target: str, body: bytes | None) -> tuple[int, Any]:
        parts = urlsplit(target)
        path = unquote(parts.path)
        params = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        decoded: Any = None
        if body:
            text = body.decode("utf-8")
            decoded = [json.loads(line) for line in text.splitlines() if line.strip()] if path.endswith("/_bulk") \
                else json.loads(text)
        self.requests.append(Request(method=method, path=path, params=params, body=decoded))
        segs = [s for s in path.split("/") if s]
        kind = self._kind(method, segs)
        if kind in self.fail:
            return 500, _error("internal_server_error", f"injected failure of {kind}")
        handler = getattr(self, f"_{kind}", None)
        if handler is None:
            return 400, _error("illegal_argument_exception", f"the fake does not know {method} {path}")
        return handler(segs, params, decoded)

    @staticmethod
    def _kind(method: str, segs: list[str]) -> str:
        if not segs:
            return "info"
        if segs[0] == "_bulk" or segs[-1] == "_bulk":
            return "bulk"
        if segs[0] == "_aliases":
            return "update_aliases"
        if segs[0] == "_alias":
            return "alias_exists" if method == "HEAD" else "get_alias"
        if len(segs) == 1:
            return {"PUT": "create", "HEAD": "exists", "DELETE": "delete"}.get(method, "unknown")
        action = segs[1]
        if action == "_doc":
            return "put_doc" if method in ("PUT", "POST") else "get_doc"
        return {"_refresh": "refresh", "_mapping": "get_mapping", "_search": "search", "_mget": "mget",
                "_count": "count"}.get(action, "unknown")

    # --- names -------------------------------------------------------------------------------
    def resolve(self, name: str) -> list[str]:
        """Return the concrete indices behind ``name`` (an alias or an index)."""
        if name in self.aliases:
            return sorted(self.aliases[name])
        return [name] if name in self.indices else []

    def _one(self, name: str) -> str | None:
        found = self.resolve(name)
        return found[0] if found else None

    # --- handlers ----------------------------------------------------------------------------
    def _info(self, segs, params, body):
        return 200, {"name": "fake", "cluster_name": "fake", "version": {"number": self.version},
                     "tagline": "You Know, for Search"}

    def _create(self, segs, params, body):
        name = segs[0]
        if name in self.indices or name in self.aliases:
            return 400, _error("resource_already_exists_exception", f"index [{name}] already exists")
        body = body or {}
        self.indices[name] = {"settings": body.get("settings", {}), "mappings": body.get("mappings", {}), "docs": {}}
        return 200, {"acknowledged": True, "index": name}

    def _exists(self, segs, params, body):
        return (200 if segs[0] in self.indices else 404), None

    def _delete(self, segs, params, body):
        names = self.resolve(segs[0])
        if not names:
            if params.get("ignore_unavailable") == "true":
                return 200, {"acknowledged": True}
            return 404, _error("index_not_found_exception", f"no such index [{segs[0]}]")
        for name in names:
            self.indices.pop(name, None)
            for members in self.aliases.values():
                members.discard(name)
        self.aliases = {a: m for a, m in self.aliases.items() if m}
        return 200, {"acknowledged": True}

    def _alias_exists(self, segs, params, body):
        return (200 if segs[1] in self.aliases else 404), None

    def _get_alias(self, segs, params, body):
        alias = segs[1]
        if alias not in self.aliases:
            return 404, _error("aliases_not_found_exception", f"alias [{alias}] missing")
        return 200, {name: {"aliases": {alias: {}}} for name in sorted(self.aliases[alias])}

    def _update_aliases(self, segs, params, body):
        staged = {a: set(m) for a, m in self.aliases.items()}
        for action in body["actions"]:
            (op, spec), = action.items()
            if spec["index"] not in self.indices:
                return 404, _error("index_not_found_exception", f"no such index [{spec['index']}]")
            members = staged.setdefault(spec["alias"], set())
            (members.add if op == "add" else members.discard)(spec["index"])
        self.aliases = {a: m for a, m in staged.items() if m}
        return 200, {"acknowledged": True}

    def _refresh(self, segs, params, body):
        return 200, {"_shards": {"total": 1, "successful": 1, "failed": 0}}

    def _get_mapping(self, segs, params, body):
        names = self.resolve(segs[0])
        if not names:
            return 404, _error("index_not_found_exception", f"no such index [{segs[0]}]")
        return 200, {name: {"mappings": self.indices[name]["mappings"]} for name in names}

    def _bulk(self, segs, params, body):
        items = []
        for header, source in zip(body[::2], body[1::2]):
            (op, meta), = header.items()
            name = self._one(meta["_index"]) or meta["_index"]
            index = self.indices.get(name)
            if index is None:
                items.append({op: {"_id": meta["_id"], "status": 404,
                                   "error": {"type": "index_not_found_exception", "reason": name}}})
                continue
            mappings = index["mappings"]
            unknown = sorted(set(source) - set(mappings.get("properties", {})))
            if mappings.get("dynamic") == "strict" and unknown:
                items.append({op: {"_id": meta["_id"], "status": 400, "error": {
                    "type": "strict_dynamic_mapping_exception",
                    "reason": f"mapping set to strict, dynamic introduction of [{unknown[0]}] is not allowed"}}})
                continue
            dims = _vector_dims(mappings)
            for field, n in dims.items():
                if field in source and len(source[field]) != n:
                    items.append({op: {"_id": meta["_id"], "status": 400, "error": {
                        "type": "document_parsing_exception",
                        "reason": f"field [{field}] has {len(source[field])} dimensions, mapping says {n}"}}})
                    break
            else:
                index["docs"][meta["_id"]] = source
                items.append({op: {"_id": meta["_id"], "status": 201, "result": "created"}})
        return 200, {"took": 1, "errors": any(list(i.values())[0]["status"] >= 300 for i in items), "items": items}

    def _put_doc(self, segs, params, body):
        name = self._one(segs[0])
        if name is None:
            return 404, _error("index_not_found_exception", segs[0])
        self.indices[name]["docs"][segs[2]] = body
        return 201, {"_index": name, "_id": segs[2], "result": "created"}

    def _get_doc(self, segs, params, body):
        name = self._one(segs[0])
        if name is None:
            return 404, _error("index_not_found_exception", segs[0])
        source = self.indices[name]["docs"].get(segs[2])
        if source is None:
            return 404, {"_index": name, "_id": segs[2], "found": False}
        return 200, {"_index": name, "_id": segs[2], "found": True, "_source": source}

    def _count(self, segs, params, body):
        names = self.resolve(segs[0])
        if not names:
            return 404, _error("index_not_found_exception", segs[0])
        return 200, {"count": sum(len(self.indices[n]["docs"]) for n in names)}

    def _mget(self, segs, params, body):
        name = self._one(segs[0])
        if name is None:
            return 404, _error("index_not_found_exception", segs[0])
        includes = params.get("_source_includes", "").split(",") if params.get("_source_includes") else None
        docs = []
        for doc_id in body["ids"]:
            source = self.indices[name]["docs"].get(doc_id)
            if source is None:
                docs.append({"_index": name, "_id": doc_id, "found": False})
            else:
                docs.append({"_index": name, "_id": doc_id, "found": True, "_source": _filtered(source, includes)})
        return 200, {"docs": docs}

    def _search(self, segs, params, body):
        names = self.resolve(segs[0])
        if not names:
            return 404, _error("index_not_found_exception", f"no such index [{segs[0]}]")
        docs = {doc_id: src for n in names for doc_id, src in self.indices[n]["docs"].items()}
        body = body or {}
        if "sort" in body:
            return self._sorted_page(names, docs, body)
        scores: dict[str, float] = {}
        named: dict[str, dict[str, float]] = {}
        if "retriever" in body:
            rrf = body["retriever"]["rrf"]
            window, c = rrf["rank_window_size"], rrf["rank_constant"]
            for retriever in rrf["retrievers"]:
                if "standard" in retriever:
                    ranked = self._lexical(docs, retriever["standard"]["query"], named)
                else:
                    ranked = _knn(docs, retriever["knn"])
                for rank, (doc_id, _) in enumerate(ranked[:window], start=1):
                    scores[doc_id] = scores.get(doc_id, 0.0) + 1.0 / (c + rank)
        else:
            if "query" in body:
                for doc_id, score in self._lexical(docs, body["query"], named):
                    scores[doc_id] = score
            if "knn" in body:
                boost = body["knn"].get("boost", 1.0)
                for doc_id, sim in _knn(docs, body["knn"]):
                    scores[doc_id] = scores.get(doc_id, 0.0) + boost * sim
        ranked = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:body.get("size", 10)]
        source_spec = body.get("_source")
        includes = source_spec.get("includes") if isinstance(source_spec, dict) else None
        with_scores = params.get("include_named_queries_score") == "true" and self.named_scores
        hits = []
        for doc_id, score in ranked:
            hit: dict[str, Any] = {"_index": names[0], "_id": doc_id, "_score": score,
                                   "_source": _filtered(docs[doc_id], includes)}
            fragments = _highlight(docs[doc_id], body.get("highlight"))
            if fragments:
                hit["highlight"] = fragments
            names_matched = named.get(doc_id, {})
            if names_matched:
                hit["matched_queries"] = dict(names_matched) if with_scores else sorted(names_matched)
            hits.append(hit)
        return 200, {"took": 1, "timed_out": False, "hits": {"total": {"value": len(scores), "relation": "eq"},
                                                             "max_score": ranked[0][1] if ranked else None,
                                                             "hits": hits}}

    @staticmethod
    def _sorted_page(names: list[str], docs: dict[str, dict], body: dict) -> tuple[int, Any]:
        """Answer a ``match_all`` sorted on one keyword field, after ``search_after``: what paging every id sends."""
        if body.get("query") != {"match_all": {}} or len(body["sort"]) != 1:
            return 400, _error("illegal_argument_exception", "the fake sorts match_all queries on one field only")
        (field, order), = body["sort"][0].items()
        rows = sorted(((str(src[field]), doc_id) for doc_id, src in docs.items()), reverse=order == "desc")
        if body.get("search_after"):
            key = str(body["search_after"][0])
            rows = [r for r in rows if (r[0] > key if order == "asc" else r[0] < key)]
        spec = body.get("_source", True)
        hits = []
        for value, doc_id in rows[:body.get("size", 10)]:
            hit: dict[str, Any] = {"_index": names[0], "_id": doc_id, "_score": None, "sort": [value]}
            if spec is not False:
                hit["_source"] = _filtered(docs[doc_id], spec if isinstance(spec, list) else None)
            hits.append(hit)
        return 200, {"took": 1, "timed_out": False,
                     "hits": {"total": {"value": len(rows), "relation": "eq"}, "max_score": None, "hits": hits}}

    def _lexical(self, docs: dict[str, dict], query: dict, named: dict[str, dict[str, float]]) -> list:
        """Score the ``bool`` of ``should`` clauses by token overlap; record named-query scores per document."""
        boolean = query["bool"]
        excluded = {v for clause in boolean.get("must_not", []) for v in clause.get("ids", {}).get("values", [])}
        wanted = [next(iter(c["terms"].items())) for c in boolean.get("filter", []) if "terms" in c]
        out = []
        for doc_id, source in docs.items():
            if doc_id in excluded or not all(set(_values(source.get(f))) & set(v) for f, v in wanted):
                continue
            total = 0.0
            for clause in boolean.get("should", []):
                score, name = _clause_score(clause, source)
                if score > 0:
                    total += score
                    if name:
                        named.setdefault(doc_id, {})[name] = score
            if total > 0:
                total *= boolean.get("boost", 1.0)
                if boolean.get("_name"):
                    named.setdefault(doc_id, {})[boolean["_name"]] = total
                out.append((doc_id, total))
        return sorted(out, key=lambda kv: (-kv[1], kv[0]))


def _clause_score(clause: dict, source: dict) -> tuple[float, str | None]:
    (kind, spec), = clause.items()
    if kind == "multi_match":
        fields = [f.split("^")[0] for f in spec["fields"]]
        words, name, boost = spec["query"], spec.get("_name"), 1.0
    else:
        (field, inner), = spec.items()
        fields, words, name, boost = [field], inner["query"], inner.get("_name"), inner.get("boost", 1.0)
    wanted = {t for f in fields for t in _tokens(f, words)}
    have = {t for f in fields for t in _tokens(f, _text(source.get(f)))}
    if kind == "match_phrase" and not wanted <= have:
        return 0.0, name  # a phrase needs all its words (the fake ignores their order and the slop)
    return boost * len(wanted & have), name


def _knn(docs: dict[str, dict], knn: dict) -> list[tuple[str, float]]:
    """Return the exact top ``k`` as ``(id, (1 + cosine) / 2)``: Elasticsearch's cosine kNN score."""
    field, query, k = knn["field"], knn["query_vector"], knn["k"]
    excluded = {v for clause in knn.get("filter", {}).get("bool", {}).get("must_not", [])
                for v in clause.get("ids", {}).get("values", [])}
    qn = math.sqrt(sum(v * v for v in query)) or 1.0
    scored = []
    for doc_id, source in docs.items():
        vector = source.get(field)
        if vector is None or doc_id in excluded:
            continue
        vn = math.sqrt(sum(v * v for v in vector)) or 1.0
        cosine = sum(a * b for a, b in zip(vector, query)) / (qn * vn)
        scored.append((doc_id, (1.0 + cosine) / 2.0))
    return sorted(scored, key=lambda kv: (-kv[1], kv[0]))[:k]


def _values(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else ([] if value is None else [str(value)])


def _highlight(source: dict, spec: dict | None) -> dict[str, list[str]]:
    """Return field -> the values that contain a word of the field's ``highlight_query``, those words in tags
    (each value whole, as ``number_of_fragments: 0`` asks; no stemming, unlike the english analyzer)."""
    out: dict[str, list[str]] = {}
    for field, options in ((spec or {}).get("fields") or {}).items():
        query = next(iter(options.get("highlight_query", {}).get("match", {}).values()), "")
        words = set(_TOKEN.findall(str(query).lower()))
        tagged = [_tag(v, words, spec["pre_tags"][0], spec["post_tags"][0])
                  for v in _values(source.get(field)) if words & set(_TOKEN.findall(v.lower()))]
        if tagged:
            out[field] = tagged
    return out


def _tokens(field: str, text: str) -> list[str]:
    # ``rr_tokens`` is analysed with the whitespace tokenizer: ``contrast_start`` stays one token
    return text.lower().split() if field == "rr_tokens" else _TOKEN.findall(text.lower())


def _tag(value: str, words: set[str], pre: str, post: str) -> str:
    return re.sub(r"[A-Za-z0-9]+", lambda m: f"{pre}{m[0]}{post}" if m[0].lower() in words else m[0], value)


def _text(value: Any) -> str:
    return " ".join(value) if isinstance(value, list) else str(value or "")


def _filtered(source: dict, includes: list[str] | None) -> dict:
    return dict(source) if includes is None else {k: v for k, v in source.items() if k in includes}


def _vector_dims(mappings: dict) -> dict[str, int]:
    return {f: spec["dims"] for f, spec in mappings.get("properties", {}).items() if spec.get("type") == "dense_vector"}


def _error(kind: str, reason: str) -> dict:
    return {"error": {"root_cause": [{"type": kind, "reason": reason}], "type": kind, "reason": reason}}


class _FakeNode(BaseNode):
    server: FakeElasticsearch

    def perform_request(self, method, target, body=None, headers=None, request_timeout=None):
        status, payload = self.server.handle(method, target, body)
        data = b"" if payload is None else json.dumps(payload).encode("utf-8")
        meta = ApiResponseMeta(status=status, http_version="1.1", duration=0.0, node=self.config,
                               headers=HttpHeaders({"content-type": "application/json",
                                                    "x-elastic-product": "Elasticsearch"}))
        return NodeApiResponse(meta, data)


class HashingEncoder:
    """A deterministic stand-in for MiniLM: each token adds a fixed pseudo-random unit vector (by its hash).

    Texts sharing words get high cosines, so retrieval behaves plausibly, and nothing is loaded.
    """

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.calls = 0

    def encode(self, texts, *, progress: bool = False):
        import hashlib

        import numpy as np

        self.calls += 1
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for token in _TOKEN.findall(text.lower()):
                seed = int.from_bytes(hashlib.blake2b(token.encode(), digest_size=8).digest(), "little")
                out[i] += np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            norm = np.linalg.norm(out[i])
            if norm > 0:
                out[i] /= norm
        return out
