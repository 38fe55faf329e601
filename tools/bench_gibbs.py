"""Seconds per Gibbs iteration of pygbn on the Debian corpus, beside tomotopy's LDA.

Usage::

    python tools/bench_gibbs.py                      # the default grid (minutes)
    python tools/bench_gibbs.py --vocab top2000 --K 100 --T 1 3 --iters 5
    python tools/bench_gibbs.py --links              # Bernoulli-Poisson and PRG rows

Each row builds a chain on the corpus (``counts-top2000.npz`` or the full
``counts.npz`` of ``../shared/data/debian-descriptions``, or ``--data``),
stacks ``T`` layers of widths ``K, K/2, K/4, ...`` (about what pruning
leaves, cf. the authors' [100, 41, 21]), runs ``--warmup`` iterations and
then times ``--iters`` iterations.  The time of each conditional is reported
(layer one, propagation up, Phi, top layer, p/c, theta) together with the
floor the theta draws cannot go below: the same number of gamma draws made
by numpy's ``standard_gamma`` with the same shapes.  When tomotopy is
installed, its LDA at the same K (alpha 0.1, eta 0.01, one worker) is timed
on the same documents and the ratio printed.  Timings are wall clock on
whatever machine runs this; no assertion is made.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pygbn.inference.gibbs import GibbsSampler  # noqa: E402
from pygbn.model.links import get_link  # noqa: E402

DEFAULT_DATA = HERE.parent.parent / "shared" / "data"
STEPS = ["sample_layer_one_collapsed", "sample_layer_one_blocked", "propagate_up", "sample_phi",
         "sample_top", "sample_p_c", "sample_theta"]
SHORT = {"sample_layer_one_collapsed": "layer1", "sample_layer_one_blocked": "layer1",
         "propagate_up": "up", "sample_phi": "phi", "sample_top": "top", "sample_p_c": "p/c",
         "sample_theta": "theta"}


def load_corpus(data: Path, vocab: str) -> sp.csr_matrix:
    name = "counts-top2000.npz" if vocab == "top2000" else "counts.npz"
    path = data / "debian-descriptions" / name
    if not path.exists():
        sys.exit(f"bench_gibbs: {path} not found (use --data)")
    return sp.load_npz(path).tocsr()


def widths_for(K: int, T: int):
    return [max(2, K // 2**t) for t in range(T)]


def time_pygbn(Y, link, K, T, method, n_jobs, warmup, iters, seed=0):
    s = GibbsSampler.for_training(Y, K, link=link, method=method, n_jobs=n_jobs, random_state=seed)
    for w in widths_for(K, T)[1:]:
        s.add_layer(0.05)
        # narrow the new layer to the planned width (as pruning would)
        top = s.network.layers[-1]
        keep = np.zeros(top.width, dtype=bool)
        keep[:w] = True
        s.m[-1][:, ~keep] = 0
        s.m[-1][:, keep] = 1
        s.prune_top()
    acc = collections.defaultdict(float)
    for name in STEPS:
        f = getattr(s, name)

        def wrap(*a, _f=f, _n=name, **k):
            t0 = time.perf_counter()
            r = _f(*a, **k)
            acc[_n] += time.perf_counter() - t0
            return r

        setattr(s, name, wrap)
    for _ in range(warmup):
        s.sweep(update_p_c=True)
    acc.clear()
    t0 = time.perf_counter()
    for _ in range(iters):
        s.sweep(update_p_c=True)
    total = (time.perf_counter() - t0) / iters
    parts = collections.OrderedDict()
    for name in STEPS:
        if name in acc:
            parts[SHORT[name]] = parts.get(SHORT[name], 0.0) + acc[name] / iters
    # the floor of the theta draws: numpy's gamma with the same shapes, one thread
    floor = 0.0
    rng = np.random.default_rng(1)
    lowest = 2 if method == "collapsed" else 1
    for t in range(lowest, s.depth + 1):
        shape = s._doc_prior(t) + s.m[t - 1]
        t1 = time.perf_counter()
        rng.standard_gamma(np.broadcast_to(shape, s.m[t - 1].shape))
        floor += time.perf_counter() - t1
    return total, parts, floor, s.network.widths


def time_tomotopy(X, K, warmup, iters):
    try:
        import tomotopy as tp
    except ImportError:
        return None
    mdl = tp.LDAModel(k=K, alpha=0.1, eta=0.01, seed=1)
    words = [str(v) for v in range(X.shape[1])]
    for j in range(X.shape[0]):
        lo, hi = X.indptr[j], X.indptr[j + 1]
        toks = [words[v] for v, n in zip(X.indices[lo:hi], X.data[lo:hi]) for _ in range(int(n))]
        if toks:
            mdl.add_doc(toks)
    mdl.train(max(warmup, 1), workers=1)
    t0 = time.perf_counter()
    mdl.train(iters, workers=1)
    return (time.perf_counter() - t0) / iters


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--vocab", nargs="+", default=["top2000", "full"], choices=["top2000", "full"])
    ap.add_argument("--K", nargs="+", type=int, default=[100, 400])
    ap.add_argument("--T", nargs="+", type=int, default=[1, 3, 5])
    ap.add_argument("--methods", nargs="+", default=["collapsed", "blocked"])
    ap.add_argument("--jobs", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--links", action="store_true", help="also time the Bernoulli-Poisson and PRG links")
    ap.add_argument("--only-links", action="store_true", help="time only the Bernoulli-Poisson and PRG links")
    ap.add_argument("--no-tomotopy", action="store_true")
    args = ap.parse_args(argv)

    print(f"# pygbn Gibbs benchmark ({os.cpu_count()} CPUs visible; wall-clock seconds per iteration)")
    print()
    print("| data | link | K | T | widths | method | n_jobs | s/iter | breakdown (s) | theta floor (s) | tomotopy LDA (s) | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for vocab in args.vocab:
        X = load_corpus(args.data, vocab)
        Y = get_link("poisson").check_data(X)
        tomo = {}
        for K in ([] if args.only_links else args.K):
            if not args.no_tomotopy:
                tomo[K] = time_tomotopy(X, K, args.warmup, args.iters)
            for T in args.T:
                for method in args.methods:
                    for nj in args.jobs:
                        if method == "collapsed" and nj > 1 and T == 1:
                            continue  # nothing parallel in a one-layer collapsed iteration
                        tot, parts, floor, widths = time_pygbn(Y, "poisson", K, T, method, nj,
                                                               args.warmup, args.iters)
                        br = ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
                        tt = tomo.get(K)
                        ratio = f"{tot / tt:.2f}" if (tt and T == 1) else ""
                        print(f"| debian-{vocab} | poisson | {K} | {T} | {widths} | {method} | {nj} | "
                              f"{tot:.3f} | {br} | {floor:.3f} | {'' if tt is None else f'{tt:.3f}'} | {ratio} |",
                              flush=True)
        if args.links or args.only_links:
            B = (X > 0).astype(np.float64)
            Yb = get_link("bernoulli").check_data(B)
            Yr = get_link("prg").check_data(X.astype(np.float64) / 4.0)
            for link, Yl in (("bernoulli", Yb), ("prg", Yr)):
                for K in args.K:
                    for T in [t for t in args.T if t in (1, 3)] or [1]:
                        for nj in args.jobs:
                            tot, parts, floor, widths = time_pygbn(Yl, link, K, T, "blocked", nj,
                                                                   args.warmup, args.iters)
                            br = ", ".join(f"{k} {v:.3f}" for k, v in parts.items())
                            print(f"| debian-{vocab} | {link} | {K} | {T} | {widths} | blocked | {nj} | "
                                  f"{tot:.3f} | {br} | {floor:.3f} | | |", flush=True)


if __name__ == "__main__":
    main()
