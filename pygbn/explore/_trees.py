"""Trees and subnetworks grown down a network (paper Sections 2.3.2 and 2.3.3).

Node k of layer t is linked to node k' of layer t-1 when
:math:`\\Phi^{(t)}(k', k) > \\tau_t / K_{t-1}`.
"""
from __future__ import annotations

import logging
import numbers
from typing import Iterable, Mapping, Sequence, Union

import numpy as np

from pygbn._utils import check_int
from pygbn.explore._graph import Subnetwork
from pygbn.explore._nodes import Edge, Node
from pygbn.explore._terms import top_indices_of_columns
from pygbn.explore._validate import check_layer, check_phis, check_r, check_tau, check_vocab
from pygbn.explore._weights import layer_weights, popularity_ranks

logger = logging.getLogger("pygbn")

TauLike = Union[float, Sequence[float], Mapping[int, float]]


def check_roots(roots, widths) -> list[tuple[int, int]]:
    """Return the distinct ``(layer, node)`` root keys, in order, after checking each one."""
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
        layer = check_layer(layer, len(widths), name="a root's layer")
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
    ph = check_phis(phis)
    rv = check_r(r, ph)
    n_terms = check_int(n_terms, "n_terms", 1)
    n_layers = len(ph)
    widths = tuple(p.shape[1] for p in ph)
    root_keys = check_roots(roots, widths)
    taus = check_tau(tau, n_layers)
    words = check_vocab(vocab, ph[0].shape[0]) if vocab is not None else None

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
    ranks = [popularity_ranks(w) for w in weights]
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
        top = top_indices_of_columns(cols, n_terms)
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
        The network (see the :mod:`pygbn.explore` docstring).
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
