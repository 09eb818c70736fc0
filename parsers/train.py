"""Train the neural discourse parser on the permissively licensed GUM genres.

    python -m parsers.train --gum ../shared/data/gum_rst --out parsers/models/gum-neural-v2 [--resume]
    python -m parsers.train --gum ../shared/data/gum_rst --out /tmp/gum-neural-v3 --cue-heads label --tree-dropout 0.4
    python -m parsers.train --gum ../shared/data/gum_rst --out /tmp/logo-news --hold-out-genre news

Trains on ``train``, picks settings on ``dev`` and reports RST-Parseval scores on ``test`` (written into the
manifest and the model card; ``parsers.neural.training``). The BY-NC-SA genres and reddit
(``parsers.gum.NON_COMMERCIAL_GENRES``) are never read.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from parsers.errors import ConfigError, DTDialogError, ModelNotAvailableError


def _train_neural(args: argparse.Namespace) -> dict[str, Any]:
    import importlib.util

    from parsers.gum import NON_COMMERCIAL_GENRES, genre_of, read_splits
    from parsers.neural.training import DEFAULT_CACHE, NeuralSettings, train_neural

    names = read_splits(args.gum)  # a wrong --gum is the likelier mistake: say so before anything else
    genres = sorted({genre_of(n) for n in names} - NON_COMMERCIAL_GENRES)
    if args.hold_out_genre is not None and args.hold_out_genre not in genres:
        raise ConfigError(f"unknown GUM genre {args.hold_out_genre!r} to hold out; known: {', '.join(genres)}")
    if importlib.util.find_spec("torch") is None:
        raise ModelNotAvailableError("training the neural parser needs torch: pip install 'dtdialog[train]'")

    epochs = {"seg_epochs": 1, "tree_epochs": 1} if args.quick else {}
    heads = tuple(h for h in args.cue_heads.split(",") if h and h != "none")
    settings = NeuralSettings(seed=args.seed, threads=args.threads, cue_heads=heads, tree_dropout=args.tree_dropout,
                              **epochs)
    return train_neural(args.gum, args.out, settings=settings, limit=args.limit,
                        cache_dir=args.cache or DEFAULT_CACHE, resume=args.resume, report_test=not args.no_test,
                        hold_out=args.hold_out_genre)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m parsers.train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--parser", choices=("neural",), default="neural", help="the parser to train (only neural)")
    ap.add_argument("--gum", type=Path, default=Path("../shared/data/gum_rst"), help="GUM RST folder (splits.tsv, lisp_binary/)")
    ap.add_argument("--out", type=Path, required=True, help="model directory to write (model files, manifest.json)")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--limit", type=int, default=None, help="use only the first N documents of each split (quick runs)")
    ap.add_argument("--cache", type=Path, default=None, help="directory to cache spaCy analyses and MiniLM word "
                    "vectors between runs (default $DTDIALOG_HOME/neural-parser)")
    ap.add_argument("--no-test", action="store_true", help="skip the test-set report")
    ap.add_argument("--quick", action="store_true", help="one epoch per head (fast smoke runs)")
    ap.add_argument("--resume", action="store_true", help="continue from the checkpoints in OUT/checkpoints")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads for training")
    ap.add_argument("--cue-heads", default="none", help="tree heads that read explicit-connective inputs: "
                    "none (default, the shipped gum-neural-v2), label (the cue-aware gum-neural-v3), split,label or split")
    ap.add_argument("--tree-dropout", type=float, default=0.2, help="dropout of the tree heads (gum-neural-v3: 0.4)")
    ap.add_argument("--hold-out-genre", default=None, metavar="GENRE", help="leave one GUM genre out of train and "
                    "dev and score its documents of every split instead of test (leave-one-genre-out)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr)
    if args.limit is not None and args.limit <= 0:
        print("error: --limit must be positive", file=sys.stderr)
        return 2
    try:
        manifest = _train_neural(args)
    except DTDialogError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: manifest["scores"][k] for k in manifest["scores"]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
