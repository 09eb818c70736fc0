"""The options that choose an engine, shared by ``chat``, ``test``, ``serve`` and the evaluations: one set of names,
defaults and checks.

``add_engine_arguments`` adds them; ``spec_from_args`` turns them into the ``EngineSpec`` (or loads the saved one
``--engine`` names). The environment (``$DTDIALOG_PARSER``, ``$DTDIALOG_RANKER``, ...) fills in what the options
leave open; a saved spec records what it chose (``dtdialog.setup.spec_resolution``), so building it reads none of them.
"""

from __future__ import annotations

import argparse
from collections.abc import Collection
from pathlib import Path

from parsers.errors import InputError

#: The options that choose an engine, with their defaults: a saved spec (--engine) replaces them all.
ENGINE_OPTIONS = {"corpus": None, "corpus_format": None, "index": None, "build": False, "profile": None,
                  "backend": "sqlite", "es_url": None, "parser": None, "ranker": None, "no_dt": False,
                  "calibrator": None}
#: The engine options of an evaluation that builds its own index of the evaluated pool (no corpus, index or server).
POOL_ENGINE_OPTIONS = ("parser", "ranker")


def add_engine_arguments(parser: argparse.ArgumentParser, *, only: Collection[str] | None = None,
                         data_format: bool = False) -> None:
    """Add the options that choose an engine (``ENGINE_OPTIONS``), ``--sessions`` and ``--engine``.

    ``only``: just those of them, by ``ENGINE_OPTIONS`` name (an evaluation over its own pool index takes
    ``POOL_ENGINE_OPTIONS``). ``data_format``: the command's own ``--format`` names its data file's format, so the
    corpus format is ``--corpus-format`` alone (elsewhere ``--format`` and ``--corpus-format`` are the same option).
    """
    options = _engine_options(data_format)
    unknown = set(only or ()) - set(options)
    if unknown:
        raise ValueError(f"no engine option {', '.join(sorted(unknown))}")
    group = parser.add_argument_group("engine")
    for name, (flags, settings) in options.items():
        if only is None or name in only:
            group.add_argument(*flags, **settings)


def _engine_options(data_format: bool) -> dict[str, tuple[tuple[str, ...], dict]]:
    """Return each engine option's flags and ``add_argument`` settings, by its ``ENGINE_OPTIONS`` name."""
    from dtdialog.setup.assembly import CORPUS_FORMATS

    corpus_format = ("--corpus-format",) if data_format else ("--format", "--corpus-format")
    return {
        "corpus": (("--corpus",), dict(type=Path, default=None,
                                       help=f"dialogue corpus to answer from (with {corpus_format[0]})")),
        "corpus_format": (corpus_format, dict(dest="corpus_format", choices=CORPUS_FORMATS, default=None,
                                              help="corpus format (default: builtin, the shipped car-repair corpus)")),
        "profile": (("--profile",), dict(type=Path, default=None, metavar="FILE",
                                         help="domain profile YAML whose wording the bot speaks (default: the one "
                                              "stored in the index)")),
        "index": (("--index",), dict(type=Path, default=None,
                                     help="SQLite index file; a missing one is an error unless --build or --corpus is "
                                          "given (default: the project's, else the built-in corpus's index in "
                                          "$DTDIALOG_HOME)")),
        "build": (("--build",), dict(action="store_true",
                                     help="build a missing --index from --corpus (default: the built-in corpus) first")),
        # no argparse choices: the spec refuses an unknown backend in its one-line error
        "backend": (("--backend",), dict(default="sqlite", help="index backend: sqlite (default) or elasticsearch")),
        "es_url": (("--es-url",), dict(default=None, help="Elasticsearch URL (default: $ELASTICSEARCH_URL); beside "
                                       "--engine, the saved server's URL with its user:password (a saved spec holds "
                                       "none)")),
        "parser": (("--parser",), dict(default=None, help="RST parser name (default: $DTDIALOG_PARSER or the parser "
                                       "the shipped ranker was trained with, rules)")),
        "ranker": (("--ranker",), dict(choices=("auto", "learned", "rules"), default=None,
                                       help="answer ranking: auto (default, or $DTDIALOG_RANKER) = the learned hybrid "
                                            "ranker when the [dense] extra is installed, else the rule scorer; "
                                            "learned; rules (the paper's)")),
        "no_dt": (("--no-dt",), dict(action="store_true",
                                     help="run the same engine without the discourse tree (the ablation): one flat "
                                          "query part, no agreement, no tree features in the ranker, no memory of "
                                          "what was tried")),
        "calibrator": (("--calibrator",), dict(type=Path, default=None, metavar="FILE",
                                               help="confidence calibrator fitted on your own dialogues (python -m "
                                                    "eval.calibrate --data FILE --format F writes one; default: the "
                                                    "project's, else the shipped one, fitted on car-repair pools)")),
        "sessions": (("--sessions",), dict(type=Path, default=None,
                                           help="session store file (default: $DTDIALOG_HOME/sessions.sqlite)")),
        "engine": (("--engine",), dict(type=Path, default=None, metavar="SPEC.json",
                                       help="run the engine a saved spec describes (dtdialog chat --save-engine); not "
                                            "with the options above that choose an engine")),
    }


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
            names = ", ".join("--" + n.replace("_", "-") for n in given)
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
                      config=config if config is not None else EngineConfig(), use_tree=not args.no_dt,
                      calibrator=args.calibrator or target.calibrator)


def _saved_server(spec, url: str, path: Path) -> str:
    """Return ``url``, the ``--es-url`` beside ``--engine``: it may add credentials, never name another server."""
    from index.es_url import same_server, without_credentials

    if spec.backend != "elasticsearch" or spec.index_url is None or not same_server(url, spec.index_url):
        saved = spec.index_url if spec.backend == "elasticsearch" else "a SQLite index"
        raise InputError(f"--es-url {without_credentials(url)} is not the server the spec {path} names ({saved}); "
                         "drop --es-url or edit the spec")
    return url
