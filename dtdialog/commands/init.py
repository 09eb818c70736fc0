"""``dtdialog init DIR``: create a working project for a support team (``dtdialog.setup.project``).

The project holds a profile in ``dtdialog.yaml``, a small sample of FAQ data in the ``csv`` format, conversation
tests that pass on that sample, and a README. Then, run inside DIR, ``dtdialog index build``, ``dtdialog chat``
and ``dtdialog test`` work with no further flags.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from parsers.errors import ConfigError
from parsers.files import atomic_write, check_replaceable

NAME = "init"
HELP = "create a project for your own support bot: profile, sample data, conversation tests, README"
TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "resources" / "project_template"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, metavar="DIR", help="the project folder (created; must be empty)")
    parser.add_argument("--force", action="store_true",
                        help="write into a folder that is not empty (the project's own files are replaced)")


def template_files() -> list[Path]:
    """Return the template's files, relative to ``TEMPLATE_DIR``."""
    return sorted(p.relative_to(TEMPLATE_DIR) for p in TEMPLATE_DIR.rglob("*") if p.is_file())


def run(args: argparse.Namespace) -> int:
    target: Path = args.directory.expanduser()
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} exists and is not a folder")
    if target.is_dir() and any(target.iterdir()) and not args.force:
        raise ConfigError(f"{target} is not empty; choose a new folder or add --force")
    files = template_files()
    for rel in files:  # before writing anything: never a half-made project
        if (target / rel).is_dir():
            raise ConfigError(f"{target / rel} is a folder; the project needs a file there")
        check_replaceable(target / rel)
    target.mkdir(parents=True, exist_ok=True)
    for rel in files:
        _copy_atomically(TEMPLATE_DIR / rel, target / rel)
    print(f"created a dtdialog project in {target}:")
    for rel in files:
        print(f"  {rel}")
    print(f"next: cd {target} && dtdialog index build && dtdialog chat")
    return 0


def _copy_atomically(source: Path, dest: Path) -> None:
    """Copy ``source`` to ``dest`` through ``parsers.files.atomic_write`` (no half-written file, nothing but a
    regular file replaced)."""
    with open(source, "rb") as src:
        atomic_write(dest, lambda out: shutil.copyfileobj(src, out))
