"""The data options every evaluation that reads dialogues shares: ``--dataset NAME`` | ``--data FILE --format F``,
``--pool file|dataset|FILE`` and ``--data-dir``.

The pool is the candidate answers the dialogues are reconstructed from. ``dataset``: a known dataset's whole pool
(``--dataset irc``: the dev dialogues' answers plus every train answer); ``file``: only the evaluated dialogues' own
answers; a path: those answers plus every answer of that file (read with ``--format``, or the dataset's format).
The default is ``dataset`` for ``--dataset`` and ``file`` for ``--data``; each set's ``meta`` says which.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from eval.datasets import DATASETS, FILE_FORMATS, EvalSet, PoolAnswer, load_eval_set, load_file_set
from parsers.errors import InputError

POOL_KINDS = ("file", "dataset")


def add_data_arguments(parser: argparse.ArgumentParser, *, dataset_default: str = "mechanics",
                       dataset_help: str = "mechanics, twitter, irc, builtin, or all", dataset: bool = True,
                       pool: bool = True) -> None:
    """Declare ``--dataset``, ``--data``, ``--format``, ``--pool`` and ``--data-dir`` on ``parser``.

    ``dataset=False``: no ``--dataset`` (the command names its sets another way); ``pool=False``: no ``--pool`` (it
    builds no candidate pool from the dialogues it reads).
    """
    if dataset:
        parser.add_argument("--dataset", default=dataset_default, help=dataset_help)
    parser.add_argument("--data", type=Path, default=None,
                        help="a dialogue file of your own instead of --dataset (with --format)")
    # checked on loading, so a bad name is the evaluations' one-line error, not argparse's usage block
    parser.add_argument("--format", default=None, help=f"format of --data: {', '.join(FILE_FORMATS)}")
    if pool:
        parser.add_argument("--pool", default=None, metavar="file|dataset|FILE",
                            help="the candidate answers: file (the evaluated dialogues' own answers), dataset (a "
                                 "known dataset's whole pool) or FILE (the dialogues' answers plus FILE's); default "
                                 "dataset for a named set, file for --data")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="shared data directory (default $DTDIALOG_SHARED_DATA or ../shared/data)")


def load_data_file(args: argparse.Namespace) -> EvalSet:
    """Return the set of ``--data FILE`` with the pool ``--pool`` names, warning when a known dataset's is bigger."""
    eval_set = load_file_set(args.data, args.format)
    eval_set = replace(eval_set, meta={**eval_set.meta, "data": str(args.data)})
    kind = getattr(args, "pool", None) or "file"
    known = _dataset_of(eval_set, args)
    if kind == "dataset":
        if known is None:
            raise InputError(f"--pool dataset: {args.data} is not a file of a known dataset ({', '.join(DATASETS)}) "
                             "whose data is there; give --pool file or --pool FILE")
        return _with_pool(eval_set, eval_set.pool + known.pool, "dataset", known.name)
    if kind == "file":
        if known is not None and len(known.pool) > len(eval_set.pool):
            print(f"warning: the answer pool is the file's {len(eval_set.pool)} answers, not the {known.name} "
                  f"dataset's {len(known.pool)} (give --pool dataset for those)", file=sys.stderr)
        return _with_pool(eval_set, eval_set.pool, "file", str(args.data))
    return _with_file_pool(eval_set, Path(kind), args.format)


def dataset_names(text: str) -> list[str]:
    """Return the dataset names of a comma-separated ``--dataset`` value; ``all`` names every known dataset."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    return list(DATASETS) if "all" in names else list(dict.fromkeys(names))


def load_sets_option(args: argparse.Namespace, defaults: Sequence[str], *,
                     extra: dict[str, Callable[[Path], EvalSet]] | None = None) -> list[EvalSet]:
    """Return the sets a fitting command reads: the ``--data`` file, or the ``--sets`` (default ``defaults``), each
    with the pool ``--pool`` names and cut to ``--limit``. ``extra``: named sets beyond ``DATASETS`` (their loaders)."""
    from eval.datasets import default_data_dir

    check_data_arguments(args)
    if args.data is not None:
        if args.sets is not None:
            raise InputError("give --data FILE or --sets, not both")
        return [load_data_file(args).limited(args.limit)]
    loaders = {**DATASETS, **(extra or {})}
    names = [n.strip() for n in (args.sets or ",".join(defaults)).split(",") if n.strip()]
    unknown = [n for n in names if n not in loaders]
    if unknown or not names:
        raise InputError(f"unknown set(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(loaders)}")
    data_dir = Path(args.data_dir) if args.data_dir is not None else default_data_dir()
    return [with_pool(loaders[n](data_dir), n, args).limited(args.limit) for n in names]


def load_dataset(name: str, args: argparse.Namespace) -> EvalSet:
    """Return dataset ``name`` with the pool ``--pool`` names; raises ``DatasetUnavailable`` when it is absent."""
    return with_pool(load_eval_set(name, data_dir=args.data_dir), name, args)


def with_pool(eval_set: EvalSet, name: str, args: argparse.Namespace) -> EvalSet:
    """Return the named set ``eval_set`` (a dataset, or another set an evaluation loads by name) with the pool
    ``--pool`` names: its whole pool (``dataset``, the default), its dialogues' own answers, or those plus a file's."""
    eval_set = replace(eval_set, meta={**eval_set.meta, "data": name})
    kind = getattr(args, "pool", None) or "dataset"
    if kind == "dataset":
        return _with_pool(eval_set, eval_set.pool, "dataset", name)
    if kind == "file":
        own = {d.id for d in eval_set.dialogues}
        return _with_pool(eval_set, tuple(a for a in eval_set.pool if a.dialogue_id in own), "file", name)
    fmt = args.format or (name if name in FILE_FORMATS else None)
    return _with_file_pool(eval_set, Path(kind), fmt)


def check_data_arguments(args: argparse.Namespace) -> None:
    """Raise ``InputError`` for options that do not go together (``--format`` without ``--data`` or ``--pool``)."""
    pool = getattr(args, "pool", None)
    if args.format is not None and args.data is None and pool in (None, *POOL_KINDS):
        also = " (or --pool FILE)" if hasattr(args, "pool") else ""
        raise InputError(f"--format applies to --data FILE{also}; a named dataset knows its own format")


def _with_file_pool(eval_set: EvalSet, path: Path, fmt: str | None) -> EvalSet:
    if not path.is_file():
        raise InputError(f"--pool must be file, dataset or an answer file; {path} is none of them")
    extra = load_file_set(path, fmt).pool
    return _with_pool(eval_set, eval_set.pool + extra, "answer file", str(path))


def _with_pool(eval_set: EvalSet, answers: tuple[PoolAnswer, ...], kind: str, source: str) -> EvalSet:
    pool = tuple({a.id: a for a in answers}.values())
    return replace(eval_set, pool=pool, meta={**eval_set.meta, "pool": {"kind": kind, "source": source}})


def _dataset_of(eval_set: EvalSet, args: argparse.Namespace) -> EvalSet | None:
    """Return the known dataset ``--data`` is a file of (its dialogues are the dataset's), when its data is there."""
    if args.format not in DATASETS:
        return None
    try:
        known = load_eval_set(args.format, data_dir=args.data_dir)
    except InputError:
        return None
    ids = {a.dialogue_id for a in known.pool}
    return known if any(a.dialogue_id in ids for a in eval_set.pool) else None
