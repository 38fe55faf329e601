"""Held-out evaluation: the token split of the paper's perplexity protocol."""
from __future__ import annotations

from typing import Tuple

import numpy as np
import scipy.sparse as sp

from pygbn._utils import check_random_state
from pygbn.model.links import PoissonLink

__all__ = ["split_tokens", "perplexity_from_rates"]


def split_tokens(X, train_fraction: float = 0.3, random_state=None) -> Tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split each document's tokens into a training and a held-out part.

    As in the paper's protocol (Section 4.1), ``round(train_fraction * n_j)``
    tokens of document ``j`` (at least one, when it has any) are drawn
    uniformly without replacement for training and the rest are held out.
    The split is a multivariate hypergeometric draw on each row's counts.

    Parameters
    ----------
    X : array-like or sparse of shape (n_docs, n_terms)
        Nonnegative integer counts.
    train_fraction : float in (0, 1], default=0.3
    random_state : None, int, SeedSequence or Generator

    Returns
    -------
    X_train, X_heldout : csr_matrix of int64
        ``X_train + X_heldout == X``.
    """
    if isinstance(train_fraction, bool) or not isinstance(train_fraction, (int, float, np.floating)) \
            or not (0.0 < float(train_fraction) <= 1.0):
        raise ValueError(f"train_fraction must be in (0, 1], got {train_fraction!r}")
    rng = check_random_state(random_state)
    M = PoissonLink().check_data(X, "X")
    counts = M.data.astype(np.int64)
    train = np.zeros_like(counts)
    for j in range(M.shape[0]):
        lo, hi = M.indptr[j], M.indptr[j + 1]
        if hi == lo:
            continue
        row = counts[lo:hi]
        n = int(row.sum())
        k = max(1, int(np.floor(train_fraction * n + 0.5)))
        k = min(k, n)
        if hi - lo == 1:
            train[lo] = k
        else:
            train[lo:hi] = rng.multivariate_hypergeometric(row, k, method="marginals")
    X_train = sp.csr_matrix((train, M.indices.copy(), M.indptr.copy()), shape=M.shape)
    X_held = sp.csr_matrix((counts - train, M.indices.copy(), M.indptr.copy()), shape=M.shape)
    X_train.eliminate_zeros()
    X_held.eliminate_zeros()
    return X_train, X_held


def perplexity_from_rates(heldout, rates) -> float:
    """Perplexity ``exp(-sum y ln(q) / sum y)`` of held-out counts ``y`` under
    per-document word probabilities ``q`` (dense array, rows summing to one)."""
    H = PoissonLink().check_data(heldout, "heldout")
    rates = np.asarray(rates, dtype=np.float64)
    if rates.shape != H.shape:
        raise ValueError(f"rates must have shape {H.shape}, got {rates.shape}")
    rows = np.repeat(np.arange(H.shape[0]), np.diff(H.indptr))
    q = rates[rows, H.indices]
    return float(np.exp(-np.sum(H.data * np.log(q)) / H.data.sum()))
