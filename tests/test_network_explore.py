"""Network's exploration methods: thin delegates to pygbn.explore (paper Section 2.3)."""
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import scipy.sparse as sp

import pygbn
from pygbn import explore as ex
from pygbn.model import Layer, Network, PoissonRandomizedGammaLink


def make_network(V=12, widths=(6, 4, 3), seed=0, vocab=True, link="poisson"):
    rng = np.random.default_rng(seed)
    dims = [V, *widths]
    layers = [Layer(phi=rng.dirichlet(np.full(dims[t], 0.5), size=dims[t + 1]).T, eta=0.05 * (t + 1),
                    c_median=1.0 + t)
              for t in range(len(widths))]
    r = rng.gamma(1.0, 1.0, size=widths[-1])
    words = [f"w{v:02d}" for v in range(V)] if vocab else None
    return Network(layers=layers, r=r, gamma0=2.5, c0=0.7, link=link, vocabulary=words)


def test_package_exports_submodules():
    assert pygbn.explore is ex
    assert pygbn.text.CountVectorizer is not None
    assert callable(pygbn.datasets.load_demo)
    for name in ("explore", "text", "datasets"):
        assert name in pygbn.__all__


def test_projections_and_weights_delegate():
    net = make_network()
    for t in (1, 2, 3):
        np.testing.assert_array_equal(net.project(t), ex.project(net.phis, t))
        np.testing.assert_array_equal(net.node_weights(t), ex.node_weights(net.phis, net.r, t))
        np.testing.assert_array_equal(net.top_term_indices(t, 4), ex.top_term_indices(net.phis, t, 4))
    for a, b in zip(net.projections(), ex.projections(net.phis)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(net.layer_weights(), ex.layer_weights(net.phis, net.r)):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(net.node_weights(3), net.r)
    with pytest.raises(ValueError, match="t must be"):
        net.project(4)
    with pytest.raises(ValueError, match="t must be"):
        net.node_weights(0)


def test_top_terms_default_to_the_network_vocabulary():
    net = make_network()
    assert net.top_terms(2, n=3) == ex.top_terms(net.phis, 2, net.vocabulary, n=3)
    other = [w.upper() for w in net.vocabulary]
    assert net.top_terms(1, n=2, vocab=other) == ex.top_terms(net.phis, 1, other, n=2)
    bare = make_network(vocab=False)
    with pytest.raises(ValueError, match="vocab must be given"):
        bare.top_terms(1)
    with pytest.raises(ValueError, match="vocab must hold 12 terms"):
        net.top_terms(1, vocab=["a", "b"])


def test_relabel_by_popularity_returns_a_new_network():
    link = PoissonRandomizedGammaLink(a_median=3.5)
    net = make_network(seed=3, link=link)
    before = [p.copy() for p in net.phis]
    new, perms = net.relabel_by_popularity(return_perms=True)
    assert isinstance(new, Network) and new is not net
    for p, q in zip(before, net.phis):  # the original is untouched
        np.testing.assert_array_equal(p, q)
    for t in (1, 2, 3):
        w = new.node_weights(t)
        assert np.all(np.diff(w) <= 1e-12)
        np.testing.assert_allclose(w, net.node_weights(t)[perms[t - 1]], rtol=1e-12)
        np.testing.assert_allclose(new.project(t), net.project(t)[:, perms[t - 1]], rtol=1e-12)
    np.testing.assert_allclose(new.project(3) @ new.r, net.project(3) @ net.r, rtol=1e-12)
    assert [l.eta for l in new.layers] == [l.eta for l in net.layers]
    assert [l.c_median for l in new.layers] == [l.c_median for l in net.layers]
    assert (new.gamma0, new.c0, new.hyper) == (net.gamma0, net.c0, net.hyper)
    assert new.link == net.link and new.link is not net.link and new.link.a_median == 3.5
    assert new.vocabulary == net.vocabulary
    again = new.relabel_by_popularity()
    for p, q in zip(again.phis, new.phis):
        np.testing.assert_array_equal(p, q)
    assert isinstance(net.relabel_by_popularity(), Network)


def test_relabelled_network_saves_and_loads(tmp_path):
    new = make_network(seed=4).relabel_by_popularity()
    path = tmp_path / "net.npz"
    pygbn.save(new, path)
    back = pygbn.load(path)
    for p, q in zip(back.phis, new.phis):
        np.testing.assert_array_equal(p, q)
    assert back.vocabulary == new.vocabulary


def test_tree_and_subnetwork_delegate():
    net = make_network(seed=5).relabel_by_popularity()
    t = net.tree(3, 0, tau=1.0, n_terms=5)
    assert t == ex.tree(net.phis, net.r, 3, 0, tau=1.0, vocab=net.vocabulary, n_terms=5)
    assert t.nodes[0].key == (3, 0) and t.nodes[0].rank == 1
    assert all(nd.rank == nd.index + 1 for nd in t.nodes)
    s = net.subnetwork([(3, 0), (2, 1)], tau={3: 1.0, 2: 2.0})
    assert s == ex.subnetwork(net.phis, net.r, [(3, 0), (2, 1)], tau={3: 1.0, 2: 2.0},
                              vocab=net.vocabulary)
    # renderings work from the returned object
    assert t.to_text().startswith("L3 #1")
    assert t.to_dot().startswith("digraph")
    ET.fromstring(t.to_svg().encode("utf-8"))
    # without a vocabulary, nodes carry the indices of their top dimensions
    bare = make_network(seed=5, vocab=False)
    tb = bare.tree(1, 0, n_terms=3)
    assert tb.nodes[0].top_terms == tuple(str(i) for i in tb.nodes[0].top_term_indices)
    with pytest.raises(ValueError, match="node"):
        net.tree(3, 99)


def test_generate_top_terms():
    """The paper's Section 4.1: a synthetic document's words ranked by their Poisson rates
    Phi^(1) theta^(1)_j (not by the counts drawn from them), from the draws generate makes."""
    net = make_network(V=30, widths=(5, 3), seed=6)
    got, X = net.generate_top_terms(7, n=4, random_state=11, return_samples=True)
    X2, thetas = net.generate(7, random_state=11, return_hidden=True)
    np.testing.assert_array_equal(X, X2)
    assert net.generate_top_terms(7, n=4, random_state=11) == got
    rates = thetas[0] @ net.layers[0].phi.T
    for j, doc in enumerate(got):
        assert doc == [net.vocabulary[v] for v in np.argsort(-rates[j], kind="stable")[:4]]
    assert len(got) == 7 and all(len(doc) == 4 for doc in got)
    with pytest.raises(ValueError, match="return_samples must be a bool"):
        net.generate_top_terms(2, random_state=0, return_samples=1)
    with pytest.raises(ValueError, match="vocab must be given"):
        make_network(vocab=False).generate_top_terms(2)


def test_save_factor_grid(tmp_path):
    net = make_network(V=16, widths=(4, 2), seed=7, vocab=False)
    path = net.save_factor_grid(2, (4, 4), tmp_path / "layer2.png", scale=2)
    data = open(path, "rb").read()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    svg = net.save_factor_grid(1, (4, 4), tmp_path / "layer1.svg")
    ET.parse(svg)


def test_methods_on_a_fitted_network():
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(0.8, size=(40, 15)))
    vocab = [f"term{v}" for v in range(15)]
    model = pygbn.GBN(n_components=6, n_layers=2, burn_in=(5, 3), n_collect=3, random_state=0)
    model.fit(X, vocabulary=vocab)
    net = model.network_
    rel = net.relabel_by_popularity()
    assert rel.widths == net.widths and rel.vocabulary == vocab
    top = rel.top_terms(net.depth, n=3)
    assert len(top) == net.widths[-1] and all(w in vocab for row in top for w in row)
    sub = rel.tree(net.depth, 0, tau=0.0, n_terms=3)
    assert sub.layer_sizes[0] == net.widths[0]  # tau = 0 keeps every edge with phi > 0


# ---------------------------------------------------------------------------
# construction checks: a Network that can be built explores, generates and saves
# ---------------------------------------------------------------------------


def _phi(V=5, K=3, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(V), size=K).T


def test_phi_columns_must_lie_on_the_simplex(tmp_path):
    from pygbn.io import SIMPLEX_TOLERANCE

    with pytest.raises(ValueError, match=r"Phi\^\(1\) column 0 sums to 2.*simplex"):
        Network([Layer(_phi() * 2)], r=np.ones(3))
    off = _phi()
    off[:, 1] *= 1 + 200 * SIMPLEX_TOLERANCE      # beyond the 1e-4 a Network renormalises
    with pytest.raises(ValueError, match=r"Phi\^\(1\) column 1 .*simplex"):
        Network([Layer(off)], r=np.ones(3))
    near = _phi()
    near[:, 1] *= 1 + 20 * SIMPLEX_TOLERANCE      # within it: divided by its sum
    np.testing.assert_allclose(Network([Layer(near)], r=np.ones(3)).layers[0].phi.sum(0), 1.0, atol=1e-12)
    two = [Layer(_phi()), Layer(_phi(3, 2) * 0.5)]
    with pytest.raises(ValueError, match=r"Phi\^\(2\) column 0"):
        Network(two, r=np.ones(2))
    for bad in (np.nan, np.inf, -0.1):
        p = _phi()
        p[0, 0] = bad
        with pytest.raises(ValueError, match=r"Phi\^\(1\) must be finite and nonnegative"):
            Network([Layer(p)], r=np.ones(3))
    # within the files' tolerance: built, explored and saved (the same tolerance everywhere)
    near = _phi()
    near[:, 0] *= 1 + SIMPLEX_TOLERANCE / 10
    net = Network([Layer(near)], r=np.ones(3))
    net.project(1)
    pygbn.save(net, tmp_path / "near.npz")
    assert pygbn.load(tmp_path / "near.npz").widths == [3]
    # check() sees a Phi changed after construction
    net.layers[0].phi = _phi() * 3
    with pytest.raises(ValueError, match="simplex"):
        net.check()


@pytest.mark.parametrize("kwargs,match", [
    (dict(eta=-1), "eta must be a finite positive number"),
    (dict(eta=0), "eta must be"),
    (dict(eta=np.nan), "eta must be"),
    (dict(eta=1e13), "eta must be .*at most 1e\\+12"),
    (dict(eta=True), "eta must be"),
    (dict(eta="0.1"), "eta must be"),
    (dict(c_median=0), "c_median must be a finite positive number"),
    (dict(c_median=-1), "c_median must be"),
    (dict(c_median=np.nan), "c_median must be"),
    (dict(c_median=np.inf), "c_median must be"),
])
def test_layer_scalars_are_checked(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Layer(_phi(), **kwargs)


def test_layer_phi_is_converted_and_checked():
    layer = Layer(_phi().tolist(), eta=np.float32(0.5), c_median=2)
    assert layer.phi.dtype == np.float64 and layer.width == 3 and "width=3" in repr(layer)
    assert type(layer.eta) is float and type(layer.c_median) is float
    assert Layer(np.eye(3, dtype=int)).phi.dtype == np.float64
    for bad, match in [(np.zeros((0, 3)), r"phi must be non-empty, got shape \(0, 3\)"),
                       (np.zeros((5, 0)), r"phi must be non-empty, got shape \(5, 0\)"),
                       (np.ones(3) / 3, "phi must be 2-D"),
                       ([[0.5, 0.5], [0.5]], "phi must be a 2-D array"),
                       (np.array([["a"]]), "phi must be a 2-D array of numbers")]:
        with pytest.raises(ValueError, match=match):
            Layer(bad)
    # a fitted c_median may be huge (most samples empty): positive and finite is enough
    assert Layer(_phi(), c_median=1e30).c_median == 1e30


@pytest.mark.parametrize("kwargs,match", [
    (dict(gamma0=-1), "gamma0 must be a finite positive number"),
    (dict(gamma0=0), "gamma0 must be"),
    (dict(gamma0=np.nan), "gamma0 must be"),
    (dict(c0=0), "c0 must be a finite positive number"),
    (dict(c0=np.inf), "c0 must be"),
    (dict(hyper={"a0": 1.0, "z0": 2.0}), r"hyper has unknown keys \['z0'\]"),
    (dict(hyper={"a0": -1.0}), "hyper-parameter a0 must be a positive"),
    (dict(hyper=[1, 2, 3, 4]), "hyper must be a Hyperparameters, a dict or None"),
    (dict(r=np.ones((3, 1))), r"r must have shape \(3,\)"),
    (dict(r=np.array([1.0, np.nan, 1.0])), "r must be finite and nonnegative"),
    (dict(r=np.array([1.0, 2e12, 1.0])), "r must be finite and nonnegative .at most 1e\\+12"),
    # the bad entry and where it is (the message named neither)
    (dict(r=np.array([1.0, 1.0, np.nan])), r"r must be .*, got nan at index 2"),
    (dict(r=np.array([1.0, -0.5, 1.0])), r"r must be .*, got -0.5 at index 1"),
    (dict(r=np.array([np.inf, 1.0, 1.0])), r"r must be .*, got inf at index 0"),
    (dict(r=["a", "b", "c"]), "r must be an array of numbers"),
    (dict(r=np.full(3, 1e6), c_median=1e-7), "expected count per sample"),
])
def test_network_scalars_are_checked(kwargs, match):
    kw = dict(r=np.ones(3))
    c_median = kwargs.pop("c_median", 1.0)
    kw.update(kwargs)
    with pytest.raises(ValueError, match=match):
        Network([Layer(_phi(), c_median=c_median)], **kw)


def test_hyper_given_as_a_dict_is_converted(tmp_path):
    net = Network([Layer(_phi())], r=np.ones(3), hyper={"a0": 0.5, "f0": 2})
    assert net.hyper == pygbn.Hyperparameters(a0=0.5, f0=2.0)
    assert Network([Layer(_phi())], r=np.ones(3), hyper=None).hyper == pygbn.Hyperparameters()
    pygbn.save(net, tmp_path / "h.npz")
    assert pygbn.load(tmp_path / "h.npz").hyper == net.hyper


def test_bad_link_parameters_are_refused_by_the_network():
    link = PoissonRandomizedGammaLink(2.0)
    net = Network([Layer(_phi())], r=np.ones(3), link=link)
    link.a_median = -1.0          # changed after construction: check() sees it
    with pytest.raises(ValueError, match="the link's a_median must be a finite positive number"):
        net.check()


@pytest.mark.parametrize("vocabulary,match", [
    (["a", "b"], "vocabulary must hold 5 terms"),
    (list("abcdef"), "vocabulary must hold 5 terms"),
    ("abcde", "vocabulary must be a sequence of strings, got a single str"),
    (["a", "b", 3, "d", "e"], r"vocabulary\[2\] must be a str"),
    (set("abcde"), "vocabulary must be an ordered sequence"),
])
def test_vocabulary_is_checked(vocabulary, match):
    with pytest.raises(ValueError, match=match):
        Network([Layer(_phi())], r=np.ones(3), vocabulary=vocabulary)


def test_good_vocabularies_are_accepted():
    for words in (list("abcde"), tuple("abcde"), np.array(list("abcde"))):
        net = Network([Layer(_phi())], r=np.ones(3), vocabulary=words)
        assert net.top_terms(1, n=2)


def test_layers_must_be_layer_objects():
    with pytest.raises(ValueError, match=r"layers\[0\] must be a Layer .*got ndarray"):
        Network([_phi()], r=np.ones(3))
    with pytest.raises(ValueError, match=r"layers\[1\] must be a Layer"):
        Network([Layer(_phi()), "Phi2"], r=np.ones(3))
    with pytest.raises(ValueError, match="layers must be a list of Layer objects"):
        Network(_phi(), r=np.ones(3))
    with pytest.raises(ValueError, match="at least one layer"):
        Network([], r=np.ones(3))
    net = Network((Layer(_phi()),), r=np.ones(3))   # a tuple becomes a list
    assert isinstance(net.layers, list) and net.widths == [3]


def test_sample_hidden_rates_are_checked():
    net = make_network(V=12, widths=(6, 4), seed=8)
    for c, match in [([0.0, 1.0], r"c\[0\] .* must be finite and positive, got .*0\.0"),
                     ([-1.0, 1.0], r"c\[0\] .* must be finite and positive"),
                     ([1.0, np.nan], r"c\[1\] .* must be finite and positive, got .*nan"),
                     ([1.0, np.inf], r"c\[1\] .* must be finite and positive"),
                     ([np.ones(3), 1.0], r"c\[0\] .*n_samples=4 numbers, got shape \(3,\)"),
                     ([np.ones((4, 1)), 1.0], r"c\[0\] .*got shape \(4, 1\)"),
                     ([1.0], r"c must have one entry per layer \(2\), got 1"),
                     ("ab", "c must be a number or a sequence of 2 rates"),
                     (0.0, r"c\[0\] .* must be finite and positive"),
                     (True, "c must be a number or a sequence"),
                     ([1.0, "x"], r"c\[1\] .* must be a number or an array")]:
        with pytest.raises(ValueError, match=match):
            net.sample_hidden(4, 0, c=c)
    # a positive number is every layer's rate; arrays give one rate per sample
    a = net.sample_hidden(4, 0, c=2.0)
    b = net.sample_hidden(4, 0, c=[2.0, 2.0])
    d = net.sample_hidden(4, 0, c=np.array(2.0))
    e = net.sample_hidden(4, 0, c=[np.full(4, 2.0), 2])
    for x, y, z, w in zip(a, b, d, e):
        np.testing.assert_array_equal(x, y)
        np.testing.assert_array_equal(x, z)
        np.testing.assert_array_equal(x, w)
    assert [th.shape for th in a] == [(4, 6), (4, 4)]
    # default: the training medians
    default = net.sample_hidden(4, 0)
    medians = net.sample_hidden(4, 0, c=[layer.c_median for layer in net.layers])
    for x, y in zip(default, medians):
        np.testing.assert_array_equal(x, y)


def test_float32_phi_is_explored_and_renormalised_by_a_network(tmp_path):
    """A Phi normalised in float32 (columns off by ~1e-5) was refused by the explorers and by
    Network after their tolerance became the model files' 1e-6: the explorers take 1e-4 again,
    a Network divides such columns by their sums (and then saves)."""
    rng = np.random.default_rng(0)
    p = rng.gamma(0.05, size=(50000, 4)).astype(np.float32)
    p /= p.sum(0)
    assert np.abs(p.astype(np.float64).sum(0) - 1).max() > 1e-6
    assert len(ex.top_term_indices([p], 1, n=3)) == 4
    net = Network([Layer(phi=p, eta=np.array(0.05), c_median=np.array(2.0))], r=np.ones(4),
                  gamma0=np.array(1.0))
    np.testing.assert_allclose(net.layers[0].phi.sum(0), 1.0, atol=1e-12)
    pygbn.save(net, tmp_path / "n.npz")
    assert pygbn.load(tmp_path / "n.npz").widths == [4]
    with pytest.raises(ValueError, match="simplex"):
        Network([Layer(phi=p * 1.001)], r=np.ones(4))


def test_vocabulary_from_dict_keys_and_iterables():
    phi = np.full((3, 2), 1 / 3)
    order = {"a": 0, "b": 1, "c": 2}
    assert Network([Layer(phi)], r=np.ones(2), vocabulary=order.keys()).vocabulary is not None
    assert ex.top_terms([phi], 1, n=1, vocab=(w for w in "abc"))
    with pytest.raises(ValueError, match="ordered"):
        Network([Layer(phi)], r=np.ones(2), vocabulary={"a", "b", "c"})


def test_diversity_checks_n_by_name():
    # Network.diversity(n=1) failed inside pygbn.evaluation.diversity with "topics must be a 2-D
    # integer array with one row of at least 2 term indices", naming neither n nor its value
    rng = np.random.default_rng(0)
    net = Network(layers=[Layer(phi=rng.dirichlet(np.ones(6), size=3).T)], r=np.ones(3))
    for bad in (1, 0, 2.0, True):
        with pytest.raises(ValueError, match=r"n \(top terms per topic\) must be an integer of at least 2"):
            net.diversity(n=bad)
    assert net.diversity(layer=1, n=np.int64(2)) == net.diversity(n=2)[0]
    one = Network(layers=[Layer(phi=np.ones((1, 2)))], r=np.ones(2))
    with pytest.raises(ValueError, match="diversity needs at least 2 features.*has 1"):
        one.diversity()
    with pytest.raises(ValueError, match="coherence needs at least 2 features.*has 1"):
        one.coherence(np.ones((2, 1)))


def test_generate_top_terms_checks_its_arguments_before_drawing():
    # a bad n or vocab was found only after all n_samples documents had been drawn (and the
    # caller's Generator advanced)
    net = make_network()
    for kwargs, match in [(dict(n=0), "n must be a positive int, got 0"),
                          (dict(vocab=["a"]), "vocab must hold 12 terms"),
                          (dict(n=2.0), "n must be a positive int, got 2.0"),
                          (dict(return_samples=1), "return_samples must be a bool")]:
        rng = np.random.default_rng(5)
        before = rng.bit_generator.state
        with pytest.raises(ValueError, match=match):
            net.generate_top_terms(3, random_state=rng, **kwargs)
        assert rng.bit_generator.state == before
    with pytest.raises(ValueError, match="vocab must be given"):
        make_network(vocab=False).generate_top_terms(3, random_state=0)
    _, thetas = net.generate(4, random_state=1, return_hidden=True)
    assert net.generate_top_terms(4, n=3, random_state=1) == ex.generated_top_terms(
        thetas[0] @ net.layers[0].phi.T, net.vocabulary, n=3)


def test_every_layer_topics_walk_the_network_once(monkeypatch):
    """Network.coherence and Network.diversity of every layer projected each layer from
    Phi^(1) anew (T (T - 1) / 2 products of a (V, K) matrix; the CLI's topics twice over):
    they now walk down the network once, with the same top terms."""
    import pygbn.explore._terms as terms
    import pygbn.explore._weights as weights
    from pygbn.explore._terms import top_term_indices_by_layer

    rng = np.random.default_rng(4)
    widths, V = [6, 5, 4, 3], 40
    layers, rows = [], V
    for k in widths:
        phi = rng.gamma(0.3, size=(rows, k))
        layers.append(Layer(phi=phi / phi.sum(axis=0)))
        rows = k
    net = Network(layers=layers, r=rng.gamma(1.0, size=widths[-1]))
    X = sp.csr_matrix(rng.poisson(0.3, size=(50, V)))
    expected = {t: net.top_term_indices(t, 7) for t in range(1, 5)}
    coh = [pygbn.evaluation.coherence(expected[t], X, measure="c_npmi") for t in range(1, 5)]
    div = [pygbn.evaluation.diversity(net.top_term_indices(t, 9)) for t in range(1, 5)]
    by_layer = top_term_indices_by_layer(net.phis, [3, 1, 4], 7)
    assert list(by_layer) == [3, 1, 4]
    for t, idx in by_layer.items():
        np.testing.assert_array_equal(idx, expected[t])
    # the layers given as an iterator (they were read twice: the result was {})
    by_iter = top_term_indices_by_layer(net.phis, iter([3, 1, 4]), 7)
    assert list(by_iter) == [3, 1, 4]
    for t, idx in by_iter.items():
        np.testing.assert_array_equal(idx, expected[t])

    def per_layer_projection(*args):
        raise AssertionError("projected a layer on its own")

    # a walk of its own per layer: top_term_indices (a one-layer walk) or project()
    monkeypatch.setattr(pygbn.explore, "top_term_indices", per_layer_projection)
    monkeypatch.setattr(terms, "top_term_indices", per_layer_projection)
    monkeypatch.setattr(weights, "project", per_layer_projection)
    for a, b in zip(net.coherence(X, measure="c_npmi", n=7), coh):
        np.testing.assert_array_equal(a, b)
    assert net.diversity(n=9) == div


def test_coherence_refuses_texts_of_another_vocabulary():
    """Network.coherence refused reference counts X of another width but took texts holding
    term indices past n_features (texts of a larger vocabulary), counting them silently as
    this network's terms; a negative index stays a token outside the vocabulary, and a
    generator of texts is read once."""
    rng = np.random.default_rng(0)
    net = Network(layers=[Layer(phi=rng.dirichlet(np.ones(6), size=3).T)], r=np.ones(3))
    with pytest.raises(ValueError, match=r"texts\[1\] holds the term index 6 but the network has n_features=6"):
        net.coherence(texts=[[0, 1, 2], [3, 6]], n=3)
    texts = [[0, 1, -1, 2], [3, 4, 5, 0], [1, 5]]
    got = net.coherence(texts=(t for t in texts), n=3, measure="c_npmi")
    want = pygbn.evaluation.coherence(net.top_term_indices(1, 3), texts=texts, measure="c_npmi")
    np.testing.assert_array_equal(got[0], want)
