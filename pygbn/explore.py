"""Exploring a fitted gamma belief network: projections, weights, trees, renderings.

Everything here works on the plain arrays of a fitted network (Zhou, Cong &
Chen, JMLR 17, 2016, Section 2.3 "Exploratory Data Analysis", with its
subsections 2.3.1 "Visualizing Nodes of Different Layers", 2.3.2 "Visualizing
Trees Rooted at the Top-Layer Hidden Units" and 2.3.3 "Visualizing Subnetworks
Consisting of Related Trees"; section numbers follow the paper's LaTeX source):

``phis``
    A list of the T connection-weight matrices.  ``phis[0]`` is
    :math:`\\Phi^{(1)}`, of shape ``(V, K_1)`` (V is the data dimension, e.g.
    the vocabulary size); ``phis[t-1]`` is :math:`\\Phi^{(t)}`, of shape
    ``(K_{t-1}, K_t)``.  Every column lies on the simplex (sums to one).
``r``
    The top layer's gamma shape vector, shape ``(K_T,)``.
``vocab``
    Optional sequence of V strings naming the data dimensions.

Layers are numbered as in the paper, ``t = 1..T`` (layer 1 is the one next to
the data); the nodes of a layer are the 0-based column indices of
:math:`\\Phi^{(t)}`.  The *rank* of a node is its 1-based position when the
nodes of its layer are sorted by weight :math:`r^{(t)}_k` (eq:weight) in
descending order; after :func:`relabel_by_popularity` node ``k`` has rank
``k + 1``, as in the paper's figures.

Functions
---------
project, projections
    :math:`\\prod_{\\ell \\le t} \\Phi^{(\\ell)}` (eq:projection).
node_weights, layer_weights
    :math:`r^{(t)} = [\\prod_{\\ell=t+1}^T \\Phi^{(\\ell)}] r` (eq:weight).
relabel_by_popularity
    Reorder every layer's nodes by weight (Section 2.3.1).
top_terms, top_term_indices, generated_top_terms
    The most probable data dimensions of each node or generated document.
tree, subnetwork
    Trees grown downward along edges with
    :math:`\\Phi^{(t)}(k', k) > \\tau_t / K_{t-1}` and unions of them.
render_text, render_dot, render_svg
    Indented text, Graphviz DOT and standalone SVG renderings of a
    :class:`Subnetwork`.
factor_images, image_grid, encode_png, write_png, encode_svg_image,
save_factor_grid
    The projected factors of a layer of an image model as one image grid.
"""
from __future__ import annotations

import logging
import math
import numbers
import os
import re
import struct
import zlib
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, Union

import numpy as np
import scipy.sparse as sp

logger = logging.getLogger("pygbn")

__all__ = [
    "project",
    "projections",
    "node_weights",
    "layer_weights",
    "relabel_by_popularity",
    "top_term_indices",
    "top_terms",
    "generated_top_terms",
    "layer_colour",
    "Node",
    "Edge",
    "Subnetwork",
    "tree",
    "subnetwork",
    "render_text",
    "render_dot",
    "render_svg",
    "factor_images",
    "image_grid",
    "encode_png",
    "write_png",
    "encode_svg_image",
    "save_factor_grid",
]

TauLike = Union[float, Sequence[float], Mapping[int, float]]

#: Border colours of the paper's tree figures (Section 2.3.1): black, blue,
#: orange, green and red for a node of layer one, two, three, four and five.
#: Deeper layers continue with further colours, then cycle.
LAYER_COLOURS = ("black", "blue", "orange", "green", "red", "purple", "brown", "magenta", "cyan", "gray")

_COLUMN_SUM_ATOL = 1e-4


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def _check_phis(phis) -> list[np.ndarray]:
    """Validate the list of Phi matrices; return them as float64 arrays."""
    if isinstance(phis, np.ndarray) or not isinstance(phis, Sequence) or isinstance(phis, (str, bytes)):
        raise ValueError(
            f"phis must be a list of 2-D arrays (Phi^(1), ..., Phi^(T)), got {type(phis).__name__}"
        )
    if len(phis) == 0:
        raise ValueError("phis must hold at least one matrix, got an empty list")
    out = []
    for t, phi in enumerate(phis, start=1):
        if sp.issparse(phi):
            phi = phi.toarray()
        a = np.asarray(phi, dtype=np.float64)
        if a.ndim != 2:
            raise ValueError(f"phis[{t - 1}] (Phi^({t})) must be 2-D, got shape {a.shape}")
        if a.shape[0] == 0 or a.shape[1] == 0:
            raise ValueError(f"phis[{t - 1}] (Phi^({t})) must be non-empty, got shape {a.shape}")
        if out and a.shape[0] != out[-1].shape[1]:
            raise ValueError(
                f"phis[{t - 1}] (Phi^({t})) has {a.shape[0]} rows but Phi^({t - 1}) has "
                f"{out[-1].shape[1]} columns; Phi^(t) must have shape (K_(t-1), K_t)"
            )
        if not np.isfinite(a).all() or (a < 0).any():
            raise ValueError(f"phis[{t - 1}] (Phi^({t})) must be finite and non-negative")
        sums = a.sum(axis=0)
        bad = np.flatnonzero(np.abs(sums - 1.0) > _COLUMN_SUM_ATOL)
        if bad.size:
            raise ValueError(
                f"every column of phis[{t - 1}] (Phi^({t})) must sum to 1; column {int(bad[0])} "
                f"sums to {float(sums[bad[0]])!r}"
            )
        out.append(a)
    return out


def _check_r(r, phis: list[np.ndarray]) -> np.ndarray:
    a = np.asarray(r, dtype=np.float64)
    k_top = phis[-1].shape[1]
    if a.ndim != 1 or a.shape[0] != k_top:
        raise ValueError(f"r must have shape ({k_top},) (the top layer's width), got shape {a.shape}")
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError("r must be finite and non-negative")
    return a


def _check_layer(t, n_layers: int, name: str = "t") -> int:
    if isinstance(t, bool) or not isinstance(t, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} must be an int layer number in 1..{n_layers}, got {t!r}")
    if not 1 <= int(t) <= n_layers:
        raise ValueError(f"{name} must be a layer number in 1..{n_layers}, got {t!r}")
    return int(t)


def _check_n(n, name: str = "n") -> int:
    if isinstance(n, bool) or not isinstance(n, (numbers.Integral, np.integer)) or n < 1:
        raise ValueError(f"{name} must be a positive int, got {n!r}")
    return int(n)


def _check_vocab(vocab, n_terms: int, name: str = "vocab") -> list[str]:
    if vocab is None:
        raise ValueError(f"{name} must be a sequence of {n_terms} strings, got None")
    if isinstance(vocab, (str, bytes)):
        raise ValueError(f"{name} must be a sequence of strings, got a single {type(vocab).__name__}")
    words = list(vocab)
    if len(words) != n_terms:
        raise ValueError(f"{name} must hold {n_terms} terms (one per data dimension), got {len(words)}")
    for i, w in enumerate(words):
        if not isinstance(w, str):
            raise ValueError(f"{name}[{i}] must be a str, got {w!r}")
    return words


def _check_tau(tau, n_layers: int) -> tuple[float, ...]:
    """Return (tau_1, ..., tau_T); tau_1 is unused (layer one has no hidden children)."""

    def one(v, where):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
            raise ValueError(f"tau{where} must be a non-negative number, got {v!r}")
        v = float(v)
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"tau{where} must be a finite non-negative number, got {v!r}")
        return v

    if isinstance(tau, Mapping):
        vals = [3.0] * n_layers
        for key, v in tau.items():
            t = _check_layer(key, n_layers, name="a key of tau")
            vals[t - 1] = one(v, f"[{key}]")
        return tuple(vals)
    if isinstance(tau, (Sequence, np.ndarray)) and not isinstance(tau, (str, bytes)):
        vals = list(np.asarray(tau, dtype=object).ravel()) if isinstance(tau, np.ndarray) else list(tau)
        if len(vals) != n_layers:
            raise ValueError(
                f"tau as a sequence must hold one value per layer (tau_1..tau_{n_layers}, "
                f"tau_1 unused), got {len(vals)} values"
            )
        return tuple(one(v, f"[{i}]") for i, v in enumerate(vals))
    v = one(tau, "")
    return tuple([v] * n_layers)


# ---------------------------------------------------------------------------
# projections and weights
# ---------------------------------------------------------------------------


def projections(phis) -> list[np.ndarray]:
    """Project the nodes of every layer to the data layer (eq:projection).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]``, ``Phi^(t)`` of shape ``(K_{t-1}, K_t)``
        with ``K_0 = V``; columns on the simplex.

    Returns
    -------
    list of ndarray
        Element ``t-1`` is the ``V x K_t`` matrix
        :math:`\\prod_{\\ell=1}^{t} \\Phi^{(\\ell)}` (paper eq:projection);
        column k is the distribution over the V data dimensions of node k of
        layer t, so every column sums to one.
    """
    ph = _check_phis(phis)
    out = [ph[0].copy()]
    for phi in ph[1:]:
        out.append(out[-1] @ phi)
    return out


def project(phis, t: int) -> np.ndarray:
    """The ``V x K_t`` projection :math:`\\prod_{\\ell=1}^{t} \\Phi^{(\\ell)}` (eq:projection).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]``.
    t : int
        Layer number, ``1 <= t <= T``.

    Returns
    -------
    ndarray, shape (V, K_t)
        Column k: the expected data-layer profile of node k of layer t
        (eq:x_given_theta up to the scaling by theta and c).

    Raises
    ------
    ValueError
        If ``phis`` is not a chain of column-stochastic matrices or ``t`` is
        not a layer number.
    """
    ph = _check_phis(phis)
    t = _check_layer(t, len(ph))
    out = ph[0].copy()
    for phi in ph[1:t]:
        out = out @ phi
    return out


def layer_weights(phis, r) -> list[np.ndarray]:
    """The node weights of every layer (eq:weight).

    Returns
    -------
    list of ndarray
        Element ``t-1`` is :math:`r^{(t)} = [\\prod_{\\ell=t+1}^{T}\\Phi^{(\\ell)}] r`,
        shape ``(K_t,)``; element ``T-1`` is ``r`` itself.  Because every
        column of every Phi sums to one, ``r^(t).sum() == r.sum()`` for all t.
    """
    ph = _check_phis(phis)
    rv = _check_r(r, ph)
    out = [rv.copy()]
    for phi in reversed(ph[1:]):
        out.append(phi @ out[-1])
    return out[::-1]


def node_weights(phis, r, t: int) -> np.ndarray:
    """Weights :math:`r^{(t)} = [\\prod_{\\ell=t+1}^{T}\\Phi^{(\\ell)}] r` of layer t (eq:weight).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]``.
    r : array_like, shape (K_T,)
        The top layer's gamma shape parameters.
    t : int
        Layer number, ``1 <= t <= T``.

    Returns
    -------
    ndarray, shape (K_t,)
        The popularity of each node of layer t, used to rank nodes.
    """
    ph = _check_phis(phis)
    rv = _check_r(r, ph)
    t = _check_layer(t, len(ph))
    w = rv.copy()
    for phi in reversed(ph[t:]):
        w = phi @ w
    return w


def _ranks(weights: np.ndarray) -> np.ndarray:
    """1-based popularity rank of each node (stable: ties keep index order)."""
    order = np.argsort(-weights, kind="stable")
    ranks = np.empty(weights.shape[0], dtype=np.int64)
    ranks[order] = np.arange(1, weights.shape[0] + 1)
    return ranks


def relabel_by_popularity(phis, r):
    """Reorder the nodes of every layer by weight, most popular first.

    As in Section 2.3.1 of the paper, node k of layer t gets a smaller label
    the larger its weight :math:`r^{(t)}_k` (eq:weight).  Ties keep their
    original order.  The network itself is unchanged (only its nodes are
    renamed), so projections and weights are permuted accordingly.

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]``.
    r : array_like, shape (K_T,)

    Returns
    -------
    new_phis : list of ndarray
        ``new_phis[0] = Phi^(1)[:, p_1]`` and
        ``new_phis[t-1] = Phi^(t)[p_{t-1}][:, p_t]``.
    new_r : ndarray
        ``r[p_T]``.
    perms : list of ndarray of int
        ``perms[t-1] = p_t``: new node k of layer t is old node ``p_t[k]``.
    """
    ph = _check_phis(phis)
    rv = _check_r(r, ph)
    weights = layer_weights(ph, rv)
    perms = [np.argsort(-w, kind="stable") for w in weights]
    new_phis = [ph[0][:, perms[0]]]
    for t in range(1, len(ph)):
        new_phis.append(ph[t][perms[t - 1]][:, perms[t]])
    return new_phis, rv[perms[-1]], perms


# ---------------------------------------------------------------------------
# top terms
# ---------------------------------------------------------------------------


def _top_indices_of_columns(mat: np.ndarray, n: int) -> np.ndarray:
    """Row indices of the n largest entries of each column, largest first, ties by lower index.

    Equivalent to ``np.argsort(-mat, axis=0, kind="stable")[:n].T``, but only
    the candidates at or above each column's n-th largest value are sorted.
    """
    n_rows, n_cols = mat.shape
    n = min(n, n_rows)
    if 4 * n >= n_rows:
        return np.argsort(-mat, axis=0, kind="stable")[:n].T.copy()
    neg = -np.ascontiguousarray(mat.T)  # one row per column of mat
    thresh = np.partition(neg, n - 1, axis=1)[:, n - 1]
    out = np.empty((n_cols, n), dtype=np.intp)
    for k in range(n_cols):
        row = neg[k]
        idx = np.flatnonzero(row <= thresh[k])
        out[k] = idx[np.argsort(row[idx], kind="stable")[:n]]
    return out


def top_term_indices(phis, t: int, n: int = 10) -> np.ndarray:
    """Indices of the n most probable data dimensions of each node of layer t.

    Nodes are ranked by their column of the projection
    :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection); ties go to
    the lower index.

    Returns
    -------
    ndarray of int, shape (K_t, min(n, V))
        Row k lists node k's top dimensions, most probable first.
    """
    n = _check_n(n)
    return _top_indices_of_columns(project(phis, t), n)


def top_terms(phis, t: int, vocab: Sequence[str], n: int = 10) -> list[list[str]]:
    """The top-n terms of every node of layer t (Section 2.3.1).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]``.
    t : int
        Layer number, ``1 <= t <= T``.
    vocab : sequence of str, length V
        The name of each data dimension.
    n : int, default 10
        How many terms per node (the paper's figures show 12).

    Returns
    -------
    list of list of str
        Element k: node k's terms sorted by probability under column k of
        :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection).
    """
    ph = _check_phis(phis)
    words = _check_vocab(vocab, ph[0].shape[0])
    idx = top_term_indices(ph, t, n)
    return [[words[i] for i in row] for row in idx]


def generated_top_terms(counts, vocab: Sequence[str], n: int = 10) -> list[list[str]]:
    """The top-n terms of each generated (or observed) document.

    Parameters
    ----------
    counts : array_like or sparse matrix, shape (n_documents, V)
        One document per row, e.g. the synthetic documents drawn top-down
        through the network (eq:PGBN).
    vocab : sequence of str, length V
    n : int, default 10

    Returns
    -------
    list of list of str
        For each document, its terms with a positive count, largest count
        first (ties by lower column index), at most n of them.
    """
    n = _check_n(n)
    if sp.issparse(counts):
        mat = sp.csr_matrix(counts, copy=True)
        if mat.ndim != 2:
            raise ValueError(f"counts must be 2-D (documents x terms), got shape {mat.shape}")
    else:
        mat = np.asarray(counts)
        if mat.ndim != 2:
            raise ValueError(f"counts must be 2-D (documents x terms), got shape {mat.shape}")
        if mat.dtype.kind not in "biuf":
            raise ValueError(f"counts must be numeric, got dtype {mat.dtype}")
    words = _check_vocab(vocab, mat.shape[1])
    out = []
    if sp.issparse(mat):
        mat.sum_duplicates()
        for j in range(mat.shape[0]):
            lo, hi = mat.indptr[j], mat.indptr[j + 1]
            cols, vals = mat.indices[lo:hi], mat.data[lo:hi]
            if np.any(vals < 0) or not np.all(np.isfinite(vals)):
                raise ValueError("counts must be finite and non-negative")
            keep = vals > 0
            cols, vals = cols[keep], vals[keep].astype(np.float64)
            order = np.lexsort((cols, -vals))[:n]
            out.append([words[c] for c in cols[order]])
    else:
        if (mat < 0).any() or not np.isfinite(mat).all():
            raise ValueError("counts must be finite and non-negative")
        for row in mat:
            cols = np.flatnonzero(row > 0)
            order = np.argsort(-row[cols].astype(np.float64), kind="stable")[:n]
            out.append([words[c] for c in cols[order]])
    return out


# ---------------------------------------------------------------------------
# trees and subnetworks
# ---------------------------------------------------------------------------


def layer_colour(t: int) -> str:
    """Border colour of a node of layer t, as in the paper's tree figures.

    Layers one to five are black, blue, orange, green and red (Section 2.3.1);
    deeper layers continue with purple, brown, magenta, cyan and gray, then
    cycle.
    """
    t = _check_layer(t, 10**9)
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
        return any(nd.key == tuple(key) for nd in self.nodes)

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


def _check_roots(roots, widths) -> list[tuple[int, int]]:
    if isinstance(roots, tuple) and len(roots) == 2 and all(
        isinstance(v, (numbers.Integral, np.integer)) for v in roots
    ):
        roots = [roots]
    if isinstance(roots, (str, bytes)) or not isinstance(roots, Iterable):
        raise ValueError(f"roots must be a sequence of (layer, node) pairs, got {roots!r}")
    out = []
    for item in roots:
        try:
            layer, node = item
        except (TypeError, ValueError):
            raise ValueError(f"roots must hold (layer, node) pairs, got {item!r}") from None
        layer = _check_layer(layer, len(widths), name="a root's layer")
        if isinstance(node, bool) or not isinstance(node, (numbers.Integral, np.integer)):
            raise ValueError(f"a root's node must be an int in 0..{widths[layer - 1] - 1}, got {node!r}")
        if not 0 <= int(node) < widths[layer - 1]:
            raise ValueError(
                f"a root's node must be in 0..{widths[layer - 1] - 1} (layer {layer} has "
                f"{widths[layer - 1]} nodes), got {node!r}"
            )
        key = (layer, int(node))
        if key not in out:
            out.append(key)
    if not out:
        raise ValueError("roots must hold at least one (layer, node) pair, got none")
    return out


def subnetwork(phis, r, roots, tau: TauLike = 3.0, vocab: Sequence[str] | None = None, n_terms: int = 12) -> Subnetwork:
    """The union of the trees rooted at ``roots`` (Sections 2.3.2 and 2.3.3).

    Each tree grows downward: node k of layer t (a root or a node already in
    the tree) is linked to every node k' of layer t-1 with
    :math:`\\Phi^{(t)}(k', k) > \\tau_t / K_{t-1}`, down to layer one.  A
    node reached from several parents appears once, with one edge per parent
    (the result is a directed acyclic graph, not necessarily a tree).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]``.
    r : array_like, shape (K_T,)
        Top-layer gamma shapes, for the node weights (eq:weight).
    roots : sequence of (int, int)
        ``(layer, node)`` pairs: layer number in 1..T and 0-based node index.
        A single pair is accepted too.
    tau : float, sequence of T floats, or mapping {layer: float}, default 3.0
        The thresholds :math:`\\tau_t`.  A sequence gives ``tau_1..tau_T``
        (``tau_1`` is unused: layer one's children are data dimensions, shown
        as top terms); a mapping overrides the default 3 for some layers.
        Larger values keep fewer, stronger edges.
    vocab : sequence of str, optional
        Names of the V data dimensions, for the nodes' top terms.
    n_terms : int, default 12
        Top terms stored per node (the paper shows 12).

    Returns
    -------
    Subnetwork
    """
    ph = _check_phis(phis)
    rv = _check_r(r, ph)
    n_terms = _check_n(n_terms, "n_terms")
    n_layers = len(ph)
    widths = tuple(p.shape[1] for p in ph)
    root_keys = _check_roots(roots, widths)
    taus = _check_tau(tau, n_layers)
    words = _check_vocab(vocab, ph[0].shape[0]) if vocab is not None else None

    members: list[set] = [set() for _ in range(n_layers)]
    for layer, k in root_keys:
        members[layer - 1].add(k)
    edges_raw = []
    for t in range(n_layers, 1, -1):
        phi = ph[t - 1]
        thresh = taus[t - 1] / phi.shape[0]
        for k in sorted(members[t - 1]):
            kids = np.flatnonzero(phi[:, k] > thresh)
            for kp in kids:
                members[t - 2].add(int(kp))
                edges_raw.append(((t, k), (t - 1, int(kp)), float(phi[kp, k])))

    weights = layer_weights(ph, rv)
    ranks = [_ranks(w) for w in weights]
    nodes = []
    for t in range(n_layers, 0, -1):
        w = weights[t - 1]
        wmax = float(w.max())
        ks = sorted(members[t - 1], key=lambda k: ranks[t - 1][k])
        if not ks:
            continue
        # project only the member columns, right to left: V x |ks| work, not V x K_t
        cols = ph[t - 1][:, ks]
        for phi in reversed(ph[: t - 1]):
            cols = phi @ cols
        top = _top_indices_of_columns(cols, n_terms)
        for k, idx in zip(ks, top):
            terms = tuple(words[i] for i in idx) if words is not None else tuple(str(int(i)) for i in idx)
            nodes.append(
                Node(
                    layer=t,
                    index=k,
                    rank=int(ranks[t - 1][k]),
                    weight=float(w[k]),
                    relative_weight=float(w[k] / wmax) if wmax > 0 else 0.0,
                    top_terms=terms,
                    top_term_indices=tuple(int(i) for i in idx),
                )
            )
    rank_of = {nd.key: nd.rank for nd in nodes}
    edges_raw.sort(key=lambda e: (-e[0][0], rank_of[e[0]], -e[2], rank_of[e[1]]))
    edges = tuple(Edge(parent=p, child=c, phi=v) for p, c, v in edges_raw)
    logger.debug(
        "subnetwork from %d root(s): %d nodes, %d edges, tau=%s", len(root_keys), len(nodes), len(edges), taus
    )
    return Subnetwork(nodes=tuple(nodes), edges=edges, roots=tuple(root_keys), tau=taus, widths=widths)


def tree(phis, r, layer: int, node: int, tau: TauLike = 3.0, vocab: Sequence[str] | None = None, n_terms: int = 12) -> Subnetwork:
    """The tree rooted at node ``node`` of layer ``layer`` (Section 2.3.2).

    Grown downward along the edges with
    :math:`\\Phi^{(t)}(k', k) > \\tau_t / K_{t-1}`; a node may have several
    parents (see :func:`subnetwork`, of which this is the one-root case).

    Parameters
    ----------
    phis, r
        The network (see the module docstring).
    layer : int
        Layer of the root, ``1 <= layer <= T``.
    node : int
        0-based index of the root in its layer (after
        :func:`relabel_by_popularity`, node 0 is the most popular).
    tau, vocab, n_terms
        As in :func:`subnetwork`; the paper uses ``tau = 3`` (and 1 to show
        weaker links).

    Returns
    -------
    Subnetwork
    """
    return subnetwork(phis, r, [(layer, node)], tau=tau, vocab=vocab, n_terms=n_terms)


# ---------------------------------------------------------------------------
# renderers
# ---------------------------------------------------------------------------


def _check_subnetwork(sub) -> Subnetwork:
    if not isinstance(sub, Subnetwork):
        raise ValueError(f"expected a Subnetwork (from tree() or subnetwork()), got {type(sub).__name__}")
    return sub


def _terms_for(nd: Node, n_terms) -> tuple:
    if n_terms is None:
        return nd.top_terms
    return nd.top_terms[: _check_n(n_terms, "n_terms")]


def _clean_text(s: str) -> str:
    """Replace line breaks/tabs by spaces and drop other control characters."""
    s = re.sub(r"[\r\n\t\v\f]+", " ", str(s))
    return re.sub(r"[\x00-\x08\x0e-\x1f\x7f]", "", s)


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
    sub = _check_subnetwork(sub)
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
        terms = " ".join(_clean_text(w) for w in _terms_for(nd, n_terms))
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


def _dot_escape(s: str) -> str:
    """Escape text for a double-quoted DOT string (backslash, quote, line breaks)."""
    s = str(s).replace("\\", "\\\\").replace('"', '\\"')
    s = s.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n")
    s = re.sub(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", "", s)
    # DOT's lexer reads the dyad \" as a quote even after an escaped backslash,
    # so a string must not end in a backslash: pad it with a space.
    if s.endswith("\\"):
        s += " "
    return s


def _label_lines(nd: Node, n_terms, words_per_line: int) -> list[str]:
    terms = [_clean_text(w) for w in _terms_for(nd, n_terms)]
    lines = [nd.header]
    for i in range(0, len(terms), words_per_line):
        lines.append(" ".join(terms[i : i + words_per_line]))
    return lines


def _font_size(nd: Node, base: float) -> float:
    # paper: font size proportional to (r_k / r_1)^(1/10); floored for legibility
    rel = max(nd.relative_weight, 0.0)
    return max(base * rel**0.1, 0.4 * base)


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
        Label text is escaped (backslashes, double quotes, line breaks).
    """
    sub = _check_subnetwork(sub)
    words_per_line = _check_n(words_per_line, "words_per_line")
    for name, v in (("font_size", font_size), ("max_penwidth", max_penwidth)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")

    def nid(key):
        return f"n{key[0]}_{key[1]}"

    out = [f'digraph "{_dot_escape(graph_name)}" {{']
    out.append("  graph [rankdir=TB, nodesep=0.3, ranksep=0.6];")
    out.append('  node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];')
    out.append("  edge [arrowhead=none, color=gray40];")
    layers = sorted({nd.layer for nd in sub.nodes}, reverse=True)
    for t in layers:
        members = [nd for nd in sub.nodes if nd.layer == t]
        out.append(f"  subgraph layer{t} {{")
        out.append("    rank=same;")
        for nd in members:
            label = "\\n".join(_dot_escape(s) for s in _label_lines(nd, n_terms, words_per_line))
            out.append(
                f'    {nid(nd.key)} [label="{label}", color="{layer_colour(nd.layer)}", '
                f"penwidth=2.5, fontsize={_font_size(nd, float(font_size)):.2f}, "
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


_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_escape(s: str) -> str:
    """Escape text for XML content and double-quoted attributes; drop invalid characters."""
    s = _XML_BAD.sub("", str(s))
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
    sub = _check_subnetwork(sub)
    words_per_line = _check_n(words_per_line, "words_per_line")
    for name, v in (("font_size", font_size), ("max_stroke", max_stroke), ("h_gap", h_gap), ("v_gap", v_gap)):
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")
    pad = 6.0
    char_w = 0.6  # average glyph width of a sans-serif font, in ems
    line_h = 1.25
    boxes = {}
    for nd in sub.nodes:
        fs = _font_size(nd, float(font_size))
        lines = _label_lines(nd, n_terms, words_per_line)
        w = max(len(s) for s in lines) * char_w * fs + 2 * pad
        h = len(lines) * line_h * fs + 2 * pad
        boxes[nd.key] = {"node": nd, "fs": fs, "lines": lines, "w": w, "h": h}

    parents: dict = {}
    for e in sub.edges:
        parents.setdefault(e.child, []).append(e.parent)
    layers = sorted({nd.layer for nd in sub.nodes}, reverse=True)
    rows = []
    xcentre: dict = {}
    for t in layers:
        members = [nd for nd in sub.nodes if nd.layer == t]

        def sort_key(nd):
            ps = [xcentre[p] for p in parents.get(nd.key, []) if p in xcentre]
            if ps:
                return (0, sum(ps) / len(ps), nd.rank)
            return (1, 0.0, nd.rank)

        members.sort(key=sort_key)
        x = 0.0
        for nd in members:
            b = boxes[nd.key]
            b["x"] = x
            xcentre[nd.key] = x + b["w"] / 2
            x += b["w"] + h_gap
        rows.append((t, members, x - h_gap))
    total_w = max(row_w for _, _, row_w in rows)
    margin = 10.0
    y = margin
    for t, members, row_w in rows:
        shift = margin + (total_w - row_w) / 2
        row_h = max(boxes[nd.key]["h"] for nd in members)
        for nd in members:
            b = boxes[nd.key]
            b["x"] += shift
            b["y"] = y + (row_h - b["h"]) / 2
        y += row_h + v_gap
    width = total_w + 2 * margin
    height = y - v_gap + margin

    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width:.1f}" '
        f'height="{height:.1f}" viewBox="0 0 {width:.1f} {height:.1f}">',
        f'<rect x="0" y="0" width="{width:.1f}" height="{height:.1f}" fill="white"/>',
        '<g class="edges" stroke="#666666" stroke-opacity="0.8" fill="none">',
    ]
    for e in sub.edges:
        bp, bc = boxes[e.parent], boxes[e.child]
        x1, y1 = bp["x"] + bp["w"] / 2, bp["y"] + bp["h"]
        x2, y2 = bc["x"] + bc["w"] / 2, bc["y"]
        sw = max(max_stroke * math.sqrt(max(e.phi, 0.0)), 0.3)
        out.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke-width="{sw:.2f}">'
            f"<title>{_xml_escape(f'L{e.parent[0]} node {e.parent[1]} -> L{e.child[0]} node {e.child[1]}: phi={e.phi:.4f}')}</title></line>"
        )
    out.append("</g>")
    out.append('<g class="nodes" font-family="Helvetica, Arial, sans-serif" text-anchor="middle">')
    for nd in sub.nodes:
        b = boxes[nd.key]
        out.append(f'<g class="node layer{nd.layer}">')
        out.append(f"<title>{_xml_escape(f'{nd.header}: weight={nd.weight:.6g}')}</title>")
        out.append(
            f'<rect x="{b["x"]:.1f}" y="{b["y"]:.1f}" width="{b["w"]:.1f}" height="{b["h"]:.1f}" '
            f'rx="5" ry="5" fill="white" stroke="{layer_colour(nd.layer)}" stroke-width="2.5"/>'
        )
        cx = b["x"] + b["w"] / 2
        for i, line in enumerate(b["lines"]):
            ty = b["y"] + pad + (i + 0.8) * line_h * b["fs"]
            weight = ' font-weight="bold"' if i == 0 else ""
            out.append(
                f'<text x="{cx:.1f}" y="{ty:.1f}" font-size="{b["fs"]:.2f}"{weight}>{_xml_escape(line)}</text>'
            )
        out.append("</g>")
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# images of projected factors
# ---------------------------------------------------------------------------


def _check_shape(shape, n_pixels: int) -> tuple[int, int]:
    try:
        h, w = shape
    except (TypeError, ValueError):
        raise ValueError(f"shape must be an (height, width) pair, got {shape!r}") from None
    for v in (h, w):
        if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)) or v < 1:
            raise ValueError(f"shape must hold two positive ints, got {shape!r}")
    if int(h) * int(w) != n_pixels:
        raise ValueError(f"shape {tuple(shape)!r} has {int(h) * int(w)} pixels but the data dimension is {n_pixels}")
    return int(h), int(w)


def factor_images(phis, t: int, shape, nodes: Sequence[int] | None = None, normalize: bool = True) -> np.ndarray:
    """The projected factors of layer t as images (paper Section 4.3, MNIST figures).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]`` of an image model (V pixels).
    t : int
        Layer number, ``1 <= t <= T``.
    shape : (int, int)
        Image ``(height, width)`` with ``height * width == V``; data dimension
        ``v`` is pixel ``(v // width, v % width)`` (row-major, as in
        ``numpy.reshape``).
    nodes : sequence of int, optional
        Which nodes (columns) to show, in order; default all.
    normalize : bool, default True
        Scale each image by its maximum so it spans [0, 1].

    Returns
    -------
    ndarray, shape (n_nodes, height, width)
        Column k of :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection)
        reshaped.
    """
    proj = project(phis, t)
    h, w = _check_shape(shape, proj.shape[0])
    if nodes is not None:
        idx = np.asarray(list(nodes))
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise ValueError(f"nodes must be a sequence of ints, got {nodes!r}")
        if idx.size and (idx.min() < 0 or idx.max() >= proj.shape[1]):
            raise ValueError(f"nodes must be in 0..{proj.shape[1] - 1}, got {nodes!r}")
        proj = proj[:, idx.astype(np.int64)]
    imgs = proj.T.reshape(-1, h, w).copy()
    if normalize:
        m = imgs.reshape(imgs.shape[0], -1).max(axis=1)
        m[m <= 0] = 1.0
        imgs /= m[:, None, None]
    return imgs


def image_grid(images, n_cols: int | None = None, pad: int = 1, pad_value: float = 1.0) -> np.ndarray:
    """Tile a stack of equally sized images into one 2-D array.

    Parameters
    ----------
    images : array_like, shape (n, h, w)
    n_cols : int, optional
        Tiles per row; default ``ceil(sqrt(n))``.
    pad : int, default 1
        Pixels between tiles and around the grid.
    pad_value : float, default 1.0
        Value of the padding (and of empty cells of the last row).

    Returns
    -------
    ndarray, shape (rows * (h + pad) + pad, n_cols * (w + pad) + pad)
    """
    imgs = np.asarray(images, dtype=np.float64)
    if imgs.ndim != 3 or imgs.shape[0] == 0:
        raise ValueError(f"images must have shape (n, height, width) with n >= 1, got {imgs.shape}")
    n, h, w = imgs.shape
    if n_cols is None:
        n_cols = int(math.ceil(math.sqrt(n)))
    n_cols = _check_n(n_cols, "n_cols")
    n_cols = min(n_cols, n)
    if isinstance(pad, bool) or not isinstance(pad, (numbers.Integral, np.integer)) or pad < 0:
        raise ValueError(f"pad must be a non-negative int, got {pad!r}")
    n_rows = int(math.ceil(n / n_cols))
    grid = np.full((n_rows * (h + pad) + pad, n_cols * (w + pad) + pad), float(pad_value))
    for i in range(n):
        rr, cc = divmod(i, n_cols)
        y0, x0 = pad + rr * (h + pad), pad + cc * (w + pad)
        grid[y0 : y0 + h, x0 : x0 + w] = imgs[i]
    return grid


def _to_uint8(image, scale: int, invert: bool) -> np.ndarray:
    a = np.asarray(image)
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] != 3) or a.size == 0:
        raise ValueError(f"image must have shape (height, width) or (height, width, 3), got {a.shape}")
    scale = _check_n(scale, "scale")
    if a.dtype == np.uint8:
        pix = a.copy()
    else:
        f = np.asarray(a, dtype=np.float64)
        if not np.isfinite(f).all():
            raise ValueError("image values must be finite")
        pix = np.rint(np.clip(f, 0.0, 1.0) * 255.0).astype(np.uint8)
    if invert:
        pix = 255 - pix
    if scale > 1:
        pix = np.repeat(np.repeat(pix, scale, axis=0), scale, axis=1)
    return pix


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image, scale: int = 1, invert: bool = False) -> bytes:
    """Encode an image as PNG bytes (pure numpy + zlib + struct).

    Parameters
    ----------
    image : array_like, shape (h, w) or (h, w, 3)
        Floats in [0, 1] (clipped; 1 is white) or uint8 in 0..255.  A 2-D
        image becomes 8-bit grayscale (PNG colour type 0), a 3-D one 8-bit
        RGB (colour type 2).
    scale : int, default 1
        Enlarge each pixel to a ``scale x scale`` block.
    invert : bool, default False
        Write ``255 - value`` (dark ink on white paper).

    Returns
    -------
    bytes
        Signature, IHDR, one zlib-compressed IDAT (filter type 0 on every
        row), IEND; see the PNG specification (ISO/IEC 15948).
    """
    pix = _to_uint8(image, scale, invert)
    h, w = pix.shape[:2]
    colour_type = 0 if pix.ndim == 2 else 2
    rows = pix.reshape(h, -1)
    raw = np.hstack([np.zeros((h, 1), dtype=np.uint8), rows]).tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", zlib.compress(raw, 9))
        + _png_chunk(b"IEND", b"")
    )


def write_png(path, image, scale: int = 1, invert: bool = False) -> str:
    """Write ``image`` to ``path`` as PNG (see :func:`encode_png`); return the path."""
    data = encode_png(image, scale=scale, invert=invert)
    path = os.fspath(path)
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def encode_svg_image(image, scale: int = 4, invert: bool = False) -> str:
    """Encode a grayscale image as an SVG document of one square per pixel.

    Parameters
    ----------
    image : array_like, shape (h, w)
        Floats in [0, 1] (1 is white) or uint8.
    scale : int, default 4
        Side of a pixel's square.
    invert : bool, default False

    Returns
    -------
    str
        Well-formed SVG; rows of equal pixels are merged into one rectangle.
    """
    pix = _to_uint8(image, 1, invert)
    if pix.ndim != 2:
        raise ValueError(f"image must be 2-D (grayscale) for SVG, got shape {pix.shape}")
    scale = _check_n(scale, "scale")
    h, w = pix.shape
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w * scale}" height="{h * scale}" '
        f'viewBox="0 0 {w * scale} {h * scale}" shape-rendering="crispEdges">',
    ]
    for y in range(h):
        x = 0
        while x < w:
            v = int(pix[y, x])
            x2 = x + 1
            while x2 < w and pix[y, x2] == v:
                x2 += 1
            out.append(
                f'<rect x="{x * scale}" y="{y * scale}" width="{(x2 - x) * scale}" height="{scale}" '
                f'fill="#{v:02x}{v:02x}{v:02x}"/>'
            )
            x = x2
    out.append("</svg>")
    return "\n".join(out) + "\n"


def save_factor_grid(
    phis,
    t: int,
    shape,
    path,
    nodes: Sequence[int] | None = None,
    n_cols: int | None = None,
    pad: int = 1,
    scale: int = 4,
    invert: bool = False,
) -> str:
    """Write the projected factors of layer t as one image grid (PNG or SVG).

    The format follows the file suffix: ``.png`` or ``.svg``.  Each tile is
    one column of :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection)
    reshaped to ``shape`` and scaled to its maximum (see
    :func:`factor_images`); tiles are in node order (call
    :func:`relabel_by_popularity` first for the paper's popularity order).
    Call once per layer to see the factors grow more general with depth.

    Returns
    -------
    str
        The path written.
    """
    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"path must end in .png or .svg, got {path!r}")
    grid = image_grid(factor_images(phis, t, shape, nodes=nodes), n_cols=n_cols, pad=pad)
    if suffix == ".png":
        return write_png(path, grid, scale=scale, invert=invert)
    text = encode_svg_image(grid, scale=scale, invert=invert)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path
