"""The most probable data dimensions of each node or generated document (paper Section 2.3.1)."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_int
from pygbn.explore._validate import check_layer, check_phis, check_vocab


def top_indices_of_columns(mat: np.ndarray, n: int) -> np.ndarray:
    """Row indices of the n largest entries of each column, largest first, ties by lower index.

    Equivalent to ``np.argsort(-mat, axis=0, kind="stable")[:n].T``, but only
    the candidates at or above each column's n-th largest value are sorted.
    """
    n_rows, n_cols = mat.shape
    n = min(n, n_rows)
    if 4 * n >= n_rows:
        return np.argsort(-mat, axis=0, kind="stable")[:n].T.copy()
    out = np.empty((n_cols, n), dtype=np.intp)
    # a few columns at a time: the transposed, negated copy and its partition take
    # _BLOCK_ENTRIES entries each, not three times the size of mat
    step = max(1, _BLOCK_ENTRIES // n_rows)
    for c0 in range(0, n_cols, step):
        neg = -np.ascontiguousarray(mat[:, c0:c0 + step].T)  # one row per column of mat
        thresh = np.partition(neg, n - 1, axis=1)[:, n - 1]
        for i, row in enumerate(neg):
            idx = np.flatnonzero(row <= thresh[i])
            out[c0 + i] = idx[np.argsort(row[idx], kind="stable")[:n]]
    return out


#: entries of the blocks :func:`top_indices_of_columns` copies at a time
_BLOCK_ENTRIES = 1 << 20


def top_term_indices(phis, t: int, n: int = 10) -> np.ndarray:
    """Indices of the n most probable data dimensions of each node of layer t.

    Node k's dimensions are ranked by column k of the projection
    :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection); ties go to
    the lower index.

    Returns
    -------
    ndarray of int, shape (K_t, min(n, V))
        Row k lists node k's top dimensions, most probable first.
    """
    return top_term_indices_by_layer(phis, [t], n)[t]


def top_term_indices_by_layer(phis, layers, n: int = 10) -> dict:
    """``{t: top_term_indices(phis, t, n)}`` for the layer numbers ``layers``, with one walk
    down the chain of products (the projection of layer t is that of layer t-1 times
    Phi^(t)): T - 1 products for all layers instead of T (T - 1) / 2.  The same arrays."""
    n = check_int(n, "n", 1)
    ph = check_phis(phis)
    layers = list(layers)      # read twice below: an iterator would give {} (silently)
    wanted = {check_layer(t, len(ph)) for t in layers}
    out = {}
    proj = np.ascontiguousarray(ph[0])      # the products of project(): the same numbers
    for t in range(1, max(wanted, default=0) + 1):
        if t > 1:
            proj = proj @ ph[t - 1]
        if t in wanted:
            out[t] = top_indices_of_columns(proj, n)
    return {t: out[t] for t in layers}


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
    ph = check_phis(phis)
    words = check_vocab(vocab, ph[0].shape[0])
    idx = top_term_indices(ph, t, n)
    return [[words[i] for i in row] for row in idx]


def generated_top_terms(counts, vocab: Sequence[str], n: int = 10) -> list[list[str]]:
    """The top-n terms of each generated (or observed) document.

    Parameters
    ----------
    counts : array_like or sparse matrix, shape (n_documents, V)
        One document per row: its counts, or its Poisson rates
        ``Phi^(1) theta^(1)_j`` (how the paper's Section 4.1 ranks the words
        of the synthetic documents drawn top-down through the network,
        eq:PGBN; :meth:`pygbn.model.Network.generate_top_terms`).
    vocab : sequence of str, length V
    n : int, default 10

    Returns
    -------
    list of list of str
        For each document, its terms with a positive value, largest first
        (ties by lower column index), at most n of them.
    """
    n = check_int(n, "n", 1)
    if sp.issparse(counts):
        mat = sp.csr_matrix(counts, copy=True)
    else:
        mat = np.asarray(counts)
    if mat.ndim != 2:
        raise ValueError(f"counts must be 2-D (documents x terms), got shape {mat.shape}")
    if mat.dtype.kind not in "biuf":
        raise ValueError(f"counts must hold real numbers, got dtype {mat.dtype}")
    words = check_vocab(vocab, mat.shape[1])
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
