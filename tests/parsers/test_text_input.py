"""clean_text: decoding, HTML stripping, whitespace and the bad-input list."""

from __future__ import annotations

import pytest

from parsers.errors import InputError
from parsers.text_input import MAX_CHARS, clean_text, strip_html


@pytest.mark.parametrize("text", ["", "   ", "\n\t  \r\n", b"", "<p>  </p>", "&nbsp;", "\x00\x01"])
def test_empty_or_blank_is_refused(text):
    with pytest.raises(InputError, match="empty"):
        clean_text(text)


def test_single_word_survives():
    assert clean_text("Hello") == "Hello"


def test_emoji_and_non_bmp_are_kept():
    text = "My car 🚗 won't start 😤 𝔸𝔹ℂ and 👨‍🔧 helped."
    assert clean_text(text) == text
    assert clean_text(text.encode("utf-8")) == text


def test_invalid_utf8_bytes_are_refused_with_clear_message():
    with pytest.raises(InputError, match="not valid UTF-8"):
        clean_text(b"my car \xff\xfe won't start")


def test_utf8_bom_dropped():
    assert clean_text("\ufeffhello".encode()) == "hello"


def test_too_long_is_refused_with_limit_stated():
    with pytest.raises(InputError, match="100,000"):
        clean_text("a" * (MAX_CHARS + 1))
    assert len(clean_text("a " * 40_000)) < MAX_CHARS


def test_custom_limit():
    with pytest.raises(InputError, match="limit is 10"):
        clean_text("x" * 11, max_chars=10)


def test_html_fragment_is_stripped():
    html = "<div><p>My car <b>won't</b> start.</p><script>alert(1)</script><p>Battery &amp; plugs are new.</p></div>"
    out = clean_text(html)
    assert "<" not in out and "alert" not in out
    assert "My car won't start." in out and "Battery & plugs are new." in out
    # Paragraphs stay apart rather than running together.
    assert "start.\n\nBattery" in out


def test_plain_text_with_angle_brackets_is_not_mangled():
    assert strip_html("if a < b and c > d") == "if a < b and c > d"
    assert strip_html("I paid &lt;5 dollars") == "I paid <5 dollars"


@pytest.mark.parametrize(("text", "expected"), [
    ("&lt;svg onload=alert(1)&gt;Hello", "Hello"),                       # decoded first, then removed as markup
    ("&amp;lt;img src=x onerror=alert(1)&amp;gt;ok", "ok"),              # double-encoded: one more round
    ("<<script>x</script>img src=x onerror=alert(1)>z", "z"),            # a tag that appears once another is gone
    ("hello &lt;svg onload=alert(1)", "hello < svg onload=alert(1)"),    # unterminated: the opener is defused
    ("x<y", "x< y"),
])
def test_entity_encoded_markup_never_comes_out_live(text, expected):
    assert strip_html(text) == expected


def test_whitespace_and_control_chars_normalised():
    assert clean_text("  my\tcar \x07 stalls\r\n\r\n\r\n\r\nagain  ") == "my car stalls\n\nagain"


def test_wrong_type_is_input_error():
    with pytest.raises(InputError):
        clean_text(123)  # type: ignore[arg-type]


def test_the_schema_pattern_of_visible_text_is_what_cleaning_keeps():
    # the API's schema states with this pattern which texts are not empty after cleaning (issue 31, ST202)
    import re

    from parsers.text_input import VISIBLE_TEXT_PATTERN, normalize_whitespace

    visible = re.compile(VISIBLE_TEXT_PATTERN)
    disagree = [hex(cp) for cp in range(0x10000) if not 0xD800 <= cp <= 0xDFFF
                and bool(visible.search(chr(cp))) != bool(normalize_whitespace(chr(cp)))]
    assert disagree == []
