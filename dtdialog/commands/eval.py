"""``dtdialog eval``: batch dialogue-reconstruction evaluation, delegated to ``python -m eval.reconstruct``.

The evaluation sits above the product and owns its options; this command passes every argument after
``eval`` through to ``eval.reconstruct.main``, the single link from ``dtdialog`` to ``eval``
(``dtdialog eval --help`` prints the evaluation's own options).
"""

from __future__ import annotations

import argparse

NAME = "eval"
HELP = ("reconstruct real dialogues with the paper's baselines, DT-Q and dense retrieval; write Table 1 "
        "(--data FILE --format F: your own dialogues, also scored for selective answering)")
#: ``dtdialog.cli`` hands this command the unparsed arguments (``args.argv``) instead of declaring options.
PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare nothing: the evaluation parses its own options."""


def run(args: argparse.Namespace) -> int:
    import shlex

    from eval.reconstruct import main

    argv = list(args.argv)
    return main(argv, prog="dtdialog eval", command="dtdialog eval " + " ".join(shlex.quote(a) for a in argv))
