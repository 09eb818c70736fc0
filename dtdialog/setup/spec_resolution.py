"""What a saved ``EngineSpec`` pins down, and whether this machine can build it.

``resolve_spec`` writes into a spec what this machine's defaults and environment chose (parser, ranker, the
learned ranker's model version, the encoder runtime, the Elasticsearch URL without credentials, absolute paths, the
content digest of the corpus it reads), so that loading it elsewhere builds the same engine; ``spec_problem`` says in
one line why this machine cannot (``EngineSpec.load`` raises it, ``build_engine`` refuses a changed corpus too).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from parsers.errors import InputError, ModelNotAvailableError


def engine_parser_name(name: str | None = None) -> str:
    """Return the parser an engine or the index it reads uses: ``parsers.base.default_parser_name``, the same
    rule as ``dtdialog parse``."""
    from parsers.base import default_parser_name

    return default_parser_name(name)


_PATHS = ("index_path", "corpus", "ranker_model", "profile")


def resolve_spec(spec: Any) -> Any:
    """Return ``spec`` with its defaults resolved here: no parser or ranker left to an environment variable.

    ``auto`` becomes ``learned`` or ``rules`` over a SQLite index (over Elasticsearch it depends on the index's
    vectors, so it stays ``auto``); under the learned ranker the model's version and the encoder runtime are
    recorded; over Elasticsearch the server's URL (``saved_es_url``). A learned ranker whose model cannot be read
    raises ``ModelNotAvailableError``; Elasticsearch without a URL raises ``ConfigError``.
    """
    from dtdialog.ranking.factory import resolve_ranker
    from parsers.encoder import resolved_runtime

    ranker = sqlite_ranker(spec.ranker, spec.model_path()) if spec.backend == "sqlite" else resolve_ranker(spec.ranker)
    version, runtime = spec.ranker_version, spec.encoder_runtime
    if ranker == "learned":
        version = version or model_version(spec.model_path())
        runtime = resolved_runtime(runtime)
    paths = {name: os.path.abspath(getattr(spec, name)) for name in _PATHS if getattr(spec, name) is not None}
    parser = engine_parser_name(spec.parser)
    digest = corpus_digest(spec.corpus, spec.corpus_format) if reads_corpus(spec) else None
    return replace(spec, parser=parser, parser_encoder=spec.parser_encoder or parser_encoder(parser), ranker=ranker,
                   ranker_version=version, encoder_runtime=runtime, index_url=saved_es_url(spec),
                   corpus_digest=digest, **paths)


def reads_corpus(spec: Any) -> bool:
    """Return True when building ``spec`` reads a corpus: the one it names, or the built-in one it indexes itself (a
    SQLite spec naming no index file); a spec naming only an index file or server reads that, not a corpus."""
    return spec.corpus is not None or (spec.backend == "sqlite" and spec.index_path is None)


def corpus_digest(corpus: str | None, corpus_format: str) -> str:
    """Return ``sha256:`` and the hex digest of the corpus files' bytes, read as ``data.loaders.load_corpus`` reads
    them: the file, or a folder's ``*.jsonl`` files by name (None: the built-in corpus's files).

    Line ends count as ``\n``, so a checkout that turned them into ``\r\n`` is the same corpus; any other edit is not.
    """
    from data.builtin import builtin_corpus_dir

    root = builtin_corpus_dir() if corpus is None else Path(corpus)
    folder = (corpus is None or corpus_format == "jsonl") and root.is_dir()
    digest = hashlib.sha256()
    try:
        for file in sorted(root.glob("*.jsonl")) if folder else [root]:
            if folder:
                digest.update(file.name.encode() + b"\0")
            digest.update(file.read_bytes().replace(b"\r\n", b"\n"))
    except OSError as exc:
        raise InputError(f"cannot read the corpus {root}: {exc.strerror or exc}") from None
    return "sha256:" + digest.hexdigest()


def corpus_change(spec: Any, saved_as: str = "SPEC.json") -> str | None:
    """Return in one line which corpus differs from the digest ``spec`` (the file ``saved_as``) was saved with, or
    None (same content, no digest saved, or a spec that reads no corpus)."""
    if spec.corpus_digest is None or not reads_corpus(spec):
        return None
    here = corpus_digest(spec.corpus, spec.corpus_format)
    if here == spec.corpus_digest:
        return None
    which = "the built-in corpus" if spec.corpus is None else f"the corpus {spec.corpus}"
    return (f"{which} changed since the spec was saved (content {here[:19]}, saved {spec.corpus_digest[:19]}); to "
            f"build on it as it is now, re-save the spec: dtdialog chat --engine {saved_as} --save-engine {saved_as}")


def sqlite_ranker(ranker: str | None, model_path: str | None = None) -> str:
    """Return the ranker ``ranker`` (None: ``$DTDIALOG_RANKER`` or ``auto``) is over a SQLite index here: ``auto``
    is ``learned`` when the [dense] extra and the model at ``model_path`` (None: the shipped one) are there, else
    ``rules``."""
    from dtdialog.ranking.factory import resolve_ranker

    name = resolve_ranker(ranker)
    if name == "auto":
        return "learned" if _learned_here(model_path) else "rules"
    return name


def parser_encoder(parser: str) -> str | None:
    """Return what the ``parser``'s own encoder runs (``parsers.neural.encoder.runtime_id`` for the neural parser,
    which no environment variable changes), or None for a parser without one."""
    if parser != "neural":
        return None
    from parsers.neural.encoder import runtime_id

    return runtime_id()


def saved_es_url(spec: Any) -> str | None:
    """Return the Elasticsearch URL a saved ``spec`` names: ``index_url`` or ``$ELASTICSEARCH_URL`` as resolved here,
    without its user and password (loading takes them from ``$ELASTICSEARCH_URL`` or ``--es-url`` for the same
    server, ``index.registry.es_url``); the spec's own ``index_url`` for a SQLite spec."""
    if spec.backend != "elasticsearch":
        return spec.index_url
    from index.es_url import without_credentials
    from index.registry import es_url

    return without_credentials(es_url(spec.index_url))


def spec_problem(spec: Any, *, accept_corpus: bool = False, saved_as: str = "SPEC.json") -> str | None:
    """Return in one line why this machine cannot build ``spec`` as it was saved, or None when it can.

    ``accept_corpus``: a corpus whose content changed since is no problem (the spec is being re-saved over it);
    ``saved_as``: the spec's file, named in the advice to re-save it.
    """
    from parsers.base import available_parsers

    if spec.parser is not None and spec.parser not in available_parsers():
        return f"parser {spec.parser!r} is not installed here (installed: {', '.join(available_parsers())})"
    problem = _parser_encoder_problem(spec)
    if problem is not None:
        return problem
    for name in ("corpus", "profile", "ranker_model", "calibrator"):
        path = getattr(spec, name)
        # a jsonl corpus may be a folder of files (``data.loaders``)
        folder = name == "corpus" and spec.corpus_format == "jsonl" and os.path.isdir(path or "")
        if path is not None and not (folder or os.path.isfile(path)):
            return f"the {name.replace('_', ' ')} file {path} is missing"
    problem = None if accept_corpus else corpus_change(spec, saved_as)
    if problem is not None:
        return problem
    if spec.ranker == "learned":
        from index.dense import INSTALL_HINT, dense_available

        if not dense_available():
            return f"the learned ranker needs the [dense] extra ({INSTALL_HINT})"
        try:
            version = model_version(spec.model_path())
        except ModelNotAvailableError as exc:
            return str(exc)
        if spec.ranker_version is not None and version != spec.ranker_version:
            return f"the ranker model here is {version!r}, the spec was saved with {spec.ranker_version!r}"
    if spec.encoder_runtime is not None:
        from parsers.encoder import runtime_problem

        return runtime_problem(spec.encoder_runtime)
    return None


def _parser_encoder_problem(spec: Any) -> str | None:
    """Return in one line why the parser's encoder here is not the one ``spec`` was saved with, or None."""
    from parsers.base import neural_ready

    name = engine_parser_name(spec.parser)
    here = parser_encoder(name)
    if spec.parser_encoder is not None and here != spec.parser_encoder:
        runs = repr(here) if here is not None else "no encoder"
        return f"the {name} parser here runs {runs}, the spec was saved with {spec.parser_encoder!r}"
    if name == "neural" and not neural_ready():
        from parsers.encoder import INSTALL_HINT

        return f"the neural parser needs onnxruntime, tokenizers, onnx and its int8 MiniLM heads ({INSTALL_HINT})"
    return None


def model_version(path: str | None) -> str:
    """Return the name in the manifest of the ranker model at ``path`` (None: the shipped one)."""
    from dtdialog.ranking.learned_scorer import RankerModel

    return str(RankerModel.load_deferred(path).manifest.get("name") or "")


def _learned_here(model_path: str | None) -> bool:
    """Return True when ``auto`` picks the learned ranker here over a SQLite index."""
    from index.dense import dense_available

    if not dense_available():
        return False
    try:
        model_version(model_path)
    except ModelNotAvailableError:
        return False
    return True
