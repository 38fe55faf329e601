"""Messages from the driver to the partitions' actors, and what happens when a worker dies.

:class:`ActorTransport` creates one :class:`~pygbn.dask._data.PartitionActor`
per training partition, pinned to a worker, and delivers each message of
:class:`~pygbn.inference.partition.PartitionedChain` to all of them at once.
A partition whose worker is lost is rebuilt when checkpoints are on (its
input chunks computed or read again, its state restored from the last
checkpoint, which lives on another worker, and the messages sent since
replayed: the chain goes on exactly as it would have); otherwise the fit
stops with :class:`PartitionLostError` naming the partition.
"""
from __future__ import annotations

import logging
from typing import List, Optional

from pygbn.dask._data import InputChunks, Partition, PartitionActor, StaleActorError, pull_state
from pygbn.model.links import Link

logger = logging.getLogger("pygbn")

__all__ = ["ActorTransport", "PartitionLostError", "live_workers"]

#: seconds a fit waits for a worker when the cluster has none at its start
WAIT_FOR_WORKERS_S = 60


def live_workers(client) -> List[str]:
    """The addresses of all the workers of ``client``'s cluster, sorted.

    Asks for ``n_workers=-1``: the distributed releases of 2025 to mid-2026 list at
    most 5 workers in ``Client.scheduler_info()`` by default (dask/distributed#9045,
    undone by #9308); older releases ignore the argument."""
    return sorted(client.scheduler_info(n_workers=-1)["workers"])


class PartitionLostError(RuntimeError):
    """A training partition was lost with its worker and could not be rebuilt
    (``DaskGBN(checkpoint_every=...)`` rebuilds lost partitions)."""


class ActorTransport:
    """Deliver messages to one actor per training partition.

    Parameters
    ----------
    client : distributed.Client
    partitions : list of Partition
    X, H : InputChunks
        The input partitions of the data and of the held-out counts (``H`` may be None).
    link : Link
    n_jobs : int or None
        Kernel threads on each worker (resolved there: -1 is all its cores).
    checkpoint_every : int or None
        Copy every partition's state to another worker after every this many
        messages (None: no checkpoints; a lost partition stops the fit).
    """

    def __init__(self, client, partitions: List[Partition], X: InputChunks,
                 H: Optional[InputChunks], link: Link, n_jobs: int,
                 checkpoint_every: Optional[int] = None):
        self.client = client
        self.partitions = partitions
        self.X, self.H = X, H
        self.link = link
        self.n_jobs = n_jobs
        self.checkpoint_every = checkpoint_every
        self.actor_futures: list = []
        self.actors: list = []
        self.workers: List[str] = []
        self.n_sent = 0
        self.log: List[list] = []            # messages since the last checkpoint
        self.checkpoints: list = [None] * len(partitions)   # None: the fresh state
        self.checkpoint_at = 0
        self.n_rebuilt = 0

    # ----------------------------------------------------------------- setup
    def _live_workers(self) -> List[str]:
        return live_workers(self.client)

    def _submit_actor(self, part: Partition, worker: str, x_chunks: dict, h_chunks: dict,
                      state=None, expected: int = 0):
        xp = [(x_chunks[i], lo, hi) for i, lo, hi in self.X.pieces(part.start, part.stop)]
        hp = [] if self.H is None else \
            [(h_chunks[i], lo, hi) for i, lo, hi in self.H.pieces(part.start, part.stop)]
        return self.client.submit(PartitionActor, part.first_block, xp, hp, self.link, self.n_jobs,
                                  state, expected, actor=True, workers=[worker],
                                  allow_other_workers=False, pure=False)

    def start(self, x_chunks: list, h_chunks: Optional[list]) -> None:
        """Create the actors (partition ``p`` on worker ``p mod n_workers``) from the
        futures of the validated input chunks."""
        workers = self._live_workers()
        if not workers:     # e.g. a nanny still restarting a lost worker: wait for one
            try:
                self.client.wait_for_workers(1, timeout=WAIT_FOR_WORKERS_S)
            except Exception as exc:        # distributed raises its TimeoutError
                raise RuntimeError(f"DaskGBN: the cluster has no live worker after waiting "
                                   f"{WAIT_FOR_WORKERS_S} s") from exc
            workers = self._live_workers()
        xs = dict(enumerate(x_chunks))
        hs = {} if h_chunks is None else dict(enumerate(h_chunks))
        self.workers = [workers[p.index % len(workers)] for p in self.partitions]
        self.actor_futures = [self._submit_actor(p, w, xs, hs) for p, w in zip(self.partitions, self.workers)]
        self.actors = [f.result() for f in self.actor_futures]

    def close(self) -> None:
        """Release the actors and the checkpoints (the workers free their memory)."""
        futures = self.actor_futures
        self.actors, self.actor_futures, self.checkpoints, self.log = [], [], [], []
        if futures:
            self.client.cancel(futures)

    # -------------------------------------------------------------- messages
    def _label(self, i: int) -> str:
        return self.partitions[i].label(len(self.partitions))

    def _is_loss(self, i: int, exc: BaseException) -> bool:
        if isinstance(exc, (OSError, StaleActorError)):
            return True
        try:    # the client already knows (its actor's future is no longer finished)
            if self.actor_futures[i].status not in ("finished", "pending"):
                return True
        except Exception:
            pass
        try:
            return self.workers[i] not in self._live_workers()
        except Exception:  # the scheduler itself is unreachable: not a partition's fault
            return False

    def send(self, message: list) -> list:
        """Deliver ``message`` to every partition; their results in partition order."""
        seq = self.n_sent
        # every actor's call goes out before any result is awaited; creating the call
        # itself raises (RuntimeError "Worker holding Actor was lost") when the client
        # already knows its worker is gone, which is a loss like any other
        futures: list = []
        for a in self.actors:
            try:
                futures.append(a.run(seq, message))
            except Exception as exc:
                futures.append(exc)
        results, lost = [], []
        for i, fut in enumerate(futures):
            try:
                if isinstance(fut, Exception):
                    raise fut
                results.append(fut.result())
            except Exception as exc:
                if not self._is_loss(i, exc):
                    raise
                lost.append((i, exc))
                results.append(None)
        for i, exc in lost:
            results[i] = self._rebuild(i, exc, message)
        self.n_sent += 1
        if self.checkpoint_every:
            self.log.append(message)
            # after a loss at once: checkpoints kept on the lost worker are gone too
            if lost or self.n_sent - self.checkpoint_at >= self.checkpoint_every:
                self._checkpoint()
        return results

    # --------------------------------------------------- checkpoints, rebuild
    def _checkpoint(self) -> None:
        """Copy each partition's state onto another worker (kept as a task result
        there); the previous checkpoints stay if any copy fails."""
        live = self._live_workers()
        futures = []
        for i in range(len(self.actors)):
            others = [w for w in live if w != self.workers[i]] or live
            futures.append(self.client.submit(pull_state, self.workers[i], self.actor_futures[i].key,
                                              workers=[others[i % len(others)]],
                                              allow_other_workers=False, pure=False))
        try:
            for f in futures:
                f.result()
        except Exception as exc:
            logger.warning("checkpoint after message %d failed (%s); keeping the one after "
                           "message %d", self.n_sent, exc, self.checkpoint_at)
            self.client.cancel(futures)
            return
        # the old checkpoints are released, not cancelled: a rebuilt actor depends on one,
        # and cancelling a future cancels what depends on it
        self.checkpoints, self.checkpoint_at, self.log = futures, self.n_sent, []

    def _rebuild(self, i: int, exc: BaseException, message: list):
        """Rebuild partition ``i`` on a live worker and bring it to ``message``'s
        result, or raise PartitionLostError."""
        where = f"{self._label(i)} on worker {self.workers[i]}"
        if not self.checkpoint_every:
            raise PartitionLostError(
                f"{where} was lost after {self.n_sent} messages ({type(exc).__name__}: {exc}); "
                "the fit stops here (DaskGBN(checkpoint_every=...) rebuilds lost partitions)") from exc
        logger.warning("%s was lost (%s: %s); rebuilding it from the checkpoint after message %d",
                       where, type(exc).__name__, exc, self.checkpoint_at)
        self.client.cancel([self.actor_futures[i]])
        live = [w for w in self._live_workers() if w != self.workers[i]] or self._live_workers()
        if not live:
            raise PartitionLostError(f"{where} was lost and no worker is left") from exc
        worker = live[i % len(live)]
        part = self.partitions[i]
        checkpoint = self.checkpoints[i]
        if checkpoint is not None and checkpoint.status != "finished":
            raise PartitionLostError(f"{where} was lost ({type(exc).__name__}: {exc}) and so was "
                                     "its checkpoint; the fit stops here") from exc
        try:
            xi = [c for c, _, _ in self.X.pieces(part.start, part.stop)]
            x_chunks = dict(zip(xi, self.X.load(self.client, self.link, xi)))
            h_chunks = {}
            if self.H is not None:
                from pygbn.model.links import PoissonLink

                hi = [c for c, _, _ in self.H.pieces(part.start, part.stop)]
                h_chunks = dict(zip(hi, self.H.load(self.client, PoissonLink(), hi)))
            fut = self._submit_actor(part, worker, x_chunks, h_chunks, state=checkpoint,
                                     expected=self.checkpoint_at)
            actor = fut.result()
            for seq, m in enumerate(self.log, start=self.checkpoint_at):
                actor.run(seq, m).result()
            result = actor.run(self.n_sent, message).result()
        except Exception as exc2:
            raise PartitionLostError(f"{where} was lost ({type(exc).__name__}: {exc}) and could not "
                                     f"be rebuilt: {type(exc2).__name__}: {exc2}") from exc2
        self.actor_futures[i], self.actors[i], self.workers[i] = fut, actor, worker
        self.n_rebuilt += 1
        return result
