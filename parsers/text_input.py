"""Clean user text before parsing: decode, strip HTML, normalise whitespace, enforce limits.

Invalid UTF-8 is refused (``InputError``) rather than replaced: silently turning
bytes into U+FFFD would index and answer garbage. Emoji and other non-BMP
characters are kept as they are.
"""

from __future__ import annotations

import html
import re
import unicodedata
from html.parser import HTMLParser

from parsers.errors import InputError
from parsers.parse_cost import bound_parse_cost

#: Texts longer than this (after cleaning) are refused.
MAX_CHARS = 100_000

# Tags whose content is never prose.
_SKIP_CONTENT = frozenset({"script", "style", "head", "title", "noscript", "template"})
# Tags that end a visual line/paragraph: keep a break so sentences do not run together.
_BLOCK = frozenset({
    "p", "div", "br", "li", "ul", "ol", "tr", "td", "th", "table", "h1", "h2", "h3", "h4", "h5", "h6",
    "blockquote", "pre", "section", "article", "header", "footer", "hr", "dd", "dt",
})
# an entity needs no ``;`` to decode (``html.unescape("&ltimg")`` is ``<img``), so none is needed to hint markup
_TAG_HINT = re.compile(r"<\s*/?\s*[a-zA-Z][^<>]*>|&(#\d+|#x[0-9a-fA-F]+|[a-zA-Z]+);?")
#: A ``<`` that an HTML parser could read as the start of a tag, comment or declaration.
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!?])")
#: Decode-and-strip rounds: each peels one level of entity encoding (``&amp;lt;`` takes two).
_MAX_PASSES = 6
_SPACES = re.compile(r"[^\S\n]+")
#: A JSON-schema ``pattern`` a text matches when it holds a character ``normalize_whitespace`` keeps: one that is not
#: whitespace, a control or a format character (the joiners of emoji are kept). Basic Multilingual Plane only, and no
#: surrogate range: in a validator that reads UTF-16 code units, an emoji must still count as a visible character.
VISIBLE_TEXT_PATTERN = (
    r"[^\u0000-\u0020\u007f-\u00a0\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u1680\u180e"
    r"\u2000-\u200c\u200e\u200f\u2028-\u202f\u205f-\u2064\u2066-\u206f\u3000\ufeff\ufff9-\ufffb]"
)
_BLANK_LINES = re.compile(r"\n\s*\n+")


class _TextExtractor(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _SKIP_CONTENT:
            self._skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs) -> None:
        if tag in _BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP_CONTENT:
            self._skip = max(0, self._skip - 1)
        elif tag in _BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def strip_html(text: str) -> str:
    """Return ``text`` without HTML tags, comments and scripts, entities decoded, and no live markup left.

    Entities are decoded *before* markup is removed, and both repeat until nothing changes, so
    ``&lt;svg onload=...&gt;`` (even double-encoded) is removed as markup rather than coming out as a live
    ``<svg onload=...>``. A ``<`` that could still open a tag (followed by a letter, ``/``, ``!`` or ``?``: an
    unterminated tag, or text such as ``x<y``) gets a space after it, which no HTML parser reads as markup.
    Plain text is otherwise returned unchanged, so a literal ``a < b`` survives.
    """
    for _ in range(_MAX_PASSES):
        if not _TAG_HINT.search(text):
            break
        parser = _TextExtractor()
        parser.feed(html.unescape(text))
        parser.close()
        stripped = "".join(parser.parts)
        if stripped == text:
            break
        text = stripped
    return _TAG_OPEN.sub("< ", text)


def decode(data: str | bytes) -> str:
    """Return ``data`` as text; bytes must be UTF-8 (a BOM is dropped), else ``InputError``."""
    if isinstance(data, str):
        return data
    if not isinstance(data, (bytes, bytearray)):
        raise InputError(f"expected text, got {type(data).__name__}")
    try:
        return bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"input is not valid UTF-8 text (bad byte at offset {exc.start})") from None


def normalize_whitespace(text: str) -> str:
    """Return ``text`` NFC-normalised, control characters dropped, spaces collapsed, paragraphs kept."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n"))
    # Keep newlines and tabs (as spaces); drop other control/format chars except joiners used by emoji.
    kept = []
    for ch in text:
        if ch in "\n\t":
            kept.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cs") or (unicodedata.category(ch) == "Cf" and ch not in "\u200d\ufe0f"):
            kept.append(" " if unicodedata.category(ch) == "Cc" else "")
        else:
            kept.append(ch)
    text = _SPACES.sub(" ", "".join(kept))
    text = "\n".join(line.strip() for line in text.split("\n"))
    return _BLANK_LINES.sub("\n\n", text).strip()


def plain_text(text: str) -> str:
    """Return ``text`` with markup removed (``strip_html``) and whitespace normalised; "" when nothing is left.

    For text that is stored and shown but not parsed (e.g. the question kept beside an answer).
    """
    return normalize_whitespace(strip_html(text))


def clean_text(text: str | bytes, *, max_chars: int = MAX_CHARS) -> str:
    """Return cleaned text ready for parsing.

    Decodes bytes as UTF-8 (invalid UTF-8 raises ``InputError``), strips HTML tags
    and entities, drops control characters and normalises whitespace. Raises
    ``InputError`` for empty/whitespace-only text and for text longer than
    ``max_chars`` characters (the message states the limit). Text no one writes to be read is shaped so that
    its parse stays cheap (``parsers.parse_cost``).
    """
    if max_chars <= 0:
        raise InputError(f"max_chars must be positive, got {max_chars}")
    raw = decode(text)
    # Refuse absurd inputs before the (linear but not free) HTML pass.
    if len(raw) > 4 * max_chars:
        raise InputError(f"text is too long: {len(raw):,} characters; the limit is {max_chars:,}")
    cleaned = normalize_whitespace(strip_html(raw))
    if not cleaned:
        raise InputError("text is empty (nothing left after removing whitespace and markup)")
    if len(cleaned) > max_chars:
        raise InputError(f"text is too long: {len(cleaned):,} characters; the limit is {max_chars:,}")
    return bound_parse_cost(cleaned)
