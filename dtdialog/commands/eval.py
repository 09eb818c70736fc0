"""``dtdialog eval``: batch dialogue-reconstruction evaluation (forwards to ``python -m eval.reconstruct``).

The eval layer sits above dtdialog, so it is imported only inside ``run``; the options are declared
here, once, and ``eval.reconstruct`` (the higher layer) imports them for ``python -m eval.reconstruct``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

NAME = "eval"
HELP = "reconstruct real dialogues with the paper's baselines, DT-Q and dense retrieval; write Table 1"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dataset", default="mechanics", help="mechanics, twitter, irc, builtin, or all")
    parser.add_argument("--methods", default="keyword,syntactic,dtq,dense",
                        help="comma-separated: keyword, syntactic, dtq, dtq-rules, dtq-nocontext, dense, hybrid, hybrid+dt")
    parser.add_argument("--limit", type=int, default=None, help="evaluate only the first N test dialogues")
    parser.add_argument("--out", type=Path, default=None, help="output directory (default runs/eval/<dataset>/)")
    parser.add_argument("--seed", type=int, default=13, help="bootstrap seed")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the 95%% CIs")
    parser.add_argument("--k", type=int, default=100, help="ranking depth per step (R@5 and MRR@k use it)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="shared data directory (default $DTDIALOG_SHARED_DATA or ../shared/data)")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def run(args: argparse.Namespace) -> int:
    import shlex
    import sys

    from eval.reconstruct import run as run_reconstruct

    command = "dtdialog eval " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    return run_reconstruct(args, command=command)
