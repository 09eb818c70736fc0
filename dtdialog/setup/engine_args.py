"""The options that choose an engine, shared by ``chat``, ``test`` and ``serve``: one set of names and defaults.

``add_engine_arguments`` adds them; ``spec_from_args`` turns them into the ``EngineSpec`` (or loads the saved one
``--engine`` names). The environment (``$DTDIALOG_PARSER``, ``$DTDIALOG_RANKER``, ...) fills in what the options
leave open; a saved spec records what it chose (``dtdialog.setup.spec_resolution``), so building it reads none of them.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from parsers.errors import InputError

#: The options that choose an engine, with their defaults: a saved spec (--engine) replaces them all.
ENGINE_OPTIONS = {"corpus": None, "corpus_format": None, "index": None, "build": False, "profile": None,
                  "backend": "sqlite", "es_url": None, "parser": None, "ranker": None, "no_dt": False}


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the options that choose an engine (``ENGINE_OPTIONS``), ``--sessions`` and ``--engine``."""
    from dtdialog.setup.assembly import CORPUS_FORMATS

    group = parser.add_argument_group("engine")
    group.add_argument("--corpus", type=Path, default=None, help="dialogue corpus to answer from (with --format)")
    group.add_argument("--format", dest="corpus_format", choices=CORPUS_FORMATS, default=None,
                       help="corpus format (default: builtin, the shipped car-repair corpus)")
    group.add_argument("--profile", type=Path, default=None, metavar="FILE",
                       help="domain profile YAML whose wording the bot speaks (default: the one stored in the index)")
    group.add_argument("--index", type=Path, default=None,
                       help="SQLite index file; a missing one is an error unless --build or --corpus is given "
                            "(default: the project's, else the built-in corpus's index in $DTDIALOG_HOME)")
    group.add_argument("--build", action="store_true",
                       help="build a missing --index from --corpus (default: the built-in corpus) first")
    # no argparse choices: the spec refuses an unknown backend in its one-line error
    group.add_argument("--backend", default="sqlite", help="index backend: sqlite (default) or elasticsearch")
    group.add_argument("--es-url", default=None, help="Elasticsearch URL (default: $ELASTICSEARCH_URL); beside "
                       "--engine, the saved server's URL with its user:password (a saved spec holds none)")
    group.add_argument("--parser", default=None, help="RST parser name (default: $DTDIALOG_PARSER or the parser "
                       "the shipped ranker was trained with, rules)")
    group.add_argument("--ranker", choices=("auto", "learned", "rules"), default=None,
                       help="answer ranking: auto (default, or $DTDIALOG_RANKER) = the learned hybrid ranker when "
                            "the [dense] extra is installed, else the rule scorer; learned; rules (the paper's)")
    group.add_argument("--no-dt", action="store_true",
                       help="run the same engine without the discourse tree (the ablation): one flat query part, "
                            "no agreement, no tree features in the ranker, no memory of what was tried")
    group.add_argument("--sessions", type=Path, default=None,
                       help="session store file (default: $DTDIALOG_HOME/sessions.sqlite)")
    group.add_argument("--engine", type=Path, default=None, metavar="SPEC.json",
                       help="run the engine a saved spec describes (dtdialog chat --save-engine); not with the "
                            "options above that choose an engine")


def spec_from_args(args: argparse.Namespace, *, extra_options: dict | None = None, config=None,
                   accept_corpus: bool = False):
    """Return the ``EngineSpec`` the engine options describe, or the saved one ``--engine`` names.

    ``extra_options`` maps further option names (``args`` attributes) to their defaults: with ``--engine`` they
    must be left at them too. ``config`` is the ``EngineConfig`` (default: the defaults). The session store is
    ``--sessions``, else ``$DTDIALOG_HOME/sessions.sqlite``; a saved spec names none (``EngineSpec.load``).
    ``accept_corpus``: load a spec whose corpus changed since it was saved, to re-save it (``EngineSpec.load``).
    """
    from dataclasses import replace

    from dtdialog.runtime.paths import sessions_path
    from dtdialog.setup.assembly import EngineSpec

    if args.engine is not None:
        options = {**ENGINE_OPTIONS, **(extra_options or {})}
        # --es-url may give the saved server's credentials, which a saved spec never holds
        given = [name for name, default in options.items()
                 if name != "es_url" and getattr(args, name, default) != default]
        if given:
            names = ", ".join("--" + ("format" if n == "corpus_format" else n.replace("_", "-")) for n in given)
            raise InputError(f"--engine {args.engine} describes the whole engine; drop {names} or edit the spec")
        spec = EngineSpec.load(args.engine, accept_corpus=accept_corpus)
        if getattr(args, "es_url", None) is not None:
            spec = replace(spec, index_url=_saved_server(spec, args.es_url, args.engine))
        return replace(spec, sessions_path=str(args.sessions or sessions_path()))

    from dtdialog.setup.engine_config import EngineConfig
    from dtdialog.setup.project import engine_target

    target = engine_target(index=args.index, corpus=args.corpus, corpus_format=args.corpus_format,
                           profile=args.profile, backend=args.backend, build=args.build)
    return EngineSpec(parser=args.parser, backend=args.backend, index_path=target.index, index_url=args.es_url,
                      corpus=target.corpus, corpus_format=target.corpus_format or "builtin", ranker=args.ranker,
                      profile=target.profile, sessions_path=args.sessions or sessions_path(),
                      config=config if config is not None else EngineConfig(), use_tree=not args.no_dt)


def _saved_server(spec, url: str, path: Path) -> str:
    """Return ``url``, the ``--es-url`` beside ``--engine``: it may add credentials, never name another server."""
    from index.es_url import same_server, without_credentials

    if spec.backend != "elasticsearch" or spec.index_url is None or not same_server(url, spec.index_url):
        saved = spec.index_url if spec.backend == "elasticsearch" else "a SQLite index"
        raise InputError(f"--es-url {without_credentials(url)} is not the server the spec {path} names ({saved}); "
                         "drop --es-url or edit the spec")
    return url
