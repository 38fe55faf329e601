"""Links between the observations and the layer-one latent counts.

A ``Link`` turns observations ``Y`` (samples x features) into the layer-one
latent counts ``x^(1)`` that the rest of the network explains with
``x^(1) ~ Pois(Phi^(1) theta^(1))`` (paper Section 2.2):

* :class:`PoissonLink` -- counts; the counts are the latent counts (eq:PFA).
* :class:`BernoulliPoissonLink` -- binary data ``b = 1(x >= 1)``; latent counts
  zero where ``b = 0`` and zero-truncated Poisson where ``b = 1`` (eq:Ber-PGBN).
* :class:`PoissonRandomizedGammaLink` -- nonnegative reals
  ``y ~ Gam(x, 1/a_j)``; latent counts zero where ``y = 0`` and truncated Bessel
  where ``y > 0`` (eq:Gam-PGBN), with the per-sample rate ``a_j`` (eq:c_g).
"""
from __future__ import annotations

import math
from typing import Tuple

import numpy as np
import scipy.sparse as sp
from scipy.special import gammaln, i1e

from pygbn.model._latent import LatentMode
from pygbn.model.layer import check_parameter

__all__ = [
    "Link",
    "PoissonLink",
    "BernoulliPoissonLink",
    "PoissonRandomizedGammaLink",
    "get_link",
    "as_csr",
]

#: count data (link="poisson") must add up to less than this (the samplers' counters are
#: int64; every count must be below 2**53 too, so that float64 holds it exactly)
MAX_COUNT_TOTAL = 2.0**63

#: the most features (columns) of the data: the kernels' term indices are int32
MAX_FEATURES = 2**31 - 1

# the latent-count codes of pygbn.inference._blocked (defined once, in _latent.pxd)
LATENT_COUNTS = LatentMode.LATENT_COUNTS
LATENT_CRT = LatentMode.LATENT_CRT
LATENT_TRUNC_POISSON = LatentMode.LATENT_TRUNC_POISSON
LATENT_TRUNC_BESSEL = LatentMode.LATENT_TRUNC_BESSEL


def as_csr(X, name: str = "X", dtype=np.float64) -> sp.csr_matrix:
    """Convert ``X`` (dense or any scipy.sparse format) to a canonical CSR matrix.

    Duplicates are summed, explicit zeros removed and indices sorted.  Raises
    ``ValueError`` for non-2-D input, non-numeric data, NaN or inf, and more
    than 2**31 - 1 columns (:data:`MAX_FEATURES`).  ``X``
    itself is never changed; a CSR ``X`` that is already canonical shares its
    arrays with the result (its values too when they have type ``dtype``):
    pygbn reads the data and never writes it, so a fit holds one copy at most.
    """
    if sp.issparse(X):
        if X.ndim != 2:    # scipy's sparse arrays may be 1-D (a coo_array of a vector)
            raise ValueError(f"{name} must be 2-D (samples x features), got shape {X.shape}")
        M = X.tocsr()      # X itself when it is CSR
        if M.dtype.kind not in "biuf":
            raise ValueError(f"{name} must hold numbers, got dtype {M.dtype}")
        if M.dtype != dtype:      # new values, the same index arrays
            M = sp.csr_matrix((M.data.astype(dtype), M.indices, M.indptr), shape=M.shape)
        # a CSR X shares its index arrays with M even after the cast above (scipy keeps
        # them as views, not the same objects): sorting or summing M in place would
        # reorder X's indices under X's unsorted values
        shares_x = X.format == "csr"
        if (shares_x or not _writeable(M)) and not (M.has_canonical_format and M.data.all()):
            M = M.copy()          # the changes below must not reach X (nor fail on read-only arrays)
    else:
        try:
            arr = np.asarray(X)
        except Exception as exc:  # pragma: no cover - defensive
            raise ValueError(f"{name} could not be converted to an array: {exc}") from None
        if arr.dtype == object:
            raise ValueError(f"{name} must be a numeric array or sparse matrix, got an object array")
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} must hold numbers, got dtype {arr.dtype}")
        if arr.ndim != 2:
            raise ValueError(f"{name} must be 2-D (samples x features), got shape {arr.shape}")
        if arr.dtype == np.float16:       # a dtype scipy.sparse does not take
            arr = arr.astype(dtype)
        # the non-zeros first, then their values cast: never a dense float64 copy of X
        M = sp.csr_matrix(arr)
        if M.dtype != dtype:
            M = sp.csr_matrix((M.data.astype(dtype), M.indices, M.indptr), shape=M.shape)
    if M.shape[1] > MAX_FEATURES:
        raise ValueError(f"{name} has {M.shape[1]} features (columns); pygbn takes at most 2**31 - 1 "
                         "(its kernels index terms in int32)")
    canonical = M.has_canonical_format and M.data.all()
    if not canonical:
        M.sum_duplicates()
    if M.data.size and not np.isfinite(M.data).all():
        bad = M.data[~np.isfinite(M.data)][0]
        raise ValueError(f"{name} contains a non-finite value ({bad})")
    if not canonical:
        M.eliminate_zeros()
        M.sort_indices()
    return M


def _writeable(M: sp.csr_matrix) -> bool:
    """Whether the arrays of ``M`` can be written (not read-only views or memory maps)."""
    return M.data.flags.writeable and M.indices.flags.writeable and M.indptr.flags.writeable


def count_total(values: np.ndarray) -> float:
    """The sum of the counts ``values``: numpy's, or ``math.fsum``'s (exact, then rounded)
    when that passes 2**62 (near :data:`MAX_COUNT_TOTAL`)."""
    total = float(np.sum(values))
    return math.fsum(values) if total >= 2.0**62 else total


def check_count_total(total: float, name: str = "X") -> None:
    """ValueError unless count data adding up to ``total`` is below :data:`MAX_COUNT_TOTAL`:
    the samplers' counters (a document's, a term's, a factor's) are int64 and hold the total."""
    if total >= MAX_COUNT_TOTAL:
        raise ValueError(f"{name}'s counts add up to {total:.17g}: the samplers' 64-bit counters hold "
                         "totals below 2**63")


class Link:
    """Base class: how observations relate to the layer-one latent counts."""

    #: canonical name used by the estimator and in saved models
    name: str = "base"
    #: code of the latent-count draw in the blocked kernel
    latent_mode: int = LATENT_COUNTS
    #: whether the collapsed layer-one update applies (counts only)
    collapsible: bool = False
    #: numpy dtype of generated data
    data_kind: str = "counts"

    def check_data(self, X, name: str = "X") -> sp.csr_matrix:
        """Validate observations and return them as CSR (float64 values)."""
        raise NotImplementedError

    def check_data_total(self, X, name: str = "X") -> Tuple[sp.csr_matrix, float]:
        """``X`` validated as :meth:`check_data` does (``name`` in its messages), and the
        sum of its values (:func:`count_total`), summed once (DaskGBN's workers report
        each input partition's)."""
        M = self.check_data(X, name)
        return M, count_total(M.data)

    # per-sample auxiliary parameters (a_j for the PRG link) -------------
    def init_aux(self, Y: sp.csr_matrix, rng: np.random.Generator, hyper) -> np.ndarray:
        """Initial per-sample auxiliary parameters (empty when the link has none)."""
        return np.empty(0, dtype=np.float64)

    def aux_conditional(self, Y: sp.csr_matrix, latent_totals: np.ndarray, hyper):
        """Gamma shape and rate of each sample's auxiliary parameter given the
        latent counts (``None`` when the link has none)."""
        return None

    def summarize_aux(self, aux: np.ndarray) -> None:
        """Keep what a fitted network needs of the auxiliary parameters."""
        return None

    def test_aux(self, n: int) -> np.ndarray:
        """Starting auxiliary parameters for ``n`` new samples."""
        return np.empty(0, dtype=np.float64)

    # likelihood ---------------------------------------------------------------
    def log_density_shifted(self, values: np.ndarray, rates: np.ndarray, aux: np.ndarray) -> np.ndarray:
        """``ln p(y | lambda) + lambda`` of non-zero observations ``y = values``.

        ``rates`` are the Poisson rates ``lambda = sum_k phi_vk theta_kj`` of
        the same cells and ``aux`` the cells' per-sample parameters (``a_j``;
        ignored by links without one).  Under every link a zero has
        probability ``exp(-lambda)`` (no latent count), so the log-likelihood
        of a whole sample is the sum of these terms over its non-zero cells
        minus ``sum_v lambda_vj``.
        """
        raise NotImplementedError

    def n_tokens(self, Y: sp.csr_matrix) -> float:
        """What a log-likelihood "per token" divides by: the count total
        (Poisson) or the number of non-zero observations (other links)."""
        return float(Y.nnz)

    # generation -------------------------------------------------------------
    def sample_observations(self, rates: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Observations given Poisson rates ``Phi^(1) theta^(1)`` (samples x features)."""
        raise NotImplementedError

    def to_dict(self) -> dict:
        """The link as a dict: its ``name`` and its parameters (what a model file stores)."""
        return {"name": self.name}

    @classmethod
    def from_dict(cls, d: dict) -> "Link":
        """The link a :meth:`to_dict` dict describes: of the class ``d["name"]`` names, with
        ``d``'s parameters (``Link.from_dict(link.to_dict()) == link`` for every link)."""
        link = get_link(d["name"])
        if type(link).from_dict.__func__ is not Link.from_dict.__func__:
            return type(link).from_dict(d)      # a link with parameters reads them itself
        return link

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None  # mutable parameters


class PoissonLink(Link):
    """Counts: ``x^(1)_j ~ Pois(Phi^(1) theta^(1)_j)`` (paper eq:PFA).

    The observed counts are the latent counts; layer one may be updated by the
    collapsed sampler (eq:z) or the blocked one (eq:step1).  :meth:`check_data`
    takes nonnegative integers (integral floats too) below 2**53 that add up
    to less than 2**63 (the samplers' counters are int64).
    """

    name = "poisson"
    latent_mode = LATENT_COUNTS
    collapsible = True
    data_kind = "counts"

    def check_data(self, X, name: str = "X") -> sp.csr_matrix:
        return self.check_data_total(X, name)[0]

    def check_data_total(self, X, name: str = "X") -> Tuple[sp.csr_matrix, float]:
        """``X`` validated as :meth:`check_data` does (``name`` in its messages), and the
        counts' total, which it checks (summed once)."""
        M = as_csr(X, name)
        total = 0.0
        if M.data.size:
            if (M.data < 0).any():
                bad = M.data[M.data < 0][0]
                raise ValueError(f"{name} must hold nonnegative counts, found {bad:g}")
            frac = M.data != np.floor(M.data)
            if frac.any():
                raise ValueError(
                    f"{name} must hold integer counts, found {float(M.data[frac][0])!r} "
                    "(use link='prg' for nonnegative real data)"
                )
            if M.data.max() >= 2.0**53:
                raise ValueError(f"{name} holds a count too large to represent exactly ({M.data.max():.17g}; "
                                 "the largest is 2**53 - 1)")
            total = count_total(M.data)
            check_count_total(total, name)
        return M, total

    def log_density_shifted(self, values, rates, aux):
        """``y ln(lambda) - ln(y!)``: the Poisson log-probability plus lambda (eq:PFA)."""
        return values * np.log(rates) - gammaln(values + 1.0)

    def n_tokens(self, Y):
        return float(Y.data.sum())

    def sample_observations(self, rates, rng):
        return rng.poisson(rates).astype(np.int64, copy=False)     # int64 already: no second copy


class BernoulliPoissonLink(Link):
    """Binary data: ``b = 1(x >= 1)``, ``x ~ Pois(Phi^(1) theta^(1))`` (paper eq:BerPo).

    Given the rates, latent counts are zero where ``b = 0`` and
    ``Pois_+(sum_k phi_vk theta_kj)`` where ``b = 1`` (eq:Ber-PGBN), so the
    cost grows with the number of ones only.
    """

    name = "bernoulli"
    latent_mode = LATENT_TRUNC_POISSON
    collapsible = False
    data_kind = "binary"

    def check_data(self, X, name: str = "X") -> sp.csr_matrix:
        M = as_csr(X, name)
        if M.data.size and not np.all(M.data == 1.0):
            bad = float(M.data[M.data != 1.0][0])
            raise ValueError(
                f"{name} must be binary (0/1 or bool) for link='bernoulli', found {bad!r}; "
                "threshold it yourself if that is what you mean"
            )
        return M

    def log_density_shifted(self, values, rates, aux):
        """``ln(1 - exp(-lambda)) + lambda``: a one has probability ``1 - exp(-lambda)`` (eq:BerPo)."""
        return np.log(-np.expm1(-rates)) + rates

    def sample_observations(self, rates, rng):
        # P(b = 1) = 1 - exp(-rate)
        return (rng.random(rates.shape) < -np.expm1(-rates)).astype(np.int64)


class PoissonRandomizedGammaLink(Link):
    """Nonnegative reals: ``y ~ Gam(x, 1/a_j)``, ``x ~ Pois(Phi^(1) theta^(1))``.

    The Poisson randomized gamma (PRG) link of the paper (Section 2.1.3 and
    eq:Gam-PGBN): latent counts are zero where ``y = 0`` and truncated Bessel
    ``Bessel_{-1}(2 sqrt(a_j y_vj sum_k phi_vk theta_kj))`` where ``y > 0``;
    ``a_j ~ Gam(e0 + sum_v x_vj, 1/(f0 + sum_v y_vj))`` (eq:c_g).

    Parameters
    ----------
    a_median : float, default 1.0
        Median of the training samples' ``a_j`` (set by fitting); new samples
        start from it and generated data use it.  Positive and at most
        :data:`pygbn.io.MAX_PARAMETER` (as in a model file), else ValueError.
    """

    name = "prg"
    latent_mode = LATENT_TRUNC_BESSEL
    collapsible = False
    data_kind = "real"

    def __init__(self, a_median: float = 1.0):
        self.a_median = check_parameter(a_median, "a_median")

    def check_data(self, X, name: str = "X") -> sp.csr_matrix:
        M = as_csr(X, name)
        if M.data.size and (M.data < 0).any():
            bad = M.data[M.data < 0][0]
            raise ValueError(f"{name} must be nonnegative for link='prg', found {bad:g}")
        return M

    def init_aux(self, Y, rng, hyper):
        return np.ones(Y.shape[0], dtype=np.float64)

    def aux_conditional(self, Y, latent_totals, hyper):
        """eq:c_g: ``a_j ~ Gam(e0 + sum_v x_vj, 1 / (f0 + sum_v y_vj))``; returns (shape, rate)."""
        ysum = np.asarray(Y.sum(axis=1), dtype=np.float64).ravel()
        return hyper.e0 + np.asarray(latent_totals, dtype=np.float64), hyper.f0 + ysum

    def summarize_aux(self, aux):
        if aux.size:
            self.a_median = float(np.median(aux))

    def test_aux(self, n):
        return np.full(n, self.a_median, dtype=np.float64)

    def log_density_shifted(self, values, rates, aux):
        """The PRG density of ``y > 0`` plus lambda (Section 2.1.3).

        ``p(y) = sum_{n>=1} Pois(n; lambda) Gam(y; n, 1/a)
        = exp(-lambda - a y) sqrt(lambda a / y) I_1(2 sqrt(lambda a y))``
        (a density in y; a zero has probability ``exp(-lambda)``), evaluated as
        ``-a y + ln(lambda) + ln(a) + ln(2 I_1(z) / z)`` with
        ``z = 2 sqrt(lambda) sqrt(a) sqrt(y)`` and ``I_1(z) = i1e(z) e^z``: no
        product or quotient of the three can overflow or underflow (a
        subnormal ``y`` gives about ``ln(lambda a)``), and ``i1e`` stays
        accurate for every ``z`` (scipy's ``ive(1, z)`` is NaN from
        ``z`` ~ 1e10).
        """
        z = 2.0 * np.sqrt(rates) * np.sqrt(aux) * np.sqrt(values)
        # 2 I_1(z) / z -> 1 as z -> 0 (its log is z**2 / 8 + ...): below 1e-100 it is 1 in float64
        zs = np.maximum(z, 1e-100)
        return -aux * values + np.log(rates) + np.log(aux) + np.log(2.0 * i1e(zs) / zs) + zs

    def sample_observations(self, rates, rng):
        x = rng.poisson(rates)
        y = np.zeros(rates.shape, dtype=np.float64)
        pos = x > 0
        y[pos] = rng.standard_gamma(x[pos]) / self.a_median
        return y

    def to_dict(self):
        return {"name": self.name, "a_median": self.a_median}

    @classmethod
    def from_dict(cls, d):
        return cls(a_median=d.get("a_median", 1.0))

    def __repr__(self):
        return f"PoissonRandomizedGammaLink(a_median={self.a_median:g})"


_LINKS = {
    "poisson": PoissonLink,
    "counts": PoissonLink,
    "pgbn": PoissonLink,
    "bernoulli": BernoulliPoissonLink,
    "binary": BernoulliPoissonLink,
    "bernoulli-poisson": BernoulliPoissonLink,
    "berpo": BernoulliPoissonLink,
    "prg": PoissonRandomizedGammaLink,
    "poisson-randomized-gamma": PoissonRandomizedGammaLink,
    "gamma": PoissonRandomizedGammaLink,
    "real": PoissonRandomizedGammaLink,
}


def get_link(link) -> Link:
    """Return a Link instance from a name (``"poisson"``, ``"bernoulli"``, ``"prg"``
    or an alias) or a Link instance (returned as is)."""
    if isinstance(link, Link):
        return link
    if isinstance(link, str) and link.lower() in _LINKS:
        return _LINKS[link.lower()]()
    raise ValueError(
        f"link must be one of 'poisson', 'bernoulli', 'prg' (or a Link instance), got {link!r}"
    )
