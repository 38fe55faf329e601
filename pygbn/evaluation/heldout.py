"""Held-out evaluation: the token split and the perplexity of the paper's protocol (Section 4.1)."""
from __future__ import annotations

from typing import Tuple

import numpy as np
import scipy.sparse as sp

import numbers

from pygbn._utils import check_random_state
from pygbn.model.links import BernoulliPoissonLink, Link, PoissonLink

__all__ = ["split_tokens", "score_split", "SPLIT_SEED_TAG", "perplexity_from_sums", "heldout_log_terms",
           "perplexity_from_terms"]

#: mixed into an int ``random_state`` to seed :func:`score_split` (``GBN.score``'s split, and
#: ``pygbn perplexity --seed``'s), so that the split and the chain draw from different streams
SPLIT_SEED_TAG = 0x5EED
#: numpy's multivariate hypergeometric draw (method "marginals") takes fewer tokens than this
_MAX_SPLIT_TOKENS = 10**9


def split_tokens(X, train_fraction: float = 0.3, random_state=None) -> Tuple[sp.csr_matrix, sp.csr_matrix]:
    """Split each document's tokens into a training and a held-out part.

    As in the paper's protocol (Section 4.1), ``floor(train_fraction * n_j + 0.5)``
    tokens of document ``j`` (``train_fraction * n_j`` rounded half up, as
    the authors' MATLAB ``round``, not Python's half-to-even ``round``: 5 of
    15 tokens at 0.3; at least one, when it has any) are drawn uniformly
    without replacement for training and the rest are held out.
    The split is a multivariate hypergeometric draw on each row's counts
    (numpy's, which takes fewer than 10**9 tokens: a row of more, in more
    than one cell, is a ValueError).

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
        elif n >= _MAX_SPLIT_TOKENS:
            raise ValueError(f"X's row {j} holds {n} tokens in {hi - lo} cells: split_tokens splits a "
                             "document of fewer than 10**9 tokens (or of one cell), "
                             "the limit of numpy's multivariate hypergeometric draw")
        else:
            train[lo:hi] = rng.multivariate_hypergeometric(row, k, method="marginals")
    X_train = sp.csr_matrix((train, M.indices.copy(), M.indptr.copy()), shape=M.shape)
    X_held = sp.csr_matrix((counts - train, M.indices.copy(), M.indptr.copy()), shape=M.shape)
    X_train.eliminate_zeros()
    X_held.eliminate_zeros()
    return X_train, X_held


def _split_generator(random_state) -> np.random.Generator:
    """The generator of :func:`score_split`: an int seed ``s`` gives
    ``default_rng([s, SPLIT_SEED_TAG])`` (a SeedSequence or a list of ints gets the tag
    appended); a Generator is used (and advanced) as is."""
    rng = check_random_state(random_state)  # validates
    if isinstance(random_state, (numbers.Integral, np.integer)):
        return np.random.default_rng([int(random_state), SPLIT_SEED_TAG])
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(np.random.SeedSequence(
            random_state.entropy, spawn_key=tuple(random_state.spawn_key) + (SPLIT_SEED_TAG,)))
    if isinstance(random_state, (list, tuple, np.ndarray)):
        return np.random.default_rng([int(v) for v in np.ravel(random_state)] + [SPLIT_SEED_TAG])
    return rng


def score_split(Y: sp.csr_matrix, link: Link, train_fraction: float,
                random_state=None) -> Tuple[sp.csr_matrix, sp.csr_matrix]:
    """The observed and held-out parts of ``Y`` that :meth:`pygbn.GBN.score` scores.

    Counts and binary data are split by tokens (:func:`split_tokens`); for
    real-valued data (``link="prg"``) each non-zero entry is observed or held
    out whole.  The split draws from a stream of its own: an int seed ``s``
    gives ``numpy.random.default_rng([s, SPLIT_SEED_TAG])`` (as ``pygbn
    perplexity --seed s``), so the chain can use ``s`` itself.

    Parameters
    ----------
    Y : csr_matrix
        Data already validated by ``link``.
    link : Link
    train_fraction : float in (0, 1]
    random_state : None, int, array of ints, SeedSequence, BitGenerator or Generator

    Returns
    -------
    observed, heldout : csr_matrix
        Both validated by ``link``; ``observed + heldout == Y``.
    """
    rng = _split_generator(random_state)
    if isinstance(link, (PoissonLink, BernoulliPoissonLink)):
        observed, held = split_tokens(Y, train_fraction, rng)
    else:
        pattern = Y.copy()
        pattern.data[:] = 1.0
        obs_mask, held_mask = split_tokens(pattern, train_fraction, rng)
        observed, held = Y.multiply(obs_mask), Y.multiply(held_mask)
    return link.check_data(observed, "X"), link.check_data(held, "X")


def perplexity_from_sums(heldout_values: np.ndarray, indptr: np.ndarray, rate_sums: np.ndarray,
                         norm_sums: np.ndarray) -> float:
    """Held-out perplexity from a predictive averaged over posterior samples (Section 4.1).

    The predictive probability of term v in document j is
    ``q_vj = sum_s rate_s[vj] / sum_s norm_s[j]`` with
    ``rate_s[vj] = sum_k phi_vk theta_kj`` and ``norm_s[j] = sum_v rate_s[vj]``
    of sample s; the perplexity of held-out counts ``y`` is
    ``exp(-sum_vj y_vj ln q_vj / sum_vj y_vj)``.

    Parameters
    ----------
    heldout_values : ndarray of shape (nnz,)
        The held-out counts ``y``, cell by cell in CSR order.
    indptr : ndarray of int of shape (n_docs + 1,)
        CSR row pointers of those cells.
    rate_sums : ndarray of shape (nnz,)
        ``sum_s rate_s`` of each held-out cell.
    norm_sums : ndarray of shape (n_docs,)
        ``sum_s norm_s`` of each document.

    Returns
    -------
    float
        The perplexity (NaN when there is no held-out cell).
    """
    if heldout_values.size == 0:
        return float("nan")
    return perplexity_from_terms(heldout_log_terms(heldout_values, indptr, rate_sums, norm_sums),
                                 np.sum(heldout_values))


def heldout_log_terms(heldout_values: np.ndarray, indptr: np.ndarray, rate_sums: np.ndarray,
                      norm_sums: np.ndarray) -> np.ndarray:
    """The per-cell terms ``y_vj ln q_vj`` of :func:`perplexity_from_sums` (same arguments).

    Each term depends on its own document only, so documents spread over
    several machines give exactly the terms of one process.
    """
    doc = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    with np.errstate(divide="ignore"):
        logp = np.log(rate_sums) - np.log(norm_sums[doc])
    return heldout_values * logp


def perplexity_from_terms(log_terms: np.ndarray, n_tokens: float) -> float:
    """``exp(-sum(log_terms) / n_tokens)``: the perplexity from the per-cell terms of
    :func:`heldout_log_terms` (all documents' cells, in CSR order, summed in one
    call so that the rounding is that of one process) and the held-out token count."""
    return float(np.exp(-np.sum(log_terms) / n_tokens))
