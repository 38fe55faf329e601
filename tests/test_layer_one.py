"""Layer one's compact data layout and its kernels' guards.

The counts' types (uint16 / int32 / int64 where their range allows), the
blocked split's shared statistics (atomic integer additions: the same for
any thread count), a failed scratch allocation inside a parallel loop
(``MemoryError``, in the blocked split and in the upper layers' kernels), and the collapsed sweep's bucket totals on a very long
document (recomputed exactly every ``refresh`` tokens: the chain is the one
whose totals are exact at every token).
"""
import numpy as np
import pytest
import scipy.sparse as sp

from pygbn._utils import BlockStreams
from pygbn.inference import GibbsSampler, _blocked, _collapsed, _upper
from pygbn.inference.collapsed_state import CollapsedState
from pygbn.model.links import get_link


def _counts(J=60, V=25, seed=0, scale=3.0):
    rng = np.random.default_rng(seed)
    X = sp.random(J, V, density=0.3, random_state=rng, format="csr")
    X.data = np.ceil(X.data * scale)
    return get_link("poisson").check_data(X)


# --------------------------------------------------------------------------
# types
# --------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["collapsed", "blocked", "partial"])
def test_layer_one_counts_take_the_smallest_type(method):
    Y = _counts()
    s = GibbsSampler.for_training(Y, 6, method=method, random_state=0)
    assert s.m[0].dtype == np.uint8          # no document of more than 255 tokens
    mid_doc = Y.copy()
    mid_doc.data[0] = 300.0             # a document of more than 255 tokens
    s = GibbsSampler.for_training(mid_doc, 6, method=method, random_state=0)
    assert s.m[0].dtype == np.uint16
    s.sweep()
    assert s.m[0].sum() == mid_doc.sum()
    long_doc = Y.copy()
    long_doc.data[0] = 70000.0          # a document of more than 65535 tokens
    s = GibbsSampler.for_training(long_doc, 6, method=method, random_state=0)
    assert s.m[0].dtype == np.int32
    s.sweep()
    assert s.m[0].sum() == long_doc.sum()
    if method == "collapsed":
        assert s.tokens.labels.dtype == np.int16
        assert s.tokens.term_counts.dtype == np.int32
        # Phi^(1) is integrated out: a placeholder of its shape, no memory
        assert s.network.layers[0].phi.shape == (Y.shape[1], 6)
        assert s.network.layers[0].phi.strides == (0, 0)


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_random_latent_counts_start_in_the_type_of_the_data(link):
    """Random latent counts start in the type of the longest document and are
    widened where a split outgrows it (tests/test_latent_split.py)."""
    Y = _counts()
    Y.data[:] = 1.0
    s = GibbsSampler.for_training(get_link(link).check_data(Y), 4, link=link, method="blocked",
                                  random_state=0)
    assert s.m[0].dtype == np.uint8


def test_large_K_takes_int32_labels():
    Y = _counts(J=8, V=6)
    t = CollapsedState.from_counts(Y, 40000, rng=np.random.default_rng(0))
    assert t.labels.dtype == np.int32


@pytest.mark.parametrize("T", [1, 2])
def test_blocked_chain_does_not_depend_on_the_type_of_m(T):
    """The kernels read uint8, uint16, int32 and int64 counts alike: the same chain."""
    Y = _counts()
    nets = []
    for dtype in (None, np.int64, np.int32, np.uint16):
        s = GibbsSampler.for_training(Y, 6, method="blocked", random_state=3)
        if T == 2:
            s.add_layer(0.05)
        for _ in range(4):
            if dtype is not None:
                s.m[0] = s.m[0].astype(dtype)
            s.sweep()
        theta = s.theta_one() if T == 1 else s.network.layers[-1].theta
        nets.append((s.network.layers[0].phi.copy(), theta.copy(), s.network.r))
    for other in nets[1:]:
        for a, b in zip(nets[0], other):
            np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# blocked split: shared statistics, failed allocations
# --------------------------------------------------------------------------
def _split_inputs(J=700, V=40, K=9, seed=1):
    Y = _counts(J=J, V=V, seed=seed, scale=40.0)
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.ones(V), size=K).T.copy()
    theta = rng.gamma(1.0, size=(J, K))
    bounds = np.arange(0, J + 128, 128, dtype=np.int64)
    bounds[-1] = J
    return Y, phi, theta, bounds


def split_once(Y, phi, theta, bounds, n_threads, stat_dtype=np.int64):
    """One blocked split of ``Y`` from fresh streams (seed 7): the counts m (J, K)
    and the shared term-factor statistics n (V, K) of ``stat_dtype``."""
    streams = BlockStreams(np.random.default_rng(7), len(bounds) - 1)
    m = np.empty((Y.shape[0], phi.shape[1]), dtype=np.uint16)
    n = np.zeros(phi.shape, dtype=stat_dtype)
    _blocked.split_sparse(Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, np.empty(0), 0,
                          bounds, streams.addresses, m, n, np.empty(0, np.int64), n_threads)
    return m, n


def test_split_sparse_shared_statistics_do_not_depend_on_threads():
    Y, phi, theta, bounds = _split_inputs()
    out = []
    for n_threads in (1, 2, 3):
        out.append(split_once(Y, phi, theta, bounds, n_threads))
    for m, n in out[1:]:
        np.testing.assert_array_equal(m, out[0][0])
        np.testing.assert_array_equal(n, out[0][1])
    m, n = out[0]
    np.testing.assert_array_equal(m.sum(axis=1), np.asarray(Y.sum(axis=1)).ravel())
    np.testing.assert_array_equal(n.sum(axis=1), np.asarray(Y.sum(axis=0)).ravel())


@pytest.mark.parametrize("n_threads", [1, 2])
def test_failed_scratch_allocation_raises_memory_error(n_threads):
    Y, phi, theta, bounds = _split_inputs()
    streams = BlockStreams(np.random.default_rng(7), len(bounds) - 1)
    m = np.empty((Y.shape[0], phi.shape[1]), dtype=np.int64)
    args = (Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, np.empty(0), 0, bounds,
            streams.addresses, m, np.zeros(phi.shape, dtype=np.int64), np.empty(0, np.int64), n_threads)
    try:
        _blocked._fail_next_allocations(2)
        with pytest.raises(MemoryError, match="split_sparse"):
            _blocked.split_sparse(*args)
    finally:
        _blocked._fail_next_allocations(0)
    _blocked.split_sparse(*args)          # and all is well again


def _upper_kernel_calls():
    """``(name, call)`` for each kernel of the upper layers that allocates block
    scratch inside its parallel loop; ``call(n_threads)`` runs it on fresh streams."""
    rng = np.random.default_rng(5)
    J, kin, K = 300, 6, 4
    bounds = np.linspace(0, J, 7).astype(np.int64)
    m_in = rng.poisson(2.0, size=(J, kin)).astype(np.int32)
    phi = rng.dirichlet(np.ones(kin), size=K).T.copy()
    theta = rng.gamma(1.0, size=(J, K))
    rate = 1.0 + rng.random(J)

    held = []                                # the streams live as long as their addresses are used

    def streams():
        held[:] = [BlockStreams(np.random.default_rng(8), len(bounds) - 1)]
        return held[0].addresses

    def propagate(n_threads):
        out = np.empty((J, K), dtype=np.int64)
        _upper.propagate_counts(m_in, phi, theta, bounds, streams(), out,
                                np.zeros((n_threads, kin, K), dtype=np.int64), n_threads)
        return out

    def theta_draw(n_threads):               # prior rows from theta^(t+1) Phi^(t+1)^T, by blocks
        out = np.empty((J, kin))
        _upper.sample_theta(theta, phi, np.empty(0), m_in, rate, bounds, streams(), out, np.empty(J),
                            n_threads)
        return out

    def theta_draw_top(n_threads):           # the top layer: one shared prior row
        out = np.empty((J, kin))
        _upper.sample_theta(np.empty((0, 0)), np.empty((0, 0)), np.full(kin, 0.5), m_in, rate, bounds,
                            streams(), out, np.empty(0), n_threads)
        return out

    return [("propagate_counts", propagate), ("sample_theta", theta_draw), ("sample_theta", theta_draw_top)]


@pytest.mark.parametrize("n_threads", [1, 2])
@pytest.mark.parametrize("case", [0, 1, 2], ids=["propagate_counts", "sample_theta", "sample_theta-top"])
def test_failed_scratch_allocation_in_upper_kernels_raises_memory_error(case, n_threads):
    name, call = _upper_kernel_calls()[case]
    reference = call(1)
    try:
        _upper._fail_next_allocations(2)
        with pytest.raises(MemoryError, match=name):
            call(n_threads)
        _blocked._fail_next_allocations(5)    # another module's counter: not this kernel's
        np.testing.assert_array_equal(call(n_threads), reference)
    finally:
        _upper._fail_next_allocations(0)
        _blocked._fail_next_allocations(0)
    np.testing.assert_array_equal(call(n_threads), reference)     # and all is well again


# --------------------------------------------------------------------------
# collapsed sweep: bucket totals on a very long document
# --------------------------------------------------------------------------
@pytest.mark.parametrize("shared", [True, False], ids=["prior-r", "prior-per-doc"])
def test_bucket_totals_on_a_very_long_document(shared):
    """A document of 300,000 tokens: the chain whose bucket totals are
    recomputed every ``REFRESH`` tokens is the chain whose totals are exact at
    every token (refresh=1), and the counts stay those of the labels."""
    K, V, N = 6, 4, 300_000
    # a short document, then the long one
    Y = sp.csr_matrix(np.array([[3, 0, 5, 2],
                                [N // 2, N // 4, N // 8, N - N // 2 - N // 4 - N // 8]], dtype=float))
    # prior shapes over six orders of magnitude, so rounding would show
    prior = np.array([[1e-3, 2e2, 0.5, 3e-2, 7.0, 1e1], [4.0, 1e-3, 0.2, 6e2, 1.0, 3e-2]])
    if shared:
        prior = prior[:1]
    labels = np.random.default_rng(0).integers(0, K, size=int(Y.sum()))
    runs = []
    for refresh in (1, _collapsed.REFRESH):
        t = CollapsedState.from_counts(Y, K, labels=labels)
        gen = np.random.default_rng(11)
        for _ in range(2):
            t.sweep(prior, 0.05, gen, refresh=refresh)
        runs.append(t)
    np.testing.assert_array_equal(runs[0].labels, runs[1].labels)
    t = runs[1]
    np.testing.assert_array_equal(t.doc_counts[1], np.bincount(t.labels[10:], minlength=K))
    np.testing.assert_array_equal(t.totals, np.bincount(t.labels, minlength=K))
    t.check()


# --------------------------------------------------------------------------
# blocked training: theta^(1) drawn when its split needs it
# --------------------------------------------------------------------------
@pytest.mark.parametrize("link", ["poisson", "bernoulli", "prg"])
def test_lazy_theta_one_is_the_same_chain(link):
    """theta^(1) drawn by the next split (no (J, K_1) array between iterations)
    is the chain that draws it at the end of each iteration: through a new
    layer, pruning and held-out style reads of theta^(1)."""
    Y = _counts(J=300, V=20, seed=4)
    if link != "poisson":
        Y.data[:] = 1.0 if link == "bernoulli" else Y.data * 0.3
    Y = get_link(link).check_data(Y)
    chains = []
    for lazy in (False, True):
        s = GibbsSampler.for_training(Y, 8, link=link, method="blocked", random_state=9)
        s.lazy_theta_one = lazy
        thetas = []
        for it in range(9):
            s.sweep()
            if lazy:
                assert s.network.layers[0].theta is None
            if it == 2:
                s.prune_top()
                s.add_layer(0.05)
            if it == 5:
                s.m[-1][:, 0] = 0            # a factor of the new top layer falls out of use
                s.prune_top()
            if it in (4, 7):
                thetas.append(s.theta_one().copy())
        chains.append((thetas, s.theta_one().copy(), s.network, s.m))
    (ta, tha, na, ma), (tb, thb, nb, mb) = chains
    for a, b in zip(ta + [tha], tb + [thb]):
        np.testing.assert_array_equal(a, b)
    for la, lb in zip(na.layers, nb.layers):
        np.testing.assert_array_equal(la.phi, lb.phi)
        np.testing.assert_array_equal(la.c, lb.c)
    np.testing.assert_array_equal(na.r, nb.r)
    for a, b in zip(ma, mb):
        np.testing.assert_array_equal(a, b)


def test_split_reports_documents_whose_total_outgrows_m():
    """split_sparse counts the documents whose latent total m_out cannot hold;
    the sampler refuses such an m[0] rather than wrap around."""
    Y = sp.csr_matrix(np.array([[70000.0, 3.0], [2.0, 0.0]]))
    phi, theta = np.full((2, 3), 0.5), np.ones((2, 3))
    streams = BlockStreams(np.random.default_rng(0), 1)
    bounds = np.array([0, 2], dtype=np.int64)
    for dtype, expected in ((np.uint16, 1), (np.int32, 0)):
        m = np.empty((2, 3), dtype=dtype)
        over = _blocked.split_sparse(Y.indptr.astype(np.int64), Y.indices, Y.data, phi, theta, np.empty(0),
                                     0, bounds, streams.addresses, m, np.zeros((2, 3), np.int64),
                                     np.empty(0, np.int64), 1)
        assert over == expected
    s = GibbsSampler.for_training(get_link("poisson").check_data(Y), 3, method="blocked", random_state=0)
    assert s.m[0].dtype == np.int32
    s.m[0] = s.m[0].astype(np.uint16)
    with pytest.raises(OverflowError, match="1 document"):
        s.sweep()


# --------------------------------------------------------------------------
# the data: one copy
# --------------------------------------------------------------------------
def test_canonical_csr_input_is_not_copied_and_never_changed():
    from pygbn.model.links import as_csr

    rng = np.random.default_rng(0)
    X = sp.random(50, 30, density=0.2, format="csr", random_state=rng)
    Y = as_csr(X)
    assert np.shares_memory(Y.data, X.data) and np.shares_memory(Y.indices, X.indices)
    Xi = X.copy()
    Xi.data = np.ceil(Xi.data * 3).astype(np.int32)     # integer counts: new values, same indices
    Yi = as_csr(Xi)
    assert Yi.dtype == np.float64 and np.shares_memory(Yi.indices, Xi.indices)
    # duplicates, an explicit zero and unsorted indices: X is left as it was
    A = sp.csr_matrix((np.array([1.0, 0.0, 2.0, 3.0]), np.array([2, 1, 2, 0]), np.array([0, 3, 4])),
                      shape=(2, 3))
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    B = as_csr(A)
    for a, b in zip(before, (A.data, A.indices, A.indptr)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(B.toarray(), [[0, 0, 3], [3, 0, 0]])
    assert B.has_canonical_format and B.nnz == 2
    # the sampler's kernels read those arrays (no copy of the values or indices)
    s = GibbsSampler.for_training(get_link("poisson").check_data(Yi), 3, method="blocked", random_state=0)
    assert np.shares_memory(s.values, Yi.data) and np.shares_memory(s.indices, Xi.indices)


def test_integer_csr_input_with_unsorted_indices_is_never_changed():
    """An integer CSR X with unsorted indices (or duplicates): as_csr cast its values to
    float64 around X's own index arrays (views, so its ``M.indices is X.indices`` test
    missed them) and sorted them in place, leaving X's values under other columns:
    ``GBN().fit(X)`` silently corrupted the caller's matrix."""
    from pygbn import GBN
    from pygbn.model.links import as_csr

    dense = np.array([[0, 1, 0, 5], [2, 0, 7, 0]])
    for make in (sp.csr_matrix, sp.csr_array):
        for dtype in (np.int64, np.int32, np.float32):
            # row 0 unsorted; row 1 unsorted with the 7 split over two entries
            A = make((np.array([5, 1, 3, 2, 4], dtype=dtype), np.array([3, 1, 2, 0, 2]),
                      np.array([0, 2, 5])), shape=(2, 4))
            before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
            B = as_csr(A)
            for a, b in zip(before, (A.data, A.indices, A.indptr)):
                np.testing.assert_array_equal(a, b)
            np.testing.assert_array_equal(A.toarray(), dense)
            np.testing.assert_array_equal(B.toarray(), dense)
            assert B.has_canonical_format
    kw = dict(n_components=3, n_layers=1, burn_in=3, n_collect=2, transform_iter=(2, 2), random_state=0)
    A = sp.csr_matrix((np.array([5, 1, 7, 2]), np.array([3, 1, 2, 0]), np.array([0, 2, 4])), shape=(2, 4))
    m = GBN(**kw).fit(A)
    np.testing.assert_array_equal(A.toarray(), dense)
    features = m.transform(A)
    np.testing.assert_array_equal(A.toarray(), dense)
    np.testing.assert_array_equal(features, GBN(**kw).fit(dense).transform(dense))
