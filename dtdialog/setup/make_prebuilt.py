"""Pack the built-in corpus's index into the bundles shipped in ``dtdialog/resources/prebuilt/``.

    python -m dtdialog.setup.make_prebuilt [--parser NAME ...] [--out DIR]

It runs the first ``dtdialog chat``'s start-up path once (``build_engine`` over a temporary index file) and packs
what that wrote with ``dtdialog.setup.prebuilt.write_bundle``. Apart from ``dtdialog.setup.prebuilt`` because making a bundle
needs the whole engine, while the engine's start-up installs bundles through ``dtdialog.setup.prebuilt``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from dtdialog.setup.prebuilt import PREBUILT_DIR, builtin_stamp, bundle_dir, write_bundle


def _checkpoint(index_path: Path) -> None:
    """Fold the index's write-ahead log into the file itself, so the file alone is the whole index."""
    import sqlite3

    conn = sqlite3.connect(index_path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


#: Who encodes the shipped answer vectors: the portable reference runtime, which every CPU runs, so a first chat
#: uses them as shipped; a CPU with bfloat16 units queries through OpenVINO and re-encodes them once, in about a second.
SHIPPED_RUNTIME = "onnxruntime"


def prebuild(parser_name: str, *, root: Path | None = None, progress: bool = True) -> Path:
    """Build the built-in corpus's index exactly as a first ``dtdialog chat`` does and pack it as the bundle
    for ``parser_name`` under ``root`` (default: the shipped folder); return the bundle folder."""
    from dtdialog.setup.assembly import EngineSpec, build_engine
    from dtdialog.setup.index_location import load_dialogues
    from index.dense import INSTALL_HINT, dense_available
    from parsers.base import get_parser
    from parsers.errors import ModelNotAvailableError

    if not dense_available():
        raise ModelNotAvailableError(f"prebuilding needs the [dense] extra ({INSTALL_HINT})")
    from parsers.files import check_out_dir

    parser = get_parser(parser_name)
    folder = check_out_dir(bundle_dir(parser.name, root))
    with tempfile.TemporaryDirectory(prefix="dtdialog-prebuild-") as tmp:
        index_path = Path(tmp) / "builtin.sqlite"
        # the start-up path itself: the index, then the learned ranker's dense vectors and SG phrases beside it
        build_engine(EngineSpec(parser=parser_name, index_path=str(index_path), ranker="learned",
                                encoder_runtime=SHIPPED_RUNTIME), parser=parser, progress=progress).close()
        _checkpoint(index_path)
        staged = Path(tmp) / folder.name
        write_bundle(index_path, staged, builtin_stamp(parser, load_dialogues(None, "builtin")))
        if folder.exists():
            shutil.rmtree(folder)
        folder.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(staged, folder)
    return folder


def main(argv: list[str] | None = None) -> int:
    """``python -m dtdialog.setup.make_prebuilt [--parser NAME ...] [--out DIR]``: (re)make the shipped bundles."""
    from dtdialog.setup.assembly import engine_parser_name
    from parsers.errors import one_line_errors

    ap = argparse.ArgumentParser(prog="python -m dtdialog.setup.make_prebuilt", description=__doc__.splitlines()[0])
    ap.add_argument("--parser", action="append", default=None,
                    help="parser to prebuild for (repeatable; default: the engine's parser)")
    ap.add_argument("--out", type=Path, default=None, help=f"bundle root (default: {PREBUILT_DIR})")
    ap.add_argument("--quiet", action="store_true", help="no progress bars")
    args = ap.parse_args(argv)

    def run() -> int:
        for name in args.parser or [engine_parser_name()]:
            folder = prebuild(name, root=args.out, progress=not args.quiet)
            size = sum(p.stat().st_size for p in folder.iterdir())
            print(f"{folder}: {size / 1e6:.2f} MB")
        return 0

    return one_line_errors(run)


if __name__ == "__main__":
    sys.exit(main())
