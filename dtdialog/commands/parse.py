"""``dtdialog parse "TEXT"``: print the discourse tree of a text (``-`` reads stdin)."""

from __future__ import annotations

import argparse
import sys

from parsers.errors import InputError

NAME = "parse"
HELP = "Parse a text into an RST discourse tree and print it (pretty + compact, or JSON)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", help='the text to parse, or "-" to read it from stdin (UTF-8)')
    parser.add_argument("--json", action="store_true", help="print the tree as JSON instead")
    parser.add_argument("--image", metavar="OUT", default=None, help="also draw the tree into OUT (.svg or .png)")
    parser.add_argument("--parser", default=None, help="RST parser name (default: $DTDIALOG_PARSER, else "
                        "the engine's parser, 'rules')")


def read_input(text: str) -> str | bytes:
    """Return the command-line text, or stdin's raw bytes for ``-`` (decoded later, so bad UTF-8 is reported)."""
    if text != "-":
        return text
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
    if not data:
        raise InputError("no text on stdin")
    return data


def run(args: argparse.Namespace) -> int:
    """Parse and print; return 0."""
    from parsers.base import get_parser
    from parsers.render import check_image_path, save_image
    from parsers.text_input import clean_text

    if args.image:
        check_image_path(args.image)  # fail before the slow part, and before printing anything
    text = clean_text(read_input(args.text))
    tree = get_parser(args.parser).parse(text)
    if args.json:
        print(tree.to_json(indent=2))
    else:
        print(tree.pretty())
        print()
        print(tree.to_compact())
    if args.image:
        path = save_image(tree, args.image)
        print(f"wrote {path}", file=sys.stderr)
    return 0
