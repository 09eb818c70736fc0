"""Every relative link in README.md and docs/ points at a file that exists, and at a heading that exists.

Anchors are checked with GitHub's rule (lower case, punctuation dropped, spaces to hyphens, a repeated heading
gets ``-1``, ``-2``): a renamed heading breaks its links as surely as a moved file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
CODE_SPAN = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def prose(text: str) -> str:
    """Return ``text`` without fenced code blocks and code spans, where brackets are not links."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def anchors(page: Path) -> set[str]:
    """Return the anchors GitHub makes for the headings of ``page``."""
    seen: dict[str, int] = {}
    out = set()
    for title in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # a link in a heading keeps its text
        slug = re.sub(r"[^\w\- ]", "", text.lower().replace("`", "")).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    """Return the link targets of ``page`` that point inside the repository."""
    targets = LINK.findall(prose(page.read_text(encoding="utf-8")))
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t, re.I)]


def broken(page: Path, target: str) -> str | None:
    """Return why ``target`` (as written in ``page``) does not resolve, or None."""
    path, _, fragment = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    if not dest.exists():
        return f"{target}: no such file"
    if fragment and dest.suffix == ".md" and fragment.lower() not in anchors(dest):
        return f"{target}: no heading with anchor #{fragment}"
    return None


def test_the_pages_are_found():
    assert ROOT / "README.md" in PAGES and ROOT / "docs" / "benchmarks.md" in PAGES


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page):
    problems = [why for t in relative_links(page) if (why := broken(page, t))]
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)


def test_the_checker_catches_a_missing_file_and_a_missing_heading(tmp_path):
    (tmp_path / "a.md").write_text("# Many workers (issue 16)\n\n[ok](a.md#many-workers-issue-16) "
                                   "[gone](b.md) [bad](a.md#few-workers) `[code](c.md)` [web](https://x.org)\n")
    page = tmp_path / "a.md"
    assert [broken(page, t) for t in relative_links(page)] == [
        None, "b.md: no such file", "a.md#few-workers: no heading with anchor #few-workers"]
