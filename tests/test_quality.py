"""Topic quality (coherence, diversity) and convergence diagnostics (R-hat, ESS):
hand-computed values, simulated chains with known answers, and agreement with
gensim's CoherenceModel and tomotopy's Coherence where they are installed."""
import numpy as np
import pytest
import scipy.sparse as sp

import pygbn
from pygbn.evaluation import (check_topics, coherence, cooccurrence, diversity, effective_sample_size, rhat,
                              trace_chains, trace_diagnostics)

# the toy corpus: documents {a, b}, {a, c}, {a, b, c}, {c} over the terms a=0, b=1, c=2
TOY = sp.csr_matrix(np.array([[1, 2, 0], [1, 0, 1], [3, 1, 1], [0, 0, 2]]))
L = np.log


def test_toy_counts():
    c = cooccurrence([2, 0, 1], TOY)
    assert c.n_windows == 4
    np.testing.assert_array_equal(c.terms, [0, 1, 2])
    np.testing.assert_array_equal(c.joint, [[3, 2, 2], [2, 2, 1], [2, 1, 3]])
    np.testing.assert_array_equal(c.occurrences, [3, 2, 3])


def test_toy_measures_by_hand():
    """P(a) = 3/4, P(b) = 1/2, P(c) = 3/4, P(a,b) = P(a,c) = 1/2, P(b,c) = 1/4."""
    topic = [[0, 1, 2]]
    umass = (L(2 / 3) + L(2 / 3) + L(1 / 2)) / 3           # P(b|a), P(c|a), P(c|b)
    pmi = np.array([L(4 / 3), L(8 / 9), L(2 / 3)])          # ab, ac, bc
    npmi = pmi / np.array([L(2), L(2), L(4)])
    M = np.array([[1, npmi[0], npmi[1]], [npmi[0], 1, npmi[2]], [npmi[1], npmi[2], 1]])
    v = M.sum(axis=0)
    cv = np.mean(M @ v / (np.linalg.norm(M, axis=1) * np.linalg.norm(v)))
    for measure, expected in (("u_mass", umass), ("c_uci", pmi.mean()), ("c_npmi", npmi.mean()),
                              ("c_v", cv)):
        np.testing.assert_allclose(coherence(topic, TOY, measure=measure), [expected], rtol=1e-9,
                                   err_msg=measure)
    # UMass conditions on the earlier (more probable) term: the order matters
    np.testing.assert_allclose(coherence([[2, 1, 0]], TOY, measure="u_mass"),
                               [(L((1 / 4) / (3 / 4)) + L((1 / 2) / (3 / 4)) + L((1 / 2) / (1 / 2))) / 3])
    assert coherence([[2, 1, 0]], TOY, measure="c_npmi")[0] == pytest.approx(npmi.mean())


def test_texts_whole_documents_and_sliding_windows():
    texts = [[0, 1, 1], [0, 2], [2, 0, 1, 0], [2, 2]]
    for measure in ("c_uci", "c_npmi", "c_v"):     # window >= every document: document co-occurrence
        np.testing.assert_allclose(coherence([[0, 1, 2]], texts=texts, measure=measure, window_size=4),
                                   coherence([[0, 1, 2]], TOY, measure=measure))
    np.testing.assert_allclose(coherence([[0, 1, 2]], texts=texts, measure="u_mass"),
                               coherence([[0, 1, 2]], TOY, measure="u_mass"))
    # [a b c a] with windows of 2: [a b], [b c], [c a]; [a b a] in one window counts a once
    c = cooccurrence([0, 1, 2], texts=[[0, 1, 2, 0]], window_size=2)
    assert c.n_windows == 3
    np.testing.assert_array_equal(c.joint, [[2, 1, 1], [1, 2, 1], [1, 1, 2]])
    c = cooccurrence([0, 1], texts=[[0, 1, 0], [5], []], window_size=3)
    assert c.n_windows == 3          # a short or empty document is one window
    np.testing.assert_array_equal(c.joint, [[1, 1], [1, 1]])


def test_absent_terms_and_diversity():
    X = sp.csr_matrix(np.array([[1, 1, 0, 0], [1, 0, 0, 0]]))
    for measure in ("u_mass", "c_uci", "c_npmi", "c_v"):
        assert np.isfinite(coherence([[0, 3], [2, 3]], X, measure=measure)).all()
    assert coherence([[2, 3]], X, measure="c_v")[0] == 0.0
    assert diversity([[0, 1], [1, 2]]) == 0.75
    assert diversity([[0, 1], [1, 0]]) == 0.5
    assert diversity(np.arange(12).reshape(3, 4)) == 1.0


def _many_topics(K=400, n=10, J=300, seed=3):
    """K topics of n distinct terms over a vocabulary of K n terms (every topic its own terms)
    and a small reference corpus in which the topics' terms co-occur."""
    rng = np.random.default_rng(seed)
    V = K * n
    topics = rng.permutation(V).reshape(K, n)
    X = sp.random(J, V, density=0.01, random_state=seed, format="csr",
                  data_rvs=lambda m: rng.integers(1, 4, m)).astype(np.int64)
    texts = [rng.integers(-1, V, size=rng.integers(0, 60)) for _ in range(J)]
    return topics, X, texts


def test_topic_pairs_give_the_counts_of_the_dense_joint():
    """cooccurrence(..., topics=) counts only the pairs within a topic, with the same numbers
    as the dense joint: every measure gives the same coherence, to the bit."""
    topics, X, texts = _many_topics(K=60, n=6)
    ref = {"X": cooccurrence(topics, X), "texts": cooccurrence(topics, texts=texts, window_size=7)}
    for how, dense in ref.items():
        kw = dict(X=X) if how == "X" else dict(texts=texts, window_size=7)
        pairs = cooccurrence(topics, topics=topics[:40], **kw)
        assert sp.issparse(pairs.joint) and pairs.n_windows == dense.n_windows
        np.testing.assert_array_equal(pairs.occurrences, dense.occurrences)
        for measure in ("u_mass", "c_uci", "c_npmi", "c_v"):
            np.testing.assert_array_equal(pygbn.evaluation.coherence_from_counts(topics[:40], pairs, measure),
                                          pygbn.evaluation.coherence_from_counts(topics, dense, measure)[:40])
        with pytest.raises(ValueError, match="every pair"):
            pygbn.evaluation.coherence_from_counts(topics[40:], pairs)
    with pytest.raises(ValueError, match="not in terms"):
        cooccurrence(topics[:2].ravel(), X, topics=topics[2:4])


@pytest.mark.parametrize("how", ["X", "texts"])
def test_coherence_of_many_topics_counts_only_their_pairs(how):
    """coherence of K = 400 topics of 10 terms (R = 4000 distinct terms) used to count all
    R^2 pairs: a dense 4000 x 4000 int64 joint, 128 MB for 1.6 MB of pairs (a network's
    three layers of 1000 topics took 4.5 GB); now it holds the topics' pairs only."""
    import tracemalloc

    topics, X, texts = _many_topics()
    kw = dict(X=X) if how == "X" else dict(texts=texts, window_size=10)
    tracemalloc.start()
    try:
        values = coherence(topics, measure="c_npmi", **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32e6, peak
    assert values.shape == (400,) and np.isfinite(values).all()


def test_short_documents_are_multiplied_without_blas(monkeypatch):
    """Each document's window-by-term product went to BLAS, whose threads woke for every one
    of them: 1500 documents of 20-300 tokens took 3 to 10 times as long as without BLAS when
    the cores were busy.  The windows are now counted as the documents are (one engine): a
    sparse window-by-term matrix of a group of documents, multiplied by scipy's sparse
    product (no BLAS), by blocks; every grouping and block size gives the same counts, to
    the bit."""
    import sys

    module = sys.modules["pygbn.evaluation.coherence"]
    rng = np.random.default_rng(9)
    topics = rng.permutation(400)[:300].reshape(30, 10)
    texts = [rng.integers(0, 2000, int(rng.integers(0, 300))) for _ in range(200)]
    calls = []
    monkeypatch.setattr(module, "_add_products",
                        lambda out, Bt, B, *a, add=module._add_products: calls.append((Bt, B)) or add(out, Bt, B, *a))
    small = cooccurrence(topics, texts=texts, window_size=10)
    assert calls and all(sp.issparse(Bt) and sp.issparse(B) for Bt, B in calls)   # no BLAS here
    assert len(calls) < len(texts)                 # short documents are counted together
    results = []
    # a document per group, a few blocks of windows a document, a few blocks of terms; the
    # defaults; everything in one block
    for sizes in ((1, 4999, 1 << 14), (module._GROUP_ENTRIES, module._WINDOW_ENTRIES, module._BLOCK_ENTRIES),
                  (1 << 62, 1 << 62, 1 << 62)):
        for name, value in zip(("_GROUP_ENTRIES", "_WINDOW_ENTRIES", "_BLOCK_ENTRIES"), sizes):
            monkeypatch.setattr(module, name, value)
        for ws in (2, 10, 110, None):
            results.append((ws, cooccurrence(topics, texts=texts, window_size=ws)))
    for ws, c in results[4:]:
        ref = dict(results[:4])[ws]
        assert c.n_windows == ref.n_windows
        np.testing.assert_array_equal(c.joint, ref.joint)
    np.testing.assert_array_equal(small.joint, dict(results[:4])[10].joint)


def test_sliding_windows_of_a_long_document_by_blocks(monkeypatch):
    """A long document's window-by-term presence was one dense array (n_windows x terms,
    made in int32, summed in int64, multiplied in int64 without BLAS): 4000 tokens over
    800 topic terms took a 67 MB peak (a 200-document corpus of 2000 tokens, 1000 topics,
    took 162 s); it is now made a block of windows at a time and multiplied in float64
    (exact: the counts are integers below 2^53), with the same counts."""
    import sys
    import tracemalloc

    rng = np.random.default_rng(8)
    topics = rng.permutation(800).reshape(80, 10)
    doc = np.where(rng.random(4000) < 0.05, -1, rng.integers(0, 800, 4000))
    tracemalloc.start()
    try:
        values = coherence(topics, texts=[doc], measure="c_npmi", window_size=10)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 40e6, peak
    module = sys.modules["pygbn.evaluation.coherence"]
    monkeypatch.setattr(module, "_WINDOW_ENTRIES", 997)       # blocks of one window, and more
    np.testing.assert_array_equal(coherence(topics, texts=[doc], measure="c_npmi", window_size=10), values)
    # by hand: the windows holding both terms of a few pairs
    windows = np.lib.stride_tricks.sliding_window_view(doc, 10)
    c = cooccurrence(topics[0], texts=[doc], window_size=10)
    assert c.n_windows == windows.shape[0] == 3991
    for i, j in ((0, 1), (2, 7), (5, 5)):
        a, b = c.terms[i], c.terms[j]
        assert c.joint[i, j] == ((windows == a).any(axis=1) & (windows == b).any(axis=1)).sum()


def test_coherence_eps_takes_numpy_scalars():
    for measure in ("u_mass", "c_uci", "c_npmi", "c_v"):
        ref = coherence([[0, 1, 2]], TOY, measure=measure, eps=1e-6)
        np.testing.assert_array_equal(coherence([[0, 1, 2]], TOY, measure=measure, eps=np.float64(1e-6)), ref)
        np.testing.assert_allclose(coherence([[0, 1, 2]], TOY, measure=measure, eps=np.float32(1e-6)), ref,
                                   rtol=1e-6)


@pytest.mark.parametrize("kwargs,match", [
    (dict(topics=[[0]]), "at least 2"), (dict(topics=[[0, 0]]), "repeats"),
    (dict(topics=[[0, 9]]), "columns"), (dict(topics=[[0, 1]], measure="c_w2v"), "measure"),
    (dict(topics=[[0, 1]], window_size=3), "window_size needs texts"),
    (dict(topics=[[0.5, 1]]), "integer"), (dict(topics=[[0, 1]], eps=-1.0), "eps"),
    (dict(topics=[[0, 1]], eps=0.0), r"eps must be a number in \(0, 1\).*got 0\.0"),
    (dict(topics=[[0, 1]], eps=np.float32(0)), "eps"), (dict(topics=[[0, 1]], eps=np.nan), "eps"),
    (dict(topics=[[0, 1]], eps=True), "eps")])
def test_coherence_rejects(kwargs, match):
    kwargs.setdefault("measure", "c_v")
    with pytest.raises(ValueError, match=match):
        coherence(kwargs.pop("topics"), TOY, **kwargs)


def _random_corpus(seed=0, V=30, J=60, repeats=True):
    rng = np.random.default_rng(seed)
    if repeats:
        texts = [list(rng.integers(0, V, size=rng.integers(3, 25))) for _ in range(J)]
    else:     # no term twice in a document
        texts = [list(rng.permutation(V)[:rng.integers(3, 25)]) for _ in range(J)]
    rows = np.repeat(np.arange(J), [len(t) for t in texts])
    X = sp.csr_matrix((np.ones(rows.size), (rows, np.concatenate(texts))), shape=(J, V))
    topics = np.array([rng.choice(V, 6, replace=False) for _ in range(5)])
    return texts, X, topics


def test_gensim_agreement():
    """Our values equal gensim's CoherenceModel on the same topics and corpus: UMass on the
    bag-of-words corpus; c_uci, c_npmi and c_v with windows as long as the longest document
    (document co-occurrence, a corpus with repeated terms) and with sliding windows of 2, 4
    and 10 tokens on documents that repeat no term (gensim's window update drops a term that
    leaves the window while another copy of it stays, so repeated terms differ there)."""
    pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    for repeats in (True, False):
        texts, X, topics = _random_corpus(repeats=repeats)
        V = X.shape[1]
        words = [f"w{v}" for v in range(V)]
        dictionary = Dictionary([words])      # its ids are its own: topics and texts go as words
        toks = [[words[v] for v in t] for t in texts]
        tw = [[words[v] for v in t] for t in topics]
        corpus = [dictionary.doc2bow(t) for t in toks]
        g = CoherenceModel(topics=tw, corpus=corpus, dictionary=dictionary, coherence="u_mass")
        np.testing.assert_allclose(coherence(topics, X, measure="u_mass"), g.get_coherence_per_topic(),
                                   rtol=1e-12, atol=1e-12)
        longest = max(len(t) for t in texts)
        for measure in ("c_uci", "c_npmi", "c_v"):
            windows = [longest] + ([] if repeats else [2, 4, 10])
            for w in windows:
                g = CoherenceModel(topics=tw, texts=toks, dictionary=dictionary, coherence=measure,
                                   window_size=w)
                ours = (coherence(topics, X, measure=measure) if w == longest
                        else coherence(topics, texts=texts, measure=measure, window_size=w))
                np.testing.assert_allclose(ours, g.get_coherence_per_topic(), rtol=1e-12, atol=1e-12,
                                           err_msg=f"{measure} window {w}")


def test_tomotopy_agreement():
    """tomotopy's Coherence defines u_mass, c_uci and c_npmi as we do on whole documents
    (its sliding windows and its c_v differ): equal to its float rounding."""
    tp = pytest.importorskip("tomotopy")
    texts, X, topics = _random_corpus(seed=1)
    words = [f"w{v}" for v in range(X.shape[1])]
    corpus = tp.utils.Corpus()
    for t in texts:
        corpus.add_doc([words[v] for v in t])
    longest = max(len(t) for t in texts)
    for measure in ("u_mass", "c_uci", "c_npmi"):
        kw = {} if measure == "u_mass" else {"window_size": longest}
        coh = tp.coherence.Coherence(corpus, coherence=measure, targets=words, **kw)
        theirs = [coh.get_score(words=[words[v] for v in t]) for t in topics]
        np.testing.assert_allclose(coherence(topics, X, measure=measure), theirs, rtol=1e-8, atol=1e-9,
                                   err_msg=measure)


# ----------------------------------------------------------------- R-hat and ESS
def _ar1(phi, m, n, seed, means=None):
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((m, n))
    x = np.empty((m, n))
    x[:, 0] = e[:, 0] / np.sqrt(1 - phi ** 2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x + (0 if means is None else np.asarray(means)[:, None])


def test_rhat_and_ess_of_independent_chains():
    x = np.random.default_rng(0).standard_normal((4, 2000))
    assert abs(rhat(x) - 1) < 0.01 and abs(rhat(x, split=False) - 1) < 0.01
    assert effective_sample_size(x) == pytest.approx(8000, rel=0.1)


@pytest.mark.parametrize("phi", [0.5, 0.8])
def test_ess_of_ar1_chains(phi):
    """ESS of AR(1) chains is about m n (1 - phi) / (1 + phi)."""
    x = _ar1(phi, 4, 5000, seed=1)
    assert effective_sample_size(x) == pytest.approx(20000 * (1 - phi) / (1 + phi), rel=0.15)
    assert abs(rhat(x) - 1) < 0.02


def test_rhat_sees_chains_that_disagree():
    x = _ar1(0.5, 4, 1000, seed=2, means=[0, 0, 3, 3])
    assert rhat(x) > 1.5 and rhat(x, split=False) > 1.5
    trend = np.linspace(0, 5, 1000)[None, :] + np.random.default_rng(3).standard_normal((1, 1000))
    assert rhat(trend) > 1.3                   # split-R-hat sees a trend within one chain
    assert np.isnan(rhat(np.ones((2, 10))))
    with pytest.raises(ValueError, match="two chains"):
        rhat(np.zeros((1, 10)), split=False)
    with pytest.raises(ValueError, match="draws"):
        effective_sample_size([[1.0, 2.0]])


def test_rhat_of_constant_chains_and_no_chains():
    """Constant chains at different values have not mixed: R-hat is inf (was NaN, and
    NaN > 1.01 is False); NaN only when every draw is the same.  Zero chains are refused."""
    apart = np.array([[0.0] * 10, [1.0] * 10])
    assert rhat(apart) == np.inf and rhat(apart, split=False) == np.inf
    assert rhat([0.0, 0, 0, 1, 1, 1]) == np.inf          # one chain stuck at two levels
    assert np.isnan(rhat(np.ones((2, 10)))) and np.isnan(rhat(np.ones((3, 4)), split=False))
    for f in (rhat, effective_sample_size):
        with pytest.raises(ValueError, match="at least one chain"):
            f(np.empty((0, 10)))


def test_bad_chains_and_topics_are_named():
    """Ragged chains (several fits' traces of different lengths, as a list) failed with numpy's
    'setting an array element with a sequence', naming no argument; a uint64 topic index
    past int64 wrapped to a negative one in the message, whose range read '[0, None)'."""
    for f in (rhat, effective_sample_size):
        with pytest.raises(ValueError, match="chains must be a numeric array .* equal length"):
            f([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0]])
        with pytest.raises(ValueError, match="chains must be a numeric array"):
            f([[1.0, 2.0, "x", 4.0]])
    with pytest.raises(ValueError, match=r"outside the nonnegative int64 range: \[0, 9223372036854775808\]"):
        check_topics(np.array([[0, 2**63]], dtype=np.uint64))
    with pytest.raises(ValueError, match=r"outside \[0, 3\): \[0, 5\]"):
        check_topics(np.array([[0, 5]], dtype=np.uint8), 3)


def test_evaluation_reexports_every_public_name():
    import sys

    import pygbn.evaluation as ev

    for name in ("coherence", "convergence", "heldout"):
        module = sys.modules[f"pygbn.evaluation.{name}"]
        for attr in module.__all__:
            assert attr in ev.__all__ and getattr(ev, attr) is getattr(module, attr), attr


def test_trace_diagnostics_of_fits():
    X = pygbn.datasets.load_demo().counts[:200]
    fits = [pygbn.GBN(n_components=10, n_layers=2, burn_in=20, n_collect=20, random_state=s,
                      trace_every=2).fit(X) for s in (0, 1, 2)]
    chains = trace_chains(fits, depth=1)
    assert chains.shape == (3, 10)              # second half of the 20 traced values
    np.testing.assert_array_equal(chains[1], fits[1].loglikelihoods_[0][10:])
    d = trace_diagnostics(fits)
    assert d["depth"] == 2 and d["n_chains"] == 3 and np.isfinite(d["rhat"]) and d["ess"] > 0
    with pytest.raises(ValueError, match="depth"):
        trace_chains(fits, depth=3)


def test_network_coherence_and_diversity_of_each_layer():
    demo = pygbn.datasets.load_demo()
    X = demo.counts[:300]
    net = pygbn.GBN(n_components=10, n_layers=3, burn_in=6, n_collect=4, random_state=0).fit(X).network_
    per_layer = net.coherence(X, measure="c_npmi", n=6)
    assert len(per_layer) == net.depth
    for t, values in enumerate(per_layer, start=1):
        np.testing.assert_array_equal(values, coherence(net.top_term_indices(t, 6), X, measure="c_npmi"))
        np.testing.assert_array_equal(net.coherence(X, layer=t, measure="c_npmi", n=6), values)
        assert net.diversity(layer=t, n=7) == diversity(net.top_term_indices(t, 7))
    assert net.diversity() == [net.diversity(layer=t) for t in (1, 2, 3)]
    with pytest.raises(ValueError, match="layer"):
        net.coherence(X, layer=4)
    with pytest.raises(ValueError, match="exactly one"):
        net.coherence()
    # the reference counts must be in the network's vocabulary
    V = net.n_features
    with pytest.raises(ValueError, match=rf"X has {V - 1} columns but the network has n_features={V}"):
        net.coherence(X[:, :-1])
    wider = sp.hstack([X, sp.csr_matrix((X.shape[0], 2))]).tocsr()
    with pytest.raises(ValueError, match=rf"X has {V + 2} columns but the network has n_features={V}"):
        net.coherence(wider, layer=1)
    for bad in (1, 0, 2.0, True):
        with pytest.raises(ValueError, match=r"n \(top terms per topic\) must be an integer of at least 2"):
            net.coherence(X, n=bad)
    np.testing.assert_array_equal(net.coherence(X, layer=1, n=np.int64(6), measure="c_npmi"), per_layer[0])


def test_trace_svg():
    import xml.etree.ElementTree as ET
    svg = pygbn.explore.trace_svg([[[-3.0, -2.5, -2.4], [-2.3, -2.2]], [[-3.1, -2.6, -2.5], [-2.35, -2.1]]],
                                  [[[1, 2, 3], [1, 2]], [[1, 2, 3], [1, 2]]], labels=["a", "b & c"])
    root = ET.fromstring(svg.split("\n", 1)[1])
    ns = "{http://www.w3.org/2000/svg}"
    assert len(root.findall(f".//{ns}polyline")) == 4          # each chain broken between depths
    assert "b &amp; c" in svg and "T=2" in svg
    with pytest.raises(ValueError, match="same number"):
        pygbn.explore.trace_svg([[[-3.0]]], [[[1, 2]]])
    with pytest.raises(ValueError, match="labels"):
        pygbn.explore.trace_svg([[[-3.0]]], [[[1]]], labels=["a", "b"])


def test_vectorizer_sequences_give_the_counts_and_windows():
    docs = ["alpha beta gamma alpha", "gamma delta", "beta beta zeta"]
    vec = pygbn.text.CountVectorizer(stop_words=None, min_length=1).fit(docs[:2])
    seqs = vec.sequences(docs)
    X = vec.transform(docs)
    for row, seq in zip(X.toarray(), seqs):
        np.testing.assert_array_equal(np.bincount(seq[seq >= 0], minlength=X.shape[1]), row)
    assert seqs[2].tolist() == [vec.vocabulary_["beta"], vec.vocabulary_["beta"], -1]
    topics = [[vec.vocabulary_["alpha"], vec.vocabulary_["gamma"]]]
    np.testing.assert_allclose(coherence(topics, texts=seqs, measure="c_npmi", window_size=10),
                               coherence(topics, X, measure="c_npmi"))


def test_trace_svg_scales_to_the_values_after_the_warmup():
    ll = [[list(np.r_[-10.0, np.linspace(-3, -2.9, 19)])]]
    its = [[list(range(1, 21))]]
    svg = pygbn.explore.trace_svg(ll, its)
    assert 'clip-path="url(#frame)"' in svg and ">-10<" not in svg     # -10 is off the scale
    assert ">-10<" in pygbn.explore.trace_svg(ll, its, warmup=0.0)
    with pytest.raises(ValueError, match="warmup"):
        pygbn.explore.trace_svg(ll, its, warmup=1.0)
