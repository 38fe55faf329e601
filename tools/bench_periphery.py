"""Wall time and peak traced memory of pygbn's periphery on large inputs (no chain is run).

Usage::

    python tools/bench_periphery.py                    # every probe (a few minutes, ~5 GB at most)
    python tools/bench_periphery.py --only text coherence-X
    python tools/bench_periphery.py --only text --no-trace   # wall time without tracemalloc
    PYTHONPATH=/path/to/other/checkout python tools/bench_periphery.py   # another version

Each probe builds seeded synthetic data (not timed), then runs one public call
under :mod:`tracemalloc` and prints its wall time and traced peak (numpy's and
Python's allocations made during the call; the inputs are not counted), with
the size of the input for scale:

* ``text``: ``CountVectorizer(min_df=2).fit_transform`` of 200,000 documents
  of 20 words (a Zipf-distributed vocabulary of 50,000 words);
* ``coherence-X``: ``coherence(topics, X)`` (C_V) of 1,000 and 3,000 topics of
  10 terms (the layers of a 1000-wide network) on 200,000 x 100,000 counts with
  40 tokens a document;
* ``coherence-texts``: ``coherence(topics, texts=...)`` (C_V, windows of 110)
  of 1,000 topics on 200 documents of 2,000 tokens;
* ``explore``: ``top_term_indices`` of layers 1 and 3 and ``tree`` of a
  network with V = 100,000 and three layers of 1,000 nodes;
* ``layers``: ``Network.diversity()`` of four layers (V = 50,000, K = 1,000);
* ``io``: ``pygbn.io.read_model`` of that network's first two layers;
* ``dense``: ``PoissonLink().check_data`` (what ``fit`` and ``transform``
  run first) of a dense int64 10,000 x 5,000 matrix.

Timings on a shared machine vary by tens of percent, and tracemalloc slows
code that makes many Python objects (the vectoriser: ``--no-trace``); the
peaks are exact.
"""
from __future__ import annotations

import argparse
import gc
import os
import tempfile
import time
import tracemalloc

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import numpy as np
import scipy.sparse as sp

PROBES = ("text", "coherence-X", "coherence-texts", "explore", "layers", "io", "dense")


TRACE = True       # --no-trace: wall time without tracemalloc (which slows Python-heavy code)


def measure(label: str, fn, input_bytes: float = None):
    gc.collect()
    if TRACE:
        tracemalloc.start()
    t = time.perf_counter()
    try:
        out = fn()
        seconds = time.perf_counter() - t
        peak = tracemalloc.get_traced_memory()[1] if TRACE else None
    finally:
        if TRACE:
            tracemalloc.stop()
    size = "" if input_bytes is None else f" (input {input_bytes / 2**20:.0f} MiB)"
    mem = "" if peak is None else f", peak {peak / 2**20:.0f} MiB"
    print(f"{label}: {seconds:.2f} s{mem}{size}", flush=True)
    return out


def zipf(V: int) -> np.ndarray:
    p = 1.0 / np.arange(1, V + 1)
    return p / p.sum()


def simplex(rng, n: int, k: int) -> np.ndarray:
    a = rng.gamma(0.05, size=(n, k))
    return a / a.sum(axis=0)


def probe_text():
    from pygbn.text import CountVectorizer

    rng = np.random.default_rng(0)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    V, n_docs, length = 50_000, 200_000, 20
    words = np.array(["".join(rng.choice(letters, size=rng.integers(4, 10))) for _ in range(V)], dtype=object)
    w = words[rng.choice(V, size=n_docs * length, p=zipf(V))]
    docs = [" ".join(w[i * length:(i + 1) * length]) for i in range(n_docs)]
    del w
    measure("CountVectorizer(min_df=2).fit_transform, 200000 documents",
            lambda: CountVectorizer(min_df=2).fit_transform(docs), sum(map(len, docs)))


def probe_coherence_x():
    from pygbn.evaluation import coherence

    rng = np.random.default_rng(0)
    J, V, L = 200_000, 100_000, 40
    p = zipf(V)
    X = sp.csr_matrix((np.ones(J * L), (np.repeat(np.arange(J), L), rng.choice(V, size=J * L, p=p))),
                      shape=(J, V))
    X.sum_duplicates()
    q = np.sqrt(p)
    q /= q.sum()
    nbytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    for K in (1000, 3000):
        topics = np.array([rng.choice(V, size=10, replace=False, p=q) for _ in range(K)])
        R = np.unique(topics).size
        v = measure(f"coherence(c_v) of {K} topics ({R} terms) on 200000 x 100000 counts",
                    lambda: coherence(topics, X), nbytes)
        print(f"  mean {v.mean():.15f}")


def probe_coherence_texts():
    from pygbn.evaluation import coherence

    rng = np.random.default_rng(0)
    V = 20_000
    p = zipf(V)
    texts = [rng.choice(V, size=2000, p=p) for _ in range(200)]
    q = np.sqrt(p)
    q /= q.sum()
    topics = np.array([rng.choice(V, size=10, replace=False, p=q) for _ in range(1000)])
    v = measure("coherence(c_v, texts, window 110) of 1000 topics, 200 documents of 2000 tokens",
                lambda: coherence(topics, texts=texts, measure="c_v"))
    print(f"  mean {v.mean():.15f}")


def probe_explore():
    from pygbn import explore

    rng = np.random.default_rng(0)
    V, K = 100_000, 1000
    phis = [simplex(rng, V, K), simplex(rng, K, K), simplex(rng, K, K)]
    r = rng.gamma(1.0, size=K)
    vocab = [f"w{i}" for i in range(V)]
    measure("top_term_indices(phis, 1), V = 100000, K = 1000",
            lambda: explore.top_term_indices(phis, 1, 10), phis[0].nbytes)
    measure("top_term_indices(phis, 3)", lambda: explore.top_term_indices(phis, 3, 10), phis[0].nbytes)
    sub = measure("tree(phis, r, 3, 0)", lambda: explore.tree(phis, r, 3, 0, vocab=vocab), phis[0].nbytes)
    print(f"  {len(sub.nodes)} nodes, {len(sub.edges)} edges")


def probe_layers():
    from pygbn.model import Layer, Network

    rng = np.random.default_rng(0)
    V, K = 50_000, 1000
    net = Network(layers=[Layer(simplex(rng, V, K))] + [Layer(simplex(rng, K, K)) for _ in range(3)],
                  r=rng.gamma(1.0, size=K))
    d = measure("Network.diversity() of 4 layers, V = 50000, K = 1000", net.diversity,
                net.layers[0].phi.nbytes)
    print(f"  {d}")


def probe_io():
    from pygbn import io
    from pygbn.model import Layer, Network

    rng = np.random.default_rng(0)
    V, K = 100_000, 1000
    net = Network(layers=[Layer(simplex(rng, V, K)), Layer(simplex(rng, K, K))], r=rng.gamma(1.0, size=K),
                  vocabulary=[f"w{i}" for i in range(V)])
    nbytes = net.layers[0].phi.nbytes
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model.npz")
        measure("io.write_model, V = 100000, K = 1000", lambda: io.write_model(path, [net], kind="Network"),
                nbytes)
        print(f"  file {os.path.getsize(path) / 2**20:.0f} MiB")
        del net
        measure("io.read_model", lambda: io.read_model(path), nbytes)


def probe_dense():
    from pygbn.model.links import get_link

    rng = np.random.default_rng(0)
    X = (rng.random((10000, 5000)) < 0.01).astype(np.int64) * rng.integers(1, 5, (10000, 5000))
    measure("PoissonLink().check_data(dense int64 10000 x 5000)", lambda: get_link("poisson").check_data(X),
            X.nbytes)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=PROBES, default=list(PROBES), help="probes to run")
    ap.add_argument("--no-trace", action="store_true", help="wall time only, without tracemalloc")
    args = ap.parse_args(argv)
    global TRACE
    TRACE = not args.no_trace
    import pygbn

    print(f"pygbn {pygbn.__version__} from {os.path.dirname(pygbn.__file__)}")
    for name in args.only:
        globals()["probe_" + name.replace("-", "_").lower()]()


if __name__ == "__main__":
    main()
