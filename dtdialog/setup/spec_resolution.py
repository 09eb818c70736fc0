"""What a saved ``EngineSpec`` pins down, and whether this machine can build it.

``resolve_spec`` writes into a spec what this machine's defaults and environment chose (parser, ranker, the
learned ranker's model version, the encoder runtime, absolute paths), so that loading it elsewhere builds the same
engine; ``spec_problem`` says in one line why this machine cannot (``EngineSpec.load`` raises it).
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from parsers.errors import ModelNotAvailableError


def engine_parser_name(name: str | None = None) -> str:
    """Return the parser an engine or the index it reads uses: ``parsers.base.default_parser_name``, the same
    rule as ``dtdialog parse``."""
    from parsers.base import default_parser_name

    return default_parser_name(name)


_PATHS = ("index_path", "corpus", "ranker_model", "profile", "sessions_path")


def resolve_spec(spec: Any) -> Any:
    """Return ``spec`` with its defaults resolved here: no parser or ranker left to an environment variable.

    ``auto`` becomes ``learned`` or ``rules`` over a SQLite index (over Elasticsearch it depends on the index's
    vectors, so it stays ``auto``); under the learned ranker the model's version and the encoder runtime are
    recorded. A learned ranker whose model cannot be read raises ``ModelNotAvailableError``.
    """
    from dtdialog.ranking.factory import resolve_ranker
    from parsers.encoder import resolved_runtime

    ranker = resolve_ranker(spec.ranker)
    if ranker == "auto" and spec.backend == "sqlite":
        ranker = "learned" if _learned_here(spec.model_path()) else "rules"
    version, runtime = spec.ranker_version, spec.encoder_runtime
    if ranker == "learned":
        version = version or model_version(spec.model_path())
        runtime = resolved_runtime(runtime)
    paths = {name: os.path.abspath(getattr(spec, name)) for name in _PATHS if getattr(spec, name) is not None}
    return replace(spec, parser=engine_parser_name(spec.parser), ranker=ranker, ranker_version=version,
                   encoder_runtime=runtime, **paths)


def spec_problem(spec: Any) -> str | None:
    """Return in one line why this machine cannot build ``spec`` as it was saved, or None when it can."""
    from parsers.base import available_parsers

    if spec.parser is not None and spec.parser not in available_parsers():
        return f"parser {spec.parser!r} is not installed here (installed: {', '.join(available_parsers())})"
    for name in ("corpus", "profile", "ranker_model"):
        path = getattr(spec, name)
        if path is not None and not os.path.isfile(path):
            return f"the {name.replace('_', ' ')} file {path} is missing"
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
