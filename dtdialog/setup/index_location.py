"""Where an engine's answer index comes from: open it, or build it from a corpus first (``open_spec_index``).

With no index location the built-in corpus is used: its index is built once into
``dtdialog.runtime.paths.data_home()`` under a name derived from the parser and the corpus content, so an edited
corpus or another parser gets a fresh index and an unchanged one is reused. ``dtdialog.setup.assembly`` calls this.
An index built here stores the spec's profile (or the built-in corpus's) with it, as ``dtdialog index build`` does.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from dtdialog.runtime.paths import builtin_index_path
from index.base import AnswerIndex
from parsers.base import RSTParser
from parsers.errors import InputError


def load_dialogues(corpus: str | Path | None, corpus_format: str):
    """Return the dialogues of ``corpus`` (the built-in corpus when None); broken records are skipped."""
    if corpus is None or corpus_format == "builtin":
        from data.builtin import load_builtin_corpus

        return load_builtin_corpus()
    from data.loaders import load_corpus

    return load_corpus(Path(corpus), fmt=corpus_format, on_error="skip")


def build_info(spec) -> dict | None:
    """Return the build information an index built for ``spec`` stores: the profile whose wording it speaks
    (the spec's profile file, else the built-in corpus's for the built-in corpus; None for another corpus)."""
    from dtdialog.setup.profile import PROFILE_INFO_KEY, builtin_profile, load_profile

    if spec.profile is not None:
        return {PROFILE_INFO_KEY: load_profile(spec.profile).to_dict()}
    if spec.corpus is None:
        return {PROFILE_INFO_KEY: builtin_profile().to_dict()}
    return None


def corpus_fingerprint(dialogues, parser_key: str) -> str:
    """Return a short hash of the parser key (name, or its whole identity), the document format version and
    every dialogue's content."""
    from index.documents import DOCUMENT_VERSION

    digest = hashlib.sha256(parser_key.encode())
    digest.update(f"documents-v{DOCUMENT_VERSION}".encode())
    for d in dialogues:
        digest.update(json.dumps(d.to_dict(), sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


def open_spec_index(spec, parser: RSTParser, *, progress: bool) -> tuple[AnswerIndex, Path | None, str, bool]:
    """Return ``(index, SQLite path or None, location, built)`` for an ``EngineSpec``.

    * ``index_path`` given and present, no ``corpus``: open it as is.
    * ``index_path`` given but missing, or ``corpus`` given: build it from the corpus (built-in when
      ``corpus`` is None) first; with ``corpus`` and no ``index_path`` the index goes to ``data_home()``
      keyed by the corpus fingerprint, so it is built only once.
    * neither: the built-in corpus's index in ``data_home()``, built on first run (progress bar on stderr).

    ``elasticsearch`` uses ``index_url`` or ``$ELASTICSEARCH_URL`` and (re)loads the corpus only when the
    index is empty or a corpus is given.
    """
    if spec.backend == "elasticsearch":
        index, built = _open_elasticsearch(spec, parser, progress=progress)
        return index, None, "elasticsearch", built
    path, built = _sqlite_file(spec, parser, progress=progress)
    index, rebuilt = _open_sqlite(spec, parser, path, progress=progress)
    return index, path, str(path), built or rebuilt


def _open_elasticsearch(spec, parser: RSTParser, *, progress: bool) -> tuple[AnswerIndex, bool]:
    from index.builder import build_index
    from index.registry import open_index

    index = open_index(backend="elasticsearch", url=spec.index_url)
    if spec.corpus is None and index.count() > 0:
        return index, False
    build_index(dialogues=load_dialogues(spec.corpus, spec.corpus_format), parser=parser, backend="elasticsearch",
                out=None, url=spec.index_url, progress=progress)
    return index, True


def _sqlite_file(spec, parser: RSTParser, *, progress: bool) -> tuple[Path, bool]:
    """Return ``(index file, built)``, building the file first when the spec asks for it or it is missing."""
    from index.builder import build_index

    path = Path(spec.index_path).expanduser() if spec.index_path is not None else None
    if path is not None and path.is_dir():
        raise InputError(f"{path} is a directory; give an index file path")
    if path is not None and spec.corpus is None and path.exists():
        return path, False
    dialogues = load_dialogues(spec.corpus, spec.corpus_format)
    if path is None:
        from dtdialog.setup.prebuilt import parser_identity

        # the parser's files (cue lexicon, model) and spaCy package too: a retrained model gets a fresh index
        key = json.dumps(parser_identity(parser), sort_keys=True, default=str)
        path = builtin_index_path(corpus_fingerprint(dialogues, key))
    if spec.corpus is None and spec.index_path is None and not path.exists():
        # the built-in corpus: the shipped prebuilt files when their stamp matches (dtdialog.setup.prebuilt)
        from dtdialog.setup.prebuilt import install_builtin

        if install_builtin(path, parser=parser, dialogues=dialogues, progress=progress):
            return path, False
    # an explicit --index with --corpus is rebuilt; a fingerprinted one only when it does not exist yet
    if (spec.corpus is not None and spec.index_path is not None) or not path.exists():
        if progress:
            print(f"building the answer index ({len(dialogues)} dialogues) into {path} ...", file=sys.stderr)
        build_index(dialogues=dialogues, parser=parser, backend="sqlite", out=path, progress=progress,
                    info=build_info(spec))
        return path, True
    return path, False


def _open_sqlite(spec, parser: RSTParser, path: Path, *, progress: bool) -> tuple[AnswerIndex, bool]:
    """Return ``(index, rebuilt)``: a stale cached index is rebuilt, an explicit one is reported."""
    from index.builder import build_index
    from index.registry import open_index

    try:
        index = open_index(backend="sqlite", path=path)
    except InputError:
        if spec.index_path is not None:
            raise
        # our own cached index is stale (older schema or damaged): rebuild it, it is derived data
        if progress:
            print(f"the cached index {path} is outdated; rebuilding it ...", file=sys.stderr)
        # force: a damaged cache file is not an index any more, and it is ours to replace
        build_index(dialogues=load_dialogues(spec.corpus, spec.corpus_format), parser=parser, backend="sqlite",
                    out=path, progress=progress, force=True, info=build_info(spec))
        return open_index(backend="sqlite", path=path), True
    return index, False
