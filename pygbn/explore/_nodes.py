"""The nodes and edges of a tree or subnetwork, and how a node is labelled and coloured."""
from __future__ import annotations

import re
from dataclasses import dataclass

from pygbn._utils import check_int

#: Border colours of the paper's tree figures (Section 2.3.1): black, blue,
#: orange, green and red for a node of layer one, two, three, four and five.
#: Deeper layers continue with further colours, then cycle.
LAYER_COLOURS = ("black", "blue", "orange", "green", "red", "purple", "brown", "magenta", "cyan", "gray")


def layer_colour(t: int) -> str:
    """Border colour of a node of layer t, as in the paper's tree figures.

    Layers one to five are black, blue, orange, green and red (Section 2.3.1);
    deeper layers continue with purple, brown, magenta, cyan and gray, then
    cycle.
    """
    t = check_int(t, "t", 1)
    return LAYER_COLOURS[(t - 1) % len(LAYER_COLOURS)]


@dataclass(frozen=True)
class Node:
    """A node of a tree or subnetwork.

    Attributes
    ----------
    layer : int
        Layer number t (1 = next to the data).
    index : int
        0-based column of :math:`\\Phi^{(t)}`.
    rank : int
        1-based popularity rank in the layer (by weight, descending).
    weight : float
        :math:`r^{(t)}_k` (eq:weight).
    relative_weight : float
        ``weight`` divided by the largest weight of the layer (the paper sets
        a node's font size proportional to ``relative_weight ** 0.1``).
    top_terms : tuple of str
        The most probable terms of the node's projection (eq:projection);
        the dimension indices as strings when no vocabulary was given.
    top_term_indices : tuple of int
        The corresponding data dimensions.
    """

    layer: int
    index: int
    rank: int
    weight: float
    relative_weight: float
    top_terms: tuple
    top_term_indices: tuple

    @property
    def key(self) -> tuple[int, int]:
        """``(layer, index)``, the identifier used by :class:`Edge`."""
        return (self.layer, self.index)

    @property
    def header(self) -> str:
        """Short label: ``"L3 #1"`` (layer, rank), plus ``(node k)`` if rank != k + 1."""
        h = f"L{self.layer} #{self.rank}"
        if self.rank != self.index + 1:
            h += f" (node {self.index})"
        return h


@dataclass(frozen=True)
class Edge:
    """An edge from node ``parent = (t, k)`` down to ``child = (t - 1, k')``.

    Attributes
    ----------
    parent, child : tuple of int
        ``(layer, index)`` keys of the two nodes.
    phi : float
        Connection strength :math:`\\Phi^{(t)}(k', k)`.
    """

    parent: tuple
    child: tuple
    phi: float


def terms_for(nd: Node, n_terms) -> tuple:
    """The first ``n_terms`` stored top terms of ``nd`` (all of them for None)."""
    if n_terms is None:
        return nd.top_terms
    return nd.top_terms[: check_int(n_terms, "n_terms", 1)]


def clean_text(s: str) -> str:
    """Replace line breaks and tabs (the Unicode ones too: NEL, U+2028, U+2029) by spaces
    and drop the other control characters (C0, DEL and C1) and lone surrogates (which no
    UTF-8 file can hold: a name decoded with ``errors="surrogateescape"`` has them)."""
    s = re.sub("[\r\n\t\v\f\x85\u2028\u2029]+", " ", str(s))
    return re.sub("[\x00-\x08\x0e-\x1f\x7f-\x9f\ud800-\udfff]", "", s)


def label_lines(nd: Node, n_terms, words_per_line: int) -> list[str]:
    """A node's box label: its header, then its terms, ``words_per_line`` to a line."""
    terms = [clean_text(w) for w in terms_for(nd, n_terms)]
    lines = [nd.header]
    for i in range(0, len(terms), words_per_line):
        lines.append(" ".join(terms[i : i + words_per_line]))
    return lines


def node_font_size(nd: Node, base: float) -> float:
    """Font size of ``nd``'s label: ``base * relative_weight ** 0.1``, at least ``0.4 * base``.

    The paper sets the font size proportional to :math:`(r^{(t)}_k / r^{(t)}_1)^{1/10}`;
    the floor keeps unpopular nodes legible.
    """
    rel = max(nd.relative_weight, 0.0)
    return max(base * rel**0.1, 0.4 * base)
