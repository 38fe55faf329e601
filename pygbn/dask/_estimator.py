"""DaskGBN: the GBN estimator with its documents on a Dask cluster."""
from __future__ import annotations

import copy
import logging
from typing import Optional, Sequence

import numpy as np

from pygbn._utils import (check_fit_vocabulary, check_int, check_random_state, draw_entropy, effective_n_jobs,
                          param_names, verbose_logging)
from pygbn.dask._data import FILE_SUFFIXES, InputChunks, as_paths, plan_partitions, read_matrix
from pygbn.dask._transport import ActorTransport, live_workers
from pygbn.estimator import GBN
from pygbn.model.links import LATENT_COUNTS, check_count_total, get_link
from pygbn.inference import infer_local
from pygbn.inference.layerwise import run_layerwise
from pygbn.inference.partition import PartitionedChain
from pygbn.model.links import PoissonLink

logger = logging.getLogger("pygbn")

__all__ = ["DaskGBN"]


class DaskGBN(GBN):
    """Augmentable gamma belief network fitted on a Dask cluster.

    The estimator of :class:`pygbn.GBN` with the documents spread over the
    workers of a ``dask.distributed`` cluster, after the Dask estimators of
    LightGBM and XGBoost.  Layer one is sampled with the partially
    collapsed method for counts (``method="auto"`` or ``"partial"``) or
    the blocked one (every link; ``method="blocked"``); the data and every document's state stay on the workers
    for the whole fit, and each iteration only the global parameters go out
    and the sufficient statistics (their non-zero entries) come back.  For
    the same ``random_state`` the fitted networks are bit-identical to
    those of ``GBN`` in one process with the method used here, whatever the
    partitioning: ``GBN(method="partial")`` for counts with the default
    ``method="auto"`` (or ``"partial"``), ``GBN(method="blocked")`` with
    ``method="blocked"`` and for the other links (``method_`` says which).

    Parameters
    ----------
    client : distributed.Client, optional
        The cluster to use (default: ``distributed.default_client()``, the
        most recently created client).  A dask-jobqueue, Kubernetes or any
        other cluster is used through its ``Client``.  scikit-learn's
        ``clone`` and ``copy.deepcopy`` share it; a pickled DaskGBN does not
        keep it (it is unpickled with ``client=None``).
    checkpoint_every : int, optional
        Copy every partition's state to another worker after every this many
        iterations, so that a partition lost with its worker is rebuilt (its
        data read again, its state restored, the iterations since replayed:
        the result is unchanged).  Each copy moves the documents' state
        (about the size of theta and m) between workers, and the driver keeps
        the globals of the iterations since the last copy.  Default None: a
        lost worker stops the fit with :class:`~pygbn.dask.PartitionLostError`.
    **params
        The parameters of :class:`pygbn.GBN` (``link``, ``n_components``,
        ``n_layers``, ``eta``, ``burn_in``, ``n_collect``, ``n_jobs`` (kernel
        threads on each worker, and of the global update in this process;
        -1: all the cores of each machine), ``random_state``, ``verbose``,
        ``callback``, ``prune``, ``min_width``, ``hyperparameters``,
        ``transform_iter``, ``check``).  ``method`` may be "auto"
        ("partial" for counts, "blocked" for the other links: on many
        cores the partial chain reaches a given held-out perplexity in less
        time and fewer iterations than the blocked one), "partial" (counts
        only) or "blocked"; "collapsed" is refused: its
        layer-one sweep shares the term counts of all documents and cannot
        be split.  ``callback`` gets ``info["sampler"] = None`` (no sampler in
        this process holds the documents).

    Attributes
    ----------
    networks_, network_, widths_, perplexity_, seconds_per_iteration_, n_features_in_
        As for :class:`pygbn.GBN`.
    n_partitions_ : int
        Training partitions of the last fit.
    n_rebuilt_ : int
        Partitions rebuilt after a lost worker in the last fit.

    Notes
    -----
    The training partitions follow the input: they are cut where the dask
    array's row chunks (or the files) end, each cut rounded to a whole block
    of ``BLOCK_SIZE`` = 128 documents, and partition ``p`` lives on worker
    ``p mod n_workers`` of the workers present when ``fit`` starts.  Rechunk
    the array (or split the files) to choose how many there are; their
    number changes nothing in the result.
    ``perplexity``, ``score`` and ``generate`` run in the client process, on
    in-memory data (as :meth:`to_local`'s ``GBN`` does; a dask array is
    computed into it first, a list of files is refused).
    """

    def __init__(self, client=None, *, checkpoint_every: Optional[int] = None, **params):
        super().__init__(**params)
        self.client = client
        self.checkpoint_every = checkpoint_every

    # --------------------------------------------------------------- params
    def __sklearn_clone__(self) -> "DaskGBN":
        """scikit-learn's ``clone``: an unfitted DaskGBN with copies of the parameters but
        the same ``client`` (a connection, which cannot be copied)."""
        params = self.get_params(deep=False)
        client = params.pop("client")
        new = type(self)(client=client, **copy.deepcopy(params))
        if "_sklearn_output_config" in self.__dict__:
            new._sklearn_output_config = dict(self._sklearn_output_config)
        return new

    def __deepcopy__(self, memo) -> "DaskGBN":
        """A deep copy that shares the ``client`` (a connection, which cannot be copied)."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        state = {k: v for k, v in self.__dict__.items() if k != "client"}
        new.__dict__.update(copy.deepcopy(state, memo))
        new.client = self.client
        return new

    def __getstate__(self) -> dict:
        """Pickled without the ``client``, which cannot be: the unpickled model has
        ``client=None`` and uses ``distributed.default_client()`` (as LightGBM's Dask
        estimators do)."""
        return {**self.__dict__, "client": None}

    def __repr__(self) -> str:
        defaults = DaskGBN().get_params(deep=False)
        shown = [f"{k}={v!r}" for k, v in self.get_params(deep=False).items() if repr(v) != repr(defaults[k])]
        return f"DaskGBN({', '.join(shown)})"

    def _validated(self) -> dict:
        if self.method == "collapsed":
            raise ValueError(
                "method='collapsed' cannot be distributed (its layer-one sweep shares the term "
                "counts of all documents); DaskGBN samples layer one with method='partial' or "
                "'blocked' (method='auto' is 'partial' for counts)")
        p = super()._validated()
        if self.method == "auto":
            # every partition is sampled in parallel here: counts take the partial method
            p["method"] = "partial" if get_link(self.link).collapsible else "blocked"
        if self.checkpoint_every is not None:
            check_int(self.checkpoint_every, "checkpoint_every", 1)
        return p

    @property
    def client_(self):
        """The client in use: ``client``, or ``distributed.default_client()``
        (ValueError when there is none, or when ``client`` is closed)."""
        from distributed import Client, default_client

        if self.client is not None:
            if not isinstance(self.client, Client):
                raise ValueError(f"client must be a distributed.Client or None, got {self.client!r}")
            if self.client.status in ("closing", "closed"):
                raise ValueError(f"client is closed (status {self.client.status!r}): pass an open "
                                 f"distributed.Client, got {self.client!r}")
            return self.client
        try:
            return default_client()
        except ValueError:
            raise ValueError("DaskGBN needs a dask.distributed Client: pass client=... or create "
                             "one first (distributed.Client(...))") from None

    # ----------------------------------------------------------------- fit
    def fit(self, X, y=None, *, heldout=None, vocabulary: Optional[Sequence[str]] = None) -> "DaskGBN":
        """Fit networks of depth 1..n_layers on the cluster.

        Parameters
        ----------
        X : dask.array.Array or list of str
            Documents as rows: a dask array whose chunks are scipy.sparse
            matrices (any row chunking; several column chunks are put side
            by side on the workers), or the paths of ``.npz``
            (``scipy.sparse.save_npz``) or ``.mtx`` (Matrix Market) files,
            one block of consecutive documents each, which the workers read
            themselves (the data never pass through the client).  Values as
            for :meth:`pygbn.GBN.fit`.
        y : ignored
        heldout : same kind as X, optional
            Held-out counts of the same documents (Poisson link): the
            held-out perplexity of each depth is recorded in ``perplexity_``
            (the same numbers as one process).
        vocabulary : sequence of str or mapping, optional
            Feature names in column order, kept on the fitted networks
            (checked as :meth:`pygbn.GBN.fit` checks it: a mapping term ->
            column is read by its columns).

        Raises
        ------
        ValueError
            For bad input, naming the input partition (the chunk or the
            file): a chunk whose width differs, negative or non-integer
            counts, a file that cannot be read.  Raised before the first
            iteration: every input partition is validated on the workers.
        PartitionLostError
            When a worker is lost and ``checkpoint_every`` is None.
        """
        p = self._validated()
        link = p["link"]
        client = self.client_
        if not live_workers(client):
            raise ValueError(f"the cluster of {client!r} has no workers (yet: after cluster.scale(n), "
                             "wait for them with client.wait_for_workers(n); the partitions are placed "
                             "on the workers present when fit starts)")
        Xc = InputChunks.from_input(X, "X")
        Hc = None
        if heldout is not None:
            if not isinstance(link, PoissonLink):
                raise ValueError(f"heldout perplexity is defined for counts (link='poisson'), "
                                 f"not link={link.name!r}")
            Hc = InputChunks.from_input(heldout, "heldout")
        x_chunks = Xc.load(client, link)
        h_chunks = None if Hc is None else Hc.load(client, PoissonLink())
        J, V, nnz = Xc.check(client, x_chunks)
        if J == 0 or V == 0:
            raise ValueError(f"X must have at least one sample and one feature, got shape {(J, V)}")
        if nnz == 0:
            raise ValueError("X has no non-zero entry: there is nothing to fit")
        if link.latent_mode == LATENT_COUNTS:
            check_count_total(Xc.total)     # each chunk's total is below the limit, not their sum
        if Hc is not None:
            HJ, HV, _ = Hc.check(client, h_chunks)
            if (HJ, HV) != (J, V):
                raise ValueError(f"heldout must have the shape of X {(J, V)}, got {(HJ, HV)}")
        vocabulary = check_fit_vocabulary(vocabulary, V)
        partitions = plan_partitions(Xc.rows)
        transport = ActorTransport(client, partitions, Xc, Hc, link, self.n_jobs,
                                   checkpoint_every=self.checkpoint_every)
        # verbose's setup from here (_run_training's nests in it), so that the first line shows too
        with verbose_logging(bool(p["verbose_every"])):
            try:
                transport.start(x_chunks, h_chunks)
                del x_chunks, h_chunks  # the actors hold their own rows now
                logger.info("DaskGBN: %d documents, %d terms in %d partitions on %d workers", J, V,
                            len(partitions), len(set(transport.workers)))
                rng = check_random_state(self.random_state)
                chain = PartitionedChain.for_training(transport.send, V, p["K"], link=link,
                                                      eta=p["etas"][0], hyper=p["hyper"],
                                                      n_jobs=p["n_jobs"], random_state=rng,
                                                      method=p["method"])
                res = self._run_training(p, lambda callback: run_layerwise(
                    chain, p["schedule"], p["etas"], heldout=Hc is not None, callback=callback,
                    check=self.check))
            finally:
                transport.close()
        for net in res.networks:
            net.vocabulary = vocabulary
        self.n_partitions_ = len(partitions)
        self.n_rebuilt_ = transport.n_rebuilt
        return self._state_from_fit(res, p["method"], heldout=Hc is not None)

    # ------------------------------------------------------------ transform
    def transform(self, X, *, depth: Optional[int] = None, compute: bool = False):
        """Features of documents, computed on the workers chunk by chunk.

        Each input partition (row chunk or file) runs its own test-time
        chain (:func:`pygbn.inference.infer_local`, ``transform_iter``
        iterations) seeded by ``random_state`` and the partition's index, so
        the features depend on the seed and on the chunking, not on the
        cluster.

        Parameters
        ----------
        X : dask.array.Array or list of str
            As for :meth:`fit`.
        depth : int, optional
            Which fitted network (default the deepest).
        compute : bool, default=False
            Return a numpy array (computed now) instead of a lazy dask array.
            After :meth:`set_output` with "pandas" or "polars" it must be
            True (the features then come as that DataFrame).

        Returns
        -------
        dask.array.Array or ndarray of shape (n_samples, K_1)
        """
        import dask
        import dask.array as da

        net = self._network(depth)
        p = self._validated()
        if self._output_kind() != "default" and not compute:
            raise ValueError(f"set_output(transform={self._output_kind()!r}) applies to computed features: "
                             "call transform(X, compute=True), or set_output(transform='default') for "
                             "the lazy dask array")
        chunks = InputChunks.from_input(X, "X")
        if np.isfinite(chunks.n_columns) and int(chunks.n_columns) != net.n_features:
            raise ValueError(f"X has {int(chunks.n_columns)} features but the network was fitted "
                             f"with {net.n_features}")
        client = self.client_
        entropy = draw_entropy(check_random_state(self.random_state))
        # a fresh key for every call: with content hashing, repeated calls would share one
        # key, and releasing the previous call's future could drop the data under this one
        net_future = client.scatter(net, broadcast=True, hash=False)
        K1 = net.layers[0].width
        parts = []
        for i, (src, rows) in enumerate(zip(chunks.sources, chunks.declared_rows)):
            chunk = dask.delayed(read_matrix)(src) if chunks.from_files else src
            feats = dask.delayed(_transform_chunk, pure=True)(net_future, chunk, i, chunks.labels[i],
                                                              p["t_burn"], p["t_coll"], self.n_jobs,
                                                              entropy)
            parts.append(da.from_delayed(feats, shape=(rows, K1), dtype=np.float64))
        out = da.concatenate(parts, axis=0)
        return self._wrap_output(client.compute(out).result(), X) if compute else out

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X)`` then ``transform(X)``: a lazy dask array, or after :meth:`set_output`
        with "pandas" or "polars" the computed features as that DataFrame (what
        ``transform(X, compute=True)`` returns; a ``Pipeline`` with ``set_output`` calls this)."""
        return self.fit(X, y, **fit_params).transform(X, compute=self._output_kind() != "default")

    def _check_input(self, X, net, name: str = "X"):
        """New data for ``score`` and ``perplexity`` (which run in this process): a dask
        array is computed here first; .npz/.mtx paths are refused (the workers read them)."""
        import dask.array as da

        if isinstance(X, da.Array):
            X = X.compute()
        elif (paths := as_paths(X)) is not None and all(p.endswith(FILE_SUFFIXES) for p in paths):
            raise ValueError(f"{name} is a list of files ({', '.join(map(repr, paths[:3]))}"
                             f"{', ...' if len(paths) > 3 else ''}): score and perplexity run in this "
                             "process on in-memory data; pass the matrix (e.g. scipy.sparse.load_npz of "
                             "each file, stacked with scipy.sparse.vstack) or a dask array")
        return super()._check_input(X, net, name)

    # ----------------------------------------------------------------- local
    def to_local(self) -> GBN:
        """The fitted model as a :class:`pygbn.GBN` in this process (same networks and
        fitted attributes, ``method`` "blocked" or "partial"), for ``save``, exploration and the CLI."""
        self._check_fitted()
        params = {k: getattr(self, k) for k in param_names(GBN)}
        params["method"] = self.method_
        return GBN._from_state(copy.deepcopy(self.networks_), params, self._get_state())

    def save(self, path) -> None:
        """Save the fitted model (as :meth:`to_local`'s GBN; ``pygbn.load`` returns a GBN)."""
        self.to_local().save(path)


def _transform_chunk(network, chunk, index: int, label: str, burn_in: int, n_collect: int,
                     n_jobs: int, entropy) -> np.ndarray:
    """Features of one input partition (on a worker)."""
    Y = network.link.check_data(chunk, label)
    if Y.shape[1] != network.n_features:
        raise ValueError(f"{label} has {Y.shape[1]} features but the network was fitted with "
                         f"{network.n_features}")
    seed = np.random.SeedSequence(list(entropy), spawn_key=(index,))
    return infer_local(network, Y, burn_in=burn_in, n_collect=n_collect,
                       n_jobs=effective_n_jobs(n_jobs), random_state=seed).features
