"""A blocked training chain whose documents are spread over several workers.

The blocked sweep is a pure step per document block (docs/engine.md), so the
state of a chain splits into a *global* part (each Phi^(t) and its counts, r,
gamma0, c0, the serial and column streams) and *local* parts, one per
contiguous range of document blocks (the rows of the data, theta^(t),
c^(t), m^(t), the link's aux, the blocks' streams and the held-out
accumulators).  Block ``b`` draws from the same stream wherever it lives
(:class:`~pygbn.inference.streams.ChainSeeds`), integer statistics are summed
exactly in any order and float sums are formed per block and added in block
order, so the chain is that of one process, bit for bit, whatever the
partitioning.

* :class:`LocalPart` is one local part.  It is driven by *messages*: lists
  of operations (``("up", update_p_c)``, ``("globals", phis, r)``,
  ``("down",)``, ...), run in order by :meth:`LocalPart.run`.
* :class:`PartitionedChain` is the global part, a :class:`GibbsSampler` of
  no documents.  It implements :class:`~pygbn.inference.layerwise.LayerwiseChain`,
  so :func:`~pygbn.inference.layerwise.run_layerwise` drives it; it reaches
  its local parts through a ``send`` function given by the transport, which
  delivers one message to every part and returns their results in block
  order (``pygbn.dask`` uses dask actors; the tests call :class:`LocalPart`
  objects directly).

Per iteration one message goes out (the globals of the previous update, the
pending local operations and the next upward half) and the sufficient
statistics come back, sparse (:func:`encode_stats`).
"""
from __future__ import annotations

import copy
from typing import Callable, List, Optional, Sequence

import numpy as np
import scipy.sparse as sp

from pygbn.evaluation import perplexity_from_terms
from pygbn.inference.gibbs import GibbsSampler
from pygbn.inference.sufficient import SufficientStats
from pygbn.inference.term_counts import TermCounts, check_summed_total
from pygbn.inference.invariants import check_global_invariants, check_local_invariants
from pygbn.inference.partial import PartialState
from pygbn.inference.streams import ChainSeeds
from pygbn.inference.testchain import HeldoutPredictive
from pygbn.inference.trace import document_loglik, loglik_per_token
from pygbn.model.layer import Layer
from pygbn.model.links import Link
from pygbn.model.network import Hyperparameters, Network

__all__ = ["LocalPart", "PartitionedChain", "encode_stats", "combine_encoded"]


# ------------------------------------------------------------- statistics
def _compact(a: np.ndarray) -> np.ndarray:
    """``a`` (nonnegative ints) as int32 when every value fits, else int64."""
    return a.astype(np.int32) if (a.size == 0 or a.max() < 2**31) else a.astype(np.int64)


def encode_stats(stats: SufficientStats) -> dict:
    """The statistics of one local part for the wire: each count matrix as its
    non-zero entries (flat index, value; int32 where they fit), the rest as is."""
    counts = []
    for c in stats.counts:
        if c is None:
            counts.append(None)
            continue
        if isinstance(c, TermCounts):
            idx, vals = c.nonzero_flat()
        else:
            flat = c.ravel()
            idx = np.flatnonzero(flat)
            vals = flat[idx]
        counts.append((c.shape, _compact(idx), _compact(vals)))
    return {"counts": counts, "x_top": stats.x_top, "sum_L_blocks": stats.sum_L_blocks,
            "first_block": stats.first_block}


def combine_encoded(parts: Sequence[dict]) -> SufficientStats:
    """Sum the encoded statistics of disjoint groups of blocks into one
    :class:`SufficientStats` (what :meth:`SufficientStats.combine` gives for the
    dense ones: integer sums, exact in any order; the per-block float sums
    concatenated in block order).

    Raises
    ------
    ValueError
        When a layer's counts of all the parts add up to 2**63 or more (each part
        holds its own total below that; their sum would wrap in the int64
        counters): data, or a link's latent counts, of a scale the chain cannot
        follow.
    """
    parts = sorted(parts, key=lambda p: p["first_block"])
    counts: List[Optional[np.ndarray]] = []
    for t in range(len(parts[0]["counts"])):
        if parts[0]["counts"][t] is None:
            counts.append(None)
            continue
        # each part's entries add up to less than 2**63 (its own int64 counters); their sum,
        # as a Python int, says whether the combined entries can wrap (as sum_counts checks)
        check_summed_total(sum(int(p["counts"][t][2].sum(dtype=np.int64)) for p in parts), len(parts),
                           f"layer {t + 1}'s counts", "partitions")
        total = np.zeros(parts[0]["counts"][t][0], dtype=np.int64)
        flat = total.reshape(-1)
        for p in parts:
            _, idx, vals = p["counts"][t]
            flat[idx] += vals
        counts.append(total)
    x_top = None if parts[0]["x_top"] is None else np.sum([p["x_top"] for p in parts], axis=0)
    return SufficientStats(counts=counts, x_top=x_top,
                           sum_L_blocks=np.concatenate([p["sum_L_blocks"] for p in parts]),
                           first_block=parts[0]["first_block"])


# ------------------------------------------------------------- local part
class LocalPart:
    """The local part of a blocked training chain: documents of consecutive blocks.

    Parameters
    ----------
    Y : csr_matrix
        The documents' rows of the data, validated by the link.  They start at
        document ``first_block * BLOCK_SIZE`` of the corpus and are whole
        blocks (the last part may end with a partial block).
    first_block : int
        Index of the first block in the corpus.
    heldout : csr_matrix, optional
        Held-out counts of the same documents.
    n_jobs : int, default=1
        Threads of the document-parallel kernels.

    Notes
    -----
    :meth:`run` executes a message: a list of ``(name, *arguments)``
    operations, in order.  ``start`` (the global part's one-layer network and
    its :class:`ChainSeeds`), ``globals`` (every Phi^(t) and r), ``up``
    (:meth:`GibbsSampler.local_upward`; returns the encoded statistics and
    :meth:`GibbsSampler.top_usage`), ``down``, ``prune`` (a keep mask),
    ``add_layer`` (eta and the new Phi), ``heldout_start``, ``heldout_add``,
    ``heldout_terms`` (returns the per-cell terms and the token count),
    ``state`` (returns c^(t) of every layer and the aux), ``loglik``
    (returns each document's training log-likelihood and the part's token
    count, :mod:`pygbn.inference.trace`), ``check`` and ``nbytes`` (returns
    :meth:`nbytes`).
    """

    def __init__(self, Y: sp.csr_matrix, *, first_block: int, heldout: Optional[sp.csr_matrix] = None,
                 n_jobs: int = 1):
        self.Y = Y
        self.heldout = heldout
        self.first_block = int(first_block)
        self.n_jobs = int(n_jobs)
        self.sampler: Optional[GibbsSampler] = None
        self.predictive: Optional[HeldoutPredictive] = None
        #: number of messages run so far
        self.n_messages = 0

    def run(self, message: Sequence[tuple]) -> list:
        """Run the operations of ``message`` in order; returns the results of
        those that have one (``up``, ``heldout_terms``, ``state``, ``loglik``), in order."""
        out = []
        for name, *args in message:
            result = getattr(self, "_op_" + name)(*args)
            if result is not None:
                out.append(result)
        self.n_messages += 1
        return out

    # operations ------------------------------------------------------------
    def _op_start(self, network: Network, seeds: ChainSeeds, method: str = "blocked") -> None:
        self.sampler = GibbsSampler.starting_from(
            copy.deepcopy(network), self.Y, method=method, n_jobs=self.n_jobs,
            seeds=seeds.for_documents(), first_block=self.first_block)

    def _op_globals(self, phis: Sequence[np.ndarray], r: np.ndarray) -> None:
        net = self.sampler.network
        for layer, phi in zip(net.layers, phis):
            layer.phi = phi
        net.r = r

    def _op_up(self, update_p_c: bool):
        stats = self.sampler.local_upward(update_p_c=update_p_c)
        return encode_stats(stats), self.sampler.top_usage()

    def _op_down(self) -> None:
        self.sampler.local_downward()

    def _op_prune(self, keep: np.ndarray) -> None:
        self.sampler.keep_top(keep)

    def _op_add_layer(self, eta: float, phi: np.ndarray) -> None:
        self.sampler.add_layer(eta, phi=phi)

    def _op_heldout_start(self) -> None:
        self.predictive = HeldoutPredictive(self.heldout, self.sampler.n_threads)

    def _op_heldout_add(self) -> None:
        self.predictive.add(*self.sampler.layer_one_sample())

    def _op_heldout_terms(self):
        return self.predictive.log_terms(), float(np.sum(self.predictive.values))

    def _op_state(self):
        return [layer.c for layer in self.sampler.network.layers], self.sampler.aux

    def _op_loglik(self):
        return document_loglik(self.sampler), self.sampler.link.n_tokens(self.Y)

    def _op_check(self) -> None:
        check_local_invariants(self.sampler)

    def _op_nbytes(self) -> dict:
        return self.nbytes()

    def nbytes(self) -> dict:
        """Bytes held by this part, by kind: ``data`` (its rows, as given and as the
        kernels read them), ``theta``, ``m``, ``c`` (with the aux), ``globals`` (its
        copy of every Phi^(t) and r) and ``heldout`` (counts and accumulators).
        Arrays shared between kinds count once."""
        seen = set()

        def size(arrays):
            total = 0
            for a in arrays:
                if a is None:
                    continue
                ptr = a.__array_interface__["data"][0]
                if ptr not in seen:
                    seen.add(ptr)
                    total += a.nbytes
            return total

        s = self.sampler
        layers = [] if s is None else s.network.layers
        out = {"data": size([self.Y.data, self.Y.indices, self.Y.indptr]
                            + ([] if s is None else [s.values, s.indices, s.indptr]))}
        out["theta"] = size([l.theta for l in layers])
        out["m"] = size([] if s is None else s.m)
        out["c"] = size([l.c for l in layers] + ([] if s is None else [s.aux]))
        out["globals"] = size([l.phi for l in layers] + ([] if s is None else [s.network.r]))
        held = [] if self.heldout is None else [self.heldout.data, self.heldout.indices, self.heldout.indptr]
        if self.predictive is not None:
            held += [self.predictive.rate_sums, self.predictive.norm_sums, self.predictive.indptr]
        out["heldout"] = size(held)
        return out

    # checkpoints -----------------------------------------------------------
    def get_state(self) -> dict:
        """Everything of this part but its data: enough for :meth:`set_state` on a
        new part over the same documents to continue exactly."""
        s = self.sampler
        state = {"n_messages": self.n_messages, "predictive": None, "sampler": None}
        if s is not None:
            net = s.network
            state["sampler"] = {
                "layers": [(l.phi, l.eta, l.theta, l.c) for l in net.layers],
                "r": net.r, "gamma0": net.gamma0, "c0": net.c0, "hyper": net.hyper,
                "link": net.link, "m": s.m, "aux": s.aux, "seeds": s.seeds, "method": s.method,
                "labels": s.tokens.labels if s.tokens is not None else None,
                "streams": [[g.bit_generator.state for g in f.generators]
                            for f in (s.doc_streams, s.eval_streams)]}
        if self.predictive is not None:
            p = self.predictive
            state["predictive"] = (p.rate_sums, p.norm_sums, p.n_samples)
        return copy.deepcopy(state)

    def set_state(self, state: dict) -> None:
        """Continue from :meth:`get_state`'s result (of a part over the same documents)."""
        state = copy.deepcopy(state)
        self.n_messages = state["n_messages"]
        st = state["sampler"]
        self.sampler = None
        if st is not None:
            layers = [Layer(phi=phi, eta=eta, theta=theta, c=c) for phi, eta, theta, c in st["layers"]]
            net = Network(layers=layers, r=st["r"], gamma0=st["gamma0"], c0=st["c0"],
                          hyper=st["hyper"], link=st["link"])
            method = st.get("method", "blocked")
            s = GibbsSampler(net, self.Y, method=method, n_jobs=self.n_jobs, seeds=st["seeds"],
                             first_block=self.first_block)
            s.m, s.aux = st["m"], st["aux"]
            if method == "partial":
                s.set_tokens(PartialState(s.indptr, s.indices, s.values, st["labels"], s.n_features,
                                          net.widths[0]))
            for family, states in zip((s.doc_streams, s.eval_streams), st["streams"]):
                for g, gs in zip(family.generators, states):
                    g.bit_generator.state = gs
            self.sampler = s
        self.predictive = None
        if state["predictive"] is not None:
            self.predictive = HeldoutPredictive(self.heldout, self.n_jobs)
            self.predictive.rate_sums, self.predictive.norm_sums, self.predictive.n_samples = \
                state["predictive"]


# ------------------------------------------------------------ global part
class PartitionedChain:
    """The global part of a blocked chain whose documents live in local parts.

    A :class:`~pygbn.inference.layerwise.LayerwiseChain`: each method does the
    global half of the one-process operation on a :class:`GibbsSampler` of no
    documents and queues the local half as an operation for the
    :class:`LocalPart` objects; a queue is sent with the next operation that
    needs an answer (the upward half of a sweep, a snapshot, the held-out
    terms, a check).

    Parameters
    ----------
    send : callable
        ``send(message)`` delivers ``message`` (a list of operations) to every
        local part and returns the list of their :meth:`LocalPart.run`
        results, in block order.
    sampler : GibbsSampler
        The global part (a chain of no documents, see :meth:`for_training`).
    """

    #: no sampler in this process holds the documents (callbacks get None)
    sampler = None

    def __init__(self, send: Callable[[list], list], sampler: GibbsSampler):
        self.send = send
        self.glob = sampler
        self.queue: List[tuple] = []
        self.usage: Optional[np.ndarray] = None
        self.n_heldout = 0

    @classmethod
    def for_training(cls, send: Callable[[list], list], n_features: int, n_components: int, *,
                     link: Link, eta: float = 0.05, hyper: Optional[Hyperparameters] = None,
                     n_jobs: int = 1, random_state=None, method: str = "blocked") -> "PartitionedChain":
        """The chain of :meth:`GibbsSampler.for_training` (``method`` "blocked" or
        "partial"), same draws, with its documents in the local parts reached by ``send``."""
        if method not in ("blocked", "partial"):
            raise ValueError(f"a partitioned chain's method must be 'blocked' or 'partial', got {method!r}")
        glob = GibbsSampler.for_training(sp.csr_matrix((0, int(n_features))), n_components, link=link,
                                         eta=eta, hyper=hyper, method=method, n_jobs=n_jobs,
                                         random_state=random_state)
        net = glob.network
        template = Network(layers=[Layer(phi=net.layers[0].phi, eta=net.layers[0].eta)], r=net.r,
                           gamma0=net.gamma0, c0=net.c0, hyper=net.hyper, link=net.link)
        chain = cls(send, glob)
        chain.queue.append(("start", template, glob.seeds, method))
        return chain

    def flush(self, *message: tuple) -> list:
        """Send the queued operations followed by ``message``; the parts' results."""
        ops, self.queue = self.queue + list(message), []
        return self.send(ops)

    # LayerwiseChain ---------------------------------------------------------
    @property
    def widths(self) -> List[int]:
        return self.glob.network.widths

    def sweep(self, update_p_c: bool) -> None:
        results = [r[-1] for r in self.flush(("up", update_p_c))]
        self.usage = np.sum([u for _, u in results], axis=0)
        self.glob.update_globals_from(combine_encoded([s for s, _ in results]))
        net = self.glob.network
        self.queue += [("globals", [layer.phi for layer in net.layers], net.r), ("down",)]

    def prune_top(self) -> int:
        keep = self.glob.top_keep(self.usage)
        self.queue.append(("prune", keep))
        return self.glob.keep_top(keep)

    def add_layer(self, eta: float) -> None:
        self.glob.add_layer(eta)
        self.queue.append(("add_layer", eta, self.glob.network.layers[-1].phi))

    def check(self) -> None:
        check_global_invariants(self.glob)
        self.flush(("check",))

    def start_heldout(self) -> None:
        self.queue.append(("heldout_start",))
        self.n_heldout = 0

    def add_heldout(self) -> None:
        self.queue.append(("heldout_add",))
        self.n_heldout += 1

    def heldout_perplexity(self) -> float:
        if self.n_heldout == 0:
            return float("nan")
        results = [r[-1] for r in self.flush(("heldout_terms",))]
        terms = np.concatenate([t for t, _ in results])
        if terms.size == 0:
            return float("nan")
        return perplexity_from_terms(terms, sum(n for _, n in results))

    def loglik_per_token(self) -> float:
        results = [r[-1] for r in self.flush(("loglik",))]
        return loglik_per_token(np.concatenate([d for d, _ in results]), sum(n for _, n in results))

    def snapshot(self) -> Network:
        results = [r[-1] for r in self.flush(("state",))]
        c = [np.concatenate(cs) for cs in zip(*(c for c, _ in results))]
        return self.glob.snapshot(c=c, aux=np.concatenate([a for _, a in results]))
