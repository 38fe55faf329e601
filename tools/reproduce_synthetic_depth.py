#!/usr/bin/env python
"""How much can depth gain on short documents? A check on data drawn from a known 2-layer PGBN.

J = 4,000 documents over V = 500 terms are drawn from a PGBN with K_1 = 25
topics (Dir(0.05) columns), K_2 = 5 upper factors each mixing a few topics
(Dir(0.1) columns), r = 0.5, c^(3) = 1 and c^(2) = 0.1 (about 27 tokens per
document, like the Debian corpus); 30% of each document's tokens are
observed (pygbn.split_tokens) and the rest held out.  Printed:

* oracle: the true Phi^(1) with a flat single-layer prior (r = Phi^(2) r,
  the mean shapes) versus the true two-layer network, both scored by the
  same test-time chain (GBN.perplexity, 300 + 300 iterations): the gain
  that depth can give on such data when everything else is known;
* a layer-wise fit with K1max = 25 up to T = 3 (B = 300 at every layer,
  C = 300), its training-chain perplexity_ per depth, and a single-layer
  control run for the same total number of iterations;
* the fitted T = 1 and T = 2 networks scored by the same test-time chain
  as the oracle.

Only prints (under a minute on one core); docs/results/synthetic_depth.md
holds one run's output.

Usage::

    python tools/reproduce_synthetic_depth.py [SEED]     # SEED: of the data, the split and the chains (default 0)
"""
import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import pygbn  # noqa: E402
from pygbn import GBN, Layer, Network  # noqa: E402

J, V, K1, K2 = 4000, 500, 25, 5
c2, c3 = 0.1, 1.0
TI = (300, 300)
B, C = 300, 300


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("seed", nargs="?", type=int, default=0, metavar="SEED",
                    help="seed of the data, the split and every chain (default: 0)")
    seed = ap.parse_args(argv).seed
    t_start = time.perf_counter()
    rng = np.random.default_rng(seed)
    phi1 = rng.dirichlet(np.full(V, 0.05), size=K1).T
    phi2 = rng.dirichlet(np.full(K1, 0.1), size=K2).T
    r = np.full(K2, 0.5)
    th2 = rng.gamma(r, 1.0 / c3, size=(J, K2))
    th1 = rng.gamma(th2 @ phi2.T, 1.0 / c2)
    X = sp.csr_matrix(rng.poisson(th1 @ phi1.T))
    X = X[np.asarray(X.sum(1)).ravel() > 0]
    print(f"seed {seed}: {X.shape[0]} docs, {X.sum() / X.shape[0]:.1f} tokens/doc", flush=True)
    Xo, Xh = pygbn.split_tokens(X, 0.3, random_state=seed)

    def score(nets):
        g = GBN(n_components=K1, transform_iter=TI, random_state=seed)
        g.networks_ = nets
        g.n_features_in_ = V
        return [g.perplexity(Xo, Xh, depth=d) for d in range(1, len(nets) + 1)]

    true2 = Network(layers=[Layer(phi=phi1, c_median=c2), Layer(phi=phi2, c_median=c3)], r=r)
    true1 = Network(layers=[Layer(phi=phi1, c_median=c2 / c3)], r=phi2 @ r)  # flat prior with the mean shapes
    print("oracle, test chain (true Phi^(1); T=1 flat prior with the mean shapes, T=2 the true network):",
          np.round(score([true1, true2]), 2), flush=True)
    t = time.perf_counter()
    m = GBN(n_components=K1, n_layers=3, burn_in=(B, B), n_collect=C, random_state=seed, transform_iter=TI)
    m.fit(Xo, heldout=Xh)
    print("fitted layer-wise, training-chain perplexity_ T=1..3:", np.round(m.perplexity_, 2), m.widths_,
          f"({time.perf_counter() - t:.0f} s)", flush=True)
    ctrl = GBN(n_components=K1, n_layers=1, burn_in=B + 2 * (B + C), n_collect=C, random_state=seed)
    ctrl.fit(Xo, heldout=Xh)
    print(f"control: T=1 for {B + C + 2 * (B + C)} iterations, training-chain perplexity_:",
          np.round(ctrl.perplexity_, 2), flush=True)
    print("fitted T=1..2 scored by the test chain:", np.round([m.perplexity(Xo, Xh, depth=d) for d in (1, 2)], 2),
          flush=True)
    print(f"total wall time {time.perf_counter() - t_start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
