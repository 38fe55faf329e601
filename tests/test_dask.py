"""DaskGBN on a real two-process LocalCluster: the same networks as one process,
file input, a worker killed mid-fit, bad input named by partition."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")
import dask  # noqa: E402

import pygbn  # noqa: E402
from pygbn.datasets import load_demo  # noqa: E402
from pygbn.dask import DaskGBN, PartitionLostError  # noqa: E402

PARAMS = dict(n_components=8, n_layers=2, burn_in=(8, 4), n_collect=5, random_state=5,
              transform_iter=(3, 3), method="blocked")


@pytest.fixture(scope="module")
def client():
    # a killed worker's address refuses connections: give up on it after 5 s, not 30
    with dask.config.set({"distributed.comm.timeouts.connect": "5s"}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        client = distributed.Client(cluster)
        yield client
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def data():
    X = load_demo().counts[:400].tocsr()
    X = X[:, np.asarray(X.sum(axis=0)).ravel() > 0].tocsr()
    obs, held = pygbn.split_tokens(X, 0.7, random_state=2)
    return obs, held


@pytest.fixture(scope="module")
def reference(data):
    obs, held = data
    return pygbn.GBN(**PARAMS).fit(obs, heldout=held)


def assert_same_networks(a, b):
    assert a.widths_ == b.widths_ and len(a.networks_) == len(b.networks_)
    for na, nb in zip(a.networks_, b.networks_):
        for la, lb in zip(na.layers, nb.layers):
            np.testing.assert_array_equal(la.phi, lb.phi)
            assert la.c_median == lb.c_median and la.eta == lb.eta
        np.testing.assert_array_equal(na.r, nb.r)
        assert (na.gamma0, na.c0) == (nb.gamma0, nb.c0)
        assert na.link == nb.link


def dask_array(X, rows):
    return da.from_array(X, chunks=(rows, -1), asarray=False)


@pytest.mark.parametrize("chunks,n_partitions", [((200, -1), 2), ((60, 100), 4)])
def test_poisson_bit_identical_to_one_process(client, data, reference, chunks, n_partitions):
    """Two partitionings (the second from row chunks of 60 documents, each cut
    rounded to a 128-document block, and columns in chunks of 100) give the
    networks and the held-out perplexities of one process, bit for bit."""
    obs, held = data
    X = da.from_array(obs, chunks=chunks, asarray=False)
    model = DaskGBN(client=client, **PARAMS).fit(X, heldout=dask_array(held, 250))
    assert model.n_partitions_ == n_partitions
    assert_same_networks(model, reference)
    assert model.perplexity_ == reference.perplexity_


def test_partial_bit_identical_to_one_process(client, data, tmp_path):
    """method="auto" (partial for counts on the cluster) over three partitions
    gives GBN(method="partial")'s networks and held-out perplexities bit for
    bit, and the method is kept by to_local."""
    obs, held = data
    ref = pygbn.GBN(**{**PARAMS, "method": "partial"}).fit(obs, heldout=held)
    model = DaskGBN(client=client, **{**PARAMS, "method": "auto"}).fit(dask_array(obs, 150),
                                                                       heldout=dask_array(held, 150))
    assert model.n_partitions_ == 3 and model.method_ == "partial"
    assert_same_networks(model, ref)
    assert model.perplexity_ == ref.perplexity_
    assert model.to_local().get_params()["method"] == "partial"


@pytest.mark.parametrize("rows", [200, 70])
def test_bernoulli_bit_identical_to_one_process(client, data, rows):
    B = data[0].copy()
    B.data[:] = 1.0
    ref = pygbn.GBN(link="bernoulli", **PARAMS).fit(B)
    model = DaskGBN(client=client, link="bernoulli", **PARAMS).fit(dask_array(B, rows))
    assert_same_networks(model, ref)


def test_file_input_npz_and_mtx(client, data, reference, tmp_path):
    """The workers read .npz and .mtx files themselves; cuts fall inside files."""
    obs, held = data
    paths = []
    for i, (a, b) in enumerate([(0, 100), (100, 290), (290, obs.shape[0])]):
        if i == 1:
            p = tmp_path / f"part{i}.mtx"
            scipy.io.mmwrite(str(p), obs[a:b])
        else:
            p = tmp_path / f"part{i}.npz"
            sp.save_npz(p, obs[a:b])
        paths.append(str(p))
    hpath = tmp_path / "held.npz"
    sp.save_npz(hpath, held)
    model = DaskGBN(client=client, **PARAMS).fit(paths, heldout=[str(hpath)])
    assert model.n_partitions_ == 3
    assert_same_networks(model, reference)
    assert model.perplexity_ == reference.perplexity_


def _kill_a_worker_at(client, iteration):
    state = {"killed": False}

    def callback(info):
        if not state["killed"] and info["depth"] == 1 and info["iteration"] == iteration:
            pids = client.run(os.getpid)
            os.kill(pids[sorted(pids)[-1]], signal.SIGKILL)
            state["killed"] = True
    return callback, state


def test_worker_killed_mid_fit_is_rebuilt(client, data, reference):
    """With checkpoints, the lost partition is rebuilt on the other worker and the
    fit ends with the networks it would have had."""
    obs, held = data
    client.wait_for_workers(2, timeout=60)
    callback, state = _kill_a_worker_at(client, 7)
    model = DaskGBN(client=client, checkpoint_every=3, callback=callback, **PARAMS)
    model.fit(dask_array(obs, 200), heldout=dask_array(held, 200))
    assert state["killed"] and model.n_rebuilt_ == 1
    assert_same_networks(model, reference)
    assert model.perplexity_ == reference.perplexity_


def test_worker_killed_without_checkpoints_stops_naming_the_partition(client, data):
    client.wait_for_workers(2, timeout=60)
    callback, state = _kill_a_worker_at(client, 3)
    model = DaskGBN(client=client, callback=callback, **PARAMS)
    with pytest.raises(PartitionLostError, match=r"partition 1 of 2 \(documents 256 to 399"):
        model.fit(dask_array(data[0], 200))
    assert state["killed"] and not hasattr(model, "networks_")
    client.wait_for_workers(2, timeout=60)


def _lying_width_array(X):
    """A dask array whose second chunk really has one column fewer than it declares."""
    good = dask.delayed(lambda: X[:200])()
    bad = dask.delayed(lambda: X[200:, :-1])()
    return da.concatenate([da.from_delayed(good, shape=(200, X.shape[1]), meta=X[:0]),
                           da.from_delayed(bad, shape=(X.shape[0] - 200, X.shape[1]), meta=X[:0])])


def _with_value(X, row, value):
    Y = X.copy().astype(np.float64)
    Y.data[Y.indptr[row]] = value
    return Y


@pytest.mark.parametrize("case,pattern", [
    ("width", r"X partition 1 of 2 \(documents 200 to 399\) has \d+ columns but"),
    ("negative", r"X partition 1 of 2 \(documents 200 to 399\): X must hold nonnegative counts"),
    ("fraction", r"X partition 0 of 2 \(documents 0 to 199\): X must hold integer counts"),
    ("file_width", r"X partition 1 of 2 \(file '.*b\.npz'\) has \d+ columns"),
    ("missing", r"X partition 1 of 2 \(file '.*missing\.npz'\): cannot read"),
], ids=lambda v: v if v.isidentifier() else "")
def test_bad_input_is_a_value_error_naming_the_partition(client, data, tmp_path, case, pattern):
    obs = data[0]
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    sp.save_npz(a, obs[:200])
    X = {"width": lambda: _lying_width_array(obs),
         "negative": lambda: dask_array(_with_value(obs, 250, -1.0), 200),
         "fraction": lambda: dask_array(_with_value(obs, 10, 0.5), 200),
         "file_width": lambda: (sp.save_npz(b, obs[200:, :-3]), [str(a), str(b)])[1],
         "missing": lambda: [str(a), str(tmp_path / "missing.npz")]}[case]()
    calls = []
    model = DaskGBN(client=client, callback=calls.append, **PARAMS)
    with pytest.raises(ValueError, match=pattern):
        model.fit(X)
    assert calls == []  # raised before the first iteration


def test_counts_adding_up_past_int64_across_partitions_are_refused(client):
    # each partition's counts add up to 2**62 (each accepted by the link), all of them to
    # 2**63: the sums over partitions wrapped the driver's int64 counters
    X = sp.csr_matrix(np.full((2048, 1), 2.0**52))
    calls = []
    with pytest.raises(ValueError, match=r"X's counts add up to 9.22337\d*e\+18: .* below 2\*\*63"):
        DaskGBN(client=client, callback=calls.append, **PARAMS).fit(dask_array(X, 1024))
    assert calls == []


def test_vocabulary_is_checked_as_one_process_checks_it(client, data):
    # a string was split into its characters (one a term) where GBN.fit refuses it
    obs = data[0]
    V = obs.shape[1]
    with pytest.raises(ValueError, match="vocabulary must be a sequence of str"):
        DaskGBN(client=client, **PARAMS).fit(dask_array(obs, 200), vocabulary="w" * V)
    with pytest.raises(ValueError, match=f"vocabulary has 2 entries but X has {V} features"):
        DaskGBN(client=client, **PARAMS).fit(dask_array(obs, 200), vocabulary=["a", "b"])


def test_transform_to_local_and_save(client, data, reference, tmp_path):
    obs, held = data
    model = DaskGBN(client=client, **PARAMS).fit(dask_array(obs, 150), heldout=dask_array(held, 150))
    feats = model.transform(dask_array(obs, 150))
    assert isinstance(feats, da.Array) and feats.shape == (obs.shape[0], model.widths_[0])
    computed = model.transform(dask_array(obs, 150), compute=True)
    assert isinstance(computed, np.ndarray)
    np.testing.assert_array_equal(computed, feats.compute())  # same seed, same chunks
    np.testing.assert_allclose(computed.sum(axis=1), 1.0)
    local = model.to_local()
    assert type(local) is pygbn.GBN and local.method == "blocked"
    assert_same_networks(local, reference)
    assert local.perplexity_ == reference.perplexity_
    model.save(tmp_path / "m.npz")
    assert_same_networks(pygbn.load(tmp_path / "m.npz"), reference)


def test_repeated_transforms_scatter_fresh_keys_and_agree(client, data, monkeypatch):
    """Each transform scatters the network under its own key: with content hashing the
    calls shared one key, and releasing one call's future could cancel the next call's
    tasks (FutureCancelledError about 1 call in 10)."""
    obs = data[0][:256]
    model = DaskGBN(client=client, n_components=4, n_layers=1, burn_in=2, n_collect=2,
                    transform_iter=(2, 2), random_state=0).fit(dask_array(obs, 128))
    keys, scatter = [], client.scatter

    def recording_scatter(*args, **kwargs):
        future = scatter(*args, **kwargs)
        keys.append(future.key)
        return future

    monkeypatch.setattr(client, "scatter", recording_scatter)
    first = model.transform(dask_array(obs, 128), compute=True)
    for _ in range(11):
        np.testing.assert_array_equal(model.transform(dask_array(obs, 128), compute=True), first)
    assert len(keys) == 12 and len(set(keys)) == 12


def test_heldout_with_few_collected_iterations_matches_one_process(client, data):
    """n_collect below heldout_every (5): each depth scores its last state, in Dask as in
    one process (the perplexities were NaN)."""
    obs, held = data
    params = dict(n_components=6, n_layers=2, burn_in=3, n_collect=2, random_state=1,
                  min_width=1, method="partial")
    local = pygbn.GBN(**params).fit(obs, heldout=held)
    model = DaskGBN(client=client, **params).fit(dask_array(obs, 200), heldout=dask_array(held, 200))
    assert len(model.perplexity_) == 2 and np.isfinite(model.perplexity_).all()
    assert model.perplexity_ == local.perplexity_
    assert_same_networks(model, local)


class _LostActor:
    """An actor proxy whose worker the client already knows is gone: reading ``run``
    raises the RuntimeError ``distributed.Actor.__getattr__`` raises."""

    def __getattr__(self, name):
        raise RuntimeError("Worker holding Actor was lost.  Status: error")


class _LiveActor:
    def __init__(self, calls):
        self.calls = calls

    def run(self, seq, message):
        self.calls.append((seq, message))
        return _Done(("ok", seq))


class _Done:
    def __init__(self, value, status="finished"):
        self.value, self.status = value, status

    def result(self):
        return self.value


class _FakeClient:
    def __init__(self, workers):
        self.workers = workers

    def scheduler_info(self, n_workers=-1):
        return {"workers": {w: {} for w in self.workers}}


@pytest.mark.parametrize("scheduler_knows", [True, False])
@pytest.mark.parametrize("checkpoint_every", [None, 2])
def test_send_treats_an_actor_lost_before_the_call_as_a_lost_partition(scheduler_knows, checkpoint_every,
                                                                       monkeypatch):
    """``actor.run`` itself raising (the client knows the worker is gone) leads to the rebuild
    with checkpoints, else to PartitionLostError naming the partition, not to a bare
    RuntimeError; the other partitions still get the message.  No cluster: fake actors."""
    from pygbn.dask._data import Partition
    from pygbn.dask._transport import ActorTransport

    # the scheduler may not have dropped the worker yet: then the actor's future says it
    workers = ["tcp://a", "tcp://b"] if not scheduler_knows else ["tcp://a"]
    transport = ActorTransport(_FakeClient(workers), [Partition(0, 0, 128), Partition(1, 128, 256)],
                               X=None, H=None, link=None, n_jobs=1, checkpoint_every=checkpoint_every)
    calls = []
    transport.actors = [_LiveActor(calls), _LostActor()]
    transport.actor_futures = [_Done(None), _Done(None, status="finished" if scheduler_knows else "error")]
    transport.workers = ["tcp://a", "tcp://b"]
    rebuilt = []
    if checkpoint_every:
        monkeypatch.setattr(transport, "_rebuild",
                            lambda i, exc, message: rebuilt.append((i, type(exc), message)) or "rebuilt")
        monkeypatch.setattr(transport, "_checkpoint", lambda: None)
        assert transport.send(["m"]) == [("ok", 0), "rebuilt"]
        assert rebuilt == [(1, RuntimeError, ["m"])] and transport.n_sent == 1
    else:
        with pytest.raises(PartitionLostError, match=r"partition 1 of 2 \(documents 128 to 255.*"
                                                     r"Worker holding Actor was lost"):
            transport.send(["m"])
    assert calls == [(0, ["m"])]


def test_parameters(client):
    with pytest.raises(ValueError, match="collapsed"):
        DaskGBN(client=client, method="collapsed").fit([])
    with pytest.raises(ValueError, match="checkpoint_every"):
        DaskGBN(client=client, checkpoint_every=0).fit([])
    with pytest.raises(ValueError, match="dask.array.Array .* or a list of .npz/.mtx"):
        DaskGBN(client=client).fit(np.ones((3, 3)))
    m = DaskGBN(checkpoint_every=4, n_components=3)
    assert m.get_params()["checkpoint_every"] == 4 and m.get_params()["client"] is None
    assert repr(m) == "DaskGBN(checkpoint_every=4, n_components=3)"
    assert m.set_params(n_layers=2, checkpoint_every=None).n_layers == 2


def _python(code, tmp_path):
    """Run ``code`` in a fresh interpreter importing this pygbn; the cwd is outside the
    checkout ("-c" puts the cwd first on sys.path, and the checkout's pygbn/ has no
    compiled kernels when pygbn is installed, as in CI)."""
    env = {**os.environ, "PYTHONPATH": str(Path(pygbn.__file__).resolve().parent.parent)}
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                          env=env, cwd=tmp_path)


def test_import_pygbn_does_not_import_dask(tmp_path):
    _python("import pygbn, sys; assert 'dask' not in sys.modules and 'distributed' not in sys.modules",
            tmp_path)


def test_missing_dask_says_how_to_install(tmp_path):
    out = _python("import sys; sys.modules['distributed'] = None\n"
                  "try:\n    import pygbn.dask\nexcept ImportError as e:\n    print(e)\n", tmp_path)
    assert 'pip install "augmentable-gbn[dask]"' in out.stdout


def test_clone_copy_and_pickle_with_a_client(client, data):
    """scikit-learn's clone deep-copied the client (which cannot be copied: TypeError); clone
    and deepcopy now share it, pickling leaves it out."""
    import copy
    import pickle

    sklearn_base = pytest.importorskip("sklearn.base")
    obs, _ = data
    m = DaskGBN(client=client, checkpoint_every=3, **PARAMS)
    twin = sklearn_base.clone(m)
    assert twin.client is client and twin.get_params()["checkpoint_every"] == 3
    assert {k: v for k, v in twin.get_params().items() if k != "client"} == \
        {k: v for k, v in m.get_params().items() if k != "client"}
    m.fit(dask_array(obs[:150], 75))
    assert not hasattr(sklearn_base.clone(m), "networks_")
    deep = copy.deepcopy(m)
    assert deep.client is client and deep.networks_ is not m.networks_ and deep.widths_ == m.widths_
    restored = pickle.loads(pickle.dumps(m))
    assert restored.client is None and m.client is client and restored.widths_ == m.widths_


def test_client_and_set_params_errors_name_the_argument(client):
    with pytest.raises(ValueError, match="client must be a distributed.Client or None, got 'tcp://x'"):
        DaskGBN(client="tcp://x").fit([])
    with pytest.raises(ValueError, match="invalid parameter 'bogus' for DaskGBN; valid: .*'checkpoint_every', 'client'"):
        DaskGBN().set_params(bogus=1)


def test_score_and_set_output_with_dask_arrays(client, data, fake_frame_module):
    """score of a dask array (sparse chunks) is that of the computed matrix (it failed:
    'an object array with an entry that is not a number'); set_output applies to computed
    features."""
    obs, _ = data
    X = dask_array(obs[:150], 75)
    m = DaskGBN(client=client, **PARAMS).fit(X)
    assert m.score(X) == m.score(obs[:150])
    _Frame = fake_frame_module("pandas")  # a stand-in
    with pytest.raises(ValueError, match="compute=True"):
        m.set_output(transform="pandas").transform(X)
    out = m.transform(X, compute=True)
    assert isinstance(out, _Frame) and out.kwargs["columns"] == [f"daskgbn{k}" for k in range(m.widths_[0])]
    np.testing.assert_array_equal(out.data, m.set_output(transform="default").transform(X, compute=True))
    # fit_transform (what a Pipeline with set_output calls) has no compute=: it fitted the
    # model, then raised 'call transform(X, compute=True)'; it now computes the DataFrame
    assert isinstance(m.fit_transform(X), da.Array)
    out = DaskGBN(client=client, **PARAMS).set_output(transform="pandas").fit_transform(X)
    assert isinstance(out, _Frame)
    np.testing.assert_array_equal(out.data, m.transform(X, compute=True))


def test_verbose_shows_the_start_line(client, data, caplog):
    """DaskGBN's first line (documents, partitions, workers) was logged before verbose's setup
    lowered the "pygbn" logger to INFO, so with verbose on and no logging configured it was
    dropped while the progress lines showed."""
    obs = data[0]
    DaskGBN(client=client, **{**PARAMS, "n_layers": 1, "verbose": 4}).fit(dask_array(obs, 200))
    lines = [r.getMessage() for r in caplog.records if r.name == "pygbn"]
    assert any(m.startswith("DaskGBN: 400 documents") for m in lines), lines
    assert any(m.startswith("fit done") for m in lines), lines


def test_checked_chunks_are_sized_by_their_arrays():
    # a validated chunk waits on its worker until the partitions are built: Dask must count
    # its arrays (it sizes an unknown object by sys.getsizeof; a bare dataclass said 56 bytes)
    from dask.sizeof import sizeof
    from pygbn.dask._data import Checked
    M = sp.random(2000, 300, density=0.05, format="csr", random_state=0)
    arrays = M.data.nbytes + M.indices.nbytes + M.indptr.nbytes
    assert sizeof(Checked(M, float(M.sum()))) >= arrays


def test_a_closed_client_is_a_value_error_naming_it(client, data, reference):
    """fit with a closed client raised KeyError: 'workers' and transform AttributeError
    ("'NoneType' object has no attribute 'scatter'")."""
    closed = distributed.Client(client.scheduler.address, set_as_default=False)
    closed.close()
    with pytest.raises(ValueError, match=r"client is closed \(status 'closed'\)"):
        DaskGBN(client=closed, **PARAMS).fit(dask_array(data[0], 200))
    model = DaskGBN.from_networks(reference.networks_, client=closed, **PARAMS)
    with pytest.raises(ValueError, match=r"client is closed \(status 'closed'\)"):
        model.transform(dask_array(data[0], 200), compute=True)


def test_score_and_perplexity_of_files_say_they_need_data_in_memory(client, data, reference, tmp_path):
    """score(paths), with the files fit and transform read on the workers, said 'X must be
    2-D ... Reshape your data': these run in this process, on in-memory data."""
    obs, held = data
    sp.save_npz(tmp_path / "a.npz", obs)
    model = DaskGBN.from_networks(reference.networks_, client=client, **PARAMS)
    path = str(tmp_path / "a.npz")
    with pytest.raises(ValueError, match=r"X is a list of files \('.*a\.npz'\): score and perplexity "
                                         r"run in this process"):
        model.score([path])
    with pytest.raises(ValueError, match=r"heldout is a list of files"):
        model.perplexity(obs, path)
    assert model.score(obs) == model.score(dask_array(obs, 200))   # in memory or a dask array: fine


class _ManyWorkersClient(_FakeClient):
    """Like distributed 2025.4 to 2026.6, whose Client.scheduler_info() listed at most 5
    workers unless asked for n_workers=-1 (dask/distributed#9065, #9308)."""

    def scheduler_info(self, n_workers=5):
        shown = self.workers if n_workers == -1 else self.workers[:n_workers]
        return {"workers": {w: {} for w in shown}}

    def submit(self, *args, workers=None, **kwargs):
        return _Done(("actor on", workers[0]))


def test_partitions_use_every_worker_of_a_large_cluster():
    """With a scheduler_info() that lists 5 workers by default, the partitions of a 7-worker
    cluster all went to the first 5 (and a partition on a 6th or 7th worker counted as
    lost).  No cluster: a fake client."""
    from pygbn.dask._data import InputChunks, plan_partitions
    from pygbn.dask._transport import ActorTransport

    workers = [f"tcp://w{i}" for i in range(7)]
    X = InputChunks("X", [None] * 7, ["?"] * 7, [128.0] * 7, rows=[128] * 7)
    transport = ActorTransport(_ManyWorkersClient(workers), plan_partitions(X.rows), X, None,
                               link=None, n_jobs=1)
    transport.start(list(range(7)), None)
    assert transport.workers == workers
    assert transport.actors == [("actor on", w) for w in workers]
    assert not transport._is_loss(6, RuntimeError("a bug, not a loss"))


def test_a_cluster_without_workers_says_to_wait_for_them(data):
    """A cluster still starting (cluster.scale(n), then fit at once, as docs/scaling.md's
    example did) has no worker yet: the error says how to wait for them."""
    with distributed.LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as cluster, \
            distributed.Client(cluster, set_as_default=False) as empty:
        with pytest.raises(ValueError, match=r"has no workers .*client\.wait_for_workers\(n\)"):
            DaskGBN(client=empty, **PARAMS).fit(dask_array(data[0], 200))
