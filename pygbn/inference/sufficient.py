"""What the local (per-document) half of a Gibbs iteration hands to the global half.

:meth:`pygbn.inference.gibbs.GibbsSampler.local_upward` returns a
:class:`SufficientStats`; :meth:`~pygbn.inference.gibbs.GibbsSampler.update_globals_from`
takes one, or the :meth:`SufficientStats.combine` of several workers' (the
distributed chain, :mod:`pygbn.inference.partition`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from pygbn.inference.term_counts import sum_counts

__all__ = ["SufficientStats"]


@dataclass
class SufficientStats:
    """What the global update needs from the documents (see GibbsSampler.local_upward).

    Attributes
    ----------
    counts : list
        ``counts[t-1]`` = x^(t)_{v.k}, the latent counts of layer t summed over
        the documents (``None`` for a collapsed layer one, whose counts live in
        the sampler).
    x_top : ndarray of int64
        The top layer's tables summed over the documents.
    sum_L_blocks : ndarray
        ``sum_j L_j^(T+1)`` per document block, in block order (summed in that
        order, so the total does not depend on how blocks were grouped).
    first_block : int
        Index of the first block these statistics cover.
    """

    counts: List[Optional[np.ndarray]]
    x_top: Optional[np.ndarray]
    sum_L_blocks: np.ndarray
    first_block: int = 0

    @staticmethod
    def combine(parts: Sequence["SufficientStats"]) -> "SufficientStats":
        """Sum the statistics of disjoint groups of blocks (exact: integer sums,
        and the per-block float sums re-ordered by block; ValueError where a layer's
        counts add up to 2**63 or more: :func:`~pygbn.inference.term_counts.sum_counts`)."""
        parts = sorted(parts, key=lambda p: p.first_block)
        counts = []
        for t in range(len(parts[0].counts)):
            cs = [p.counts[t] for p in parts]
            counts.append(None if cs[0] is None else sum_counts(cs, f"layer {t + 1}'s counts"))
        x_top = None if parts[0].x_top is None else np.sum([p.x_top for p in parts], axis=0)
        return SufficientStats(counts=counts, x_top=x_top,
                               sum_L_blocks=np.concatenate([p.sum_L_blocks for p in parts]),
                               first_block=parts[0].first_block)
