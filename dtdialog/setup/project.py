"""A team's dtdialog project: a folder with ``dtdialog.yaml`` (made by ``dtdialog init DIR``).

``dtdialog.yaml`` names the project's data file and its format, where its index goes, its conversation tests,
and holds the bot's profile (``dtdialog.setup.profile``) under ``profile:``; paths are relative to the folder::

    data: data/faq.csv
    format: csv
    index: .dtdialog/index.sqlite
    tests: tests/conversations.yaml
    calibrator: .dtdialog/calibrator.json   # optional: fitted on data/faq.csv (python -m eval.calibrate --data ...)
    profile:
      name: ...

Run inside the folder, ``dtdialog index build``, ``dtdialog chat`` and ``dtdialog serve`` use it when they are
given no corpus or index of their own (``find_project``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from dtdialog.setup.profile import PROJECT_KEYS, Profile, load_profile, read_yaml
from parsers.errors import ConfigError

PROJECT_FILE = "dtdialog.yaml"
#: The corpus formats a project's data may have (``dtdialog index build --format``, less the built-in corpus).
PROJECT_FORMATS = ("csv", "jsonl", "mechanics", "twitter", "irc")
DEFAULT_INDEX = ".dtdialog/index.sqlite"
DEFAULT_TESTS = "tests/conversations.yaml"
_KEYS = tuple(sorted(PROJECT_KEYS))


@dataclass(frozen=True)
class Project:
    """A loaded project: absolute ``root``, ``data``, ``index`` and ``tests`` paths, the data ``format``, the
    ``profile`` and ``config`` (the ``dtdialog.yaml`` it was read from, which also holds the profile), and the
    ``calibrator`` fitted on its data (None: the shipped one)."""

    root: Path
    data: Path
    format: str
    index: Path
    tests: Path
    profile: Profile
    config: Path
    calibrator: Path | None = None


def find_project(start: Path | None = None) -> Project | None:
    """Return the project whose ``dtdialog.yaml`` is in ``start`` (default: the working folder), or None."""
    folder = Path(start) if start is not None else Path.cwd()
    config = folder / PROJECT_FILE
    return load_project(config) if config.is_file() else None


def load_project(config: Path) -> Project:
    """Return the project ``config`` (a ``dtdialog.yaml``) describes; a bad file raises a one-line ``ConfigError``."""
    config = Path(config).resolve()
    data = read_yaml(config, "project file")
    where = f"project file {config}"
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping with keys {', '.join(_KEYS)}")
    unknown = sorted(set(map(str, data)) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_KEYS)}")
    root = config.parent

    def path(key: str, default: str | None) -> Path:
        value = data.get(key, default)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {key} must be a path relative to the project folder, got {value!r}")
        return (root / Path(value).expanduser()).resolve()

    fmt = data.get("format")
    if fmt not in PROJECT_FORMATS:
        raise ConfigError(f"{where}: format must be one of {', '.join(PROJECT_FORMATS)}, got {fmt!r}")
    data_path, index, tests = path("data", None), path("index", DEFAULT_INDEX), path("tests", DEFAULT_TESTS)
    calibrator = path("calibrator", None) if "calibrator" in data else None
    if calibrator is not None and not calibrator.is_file():
        raise ConfigError(f"{where}: calibrator {calibrator} not found; fit it with python -m eval.calibrate --data "
                          f"{data.get('data')} --format {fmt} --out DIR, or remove the key")
    return Project(root=root, data=data_path, format=fmt, index=index, tests=tests, profile=load_profile(config),
                   config=config, calibrator=calibrator)


@dataclass(frozen=True)
class EngineTarget:
    """What a command's engine runs on: the index file, the corpus to (re)build it from, the profile, the project's
    calibrator, and the project they came from (None when the options named them)."""

    index: Path | None
    corpus: Path | None
    corpus_format: str | None
    profile: Path | None
    project: Project | None = None
    calibrator: Path | None = None


def engine_target(*, index: Path | None, corpus: Path | None, corpus_format: str | None, profile: Path | None,
                  backend: str = "sqlite", build: bool = False) -> EngineTarget:
    """Return what ``chat``, ``serve`` and ``test`` run on, from their options.

    A missing ``index`` is refused unless ``build`` or a ``corpus`` says to make it: a mistyped path would otherwise
    get a fresh index of the built-in corpus, silently. Given no corpus or index at all, inside a project folder,
    the project's index (built from its data only when missing) and its profile.
    """
    from parsers.errors import InputError

    if index is not None and backend == "sqlite" and not build and corpus is None \
            and not Path(index).expanduser().exists():
        raise InputError(f"index {index} not found; check the path, or add --build to build it there "
                         "(from --corpus, default the built-in corpus)")
    if index is None and corpus is None and corpus_format is None and backend == "sqlite":
        project = find_project()
        if project is not None:
            missing = not project.index.exists()
            return EngineTarget(index=project.index, profile=profile or project.config,
                                corpus=project.data if missing else None,
                                corpus_format=project.format if missing else None, project=project,
                                calibrator=project.calibrator)
    return EngineTarget(index=index, corpus=corpus, corpus_format=corpus_format, profile=profile)
