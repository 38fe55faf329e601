"""A layered layout for drawing a tree or subnetwork without Graphviz.

One row per layer, the top layer first.  The nodes of the highest layer are
placed in rank order; each lower row is ordered by the mean horizontal
position of a node's parents (the barycentre heuristic, which keeps edge
crossings down), nodes without a placed parent last, by rank.  Rows are
centred on the widest one.  Sizes are in px, computed from an estimate of the
text width, so no font metrics are needed.
"""
from __future__ import annotations

import unicodedata
from typing import Mapping, Sequence

#: Space between a box's border and its text (px).
PAD = 6.0
#: Average glyph width of a sans-serif font, in ems.
CHAR_W = 0.6
#: Width of a wide or full-width character (CJK ideographs, kana, hangul, most emoji), in ems.
WIDE_W = 1.0
#: Line height, in ems.
LINE_H = 1.25
#: Space around the drawing (px).
MARGIN = 10.0


def text_width(s: str) -> float:
    """Estimated width of ``s`` in ems: ``WIDE_W`` per wide or full-width character
    (Unicode East Asian Width W or F), nothing for a combining mark or a format
    character (zero-width joiner, ...), ``CHAR_W`` for any other."""
    if s.isascii():
        return len(s) * CHAR_W
    narrow = wide = 0
    for c in s:
        if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
            continue
        if unicodedata.east_asian_width(c) in ("W", "F"):
            wide += 1
        else:
            narrow += 1
    return narrow * CHAR_W + wide * WIDE_W


def box_size(lines: Sequence[str], font_px: float) -> tuple[float, float]:
    """Width and height (px) of a box holding ``lines`` at font size ``font_px``."""
    w = max(text_width(s) for s in lines) * font_px + 2 * PAD
    h = len(lines) * LINE_H * font_px + 2 * PAD
    return w, h


def layered_layout(nodes, edges, sizes: Mapping, h_gap: float, v_gap: float):
    """Place the boxes of a subnetwork's nodes in rows, one per layer.

    Parameters
    ----------
    nodes : sequence of Node
        The nodes (``layer``, ``rank`` and ``key`` are used).
    edges : sequence of Edge
        The edges (``parent`` and ``child`` keys are used).
    sizes : mapping
        ``(width, height)`` of each node's box, by node key.
    h_gap, v_gap : float
        Horizontal gap between boxes of a row and vertical gap between rows.

    Returns
    -------
    corners : dict
        Top-left corner ``(x, y)`` of each node's box, by node key.
    width, height : float
        Size of the drawing, margins included.
    """
    parents: dict = {}
    for e in edges:
        parents.setdefault(e.child, []).append(e.parent)
    xcentre: dict = {}
    row_x: dict = {}
    rows = []
    for t in sorted({nd.layer for nd in nodes}, reverse=True):
        members = [nd for nd in nodes if nd.layer == t]

        def sort_key(nd):
            ps = [xcentre[p] for p in parents.get(nd.key, []) if p in xcentre]
            if ps:
                return (0, sum(ps) / len(ps), nd.rank)
            return (1, 0.0, nd.rank)

        members.sort(key=sort_key)
        x = 0.0
        for nd in members:
            w = sizes[nd.key][0]
            row_x[nd.key] = x
            xcentre[nd.key] = x + w / 2
            x += w + h_gap
        rows.append((members, x - h_gap))

    total_w = max(row_w for _, row_w in rows)
    corners = {}
    y = MARGIN
    for members, row_w in rows:
        shift = MARGIN + (total_w - row_w) / 2
        row_h = max(sizes[nd.key][1] for nd in members)
        for nd in members:
            corners[nd.key] = (row_x[nd.key] + shift, y + (row_h - sizes[nd.key][1]) / 2)
        y += row_h + v_gap
    return corners, total_w + 2 * MARGIN, y - v_gap + MARGIN
