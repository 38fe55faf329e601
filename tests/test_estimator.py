"""The GBN estimator: validation, input formats, reproducibility, save/load."""
import io
import logging
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import pygbn
from pygbn import GBN
from pygbn.model import Layer, Network

QUICK = dict(burn_in=(30, 20), n_collect=20, transform_iter=(10, 10))


@pytest.fixture(scope="module")
def counts():
    rng = np.random.default_rng(0)
    V, K, J = 40, 4, 150
    phi = rng.dirichlet(np.full(V, 0.1), size=K).T
    theta = rng.gamma(0.5, 10, size=(J, K))
    X = rng.poisson(theta @ phi.T)
    X[3] = 0  # an empty document
    X[:, 7] = 0  # an unused term
    return X


def _same_networks(a, b):
    assert len(a.networks_) == len(b.networks_)
    for na, nb in zip(a.networks_, b.networks_):
        assert na.widths == nb.widths
        for pa, pb in zip(na.phis, nb.phis):
            np.testing.assert_array_equal(pa, pb)
        np.testing.assert_array_equal(na.r, nb.r)
        assert na.gamma0 == nb.gamma0 and na.c0 == nb.c0
        assert [l.c_median for l in na.layers] == [l.c_median for l in nb.layers]
        # every other part a model file stores: a round trip that lost a layer's eta (each
        # layer written with layer one's) or the hyper-parameters passed the checks above
        assert [l.eta for l in na.layers] == [l.eta for l in nb.layers]
        assert na.hyper == nb.hyper and na.link.to_dict() == nb.link.to_dict()
        assert na.vocabulary == nb.vocabulary


# ------------------------------------------------------------------ fitting
@pytest.mark.parametrize("method", ["collapsed", "blocked", "partial"])
def test_fit_attributes(counts, method):
    m = GBN(n_components=12, n_layers=3, method=method, random_state=1, check=True, **QUICK)
    assert m.fit(counts) is m
    assert 1 <= len(m.networks_) <= 3
    assert m.widths_ == m.networks_[-1].widths
    assert all(1 <= k <= 12 for k in m.widths_)
    assert m.n_features_in_ == counts.shape[1]
    assert m.method_ == method
    for T, net in enumerate(m.networks_, start=1):
        assert net.depth == T
        for phi in net.phis:
            np.testing.assert_allclose(phi.sum(axis=0), 1.0, rtol=1e-10)
            assert np.isfinite(phi).all() and (phi > 0).all()
        assert np.isfinite(net.r).all()
    # widths never increase with depth (a layer starts at the pruned width below)
    assert all(a >= b for a, b in zip(m.widths_, m.widths_[1:]))


def test_same_seed_same_network(counts):
    a = GBN(n_components=10, n_layers=2, random_state=7, **QUICK).fit(counts)
    b = GBN(n_components=10, n_layers=2, random_state=7, **QUICK).fit(counts)
    _same_networks(a, b)
    c = GBN(n_components=10, n_layers=2, random_state=8, **QUICK).fit(counts)
    assert not np.array_equal(a.networks_[0].phis[0], c.networks_[0].phis[0])


@pytest.mark.parametrize("method", ["collapsed", "blocked", "partial"])
def test_n_jobs_does_not_change_the_result(method):
    # more documents than one block so that the parallel kernels have several blocks
    rng = np.random.default_rng(1)
    X = rng.poisson(rng.gamma(0.3, 3, size=(400, 4)) @ rng.dirichlet(np.full(30, 0.2), size=4))
    kw = dict(n_components=8, n_layers=2, method=method, random_state=3, **QUICK)
    a = GBN(n_jobs=1, **kw).fit(X)
    b = GBN(n_jobs=2, **kw).fit(X)
    _same_networks(a, b)
    np.testing.assert_array_equal(a.transform(X[:50]), b.transform(X[:50]))


@pytest.mark.parametrize("link,n_jobs,expected", [
    ("poisson", 1, "collapsed"), ("poisson", None, "collapsed"), ("poisson", np.int64(1), "collapsed"),
    ("poisson", 2, "partial"), ("poisson", -1, "partial"), ("bernoulli", 1, "blocked"),
    ("bernoulli", 4, "blocked"), ("prg", -1, "blocked")])
def test_auto_method_follows_the_link_and_n_jobs(link, n_jobs, expected):
    from pygbn.estimator import resolve_auto
    from pygbn.model.links import get_link

    assert resolve_auto(get_link(link), n_jobs) == expected


def test_auto_on_several_threads_is_the_partial_chain(counts):
    """method="auto" with n_jobs=2 fits the partial method's chain, the one
    that method="partial" gives on one thread (n_jobs never changes a method's
    result); a bad n_jobs is refused before the method is chosen."""
    kw = dict(n_components=6, n_layers=2, random_state=4, **QUICK)
    auto = GBN(n_jobs=2, **kw).fit(counts)
    assert auto.method_ == "partial"
    _same_networks(auto, GBN(method="partial", n_jobs=1, **kw).fit(counts))
    assert GBN(**kw).fit(counts).method_ == "collapsed"
    with pytest.raises(ValueError, match="n_jobs must be a non-zero int or None, got 'two'"):
        GBN(n_jobs="two").fit(counts)


def test_sparse_formats_and_integral_floats_give_the_same_fit(counts):
    kw = dict(n_components=8, n_layers=2, random_state=5, **QUICK)
    ref = GBN(**kw).fit(counts)
    for X in (sp.csr_matrix(counts), sp.csc_matrix(counts), sp.coo_matrix(counts),
              counts.astype(float), counts.astype(np.int32)):
        _same_networks(ref, GBN(**kw).fit(X))


def test_transform_rows_are_distributions(counts):
    m = GBN(n_components=8, n_layers=2, random_state=2, **QUICK).fit(counts)
    F = m.transform(counts[:20])
    assert F.shape == (20, m.widths_[0])
    np.testing.assert_allclose(F.sum(axis=1), 1.0)
    assert (F >= 0).all()
    # deterministic for an int random_state
    np.testing.assert_array_equal(F, m.transform(counts[:20]))
    # depth 1 uses the first network
    assert m.transform(counts[:5], depth=1).shape == (5, m.networks_[0].widths[0])
    assert m.fit_transform(counts).shape[0] == counts.shape[0]


def test_heldout_perplexity_per_depth(counts):
    Xtr, Xho = pygbn.split_tokens(counts, 0.5, random_state=0)
    m = GBN(n_components=8, n_layers=2, random_state=0, **QUICK).fit(Xtr, heldout=Xho)
    assert len(m.perplexity_) == len(m.networks_)
    V = counts.shape[1]
    assert all(1.0 < p < V for p in m.perplexity_)
    ppl = m.perplexity(Xtr[:60], Xho[:60])
    assert 1.0 < ppl < V
    assert m.score(Xtr[:60], heldout=Xho[:60]) == pytest.approx(-np.log(ppl))


def test_split_tokens(counts):
    tr, ho = pygbn.split_tokens(counts, 0.3, random_state=1)
    np.testing.assert_array_equal((tr + ho).toarray(), counts)
    n = counts.sum(axis=1)
    ntr = np.asarray(tr.sum(axis=1)).ravel()
    expect = np.where(n > 0, np.maximum(1, np.floor(0.3 * n + 0.5)), 0)
    np.testing.assert_array_equal(ntr, np.minimum(expect, n))
    tr2, _ = pygbn.split_tokens(counts, 0.3, random_state=1)
    assert (tr != tr2).nnz == 0
    with pytest.raises(ValueError, match="train_fraction"):
        pygbn.split_tokens(counts, 0.0)


def test_split_tokens_of_a_huge_document():
    # numpy's multivariate hypergeometric draw takes fewer than 10**9 tokens: a longer
    # document of several cells raised numpy's "sum(colors) must be less than 1000000000"
    # (from split_tokens and GBN.score), naming neither X nor the row
    X = np.ones((3, 4))
    X[1, 0] = 2e9
    with pytest.raises(ValueError, match=r"X's row 1 holds 2000000003 tokens in 4 cells.*10\*\*9"):
        pygbn.split_tokens(X, 0.3, random_state=0)
    m = GBN(n_components=3, n_layers=1, method="blocked", random_state=0, **QUICK).fit(X)
    with pytest.raises(ValueError, match="X's row 1 holds"):
        m.score(X)
    X[1, 1:] = 0         # one cell: the split needs no draw
    tr, ho = pygbn.split_tokens(X, 0.3, random_state=0)
    assert tr[1, 0] == 6e8 and ho[1, 0] == 1.4e9


def test_generate_counts(counts):
    m = GBN(n_components=8, n_layers=2, random_state=0, **QUICK).fit(counts)
    G = m.generate(5, random_state=1)
    assert G.shape == (5, counts.shape[1]) and G.dtype == np.int64 and (G >= 0).all()


def test_callback_and_verbose(counts, caplog):
    seen = []

    def cb(info):
        seen.append((info["depth"], info["iteration"]))
        return info["iteration"] < 5  # stop after 5 iterations

    m = GBN(n_components=6, n_layers=3, callback=cb, random_state=0, **QUICK)
    with caplog.at_level(logging.INFO, logger="pygbn"):
        m.set_params(verbose=2).fit(counts)
    assert seen == [(1, i) for i in range(1, 6)]
    assert len(m.networks_) == 1
    assert any("iteration" in r.getMessage() for r in caplog.records)


class _Collect(logging.Handler):
    def __init__(self, level=logging.NOTSET):
        super().__init__(level)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


TINY = dict(n_components=6, n_layers=2, burn_in=(4, 2), n_collect=2, min_width=1, random_state=0)


def _progress(lines):
    return [l for l in lines if "iteration" in l or "done" in l]


def test_callback_info_holds_what_the_docstring_lists(counts):
    infos = []
    GBN(callback=infos.append, trace_every=2, **TINY).fit(counts)
    assert {frozenset(i) for i in infos} == {frozenset(["depth", "iteration", "n_iterations", "widths",
                                                        "seconds", "sampler", "loglikelihood"])}
    assert all((i["loglikelihood"] is not None) == (i["iteration"] % 2 == 0) for i in infos)


def test_verbose_lines_once_through_the_users_root_handler(counts, capsys):
    """With logging configured by the user (basicConfig's root handler), verbose=True shows each
    progress line once, through that handler: no stderr handler of pygbn's doubles it."""
    user = _Collect()
    root = logging.getLogger()
    root.addHandler(user)
    lg = logging.getLogger("pygbn")
    before = (list(lg.handlers), lg.level)
    try:
        for _ in range(2):  # repeated fits: no line duplicated, nothing left behind
            GBN(verbose=2, **TINY).fit(counts)
    finally:
        root.removeHandler(user)
    assert (list(lg.handlers), lg.level) == before
    shown = _progress(user.messages)
    assert sum("layer 1 | iteration 1/" in m for m in shown) == 2
    assert sum(m.startswith("fit done") for m in shown) == 2
    assert "pygbn:" not in capsys.readouterr().err


def test_verbose_without_handlers_attaches_one_and_removes_it(counts, capsys, monkeypatch):
    """No logging configured: verbose=True writes each line once to stderr, then takes its
    handler and level back (repeated fits do not duplicate lines)."""
    lg = logging.getLogger("pygbn")
    monkeypatch.setattr(lg, "propagate", False)    # away from pytest's capture handlers
    before = (list(lg.handlers), lg.level)
    for _ in range(2):
        GBN(verbose=2, **TINY).fit(counts)
        err = capsys.readouterr().err.splitlines()
        assert sum(l.startswith("pygbn: layer 1 | iteration 1/6 ") for l in err) == 1
        assert sum(l.startswith("pygbn: fit done") for l in err) == 1
        assert (list(lg.handlers), lg.level) == before
    GBN(verbose=False, **TINY).fit(counts)
    assert capsys.readouterr().err == ""


def test_verbose_with_a_users_warning_handler(counts, capsys, monkeypatch):
    """A user's handler that shows WARNING and up: progress (INFO) goes to stderr, a warning
    shows once (through the user's handler only)."""
    lg = logging.getLogger("pygbn")
    monkeypatch.setattr(lg, "propagate", False)
    user = _Collect(logging.WARNING)
    lg.addHandler(user)
    try:
        def cb(info):
            if info["depth"] == 1 and info["iteration"] == 1:
                logging.getLogger("pygbn").warning("something is wrong")

        GBN(verbose=2, callback=cb, **TINY).fit(counts)
    finally:
        lg.removeHandler(user)
    err = capsys.readouterr().err
    assert user.messages == ["something is wrong"]
    assert "something is wrong" not in err
    assert "pygbn: layer 1 | iteration 1/6" in err


def test_overlapping_verbose_fits_share_one_setup(capsys, monkeypatch):
    """Two verbose fits that overlap (threads): the second keeps its progress after the first
    ends, and the logger's level and handlers are as before once both have ended."""
    from pygbn._utils import verbose_logging

    lg = logging.getLogger("pygbn")
    monkeypatch.setattr(lg, "propagate", False)
    before = (list(lg.handlers), lg.level)
    a, b = verbose_logging(True), verbose_logging(True)
    a.__enter__()
    b.__enter__()
    a.__exit__(None, None, None)
    lg.info("still fitting")
    b.__exit__(None, None, None)
    assert (list(lg.handlers), lg.level) == before
    lg.info("after")
    assert capsys.readouterr().err == "pygbn: still fitting\n"


def test_get_set_params_and_repr():
    m = GBN(n_components=7)
    assert m.get_params()["n_components"] == 7
    m.set_params(n_layers=2, eta=0.1)
    assert m.n_layers == 2 and "n_layers=2" in repr(m)
    with pytest.raises(ValueError, match="invalid parameter"):
        m.set_params(bogus=1)


# --------------------------------------------------------------- validation
@pytest.mark.parametrize("params,match", [
    (dict(n_components=0), "n_components"),
    (dict(n_components=2.5), "n_components"),
    (dict(n_layers=0), "n_layers"),
    (dict(eta=-1.0), "eta"),
    (dict(eta=[0.1, np.nan]), "eta"),
    (dict(burn_in=-3), "burn_in"),
    (dict(burn_in=(10, 5, 2)), "burn_in"),
    (dict(n_collect=-1), "n_collect"),
    (dict(method="gibbs"), "method"),
    (dict(link="gaussian"), "link"),
    (dict(link="bernoulli", method="collapsed"), "collapsed"),
    (dict(n_jobs=0), "n_jobs"),
    (dict(hyperparameters={"a0": -1}), "a0"),
    (dict(hyperparameters={"zz": 1}), "unknown"),
    (dict(random_state="seed"), "random_state"),
    (dict(verbose=-1), "verbose"),
    (dict(transform_iter=(10,)), "transform_iter"),
    (dict(callback=3), "callback"),
    (dict(prune="False"), "prune must be True or False"),
    (dict(check=1), "check must be True or False"),
    (dict(hyperparameters={"a0": True}), "a0"),
])
def test_invalid_parameters(counts, params, match):
    with pytest.raises(ValueError, match=match):
        GBN(**params, **{k: v for k, v in QUICK.items() if k not in params}).fit(counts)


@pytest.mark.parametrize("X,match", [
    (np.array([[1, -2], [0, 1]]), "nonnegative"),
    (np.array([[1.5, 2], [0, 1]]), "integer"),
    (np.array([[np.nan, 2], [0, 1]]), "non-finite"),
    (np.array([[np.inf, 2], [0, 1]]), "non-finite"),
    (np.array([1, 2, 3]), "2-D"),
    (np.zeros((3, 4)), "no non-zero"),
    (np.array([["a", "b"]]), "numbers"),
    (sp.csr_matrix(np.array([[1, -1]])), "nonnegative"),
])
def test_invalid_data(X, match):
    with pytest.raises(ValueError, match=match):
        GBN(n_components=3, **QUICK).fit(X)


def test_invalid_heldout_and_transform_input(counts):
    m = GBN(n_components=5, n_layers=1, random_state=0, **QUICK)
    with pytest.raises(ValueError, match="shape"):
        m.fit(counts, heldout=counts[:, :5])
    with pytest.raises(ValueError, match="not fitted"):
        m.transform(counts)
    m.fit(counts)
    with pytest.raises(ValueError, match="features"):
        m.transform(counts[:, :10])
    with pytest.raises(ValueError, match="depth"):
        m.transform(counts, depth=5)
    with pytest.raises(ValueError, match="vocabulary"):
        GBN(n_components=3, **QUICK).fit(counts, vocabulary=["a", "b"])


def test_heldout_is_validated_as_X_is(counts):
    m = GBN(n_components=5, n_layers=1, random_state=0, **QUICK).fit(counts)
    bad = counts.astype(float)
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="heldout contains a non-finite value"):
        m.perplexity(counts, bad)
    with pytest.raises(ValueError, match="heldout has 10 features"):
        m.perplexity(counts, counts[:, :10])
    cols = [f"w{i}" for i in range(counts.shape[1])]
    named = GBN(n_components=5, n_layers=1, random_state=0, **QUICK).fit(Frame(counts, cols))
    with pytest.raises(ValueError, match="feature names"):
        named.perplexity(Frame(counts, cols), Frame(counts, cols).reorder(cols[::-1]))
    # a model fitted without names: X's and heldout's names are compared with each other (as fit
    # compares them); the reordered heldout was scored against the wrong columns, silently
    for call in (m.perplexity, lambda x, h: m.score(x, heldout=h)):
        with pytest.raises(ValueError, match="column names differ"):
            call(Frame(counts, cols), Frame(counts, cols).reorder(cols[::-1]))
    assert m.perplexity(Frame(counts, cols), Frame(counts, cols)) == m.perplexity(counts, counts)
    with pytest.raises(ValueError, match="column names differ"):
        GBN(n_components=5, n_layers=1, **QUICK).fit(Frame(counts, cols),
                                                     heldout=Frame(counts, cols).reorder(cols[::-1]))
    with pytest.raises(ValueError, match="sequence of str"):
        GBN(n_components=3, **QUICK).fit(counts[:, :3], vocabulary="abc")
    with pytest.raises(ValueError, match="no order"):
        GBN(n_components=3, **QUICK).fit(counts[:, :3], vocabulary={"a", "b", "c"})
    with pytest.raises(ValueError, match="column 0 .. 2"):
        GBN(n_components=3, **QUICK).fit(counts[:, :3], vocabulary={"a": 0, "b": 1, "c": 3})


def test_fit_reads_a_vocabulary_mapping_by_its_columns(counts):
    """scikit-learn's CountVectorizer.vocabulary_ maps term -> column in another order than
    its columns: the names must follow the columns, not the mapping's insertion order."""
    V = counts.shape[1]
    mapping = {f"w{j}": j for j in reversed(range(V))}
    m = GBN(n_components=3, n_layers=1, random_state=0, **QUICK).fit(counts, vocabulary=mapping)
    assert list(m.feature_names_in_) == [f"w{j}" for j in range(V)]
    with pytest.raises(ValueError, match=r"train_fraction must be in \(0, 1\)"):
        m.score(counts, train_fraction=1.0)
    assert np.isnan(m.perplexity(counts, np.zeros_like(counts)))      # no held-out token


def test_fit_vocabulary_terms_are_distinct_strs(counts):
    """fit's vocabulary follows the rule of a Network's and of CountVectorizer's: each term a
    str (bytes, ints and None were str()-ed into "b'w0'", "0", "None" where Network(vocabulary=)
    refuses them), no term twice (a model whose vocabulary repeats a term cannot be written by
    write_vocab, and align_vocabulary sends both columns to one), a non-iterable a ValueError
    (was a TypeError naming nothing)."""
    X = counts[:, :3]
    for bad, match in [([b"a", b"b", b"c"], r"vocabulary\[0\] must be a str, got b'a'"),
                       (np.array([b"a", b"b", b"c"]), r"vocabulary\[0\] must be a str, got np.bytes_\(b'a'\)"),
                       (range(3), r"vocabulary\[0\] must be a str, got 0"),
                       (["a", None, "c"], r"vocabulary\[1\] must be a str, got None"),
                       (["a", "b", "a"], r"must not repeat a term, got 'a' twice \(vocabulary\[0\] and vocabulary\[2\]\)"),
                       (np.array([["a", "b", "c"]] * 3), r"vocabulary must be a 1-D sequence of strings, got an array of shape \(3, 3\)"),
                       (3, "vocabulary must be a sequence of strings, got int 3")]:
        with pytest.raises(ValueError, match=match):
            GBN(n_components=3, **QUICK).fit(X, vocabulary=bad)
    # numpy str arrays are taken, their items as str
    m = GBN(n_components=2, n_layers=1, random_state=0, **QUICK).fit(X, vocabulary=np.array(["a", "b", "c"]))
    assert [type(w) for w in m.network_.vocabulary] == [str] * 3


def test_heldout_perplexity_with_few_collected_iterations(counts):
    """A depth that collects fewer than heldout_every (5) iterations scores its last state,
    from the evaluation streams: the chain is the one fitted without heldout."""
    Xtr, Xho = pygbn.split_tokens(counts, 0.5, random_state=0)
    for n_collect in (0, 4):
        kw = dict(n_components=6, n_layers=2, random_state=3, burn_in=(8, 6), n_collect=n_collect)
        with_ho = GBN(**kw).fit(Xtr, heldout=Xho)
        assert len(with_ho.perplexity_) == 2 and np.isfinite(with_ho.perplexity_).all()
        _same_networks(with_ho, GBN(**kw).fit(Xtr))


@pytest.mark.parametrize("fmt", ["csr_float", "csr_int"])
def test_read_only_sparse_input(counts, fmt):
    """Read-only (e.g. memory-mapped) CSR arrays are read, never written: the same fit."""
    dtype = np.float64 if fmt == "csr_float" else np.int64
    M = sp.csr_matrix(counts.astype(dtype))
    for a in (M.data, M.indices, M.indptr):
        a.setflags(write=False)
    kw = dict(n_components=5, n_layers=2, random_state=0, **QUICK)
    m = GBN(**kw).fit(M)
    _same_networks(m, GBN(**kw).fit(counts))
    np.testing.assert_array_equal(m.transform(M), m.transform(counts))
    assert np.isfinite(m.score(M))


def test_huge_counts_blocked():
    X = np.zeros((5, 6), dtype=np.int64)
    X[0, 0] = 3_000_000_000  # beyond int32
    X[1, 2] = 7
    X[2, :] = 1
    m = GBN(n_components=4, n_layers=2, method="blocked", random_state=0, check=True, **QUICK).fit(X)
    assert all(np.isfinite(p).all() for p in m.network_.phis)


@pytest.mark.parametrize("method", ["collapsed", "partial"])
def test_too_many_tokens_refused_before_the_labels_are_made(method):
    # the partial chain made (and drew) every token's label before counting them: 2**52
    # tokens asked numpy for 8 PiB (a MemoryError) where collapsed says what to do
    X = np.ones((3, 4))
    X[0, 0] = 2.0**52
    with pytest.raises(ValueError, match=f"tokens, too many for method='{method}'.*method='blocked'"):
        GBN(n_components=3, n_layers=1, method=method, random_state=0, **QUICK).fit(X)


def test_check_mode_sums_counts_exactly():
    # check=True compared the latent counts with float64 sums of the data, which round past
    # 2**53: a valid chain failed "sum_k x_vjk != x_vj" (and the term-count check)
    X = np.array([[2.0**53 - 1, 2.0], [2.0, 2.0**53 - 1]])    # totals 2**53 + 1: no float64
    m = GBN(n_components=3, n_layers=2, method="blocked", random_state=0, check=True,
            burn_in=2, n_collect=1, transform_iter=(1, 1)).fit(X)
    assert np.isfinite(m.network_.phis[0]).all()


@pytest.mark.parametrize("shape", [(1, 2048), (2048, 1)])
def test_counts_adding_up_past_int64_are_refused(shape):
    # every count below 2**53 was accepted, but a total of 2**63 wrapped the samplers' int64
    # counters: a document's (silently wrong) or a term's (a RuntimeError of the split)
    X = np.full(shape, 2.0**52)
    with pytest.raises(ValueError, match=r"X's counts add up to 9.22337\d*e\+18: .* below 2\*\*63"):
        GBN(n_components=3, n_layers=1, method="blocked", random_state=0, **QUICK).fit(X)
    X[0, 0] -= 1                  # 2**63 - 1 in all (float64 rounds the sum up: refused too)
    X[-1, -1] = 0                 # 2**63 - 2**52 in all
    m = GBN(n_components=3, n_layers=1, method="blocked", random_state=0, check=True,
            burn_in=2, n_collect=1, transform_iter=(1, 1)).fit(X)
    assert np.isfinite(m.network_.phis[0]).all()


@pytest.mark.parametrize("link,value,match", [
    ("bernoulli", 1.0000001, "binary .* found 1.0000001;"),     # was "found 1"
    ("poisson", 3.0000001, r"integer counts, found 3.0000001 \("),   # was "np.float64(3.0000001)"
    ("poisson", 2.0**53 + 2, r"too large to represent exactly \(9007199254740994; the largest is 2\*\*53 - 1\)"),
])
def test_bad_values_are_shown_as_they_are(link, value, match):
    with pytest.raises(ValueError, match=match):
        GBN(link=link, n_components=3, **QUICK).fit(np.array([[value, 1.0], [0.0, 1.0]]))


def test_single_document_and_single_term():
    m = GBN(n_components=3, n_layers=2, random_state=0, check=True, **QUICK)
    m.fit(np.array([[3, 0, 5, 1]]))
    assert m.network_.n_features == 4
    m.fit(np.array([[2], [0], [7]]))
    assert m.network_.n_features == 1


# ----------------------------------------------------------------- save/load
def test_save_load_round_trip_exact(counts, tmp_path):
    Xtr, Xho = pygbn.split_tokens(counts, 0.5, random_state=0)
    # eta and the hyper-parameters all distinct: a file that swapped or dropped any of them
    # would load a different network
    m = GBN(n_components=8, n_layers=2, eta=(0.05, 0.1), random_state=4,
            hyperparameters={"a0": 0.02, "b0": 0.03, "e0": 1.5, "f0": 2.5}, **QUICK)
    m.fit(Xtr, heldout=Xho, vocabulary=[f"w{i}" for i in range(counts.shape[1])])
    path = tmp_path / "model.npz"
    m.save(path)
    m2 = pygbn.load(path)
    assert isinstance(m2, GBN)
    _same_networks(m, m2)
    assert m2.get_params() == {**m.get_params(), "callback": None}
    assert m2.widths_ == m.widths_ and m2.perplexity_ == m.perplexity_
    assert m2.network_.vocabulary == m.network_.vocabulary
    np.testing.assert_array_equal(m.transform(counts[:10]), m2.transform(counts[:10]))
    # a bare Network round trip
    pygbn.save(m.network_, tmp_path / "net.npz")
    net = pygbn.load(tmp_path / "net.npz")
    assert isinstance(net, Network) and net.widths == m.network_.widths
    # the file holds no pickled object
    with np.load(path, allow_pickle=False) as z:
        assert all(z[k].dtype != object for k in z.files)


def test_load_rejects_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        pygbn.load(tmp_path / "missing.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"this is not a zip archive")
    with pytest.raises(ValueError, match="not a pygbn model"):
        pygbn.load(junk)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, a=np.arange(3))
    with pytest.raises(ValueError, match="not a pygbn model"):
        pygbn.load(foreign)
    # a truncated archive
    good = tmp_path / "good.npz"
    net = Network(layers=[Layer(np.full((3, 2), 1 / 3))], r=np.ones(2))
    pygbn.save(net, good)
    data = good.read_bytes()
    bad = tmp_path / "truncated.npz"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError):
        pygbn.load(bad)
    # a newer format version
    import json

    newer = tmp_path / "newer.npz"
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays["__meta__"].tobytes())
    meta["format_version"] = 999
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(newer, **arrays)
    with pytest.raises(ValueError, match="version"):
        pygbn.load(newer)
    with pytest.raises(ValueError, match="fitted"):
        GBN().save(tmp_path / "unfitted.npz")


def test_from_networks_scores_a_hand_built_network(tmp_path):
    rng = np.random.default_rng(3)
    phi1 = rng.dirichlet(np.full(30, 0.2), size=4).T
    phi2 = rng.dirichlet(np.ones(4), size=2).T
    net = Network(layers=[Layer(phi1, c_median=0.2), Layer(phi2)], r=np.full(2, 2.0))
    X = net.generate(200, random_state=1)
    m = GBN.from_networks(net, random_state=0, transform_iter=(10, 10))
    assert m.widths_ == [4, 2] and m.n_features_in_ == 30 and m.network_ is net
    Xtr, Xho = pygbn.split_tokens(X, 0.5, random_state=0)
    assert 1.0 < m.perplexity(Xtr, Xho) < 30
    assert m.transform(X[:5]).shape == (5, 4)
    m.save(tmp_path / "hand.npz")
    assert pygbn.load(tmp_path / "hand.npz").widths_ == [4, 2]
    with pytest.raises(ValueError, match="Network"):
        GBN.from_networks([])
    other = Network(layers=[Layer(np.full((5, 2), 0.2))], r=np.ones(2))
    with pytest.raises(ValueError, match="n_features"):
        GBN.from_networks([net, other])
    with pytest.raises(ValueError, match="not the networks' link"):
        GBN.from_networks(net, link="bernoulli")


# ------------------------------------------------- scikit-learn's protocol
class Frame:
    """A DataFrame stand-in (duck typing: ``.columns`` and ``__array__``); pandas is not needed."""

    def __init__(self, values, columns):
        self.values = np.asarray(values)
        self.columns = list(columns)

    def __array__(self, dtype=None, copy=None):
        return self.values if dtype is None else self.values.astype(dtype)

    def reorder(self, columns):
        idx = [self.columns.index(c) for c in columns]
        return Frame(self.values[:, idx], columns)


def test_not_fitted_error_is_value_and_attribute_error(counts):
    m = GBN(n_components=3, **QUICK)
    assert not hasattr(m, "network_") and not m.__sklearn_is_fitted__()
    for call in (lambda: m.transform(counts), lambda: m.score(counts), lambda: m.network_,
                 lambda: m.get_feature_names_out(), lambda: m.save("unused.npz")):
        with pytest.raises(pygbn.NotFittedError, match="not fitted") as info:
            call()
        assert isinstance(info.value, ValueError) and isinstance(info.value, AttributeError)
    m.fit(counts)
    assert hasattr(m, "network_") and m.__sklearn_is_fitted__()


def test_score_scores_X_alone_by_document_completion(counts):
    m = GBN(n_components=6, n_layers=2, random_state=3, **QUICK).fit(counts)
    s = m.score(counts)
    assert np.isfinite(s) and s < 0
    assert m.score(counts, np.arange(counts.shape[0])) == s  # y is ignored; a fixed seed, a fixed score
    # the split is split_tokens seeded with [seed, SPLIT_SEED_TAG], the chain seeded with the seed
    obs, held = pygbn.split_tokens(counts, 0.3, np.random.default_rng([3, pygbn.estimator.SPLIT_SEED_TAG]))
    assert s == -np.log(m.perplexity(obs, held))
    assert m.score(obs, heldout=held) == s
    assert m.score(counts, train_fraction=0.5) != s
    with pytest.raises(ValueError, match="heldout="):
        m.score(obs, held)  # the old positional held-out call is refused, not misread
    with pytest.raises(ValueError, match="nothing to hold out"):
        m.score(np.eye(counts.shape[1], dtype=int))
    # rows of two tokens hold one out at 0.3 but none at 0.9 (floor(1.8 + 0.5) = 2 observed): the
    # error said 'no sample of X has two or more tokens', which was not the cause
    pairs = 2 * np.eye(counts.shape[1], dtype=int)
    assert np.isfinite(m.score(pairs))
    with pytest.raises(ValueError, match=r"with train_fraction=0.9 no sample of X holds out .*lower train_fraction"):
        m.score(pairs, train_fraction=0.9)
    with pytest.raises(ValueError, match="train_fraction"):
        m.score(counts, train_fraction=0)


@pytest.mark.parametrize("link", ["bernoulli", "prg"])
def test_score_other_links(counts, link):
    X = (counts > 0).astype(int) if link == "bernoulli" else counts * 0.37
    m = GBN(link=link, n_components=5, n_layers=1, random_state=0, **QUICK).fit(X)
    s = m.score(X)
    assert np.isfinite(s) and s < 0 and s == m.score(X)
    with pytest.raises(ValueError, match="counts"):
        m.perplexity(X, X)


def test_score_of_subnormal_reals_is_not_rounded():
    # the held-out reals weigh their cells in sum(y ln q) / sum(y): at 5e-324 (the smallest
    # subnormal) each product y ln q was rounded to a multiple of 5e-324, so the score came out as
    # a ratio of small integers (-2.3714... = -83/35) instead of the score of the same pattern at
    # 1e-300 (whose chain is the same: f0 + sum(y) is 1.0 at both scales)
    pattern = (np.random.default_rng(0).poisson(1.0, (30, 10)) > 0).astype(float)
    m = GBN(link="prg", n_components=4, n_layers=1, random_state=0, burn_in=(5, 5), n_collect=5,
            transform_iter=(5, 5)).fit(pattern)
    s = m.score(pattern * 1e-300)
    for scale in (5e-324, 2.0**-1073, 2.0**-1030):
        assert m.score(pattern * scale) == pytest.approx(s, rel=1e-12, abs=0)


def test_feature_names_in_from_vocabulary_and_columns(counts, tmp_path):
    names = [f"w{i}" for i in range(counts.shape[1])]
    m = GBN(n_components=4, n_layers=1, random_state=0, **QUICK).fit(counts)
    assert not hasattr(m, "feature_names_in_")
    m.fit(counts, vocabulary=names)
    assert m.feature_names_in_.dtype == object and list(m.feature_names_in_) == names
    frame = Frame(counts, names)
    m2 = GBN(n_components=4, n_layers=1, random_state=0, **QUICK).fit(frame)
    assert list(m2.feature_names_in_) == names and m2.network_.vocabulary == names
    np.testing.assert_array_equal(m2.transform(frame), m2.transform(counts))
    _same_networks(m, m2)
    with pytest.raises(ValueError, match="same order"):
        m2.transform(frame.reorder(names[::-1]))
    # the first column out of place is named
    swapped = names[:2] + [names[3], names[2]] + names[4:]
    with pytest.raises(ValueError, match="same order as they were in fit: column 2 is 'w3', was 'w2' in fit"):
        m2.transform(frame.reorder(swapped))
    other = Frame(counts, ["x"] + names[1:])
    with pytest.raises(ValueError, match="unseen at fit time:\n- x\n.*yet now missing:\n- w0"):
        m2.score(other)
    with pytest.raises(ValueError, match="missing"):
        m2.transform(Frame(counts[:, :3], names[:3]))
    with pytest.raises(ValueError, match="column names"):
        GBN(n_components=4, **QUICK).fit(frame, vocabulary=names[::-1])
    # non-string columns are no feature names (as in scikit-learn)
    assert not hasattr(GBN(n_components=4, n_layers=1, **QUICK).fit(Frame(counts, range(counts.shape[1]))),
                       "feature_names_in_")
    m2.save(tmp_path / "named.npz")
    assert list(pygbn.load(tmp_path / "named.npz").feature_names_in_) == names


def test_get_feature_names_out(counts):
    m = GBN(n_components=5, n_layers=2, random_state=0, **QUICK).fit(counts)
    out = m.get_feature_names_out()
    assert out.dtype == object and list(out) == [f"gbn{k}" for k in range(m.widths_[0])]
    assert m.transform(counts[:3]).shape[1] == len(out)
    with pytest.raises(ValueError, match="length"):
        m.get_feature_names_out(["a", "b"])
    named = GBN(n_components=5, n_layers=1, random_state=0, **QUICK).fit(
        counts, vocabulary=[f"w{i}" for i in range(counts.shape[1])])
    with pytest.raises(ValueError, match="feature_names_in_"):
        named.get_feature_names_out([f"v{i}" for i in range(counts.shape[1])])


def test_input_conversions_and_messages(counts):
    m = GBN(n_components=4, n_layers=1, random_state=0, **QUICK).fit(counts)
    obj = counts.astype(object)
    np.testing.assert_array_equal(m.transform(obj[:5]), m.transform(counts[:5]))
    np.testing.assert_array_equal(m.transform(counts[:5].tolist()), m.transform(counts[:5]))
    obj[0, 0] = {"not": "a number"}
    with pytest.raises(TypeError, match="argument must be a string or a( real)? number"):
        m.transform(obj)
    with pytest.raises(ValueError, match="Reshape your data"):
        m.transform(counts[0])
    # scipy's sparse arrays may be 1-D: fit, transform and score failed with IndexError('tuple
    # index out of range'), the lower-level functions (as_csr) with scipy's 'shape must have length'
    for vector in (sp.coo_array(counts[0]), sp.csr_array(counts[0]), sp.dok_array(counts[0])):
        for call in (GBN(**QUICK).fit, m.transform, m.score, lambda v: m.perplexity(counts[:1], v)):
            with pytest.raises(ValueError, match=r"must be 2-D \(samples x features\), got shape \(40,\)\. Reshape"):
                call(vector)
        with pytest.raises(ValueError, match=r"X must be 2-D \(samples x features\), got shape \(40,\)"):
            pygbn.split_tokens(vector, 0.5, 0)
    with pytest.raises(ValueError, match=r"0 feature\(s\)"):
        GBN(**QUICK).fit(np.zeros((4, 0)))
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        GBN(**QUICK).fit(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="Negative values in data passed to GBN"):
        m.transform(-counts)
    with pytest.raises(ValueError, match="NaN"):
        m.transform(np.where(counts > 3, np.nan, counts))
    with pytest.raises(ValueError, match="X has 5 features, but GBN is expecting 40 features"):
        m.transform(counts[:, :5])
    with pytest.raises(ValueError, match="Complex"):
        m.transform(counts + 0j)
    assert m.transform(counts[:0]).shape == (0, 4)


def test_tags_without_scikit_learn(tmp_path):
    tags = GBN()._get_tags()
    assert tags["requires_positive_X"] and "sparse" in tags["X_types"] and not tags["allow_nan"]
    assert tags["requires_fit"] and not tags["requires_y"]
    # scikit-learn is imported only by __sklearn_tags__, never by pygbn itself
    code = ("import sys, numpy, pygbn; m = pygbn.GBN(n_components=2, n_layers=1, burn_in=2, n_collect=2, "
            "transform_iter=(1, 1)).fit(numpy.eye(3, dtype=int)); m.transform(numpy.eye(3)); "
            "print('sklearn' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(Path(pygbn.__file__).resolve().parent.parent)}
    # cwd outside the checkout: "-c" puts the cwd first on sys.path, and the checkout's pygbn/
    # holds no compiled kernels when pygbn is installed (as in CI)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env,
                         cwd=tmp_path)
    assert out.stdout.strip() == "False"
