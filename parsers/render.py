"""Pictures of discourse trees: a self-contained SVG (no dependencies) and a PNG via matplotlib (``[plots]`` extra).

Leaves (EDUs) sit on the bottom row as boxes with their wrapped text; each
relation node sits above the middle of its children at a height given by its
depth from the leaves. Edges to nuclei are solid and marked ``N``; edges to
satellites are dashed and marked ``S``. Non-default relations are drawn in a
warm colour so the issues of a text stand out.
"""

from __future__ import annotations

import importlib.util
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

from parsers.errors import ConfigError, InputError, ModelNotAvailableError
from parsers.files import atomic_write, atomic_write_text, check_replaceable
from parsers.relations import is_default
from parsers.tree import NUCLEUS, DiscourseTree, Node

LEAF_W = 170
LEAF_GAP = 16
LINE_H = 14
WRAP = 24
MAX_LINES = 7
LEVEL_H = 62
MARGIN = 16
MAX_PNG_EDUS = 150  # wider figures exceed matplotlib's pixel limits
NON_DEFAULT_COLOUR = "#d9480f"
PNG_INSTALL_HINT = "a .png picture needs matplotlib: pip install 'dtdialog[plots]' (or write .svg, which needs nothing)"
DEFAULT_COLOUR = "#495057"


@dataclass(frozen=True)
class _Placed:
    node: Node
    x: float
    y: float


def _wrap(text: str) -> list[str]:
    lines = textwrap.wrap(text, WRAP, break_long_words=True) or [""]
    if len(lines) > MAX_LINES:
        lines = lines[:MAX_LINES]
        lines[-1] = lines[-1][: WRAP - 1] + "…"
    return lines


def _layout(tree: DiscourseTree) -> tuple[dict[int, _Placed], float, float, float]:
    """Return placed nodes keyed by id(node), the picture width/height and the leaf row's y."""
    heights: dict[int, int] = {}
    # Post-order without recursion: long texts make deep trees.
    post = list(tree.root.walk())[::-1]
    for node in post:
        heights[id(node)] = 0 if node.is_leaf else 1 + max(heights[id(c)] for c in node.children)
    top = heights[id(tree.root)]
    leaf_y = MARGIN + top * LEVEL_H + 10
    placed: dict[int, _Placed] = {}
    for node in post:
        if node.is_leaf:
            x = MARGIN + node.edu * (LEAF_W + LEAF_GAP) + LEAF_W / 2  # type: ignore[operator]
            y = leaf_y
        else:
            x = (placed[id(node.children[0])].x + placed[id(node.children[-1])].x) / 2
            y = MARGIN + 12 + (top - heights[id(node)]) * LEVEL_H
        placed[id(node)] = _Placed(node, x, y)
    n = len(tree.edus)
    max_lines = max(len(_wrap(e.text)) for e in tree.edus)
    width = 2 * MARGIN + n * LEAF_W + (n - 1) * LEAF_GAP
    height_px = leaf_y + (max_lines + 2) * LINE_H + MARGIN
    return placed, width, height_px, leaf_y


def _node_edges(p: _Placed, placed: dict[int, _Placed]) -> tuple[str, list[tuple[_Placed, str, float]]]:
    """Return a relation node's colour and its edges: (child placement, N/S mark, y where the edge meets the child).

    Both the SVG and the PNG renderer draw from this, so the two pictures share one geometry.
    """
    node = p.node
    colour = DEFAULT_COLOUR if is_default(node.relation or "") else NON_DEFAULT_COLOUR
    edges = []
    for child, mark in zip(node.children, node.nuclearity):
        c = placed[id(child)]
        edges.append((c, mark, c.y if child.is_leaf else c.y - 12))
    return colour, edges


def tree_to_svg(tree: DiscourseTree, *, title: str = "") -> str:
    """Return a standalone SVG document drawing ``tree`` (see the module docstring)."""
    placed, width, height, leaf_y = _layout(tree)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
        f"<title>{escape(title or tree.to_compact(max_words=4))}</title>",
        f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>',
    ]
    for p in placed.values():
        node = p.node
        if node.is_leaf:
            continue
        colour, edges = _node_edges(p, placed)
        for c, mark, cy in edges:
            dash = "" if mark == NUCLEUS else ' stroke-dasharray="5,4"'
            out.append(f'<line x1="{p.x:.1f}" y1="{p.y + 4:.1f}" x2="{c.x:.1f}" y2="{cy:.1f}" '
                       f'stroke="{colour}" stroke-width="1.4"{dash}/>')
            mx, my = (p.x + c.x) / 2, (p.y + 4 + cy) / 2
            out.append(f'<text x="{mx + 4:.1f}" y="{my:.1f}" fill="{colour}" font-size="10" '
                       f'font-weight="bold">{mark}</text>')
        label = escape(node.relation or "")
        w = 8 + 7 * len(node.relation or "")
        out.append(f'<rect x="{p.x - w / 2:.1f}" y="{p.y - 14:.1f}" width="{w:.1f}" height="18" rx="4" '
                   f'fill="white" stroke="{colour}"/>')
        out.append(f'<text x="{p.x:.1f}" y="{p.y:.1f}" text-anchor="middle" fill="{colour}">{label}</text>')
    leaf_at = {p.node.edu: p for p in placed.values() if p.node.is_leaf}
    for edu in tree.edus:
        p = leaf_at[edu.index]
        lines = _wrap(edu.text)
        box_h = (len(lines) + 1) * LINE_H + LINE_H // 2  # room for the last line's descenders
        out.append(f'<rect x="{p.x - LEAF_W / 2:.1f}" y="{leaf_y:.1f}" width="{LEAF_W}" height="{box_h}" rx="3" '
                   f'fill="#f1f3f5" stroke="#adb5bd"/>')
        out.append(f'<text x="{p.x - LEAF_W / 2 + 6:.1f}" y="{leaf_y + LINE_H:.1f}" fill="#868e96" '
                   f'font-size="10">[{edu.index}]</text>')
        for k, line in enumerate(lines):
            out.append(f'<text x="{p.x - LEAF_W / 2 + 6:.1f}" y="{leaf_y + (k + 2) * LINE_H:.1f}">'
                       f"{escape(line)}</text>")
    out.append("</svg>")
    return "\n".join(out)


def tree_to_png(tree: DiscourseTree, path: str | Path, *, dpi: int = 110) -> Path:
    """Draw ``tree`` with matplotlib into a PNG at ``path``; return the path."""
    if len(tree.edus) > MAX_PNG_EDUS:
        raise InputError(f"tree has {len(tree.edus)} EDUs, too many for a PNG (limit {MAX_PNG_EDUS}); use .svg")
    require_matplotlib()
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    placed, width, height, leaf_y = _layout(tree)
    fig = plt.figure(figsize=(width / dpi, height / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(height, 0)
    ax.axis("off")
    for p in placed.values():
        node = p.node
        if node.is_leaf:
            continue
        colour, edges = _node_edges(p, placed)
        for c, mark, cy in edges:
            ax.plot([p.x, c.x], [p.y + 4, cy], color=colour, lw=1.2, ls="-" if mark == NUCLEUS else "--")
            ax.text((p.x + c.x) / 2 + 4, (p.y + 4 + cy) / 2, mark, color=colour, fontsize=7, weight="bold")
        ax.text(p.x, p.y - 4, node.relation or "", ha="center", va="center", color=colour, fontsize=8,
                bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": colour})
    for node in tree.nodes():
        if not node.is_leaf:
            continue
        p = placed[id(node)]
        edu = tree.edus[node.edu]  # type: ignore[index]
        text = f"[{edu.index}]\n" + "\n".join(_wrap(edu.text))
        ax.text(p.x - LEAF_W / 2 + 4, leaf_y + 4, text, va="top", fontsize=7,
                bbox={"boxstyle": "round,pad=0.3", "fc": "#f1f3f5", "ec": "#adb5bd"})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # emoji glyphs missing from the default font
            return atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=dpi))
    finally:
        plt.close(fig)


def require_matplotlib() -> None:
    """Raise ``ModelNotAvailableError`` naming the extra to install when matplotlib is missing."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ModelNotAvailableError(PNG_INSTALL_HINT)


def check_image_path(path: str | Path) -> Path:
    """Return ``path`` if a picture can be written there.

    Raises ``ConfigError`` unless it ends in ``.svg``/``.png``, ``ModelNotAvailableError`` for a ``.png`` without
    matplotlib, ``InputError`` when its folder does not exist or something other than a regular file is there
    (``parsers.files.check_replaceable``).
    """
    out = Path(path)
    if out.suffix.lower() not in (".svg", ".png"):
        raise ConfigError(f"unsupported image format {out.suffix or '(none)'!r}: use .svg or .png")
    if out.suffix.lower() == ".png":
        require_matplotlib()
    if not out.parent.is_dir():
        raise InputError(f"folder {out.parent} does not exist")
    check_replaceable(out)
    return out


def save_image(tree: DiscourseTree, path: str | Path) -> Path:
    """Write ``tree`` as ``.svg`` or ``.png`` (by the file suffix); return the path.

    The file appears complete or not at all. Errors as for ``check_image_path``.
    """
    out = check_image_path(path)
    try:
        if out.suffix.lower() == ".png":
            return tree_to_png(tree, out)
        atomic_write_text(out, tree_to_svg(tree))
    except OSError as exc:
        raise InputError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
