"""The picture of matched relation chains: question relation boxes on the left, arrows to answer relation boxes."""

from __future__ import annotations

import re
from html import escape

_LABEL = re.compile(r"^\s*([A-Za-z_\-]+)\s*\[(.*)\]\s*$")
_MAX_CHARS = 44
_CHAR_W = 7.2  # average glyph width of 12px sans-serif, good enough to size boxes
_BOX_H = 40
_ROW_GAP = 14
_ARROW_W = 70
_PAD = 12


def split_chain(chain: str) -> tuple[str, str]:
    """Return the (question part, answer part) of ``"Q-rel[words] -> A-rel[words]"``; the answer part is '' when absent."""
    if "->" in chain:
        left, right = chain.split("->", 1)
        return left.strip(), right.strip()
    return chain.strip(), ""


def _label_lines(label: str) -> tuple[str, str]:
    # "Contrast[replaced battery]" -> ("Contrast", "replaced battery"): relation in bold, words below.
    m = _LABEL.match(label)
    relation, words = (m.group(1), m.group(2)) if m else (label, "")
    if len(words) > _MAX_CHARS:
        words = words[: _MAX_CHARS - 1] + "…"
    return relation[:_MAX_CHARS], words


def _box(x: float, y: float, w: float, label: str, css: str) -> str:
    relation, words = _label_lines(label)
    return (
        f'<g class="{css}"><rect x="{x:.0f}" y="{y:.0f}" width="{w:.0f}" height="{_BOX_H}" rx="6" ry="6"/>'
        f'<text x="{x + 8:.0f}" y="{y + 16:.0f}" class="rel">{escape(relation)}</text>'
        f'<text x="{x + 8:.0f}" y="{y + 32:.0f}" class="words">{escape(words)}</text></g>'
    )


def chains_to_svg(chains: list[str], *, missing: list[str] | None = None, title: str = "Matched relation chains") -> str:
    """Return an SVG drawing each chain as a question box -> answer box, and each ``missing`` question relation
    as a red box with no arrow; a one-line note when there is nothing to draw."""
    pairs = [split_chain(c) for c in chains if c and c.strip()]
    pairs += [(m.strip(), "") for m in (missing or []) if m and m.strip()]
    n_matched = len([c for c in chains if c and c.strip()])
    if not pairs:
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="320" height="40" role="img" aria-label="{escape(title)}: none">'
                '<text x="8" y="24" font-family="sans-serif" font-size="13">No relation chain matched.</text></svg>')
    longest = max(max(len(_label_lines(q)[1]), len(_label_lines(q)[0]), len(_label_lines(a)[1]), len(_label_lines(a)[0]))
                  for q, a in pairs)
    box_w = max(120.0, longest * _CHAR_W + 16)
    width = _PAD * 2 + box_w * 2 + _ARROW_W
    header = 24
    height = _PAD + header + len(pairs) * (_BOX_H + _ROW_GAP)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        "<style>text{font-family:sans-serif;font-size:12px;fill:#1b1b1b}.rel{font-weight:bold}"
        ".q rect{fill:#e8f0fe;stroke:#1a56c4}.a rect{fill:#e7f6ea;stroke:#1f7a35}.none rect{fill:#fbeaea;stroke:#a33}"
        ".head{font-size:13px;font-weight:bold}line{stroke:#444;stroke-width:1.6}</style>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>',
        f'<text x="{_PAD}" y="{_PAD + 12}" class="head">Question DT</text>',
        f'<text x="{_PAD + box_w + _ARROW_W:.0f}" y="{_PAD + 12}" class="head">Answer DT</text>',
    ]
    for i, (q, a) in enumerate(pairs):
        y = _PAD + header + i * (_BOX_H + _ROW_GAP)
        x_a = _PAD + box_w + _ARROW_W
        if i >= n_matched:
            parts.append(_box(_PAD, y, box_w, q, "none"))
            parts.append(f'<text x="{_PAD + box_w + 10:.0f}" y="{y + 24:.0f}">not addressed</text>')
            continue
        parts.append(_box(_PAD, y, box_w, q, "q"))
        if a:
            parts.append(f'<line x1="{_PAD + box_w + 4:.0f}" y1="{y + _BOX_H / 2:.0f}" x2="{x_a - 4:.0f}" '
                         f'y2="{y + _BOX_H / 2:.0f}" marker-end="url(#arrow)"/>')
            parts.append(_box(x_a, y, box_w, a, "a"))
    parts.append("</svg>")
    return "".join(parts)
