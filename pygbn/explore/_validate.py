"""Argument checks shared by the :mod:`pygbn.explore` modules.

Every public function of :mod:`pygbn.explore` validates its arguments here and
raises :class:`ValueError` naming the argument and the bad value; the code
after the checks trusts its input.
"""
from __future__ import annotations

import math
import numbers
from typing import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn._utils import LOOSE_SIMPLEX_TOLERANCE, real_array
from pygbn._utils import check_vocab  # noqa: F401 (used by the explorers from here)


def as_real_array(value, name: str) -> np.ndarray:
    """``value`` as a float64 array (:func:`pygbn._utils.real_array`: no copy of a float64
    one); ValueError naming ``name`` for what is not an array of real numbers (text, a
    ragged nesting, complex values, whose imaginary part numpy's cast would drop with only
    a warning)."""
    a = real_array(value)
    if a is not None:
        return a
    try:
        dtype = np.asarray(value).dtype
    except (TypeError, ValueError):        # a ragged nesting of lists
        raise ValueError(f"{name} must be an array of real numbers, got a ragged "
                         f"{type(value).__name__}") from None
    raise ValueError(f"{name} must hold real numbers, got dtype {dtype}")


def check_phis(phis) -> list[np.ndarray]:
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
        a = as_real_array(phi, f"phis[{t - 1}] (Phi^({t}))")
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
        atol = LOOSE_SIMPLEX_TOLERANCE      # float32 precision; a Network renormalises such columns
        bad = np.flatnonzero(np.abs(sums - 1.0) > atol)
        if bad.size:
            raise ValueError(
                f"every column of phis[{t - 1}] (Phi^({t})) must sum to 1 (within {atol:g}); column "
                f"{int(bad[0])} sums to {float(sums[bad[0]])!r}"
            )
        out.append(a)
    return out


def check_r(r, phis: list[np.ndarray]) -> np.ndarray:
    """Validate the top layer's shape vector against the (checked) ``phis``."""
    a = as_real_array(r, "r")
    k_top = phis[-1].shape[1]
    if a.ndim != 1 or a.shape[0] != k_top:
        raise ValueError(f"r must have shape ({k_top},) (the top layer's width), got shape {a.shape}")
    if not np.isfinite(a).all() or (a < 0).any():
        raise ValueError("r must be finite and non-negative")
    return a


def check_layer(t, n_layers: int, name: str = "t") -> int:
    """Return the layer number ``t`` as an int after checking ``1 <= t <= n_layers``."""
    if isinstance(t, bool) or not isinstance(t, (numbers.Integral, np.integer)):
        raise ValueError(f"{name} must be an int layer number in 1..{n_layers}, got {t!r}")
    if not 1 <= int(t) <= n_layers:
        raise ValueError(f"{name} must be a layer number in 1..{n_layers}, got {t!r}")
    return int(t)


def _check_one_tau(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"tau{where} must be a non-negative number, got {v!r}")
    v = float(v)
    if not math.isfinite(v) or v < 0:
        raise ValueError(f"tau{where} must be a finite non-negative number, got {v!r}")
    return v


def check_tau(tau, n_layers: int) -> tuple[float, ...]:
    """Return (tau_1, ..., tau_T); tau_1 is unused (layer one has no hidden children)."""
    if isinstance(tau, Mapping):
        vals = [3.0] * n_layers
        for key, v in tau.items():
            t = check_layer(key, n_layers, name="a key of tau")
            vals[t - 1] = _check_one_tau(v, f"[{key}]")
        return tuple(vals)
    if isinstance(tau, np.ndarray) and tau.ndim == 0:
        tau = tau[()]   # a 0-d array is a scalar
    if isinstance(tau, (Sequence, np.ndarray)) and not isinstance(tau, (str, bytes)):
        vals = list(np.asarray(tau, dtype=object).ravel()) if isinstance(tau, np.ndarray) else list(tau)
        if len(vals) != n_layers:
            raise ValueError(
                f"tau as a sequence must hold one value per layer (tau_1..tau_{n_layers}, "
                f"tau_1 unused), got {len(vals)} values"
            )
        return tuple(_check_one_tau(v, f"[{i}]") for i, v in enumerate(vals))
    v = _check_one_tau(tau, "")
    return tuple([v] * n_layers)


def check_positive_numbers(**values) -> None:
    """Check that every keyword value is a finite real number > 0 (not a bool)."""
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")
