"""``python -m dtdialog.api.export_openapi docs/openapi.json``: write the app's OpenAPI schema (stable JSON)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from dtdialog.api.app import create_app
from dtdialog.api.settings import ApiSettings
from parsers.files import atomic_write_text


def openapi_schema() -> dict[str, Any]:
    """Return the OpenAPI schema of an app with default settings (nothing is loaded or written)."""
    return create_app(ApiSettings(api_key=None)).openapi()


def schema_text() -> str:
    """Return the schema as the exact text checked into ``docs/openapi.json``."""
    return json.dumps(openapi_schema(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the schema to the given path (or stdout with ``-``); return the exit code."""
    parser = argparse.ArgumentParser(prog="python -m dtdialog.api.export_openapi", description=__doc__)
    parser.add_argument("out", nargs="?", default="docs/openapi.json", help="output file, or - for stdout")
    args = parser.parse_args(argv)
    text = schema_text()
    if args.out == "-":
        sys.stdout.write(text)
        return 0
    out = atomic_write_text(args.out, text)
    print(f"wrote {out} ({len(text)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
