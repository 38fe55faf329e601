"""The :class:`Subnetwork` graph and its text, Graphviz DOT and SVG renderings (paper Section 2.3)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pygbn._utils import check_int
from pygbn.explore._layout import LINE_H, PAD, box_size, layered_layout
from pygbn.explore._nodes import Edge, Node, clean_text, label_lines, layer_colour, node_font_size, terms_for
from pygbn.explore._validate import check_positive_numbers


@dataclass(frozen=True)
class Subnetwork:
    """A tree or a union of trees extracted from a network (Section 2.3).

    Attributes
    ----------
    nodes : tuple of Node
        Each node once, by layer (top first), then by rank.
    edges : tuple of Edge
        By parent layer (top first), parent rank, then decreasing phi.
    roots : tuple of (int, int)
        The ``(layer, index)`` keys the trees were grown from.
    tau : tuple of float
        ``(tau_1, ..., tau_T)``; an edge of layer t was kept when
        :math:`\\Phi^{(t)}(k', k) > \\tau_t / K_{t-1}` (tau_1 is unused).
    widths : tuple of int
        ``(K_1, ..., K_T)`` of the full network.
    """

    nodes: tuple
    edges: tuple
    roots: tuple
    tau: tuple
    widths: tuple

    def node(self, layer: int, index: int) -> Node:
        """The node with key ``(layer, index)``; KeyError if absent."""
        for nd in self.nodes:
            if nd.layer == layer and nd.index == index:
                return nd
        raise KeyError((layer, index))

    def __contains__(self, key) -> bool:
        """Whether ``key`` is a node's ``(layer, index)``; False for anything else (as for
        any container: ``3 in sub`` is False, not an error)."""
        try:
            key = tuple(key)
        except TypeError:
            return False
        return any(nd.key == key for nd in self.nodes)

    def children(self, key) -> list[Edge]:
        """Edges from node ``key`` down to its children."""
        key = tuple(key)
        return [e for e in self.edges if e.parent == key]

    def parents(self, key) -> list[Edge]:
        """Edges into node ``key`` from its parents (a node may have several)."""
        key = tuple(key)
        return [e for e in self.edges if e.child == key]

    @property
    def layer_sizes(self) -> tuple[int, ...]:
        """Number of nodes in layers ``1..T``, like the paper's "[18, 5, 4, 1, 1] tree"."""
        sizes = [0] * len(self.widths)
        for nd in self.nodes:
            sizes[nd.layer - 1] += 1
        return tuple(sizes)

    def to_text(self, **kwargs) -> str:
        """Indented text rendering; see :func:`render_text`."""
        return render_text(self, **kwargs)

    def to_dot(self, **kwargs) -> str:
        """Graphviz DOT rendering; see :func:`render_dot`."""
        return render_dot(self, **kwargs)

    def to_svg(self, **kwargs) -> str:
        """Standalone SVG rendering; see :func:`render_svg`."""
        return render_svg(self, **kwargs)


def check_subnetwork(sub) -> Subnetwork:
    """Return ``sub`` after checking it is a :class:`Subnetwork`."""
    if not isinstance(sub, Subnetwork):
        raise ValueError(f"expected a Subnetwork (from tree() or subnetwork()), got {type(sub).__name__}")
    return sub


def render_text(sub: Subnetwork, n_terms: int | None = 8, show_weights: bool = True) -> str:
    """Render a tree or subnetwork as indented text for a terminal.

    Each root is printed with its descendants indented below it; every line
    shows the node (``L<layer> #<rank>``), the edge strength phi from its
    parent, the node weight and its top terms.  A node with several parents
    is expanded under its first parent only; later occurrences end with
    ``(see above)``.

    Parameters
    ----------
    sub : Subnetwork
    n_terms : int or None, default 8
        Terms per node (None: all stored).
    show_weights : bool, default True
        Show ``w=`` (eq:weight) for every node.

    Returns
    -------
    str
        Lines separated by ``\\n``, ending with a newline; ASCII apart from
        the terms themselves.
    """
    sub = check_subnetwork(sub)
    by_key = {nd.key: nd for nd in sub.nodes}
    kids: dict = {}
    for e in sub.edges:
        kids.setdefault(e.parent, []).append(e)
    shown: set = set()
    lines: list[str] = []

    def describe(nd: Node, phi: float | None) -> str:
        parts = [nd.header]
        if phi is not None:
            parts.append(f"phi={phi:.3f}")
        if show_weights:
            parts.append(f"w={nd.weight:.4g}")
        terms = " ".join(clean_text(w) for w in terms_for(nd, n_terms))
        return "  ".join(parts) + (": " + terms if terms else "")

    def walk(key, phi, prefix: str, is_last: bool, is_root: bool):
        nd = by_key[key]
        branch = "" if is_root else ("`-- " if is_last else "|-- ")
        text = describe(nd, phi)
        if key in shown:
            lines.append(prefix + branch + text + "  (see above)")
            return
        shown.add(key)
        lines.append(prefix + branch + text)
        children = kids.get(key, [])
        child_prefix = prefix if is_root else prefix + ("    " if is_last else "|   ")
        for i, e in enumerate(children):
            walk(e.child, e.phi, child_prefix, i == len(children) - 1, False)

    roots = sorted(sub.roots, key=lambda k: (-k[0], by_key[k].rank))
    for key in roots:
        walk(key, None, "", True, True)
    return "\n".join(lines) + "\n"


def dot_escape(s: str) -> str:
    """Escape text for a double-quoted DOT string (ampersand, backslash, quote, line breaks);
    drop the other C0 controls, DEL and lone surrogates (no UTF-8 file can hold one).

    Graphviz decodes HTML entities in its strings (``&amp;`` is shown as ``&``, ``&#92;`` as a
    backslash, which then starts an escape such as ``\\n``), so ``&`` is written ``&amp;``."""
    s = str(s).replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"')
    s = s.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    s = re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]", "", s)
    # DOT's lexer reads the dyad \" as a quote even after an escaped backslash,
    # so a string must not end in a backslash: pad it with a space.
    if s.endswith("\\"):
        s += " "
    return s


def render_dot(
    sub: Subnetwork,
    n_terms: int | None = 12,
    words_per_line: int = 4,
    font_size: float = 14.0,
    max_penwidth: float = 8.0,
    graph_name: str = "gbn",
) -> str:
    """Render a tree or subnetwork in the Graphviz DOT language.

    As in the paper's figures (Sections 2.3.1-2.3.3): one box per node labelled with
    its layer, rank and top terms; border colour by layer (see
    :func:`layer_colour`); font size proportional to
    :math:`(r^{(t)}_k / r^{(t)}_1)^{1/10}`; the line from node k of layer t
    to node k' of layer t-1 has width proportional to
    :math:`\\sqrt{\\Phi^{(t)}(k', k)}`.  Nodes of one layer share a rank.

    Parameters
    ----------
    sub : Subnetwork
    n_terms : int or None, default 12
        Terms per node (None: all stored).
    words_per_line : int, default 4
    font_size : float, default 14
        Font size of the most popular node of a layer.
    max_penwidth : float, default 8
        Edge pen width for phi = 1; an edge gets ``max_penwidth * sqrt(phi)``.
    graph_name : str, default "gbn"

    Returns
    -------
    str
        A ``digraph``; render it with e.g. ``dot -Tpdf tree.dot -o tree.pdf``.
        Label text is escaped (backslashes, double quotes, line breaks, and ``&``
        as ``&amp;``: Graphviz decodes HTML entities), so every term shows as written.
    """
    sub = check_subnetwork(sub)
    words_per_line = check_int(words_per_line, "words_per_line", 1)
    check_positive_numbers(font_size=font_size, max_penwidth=max_penwidth)

    def nid(key):
        return f"n{key[0]}_{key[1]}"

    out = [f'digraph "{dot_escape(graph_name)}" {{']
    out.append("  graph [rankdir=TB, nodesep=0.3, ranksep=0.6];")
    out.append('  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];')
    out.append("  edge [arrowhead=none, color=gray40];")
    layers = sorted({nd.layer for nd in sub.nodes}, reverse=True)
    for t in layers:
        members = [nd for nd in sub.nodes if nd.layer == t]
        out.append(f"  subgraph layer{t} {{")
        out.append("    rank=same;")
        for nd in members:
            label = "\\n".join(dot_escape(s) for s in label_lines(nd, n_terms, words_per_line))
            out.append(
                f'    {nid(nd.key)} [label="{label}", color="{layer_colour(nd.layer)}", '
                f"penwidth=2.5, fontsize={node_font_size(nd, float(font_size)):.2f}, "
                f'tooltip="weight={nd.weight:.6g}"];'
            )
        out.append("  }")
    for e in sub.edges:
        out.append(
            f"  {nid(e.parent)} -> {nid(e.child)} "
            f'[penwidth={max_penwidth * math.sqrt(max(e.phi, 0.0)):.3f}, tooltip="phi={e.phi:.4f}"];'
        )
    out.append("}")
    return "\n".join(out) + "\n"


XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def xml_escape(s: str) -> str:
    """Escape text for XML content and double-quoted attributes; drop invalid characters."""
    s = XML_BAD.sub("", str(s))
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_svg(
    sub: Subnetwork,
    n_terms: int | None = 12,
    words_per_line: int = 4,
    font_size: float = 12.0,
    max_stroke: float = 8.0,
    h_gap: float = 16.0,
    v_gap: float = 60.0,
) -> str:
    """Render a tree or subnetwork as a standalone SVG document (no Graphviz).

    A simple layered layout: one row per layer, the top layer first; nodes
    of the highest layer in rank order, those below ordered by the mean
    position of their parents (a barycentre heuristic that keeps crossings
    down).  Styling follows :func:`render_dot`: border colour by layer, font
    size proportional to :math:`(r^{(t)}_k / r^{(t)}_1)^{1/10}`, stroke width
    proportional to :math:`\\sqrt{\\Phi^{(t)}(k', k)}`.

    Parameters
    ----------
    sub : Subnetwork
    n_terms : int or None, default 12
    words_per_line : int, default 4
    font_size : float, default 12
        Font size (px) of the most popular node of a layer.
    max_stroke : float, default 8
        Stroke width of an edge with phi = 1.
    h_gap, v_gap : float
        Horizontal gap between boxes and vertical gap between layers (px).

    Returns
    -------
    str
        A well-formed SVG 1.1 document (UTF-8); text is XML-escaped.
        Each node carries a ``<title>`` with its weight, each edge one with
        its phi, shown as tooltips by browsers.
    """
    sub = check_subnetwork(sub)
    words_per_line = check_int(words_per_line, "words_per_line", 1)
    check_positive_numbers(font_size=font_size, max_stroke=max_stroke, h_gap=h_gap, v_gap=v_gap)
    font_px, lines, sizes = {}, {}, {}
    for nd in sub.nodes:
        font_px[nd.key] = node_font_size(nd, float(font_size))
        lines[nd.key] = label_lines(nd, n_terms, words_per_line)
        sizes[nd.key] = box_size(lines[nd.key], font_px[nd.key])
    corners, width, height = layered_layout(sub.nodes, sub.edges, sizes, h_gap, v_gap)

    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width:.1f}" '
        f'height="{height:.1f}" viewBox="0 0 {width:.1f} {height:.1f}">',
        f'<rect x="0" y="0" width="{width:.1f}" height="{height:.1f}" fill="white"/>',
        '<g class="edges" stroke="#666666" stroke-opacity="0.8" fill="none">',
    ]
    for e in sub.edges:
        (px, py), (pw, ph) = corners[e.parent], sizes[e.parent]
        (cx, cy), (cw, _) = corners[e.child], sizes[e.child]
        x1, y1 = px + pw / 2, py + ph
        x2, y2 = cx + cw / 2, cy
        sw = max(max_stroke * math.sqrt(max(e.phi, 0.0)), 0.3)
        out.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke-width="{sw:.2f}">'
            f"<title>{xml_escape(f'L{e.parent[0]} node {e.parent[1]} -> L{e.child[0]} node {e.child[1]}: phi={e.phi:.4f}')}</title></line>"
        )
    out.append("</g>")
    out.append('<g class="nodes" font-family="Helvetica, Arial, sans-serif" text-anchor="middle">')
    for nd in sub.nodes:
        (x, y), (w, h), fs = corners[nd.key], sizes[nd.key], font_px[nd.key]
        out.append(f'<g class="node layer{nd.layer}">')
        out.append(f"<title>{xml_escape(f'{nd.header}: weight={nd.weight:.6g}')}</title>")
        out.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'rx="5" ry="5" fill="white" stroke="{layer_colour(nd.layer)}" stroke-width="2.5"/>'
        )
        for i, line in enumerate(lines[nd.key]):
            ty = y + PAD + (i + 0.8) * LINE_H * fs
            weight = ' font-weight="bold"' if i == 0 else ""
            out.append(
                f'<text x="{x + w / 2:.1f}" y="{ty:.1f}" font-size="{fs:.2f}"{weight}>{xml_escape(line)}</text>'
            )
        out.append("</g>")
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"
