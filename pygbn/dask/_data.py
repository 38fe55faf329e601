"""Distributed input: chunks read and validated on the workers, cut into partitions.

The input (a dask array of sparse chunks, or a list of ``.npz``/``.mtx``
files) is a sequence of *input partitions*: the array's row chunks, or the
files.  Each is computed or read on a worker and validated there by the
link; only its shape, its number of non-zeros and the verdict come back to
the client.  The training *partitions* are then cut at the input
partitions' boundaries rounded to whole document blocks
(``BLOCK_SIZE`` documents), so that block ``b`` is the same block as in one
process; each is assembled from row slices of the input partitions on the
worker that will hold it, by :class:`PartitionActor`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

from pygbn.inference.gibbs import BLOCK_SIZE
from pygbn.inference.partition import LocalPart
from pygbn.model.links import Link

__all__ = ["InputChunks", "Partition", "PartitionActor", "StaleActorError", "as_paths", "plan_partitions",
           "read_matrix"]

FILE_SUFFIXES = (".npz", ".mtx")


# ------------------------------------------------------------ on the workers
def read_matrix(path: str) -> sp.csr_matrix:
    """Read a ``.npz`` (``scipy.sparse.save_npz``) or ``.mtx`` (Matrix Market) file as CSR."""
    if str(path).endswith(".npz"):
        return sp.load_npz(path).tocsr()
    import scipy.io

    return sp.csr_matrix(scipy.io.mmread(path))


def _hstack(*blocks) -> sp.csr_matrix:
    """The column chunks of one row chunk side by side."""
    mats = [b if sp.issparse(b) else sp.csr_matrix(np.asarray(b)) for b in blocks]
    return sp.hstack(mats, format="csr")


class Invalid:
    """What a worker returns instead of a chunk that failed to load or validate."""

    def __init__(self, message: str):
        self.message = message


@dataclass(frozen=True)
class Checked:
    """A chunk validated on a worker: the link's canonical CSR matrix and its values' sum
    (:meth:`~pygbn.model.links.Link.check_data_total`: summed once, where it is checked)."""

    matrix: sp.csr_matrix
    total: float

    def __sizeof__(self) -> int:
        # Dask sizes an object it does not know by sys.getsizeof: the matrix's arrays, so
        # that a worker's memory accounting and spilling see the chunk (not 56 bytes)
        m = self.matrix
        return object.__sizeof__(self) + m.data.nbytes + m.indices.nbytes + m.indptr.nbytes


def _canonical(chunk, link: Link, name: str):
    """The chunk validated by ``link`` (:class:`Checked`), or :class:`Invalid` with the reason."""
    try:
        return Checked(*link.check_data_total(chunk, name))
    except Exception as exc:  # reported to the client, which raises ValueError
        return Invalid(f"{type(exc).__name__}: {exc}" if not isinstance(exc, ValueError) else str(exc))


def _read_canonical(path: str, link: Link, name: str):
    try:
        chunk = read_matrix(path)
    except Exception as exc:
        return Invalid(f"cannot read {path!r} on worker (pid {os.getpid()}): "
                       f"{type(exc).__name__}: {exc}")
    return _canonical(chunk, link, name)


def _describe(chunk) -> tuple:
    """``(n_rows, n_columns, nnz, total)`` of a validated chunk (:class:`Checked`), or
    ``("invalid", reason)``."""
    if isinstance(chunk, Invalid):
        return ("invalid", chunk.message)
    M = chunk.matrix
    return (int(M.shape[0]), int(M.shape[1]), int(M.nnz), chunk.total)


def _assemble(pieces: Sequence[tuple], link: Link, name: str) -> sp.csr_matrix:
    """The rows ``lo:hi`` of each chunk (:class:`Checked`) of ``pieces``, stacked (canonical CSR)."""
    mats = [chunk.matrix[lo:hi] for chunk, lo, hi in pieces]
    return link.check_data(mats[0] if len(mats) == 1 else sp.vstack(mats, format="csr"), name)


class StaleActorError(RuntimeError):
    """A partition's actor has not run the messages the driver counts (it was
    re-created from scratch, e.g. after its worker died)."""


class PartitionActor:
    """A training partition held by one worker (a dask actor).

    Assembles its rows of the data (and of the held-out counts) from the
    validated input chunks and holds a :class:`~pygbn.inference.partition.LocalPart`
    across the whole fit; :meth:`run` runs one message of the driver.

    Parameters
    ----------
    first_block : int
        Index of the partition's first document block.
    x_pieces, h_pieces : list of (Checked, int, int)
        Row slices of the validated input chunks of X (and of the held-out
        counts; empty without them).
    link : Link
    n_jobs : int or None
        Threads of the kernels on the worker (-1: all the worker machine's cores).
    state : dict, optional
        A checkpoint (:meth:`LocalPart.get_state`) to continue from, taken
        after ``expected_messages`` messages.
    """

    def __init__(self, first_block: int, x_pieces, h_pieces, link: Link, n_jobs: int,
                 state: Optional[dict] = None, expected_messages: int = 0):
        from pygbn._utils import effective_n_jobs
        from pygbn.model.links import PoissonLink

        Y = _assemble(x_pieces, link, "X")
        H = _assemble(h_pieces, PoissonLink(), "heldout") if h_pieces else None
        self.part = LocalPart(Y, first_block=first_block, heldout=H, n_jobs=effective_n_jobs(n_jobs))
        if state is not None:
            if state["n_messages"] != expected_messages:
                raise RuntimeError(f"checkpoint taken after {state['n_messages']} messages, "
                                   f"expected {expected_messages}")
            self.part.set_state(state)

    def run(self, seq: int, message):
        """Run ``message``, the driver's message number ``seq`` (counted from 0)."""
        if seq != self.part.n_messages:
            raise StaleActorError(f"the partition has run {self.part.n_messages} messages, "
                                  f"the driver sent {seq}")
        return self.part.run(message)

    def get_state(self) -> dict:
        return self.part.get_state()

    def pid(self) -> int:
        return os.getpid()


def pull_state(address: str, key: str) -> dict:
    """A task that copies the checkpoint of the actor ``key`` (on worker ``address``)
    onto the worker it runs on.  The actor is named, not passed: a task given the
    actor would depend on it, and end with it."""
    from distributed import Actor

    return Actor(PartitionActor, address, key).get_state().result()


# ------------------------------------------------------------ on the client
def as_paths(X) -> Optional[List[str]]:
    """The paths of file input (a path, str or os.PathLike, or a non-empty list or tuple
    of them) as str, or None when ``X`` is not file input."""
    if isinstance(X, (str, os.PathLike)):
        X = [X]
    if isinstance(X, (list, tuple)) and X and all(isinstance(p, (str, os.PathLike)) for p in X):
        return [os.fspath(p) for p in X]
    return None


@dataclass
class InputChunks:
    """The input partitions of X (or of the held-out counts).

    Attributes
    ----------
    name : str
        "X" or "heldout", for messages.
    sources : list
        Per input partition: a file path, or the dask ``Delayed`` of its rows.
    labels : list of str
        How to name each input partition in a message.
    declared_rows : list of float
        Rows the dask array declares for each chunk (NaN: unknown or files).
    n_columns : float
        Columns the dask array declares (NaN for files).
    """

    name: str
    sources: list
    labels: List[str]
    declared_rows: List[float]
    n_columns: float = float("nan")
    rows: List[int] = field(default_factory=list)
    #: the sum of every chunk's values (set by :meth:`check`)
    total: float = 0.0

    @classmethod
    def from_input(cls, X, name: str) -> "InputChunks":
        """From a dask array (chunks: scipy.sparse matrices, documents as rows) or a
        list of ``.npz``/``.mtx`` paths; ValueError for anything else."""
        import dask
        import dask.array as da

        if isinstance(X, da.Array):
            if X.ndim != 2:
                raise ValueError(f"{name} must be 2-D (documents x terms), got {X.ndim} dimensions")
            rows = X.to_delayed()
            sources = [r[0] if len(r) == 1 else dask.delayed(_hstack)(*r) for r in rows]
            declared = [float(c) for c in X.chunks[0]]
            starts = np.concatenate([[0], np.cumsum(X.chunks[0])]) if np.isfinite(declared).all() else None
            labels = [f"{name} partition {i} of {len(sources)}"
                      + ("" if starts is None else f" (documents {int(starts[i])} to {int(starts[i + 1]) - 1})")
                      for i in range(len(sources))]
            return cls(name, sources, labels, declared, float(X.shape[1]))
        paths = as_paths(X)
        if paths is not None:
            for p in paths:
                if not p.endswith(FILE_SUFFIXES):
                    raise ValueError(f"{name} files must be .npz (scipy.sparse.save_npz) or .mtx "
                                     f"(Matrix Market), got {p!r}")
            labels = [f"{name} partition {i} of {len(paths)} (file {p!r})" for i, p in enumerate(paths)]
            return cls(name, paths, labels, [float("nan")] * len(paths))
        raise ValueError(f"{name} must be a dask.array.Array with scipy.sparse chunks (documents "
                         f"as rows) or a list of .npz/.mtx file paths, got {type(X).__name__}")

    @property
    def from_files(self) -> bool:
        return bool(self.sources) and isinstance(self.sources[0], str)

    def load(self, client, link: Link, indices: Optional[Sequence[int]] = None) -> list:
        """Futures of the validated chunks ``indices`` (default all), computed or read
        on the workers (each a :class:`Checked` or an :class:`Invalid`)."""
        idx = range(len(self.sources)) if indices is None else indices
        if self.from_files:
            return [client.submit(_read_canonical, self.sources[i], link, self.name, pure=False)
                    for i in idx]
        raw = client.compute([self.sources[i] for i in idx])
        return [client.submit(_canonical, r, link, self.name, pure=False) for r in raw]

    def check(self, client, chunks: list) -> Tuple[int, int, int]:
        """Gather the chunks' shapes and verdicts; ValueError naming the first bad input
        partition.  Returns ``(n_documents, n_columns, nnz)`` and sets :attr:`rows` and
        :attr:`total`."""
        described = []
        for label, fut in zip(self.labels, client.map(_describe, chunks, pure=False)):
            try:
                described.append(fut.result())
            except Exception as exc:
                raise ValueError(f"{label}: computing it on the workers failed: "
                                 f"{type(exc).__name__}: {exc}") from None
        for label, d in zip(self.labels, described):
            if d[0] == "invalid":
                raise ValueError(f"{label}: {d[1]}")
        widths = [d[1] for d in described]
        # files declare nothing: the width most of them have is the expected one
        expected = int(self.n_columns) if np.isfinite(self.n_columns) else \
            max(set(widths), key=lambda w: (widths.count(w), -widths.index(w)))
        for label, d, want in zip(self.labels, described, self.declared_rows):
            if d[1] != expected:
                raise ValueError(f"{label} has {d[1]} columns but the {self.name} partitions must all "
                                 f"have {expected} (chunks of different widths)")
            if np.isfinite(want) and d[0] != int(want):
                raise ValueError(f"{label} has {d[0]} rows but its chunk declares {int(want)}")
        self.rows = [d[0] for d in described]
        self.total = float(sum(d[3] for d in described))
        return sum(self.rows), expected, sum(d[2] for d in described)

    def pieces(self, start: int, stop: int) -> List[Tuple[int, int, int]]:
        """``(chunk, lo, hi)`` row slices covering documents ``start..stop-1``."""
        out, offset = [], 0
        for i, n in enumerate(self.rows):
            lo, hi = max(start, offset), min(stop, offset + n)
            if lo < hi:
                out.append((i, lo - offset, hi - offset))
            offset += n
        return out


@dataclass
class Partition:
    """A training partition: documents ``start..stop-1``, whole blocks from ``first_block``."""

    index: int
    start: int
    stop: int

    @property
    def first_block(self) -> int:
        return self.start // BLOCK_SIZE

    def label(self, n_partitions: int) -> str:
        return (f"partition {self.index} of {n_partitions} (documents {self.start} to {self.stop - 1}, "
                f"blocks {self.first_block} to {(self.stop - 1) // BLOCK_SIZE})")


def plan_partitions(rows: Sequence[int]) -> List[Partition]:
    """Training partitions cut where the input partitions of ``rows`` documents
    end, rounded to the nearest multiple of ``BLOCK_SIZE`` (empty ones dropped)."""
    n = int(np.sum(rows))
    ends = np.cumsum(rows)[:-1]
    cuts = sorted({int(np.floor(e / BLOCK_SIZE + 0.5)) * BLOCK_SIZE for e in ends} - {0})
    bounds = [0] + [c for c in cuts if c < n] + [n]
    return [Partition(i, a, b) for i, (a, b) in enumerate(zip(bounds[:-1], bounds[1:]))]
