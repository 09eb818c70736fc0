"""What every corpus loader shares: file checks, line-numbered record reading, error policy, HTML to text.

A loader reads records one by one. A malformed record becomes a ``LoadIssue``
naming its file and line; the ``RecordErrors`` policy then either raises it as an
``InputError`` (``on_error="raise"``, the default) or logs it and keeps it in a
list the caller can read (``on_error="skip"``). Nothing is dropped silently.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from parsers.errors import ConfigError, InputError
from parsers.text_input import strip_html

logger = logging.getLogger("dtdialog.data")

ON_ERROR_CHOICES = ("raise", "skip")
#: Bytes sniffed for NUL characters before a file is treated as text.
_SNIFF_BYTES = 8192


@dataclass(frozen=True)
class LoadIssue:
    """One malformed record: where it is and what was wrong with it."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


class RecordErrors:
    """The error policy of one load: raise on the first malformed record, or log and collect them."""

    def __init__(self, *, on_error: str = "raise", issues: list[LoadIssue] | None = None) -> None:
        if on_error not in ON_ERROR_CHOICES:
            raise ConfigError(f"unknown on_error {on_error!r}; expected one of {', '.join(ON_ERROR_CHOICES)}")
        self.on_error = on_error
        self.issues: list[LoadIssue] = issues if issues is not None else []

    def report(self, path: Path | str, line: int, message: str) -> None:
        """Raise ``InputError`` for the record (policy ``raise``), or log it and keep it (policy ``skip``)."""
        issue = LoadIssue(path=str(path), line=line, message=message)
        if self.on_error == "raise":
            raise InputError(str(issue))
        logger.warning("skipped malformed record %s", issue)
        self.issues.append(issue)


def check_corpus_file(path: Path | str) -> Path:
    """Return ``path`` as a ``Path`` after checking it is an existing, non-empty, non-binary file.

    Raises ``InputError`` otherwise.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"corpus file not found: {p}")
    if p.is_dir():
        raise InputError(f"{p} is a directory; give a corpus file")
    if not p.is_file():  # reading a FIFO blocks until a writer comes (a hung build); a device never ends
        raise InputError(f"{p} is not a regular file (a pipe, socket or device); give a corpus file")
    try:
        with p.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{p}: cannot read ({exc.strerror})") from None
    if not head.strip():
        raise InputError(f"{p}: the corpus file is empty")
    if b"\x00" in head:
        raise InputError(f"{p}: looks like a binary file, not a text corpus")
    return p


def read_text(path: Path, *, legacy_encodings: bool = False) -> str:
    """Return the UTF-8 text of ``path`` (a BOM is dropped); raises ``InputError`` naming the bad line.

    With ``legacy_encodings`` a non-UTF-8 file is decoded as cp1252 or Mac Roman instead (whichever
    repairs more UTF-8 mojibake such as ``â€™``), as old spreadsheet exports often are.
    """
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if legacy_encodings:
            logger.warning("%s is not UTF-8; decoding it as a legacy 8-bit encoding", path)
            return decode_legacy(data)
        before = data[: exc.start]
        line = len(re.split(rb"\r\n|\r|\n", before))
        raise InputError(f"{path}:{line}: not UTF-8 text (byte {exc.start})") from None


def decode_legacy(data: bytes) -> str:
    """Return ``data`` decoded as cp1252 or Mac Roman, with UTF-8 mojibake runs (``Â\xa0``, ``â€™``) repaired."""
    best, best_repaired = "", -1
    for encoding in ("cp1252", "mac_roman"):
        text = data.decode(encoding, errors="replace")
        repaired = 0

        def fix(match: re.Match[str]) -> str:
            nonlocal repaired
            try:
                fixed = match.group(0).encode("cp1252").decode("utf-8")
            except UnicodeError:
                return match.group(0)
            repaired += 1
            return fixed

        text = re.sub(r"[^\x00-\x7f]+", fix, text)
        if repaired > best_repaired:
            best, best_repaired = text, repaired
    return best


#: what a record nested deeper than the JSON decoder can follow is reported as (no real dialogue nests like that)
NESTED_TOO_DEEP = "not valid JSON for a dialogue (nested too deeply)"


def iter_jsonl(path: Path, errors: RecordErrors) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for every non-blank line of a JSONL file.

    Lines that are not JSON objects are reported to ``errors``.
    """
    for lineno, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.report(path, lineno, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        except RecursionError:  # the decoder recurses per nesting level: '[[[[...' 100,000 deep
            errors.report(path, lineno, NESTED_TOO_DEEP)
            continue
        if not isinstance(record, dict):
            errors.report(path, lineno, f"expected a JSON object, got {type(record).__name__}")
            continue
        yield lineno, record


def iter_json_records(path: Path, errors: RecordErrors) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line number, object)`` for each element of a top-level JSON array, or each JSONL line.

    The line is where the element starts in the file, so reports point at it.
    A file that is neither a JSON array nor JSONL raises ``InputError``.
    """
    text = read_text(path)
    start = len(text) - len(text.lstrip())
    if not text[start:].startswith("["):
        yield from iter_jsonl(path, errors)
        return
    decoder = json.JSONDecoder()
    pos = start + 1
    while True:
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == "]":
            return
        line = text.count("\n", 0, pos) + 1
        try:
            element, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            # The array itself is broken: nothing after this point can be located reliably.
            raise InputError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
        except RecursionError:  # where this element ends is unknown too
            raise InputError(f"{path}:{line}: {NESTED_TOO_DEEP}") from None
        if isinstance(element, dict):
            yield line, element
        else:
            errors.report(path, line, f"expected a JSON object, got {type(element).__name__}")
        pos = _skip_space(text, pos)
        if pos < len(text) and text[pos] == ",":
            pos += 1
        elif pos < len(text) and text[pos] == "]":
            return
        else:
            raise InputError(f"{path}:{text.count(chr(10), 0, pos) + 1}: not valid JSON (expected ',' or ']')")


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def html_to_text(fragment: str) -> str:
    """Return the visible text of an HTML fragment: tags removed, entities decoded first, one line per block.

    ``parsers.text_input.strip_html`` does the work, so entity-encoded markup (``&lt;svg onload=...&gt;``)
    is removed like markup, never turned into it. A link keeps its target after its text
    (``inline_link_targets``): "Reset your password (https://...)", or an answer would point nowhere.
    """
    targets: list[str] = []
    text = normalize_space(strip_html(inline_link_targets(fragment, targets)))
    # the targets go in after the markup is gone: decoding them as HTML again would turn "&para=" into "¶="
    return _TARGET_MARK.sub(lambda m: targets[int(m.group(1))] if int(m.group(1)) < len(targets) else "", text)


_ANCHOR = re.compile(r"<a\b([^>]*)>(.*?)</a\s*>", re.IGNORECASE | re.DOTALL)
_HREF = re.compile(r"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))""", re.IGNORECASE)
#: Only targets a customer can follow from the answer text: a site-relative ``/privacy-policy`` names no site, and
#: ``javascript:`` or ``#anchor`` links do nothing outside the page they came from.
_FOLLOWABLE = re.compile(r"(?:https?://|mailto:)\S+$", re.IGNORECASE)


#: Where ``inline_link_targets`` put the n-th target (private-use characters: no answer text holds them).
_TARGET_MARK = re.compile("\ue000(\\d+)\ue001")


def inline_link_targets(fragment: str, targets: list[str]) -> str:
    """Return ``fragment`` (still HTML) with each ``<a href="URL">text</a>`` written ``text (MARK)``, where MARK
    stands for the URL appended to ``targets`` (``_TARGET_MARK``).

    Only absolute ``http(s)`` and ``mailto`` targets are kept (``_FOLLOWABLE``); a link whose text already shows
    its target is left as it is.
    """
    def inline(match: re.Match[str]) -> str:
        attributes, inner = match.group(1), match.group(2)
        href = _HREF.search(attributes)
        if href is None:
            return inner
        url = html.unescape(next(g for g in href.groups() if g is not None)).strip()
        if not _FOLLOWABLE.match(url):
            return inner
        shown = url[len("mailto:"):] if url.lower().startswith("mailto:") else url
        if shown.lower() in strip_html(inner).lower():
            return inner
        targets.append(shown)
        return f"{inner} (\ue000{len(targets) - 1}\ue001)"

    return _ANCHOR.sub(inline, fragment)


def normalize_space(text: str) -> str:
    """Return ``text`` with runs of spaces collapsed, lines trimmed and blank lines dropped."""
    lines = (re.sub(r"[ \t\u00a0\u200b]+", " ", line).strip() for line in re.split(r"\r\n|\r|\n", text))
    return "\n".join(line for line in lines if line)


def require_text(value: Any, field: str) -> str:
    """Return ``value`` as stripped text; raises ``ValueError`` naming ``field`` when it is missing or empty."""
    if value is None:
        raise ValueError(f"missing field {field!r}")
    if not isinstance(value, str):
        raise ValueError(f"field {field!r} is {type(value).__name__}, expected text")
    if not value.strip():
        raise ValueError(f"field {field!r} is empty")
    return value.strip()
