"""Projections of the nodes to the data layer and the node weights (paper Section 2.3.1).

:math:`\\prod_{\\ell \\le t} \\Phi^{(\\ell)}` (eq:projection), the weights
:math:`r^{(t)}` (eq:weight), and the relabelling of every layer's nodes by weight.
"""
from __future__ import annotations

import numpy as np

from pygbn.explore._validate import check_layer, check_phis, check_r


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
    ph = check_phis(phis)
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
    ph = check_phis(phis)
    t = check_layer(t, len(ph))
    if t == 1:
        return ph[0].copy()
    out = np.ascontiguousarray(ph[0])     # the layout of ph[0].copy(), without copying Phi^(1)
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
    ph = check_phis(phis)
    rv = check_r(r, ph)
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
    ph = check_phis(phis)
    rv = check_r(r, ph)
    t = check_layer(t, len(ph))
    w = rv.copy()
    for phi in reversed(ph[t:]):
        w = phi @ w
    return w


def popularity_ranks(weights: np.ndarray) -> np.ndarray:
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
    ph = check_phis(phis)
    rv = check_r(r, ph)
    weights = layer_weights(ph, rv)
    perms = [np.argsort(-w, kind="stable") for w in weights]
    new_phis = [ph[0][:, perms[0]]]
    for t in range(1, len(ph)):
        new_phis.append(ph[t][perms[t - 1]][:, perms[t]])
    return new_phis, rv[perms[-1]], perms
