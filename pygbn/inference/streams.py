"""The random streams of a Gibbs chain, rebuilt from their entropy.

A chain draws from one private serial stream (the global updates) and from
four families of block streams: one stream per document block, per block of
Phi columns, and the same two for evaluation draws.  :class:`ChainSeeds`
holds the five entropies; any contiguous range of a family's streams is
rebuilt from the family's entropy alone
(:func:`pygbn._utils.generators_from_entropy`), which is how the local part
of a chain on another machine draws exactly what its blocks draw in one
process.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from pygbn._utils import BlockStreams, draw_entropy, generators_from_entropy

__all__ = ["ChainSeeds"]


@dataclass(frozen=True)
class ChainSeeds:
    """Entropy of a chain's random streams (see :func:`pygbn._utils.generators_from_entropy`).

    One private serial stream (global updates), and four stream families: one
    stream per document block, per block of Phi columns, and the same two for
    evaluation draws.  Block ``b`` of a family is rebuilt from the family's
    entropy alone, so a part of the documents (blocks ``first_block`` on, on
    another machine) draws exactly what it draws in one process.  A family
    left ``None`` is not built (the local part of a chain has no serial or
    column streams: using one would be a bug).
    """

    serial: Optional[tuple]
    docs: tuple
    cols: Optional[tuple]
    eval_docs: tuple
    eval_cols: Optional[tuple]

    @classmethod
    def draw(cls, rng: np.random.Generator) -> "ChainSeeds":
        """Draw the five entropies from ``rng``, in the order the chain always has."""
        return cls(*(draw_entropy(rng) for _ in range(5)))

    def for_documents(self) -> "ChainSeeds":
        """Only the document families: what a local part of the chain needs."""
        return ChainSeeds(None, self.docs, None, self.eval_docs, None)

    def streams(self, first_block: int, n_blocks: int, n_col_blocks: int):
        """``(serial generator, doc, col, eval doc, eval col streams)``; ``None`` where unseeded."""
        def family(entropy, first, n):
            return None if entropy is None else BlockStreams.from_entropy(entropy, first, first + n)
        serial = None if self.serial is None else generators_from_entropy(self.serial, 0, 1)[0]
        return (serial, family(self.docs, first_block, n_blocks), family(self.cols, 0, n_col_blocks),
                family(self.eval_docs, first_block, n_blocks), family(self.eval_cols, 0, n_col_blocks))
