"""Load everything a chat needs: parser, answer index (built on first run), selector.

``load_runtime()`` with no arguments uses the built-in car-repair corpus: its index is built
once into ``dtdialog.paths.data_home()`` under a name derived from the parser and the corpus
content, so an edited corpus or another parser gets a fresh index and an unchanged one is reused.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from dtdialog.engine_config import EngineConfig
from dtdialog.paths import builtin_index_path
from dtdialog.selector import AnswerSelector
from index.base import AnswerIndex
from parsers.base import RSTParser, get_parser
from parsers.errors import ConfigError, DTDialogError, InputError

BACKENDS = ("sqlite", "elasticsearch")


@dataclass
class Runtime:
    """The loaded engine: ``parser``, ``index`` and the ``selector`` over them."""

    parser: RSTParser
    index: AnswerIndex
    selector: AnswerSelector
    index_location: str = ""
    built: bool = False

    def close(self) -> None:
        """Close the index."""
        self.index.close()


def _load_dialogues(corpus: str | Path | None, corpus_format: str):
    if corpus is None or corpus_format == "builtin":
        if corpus is not None and corpus_format == "builtin":
            raise ConfigError("--corpus needs --format (csv, jsonl, mechanics, twitter or irc)")
        from data.builtin import load_builtin_corpus

        return load_builtin_corpus()
    from data.loaders import load_corpus

    return load_corpus(Path(corpus), fmt=corpus_format, on_error="skip")


def corpus_fingerprint(dialogues, parser_name: str) -> str:
    """Return a short hash of the parser name and every dialogue's content."""
    digest = hashlib.sha256(parser_name.encode())
    for d in dialogues:
        digest.update(json.dumps(d.to_dict(), sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


def load_runtime(*, corpus: str | Path | None = None, corpus_format: str = "builtin",
                 index_path: str | Path | None = None, backend: str = "sqlite",
                 parser: str | RSTParser | None = None, progress: bool = True,
                 config: EngineConfig | None = None, es_url: str | None = None, ranker: str | None = None) -> Runtime:
    """Return a ready ``Runtime``.

    * ``index_path`` given and present, no ``corpus``: open it as is.
    * ``index_path`` given but missing, or ``corpus`` given: build it from the corpus
      (built-in when ``corpus`` is None) first; with ``corpus`` and no ``index_path`` the index
      goes to ``data_home()`` keyed by the corpus fingerprint, so it is built only once.
    * neither: the built-in corpus's index in ``data_home()``, built on first run (progress bar on stderr).

    ``elasticsearch`` uses ``es_url`` or ``$ELASTICSEARCH_URL`` and (re)loads the corpus only when
    the index is empty or a corpus is given. Raises ``ConfigError``/``InputError`` with one-line messages.
    ``ranker`` (``auto``/``learned``/``rules``, default ``$DTDIALOG_RANKER`` or ``auto``): see
    ``dtdialog.ranking.factory`` - ``auto`` ranks with the learned hybrid ranker when the [dense] extra is
    installed, and lexically with the rule scorer (saying so once) when it is not.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"unknown index backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    rst = parser if isinstance(parser, RSTParser) else get_parser(parser)
    from index.builder import build_index
    from index.registry import open_index

    built = False
    if backend == "elasticsearch":
        index = open_index(backend="elasticsearch", url=es_url)
        if corpus is not None or index.count() == 0:
            dialogues = _load_dialogues(corpus, corpus_format)
            build_index(dialogues=dialogues, parser=rst, backend="elasticsearch", out=None, url=es_url,
                        progress=progress)
            built = True
        location = "elasticsearch"
        path = None
    else:
        path = Path(index_path).expanduser() if index_path is not None else None
        if path is not None and path.is_dir():
            raise InputError(f"{path} is a directory; give an index file path")
        if path is None or corpus is not None or not path.exists():
            dialogues = _load_dialogues(corpus, corpus_format)
            if path is None:
                path = builtin_index_path(corpus_fingerprint(dialogues, getattr(rst, "name", "parser")))
            # an explicit --index with --corpus is rebuilt; a fingerprinted one only when it does not exist yet
            if (corpus is not None and index_path is not None) or not path.exists():
                if progress:
                    print(f"building the answer index ({len(dialogues)} dialogues) into {path} ...", file=sys.stderr)
                build_index(dialogues=dialogues, parser=rst, backend="sqlite", out=path, progress=progress)
                built = True
        try:
            index = open_index(backend="sqlite", path=path)
        except InputError:
            if index_path is not None:
                raise
            # our own cached index is stale (older schema or damaged): rebuild it, it is derived data
            if progress:
                print(f"the cached index {path} is outdated; rebuilding it ...", file=sys.stderr)
            build_index(dialogues=_load_dialogues(corpus, corpus_format), parser=rst, backend="sqlite", out=path,
                        progress=progress)
            built = True
            index = open_index(backend="sqlite", path=path)
        location = str(path)
    from dtdialog.ranking.factory import build_ranking, engine_default_ranker

    generator, scorer = build_ranking(index=index, index_path=path, config=config,
                                      ranker=ranker or engine_default_ranker(), progress=progress)
    selector = AnswerSelector(index=index, parser=rst, config=config, generator=generator, scorer=scorer)
    _warm_and_freeze(rst)
    return Runtime(parser=rst, index=index, selector=selector, index_location=location, built=built)


def _warm_and_freeze(parser: RSTParser) -> None:
    """Load the parser's NLP pipeline now (it loads lazily) and freeze the loaded engine (``dtdialog.gc_tuning``)."""
    from dtdialog.gc_tuning import freeze_loaded

    try:
        parser.parse("The car starts.")
    except DTDialogError:  # warming is an optimisation; a real problem surfaces, with its message, on the first turn
        pass
    freeze_loaded()
