"""Reading a JSON-lines file of objects, with the one-line error every evaluation gives for a bad line."""

from __future__ import annotations

import json
from pathlib import Path

from parsers.errors import InputError


def read_objects(path: Path) -> list[tuple[int, dict]]:
    """Return ``(line number, object)`` for each non-blank line; ``InputError`` naming the line when one is bad."""
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise InputError(f"{path}:{n}: each line must be a JSON object")
        rows.append((n, row))
    return rows
