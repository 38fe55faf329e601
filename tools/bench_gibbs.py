"""Seconds per Gibbs iteration of pygbn on the Debian corpus, depth by depth, beside numpy's gamma floor.

Usage::

    python tools/bench_gibbs.py                              # Debian top-2000, K1max = 100, T = 1..5
    python tools/bench_gibbs.py --K 100 400 --methods collapsed blocked partial --jobs 1 2
    python tools/bench_gibbs.py --first 300 --per-layer 50   # later in the chain
    python tools/bench_gibbs.py --links                      # Bernoulli-Poisson and PRG rows too
    python tools/bench_gibbs.py --widths halving             # widths K, K/2, K/4, ... (as after pruning)
    python tools/bench_gibbs.py --T 5 --parts                # and the deepest state's upper layers part by part

One chain per configuration grows as in training, without pruning: ``--first``
iterations at T = 1, then one layer at a time (widths ``[K] * T`` by default,
the width bound of Algorithm 1 before pruning) with ``--per-layer`` iterations
each.  Each depth reports its fastest iteration (wall clock) and the parts of
that iteration: layer one, and per upper layer t the upward propagation
(eq:CRT + eq:step1) and the theta^(t) draw (eq:step4, its Phi theta prior
included), p/c (eq:step6), Phi (eq:step2) and the top layer (eq:step5).  The
"gamma floor" of an upper layer is the fastest of seven runs of numpy's
``standard_gamma`` on that layer's own shapes (prior + m, the draws theta^(t)
must make), measured in the same process; "upper / floor" is the upper layers'
time (up + theta) over the sum of their floors.  When
tomotopy is installed its LDA at the same K (alpha 0.1, eta 0.01, one worker)
is timed on the same documents for the T = 1 rows.  ``--parts`` adds, for the
deepest network's final state, each upper layer part by part (fastest of
``--repeat`` calls of each): its Phi theta prior product alone
(``_upper.doc_prior``), the whole theta^(t) draw (product included), the
upward propagation, and numpy's gamma floor.  Timings are wall clock
(``--clock cpu``: the process's CPU time, for one-thread rows on a shared
machine) on whatever machine runs this; no assertion is made.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402
from pygbn.inference import gibbs as gibbs_module  # noqa: E402
from pygbn.inference.gibbs import GibbsSampler  # noqa: E402
from pygbn.model.links import get_link  # noqa: E402

#: the clock of every timing: wall (time.perf_counter) or this process's CPU time (--clock cpu)
CLOCK = [time.perf_counter]
LAYER_STEPS = ["propagate_up", "sample_theta"]          # timed per layer t
SHARED_STEPS = {"sample_layer_one_collapsed": "layer1", "sample_layer_one_blocked": "layer1",
                "sample_phi": "phi", "sample_top": "top", "top_tables": "top", "sample_p_c": "p/c"}


def corpus_path(data: Path, vocab: str) -> Path:
    """The Debian counts file of ``vocab`` under the data folder ``data``."""
    return data / "debian-descriptions" / ("counts-top2000.npz" if vocab == "top2000" else "counts.npz")


def load_corpus(data: Path, vocab: str) -> sp.csr_matrix:
    return sp.load_npz(corpus_path(data, vocab)).tocsr()


def gamma_floor(s: GibbsSampler, t: int, rng: np.random.Generator, repeat: int = 7) -> float:
    """Fastest of ``repeat`` runs of numpy's standard_gamma on theta^(t)'s shapes."""
    shape = np.broadcast_to(s._doc_prior(t) + s.m[t - 1], s.m[t - 1].shape).copy()
    best = np.inf
    for _ in range(repeat):
        t0 = CLOCK[0]()
        rng.standard_gamma(shape)
        best = min(best, CLOCK[0]() - t0)
    return best


def instrument(s: GibbsSampler, acc: dict) -> None:
    """Wrap the sampler's steps so that each call adds its wall time to ``acc``."""
    for name in LAYER_STEPS + list(SHARED_STEPS):
        f = getattr(s, name)

        def wrap(*a, _f=f, _n=name, **k):
            t0 = CLOCK[0]()
            r = _f(*a, **k)
            key = (_n, a[0]) if _n in LAYER_STEPS else SHARED_STEPS[_n]
            acc[key] += CLOCK[0]() - t0
            return r

        setattr(s, name, wrap)
    # the partial layer one is a function of pygbn.inference.partial that the sampler calls
    original = getattr(gibbs_module.sample_layer_one_partial, "__wrapped__", gibbs_module.sample_layer_one_partial)

    def partial_layer_one(*a, **k):
        t0 = CLOCK[0]()
        r = original(*a, **k)
        acc["layer1"] += CLOCK[0]() - t0
        return r

    partial_layer_one.__wrapped__ = original
    gibbs_module.sample_layer_one_partial = partial_layer_one


def depth_sweep(Y, link, K, T_max, method, n_jobs, first, per_layer, widths, seed=0):
    """One chain from T = 1 to T_max; per depth the fastest iteration and its parts."""
    s = GibbsSampler.for_training(Y, K, link=link, method=method, n_jobs=n_jobs, random_state=seed)
    acc = collections.defaultdict(float)
    instrument(s, acc)
    rng = np.random.default_rng(1)
    rows = []
    for T in range(1, T_max + 1):
        if T > 1:
            s.add_layer(0.05)
            if widths == "halving":
                keep = np.zeros(s.network.layers[-1].width, dtype=bool)
                keep[:max(2, K // 2 ** (T - 1))] = True
                s.keep_top(keep)
        best, parts = np.inf, {}
        for _ in range(first if T == 1 else per_layer):
            acc.clear()
            t0 = CLOCK[0]()
            s.sweep(update_p_c=True)
            dt = CLOCK[0]() - t0
            if dt < best:
                best, parts = dt, dict(acc)
        floors = {t: gamma_floor(s, t, rng) for t in range(2, T + 1)}
        rows.append({"T": T, "widths": s.network.widths, "s_iter": best, "parts": parts, "floors": floors})
    return rows, s


def part_rows(s: GibbsSampler, label: str, repeat: int = 7) -> list:
    """Markdown rows: each upper layer of ``s`` part by part (ms, fastest of ``repeat``)."""
    from pygbn.inference import _upper

    def best(f):
        b = np.inf
        for _ in range(repeat):
            t0 = CLOCK[0]()
            f()
            b = min(b, CLOCK[0]() - t0)
        return 1e3 * b

    rng = np.random.default_rng(2)
    out = []
    T = s.depth
    for t in range(2, T + 1):
        width = s.network.layers[t - 1].width
        if t < T:
            up = s.network.layers[t]
            prior = np.empty((s.n_docs, width))
            product = best(lambda: _upper.doc_prior(up.theta, up.phi, s.bounds, prior, s.n_threads))
        else:
            product = 0.0
        theta = best(lambda: s.sample_theta(t))
        upward = best(lambda: s.propagate_up(t))
        floor = 1e3 * gamma_floor(s, t, rng, repeat)
        draws = s.n_docs * width
        out.append(f"| {label} | {t} | {draws} | {product:.1f} | {theta - product:.1f} | {theta:.1f} | "
                   f"{upward:.1f} | {theta + upward:.1f} | {floor:.1f} | {(theta + upward) / floor:.2f} | "
                   f"{1e6 * (theta - product) / draws:.1f} / {1e6 * floor / draws:.1f} |")
    return out


PART_HEADER = ("| data / link / K1max / method / n_jobs | layer t | gamma draws (J x K_t) | Phi theta product (ms) | "
               "gamma draws, by difference (ms) | theta^(t) draw (ms) | upward propagation (ms) | up + theta (ms) | "
               "numpy gamma floor (ms) | (up + theta) / floor | ns per draw: ours / numpy |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|")


def time_tomotopy(X, K, warmup, iters):
    """tomotopy's fastest iteration after ``warmup``; None when tomotopy is not installed (main says so)."""
    try:
        mdl = rc.tomotopy_lda(X, K)
    except ImportError:
        return None
    mdl.train(max(warmup, 1), workers=1)
    best = np.inf
    for _ in range(iters):
        t0 = CLOCK[0]()
        mdl.train(1, workers=1)
        best = min(best, CLOCK[0]() - t0)
    return best


def format_rows(rows, label, tomo=None):
    """Markdown rows: the iteration, its ratio to T = 1, the parts and the upper layers against their floor."""
    out = []
    t1 = rows[0]["s_iter"]
    for r in rows:
        p, T = r["parts"], r["T"]
        up = {t: p.get(("propagate_up", t), 0.0) for t in range(2, T + 1)}
        th = {t: p.get(("sample_theta", t), 0.0) for t in range(1, T + 1)}
        upper = sum(up.values()) + sum(th[t] for t in range(2, T + 1))
        floor = sum(r["floors"].values())
        per_layer = "; ".join(f"{t}: {1e3 * up[t]:.0f}+{1e3 * th[t]:.0f} / {1e3 * r['floors'][t]:.0f}"
                              for t in range(2, T + 1))
        shared = ", ".join(f"{k} {1e3 * p.get(k, 0.0):.0f}" for k in ("layer1", "p/c", "phi", "top"))
        theta1 = f", theta1 {1e3 * th[1]:.0f}" if th[1] else ""
        ratio = f"{upper / floor:.2f}" if floor else ""
        lda = f"{tomo:.3f}" if (tomo and T == 1) else ""
        out.append(f"| {label} | {T} | {r['widths']} | {r['s_iter']:.3f} | {r['s_iter'] / t1:.2f} | "
                   f"{shared}{theta1} | {per_layer} | {1e3 * upper:.0f} | {1e3 * floor:.0f} | {ratio} | {lda} |")
    return out


HEADER = ("| data / link / K1max / method / n_jobs | T | widths | s/iter | x T=1 | shared parts (ms) | "
          "per upper layer t: up+theta / gamma floor (ms) | upper layers (ms) | their gamma floor (ms) | "
          "upper / floor | tomotopy LDA (s) |\n|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=rc.default_data_dir())
    ap.add_argument("--vocab", nargs="+", default=["top2000"], choices=["top2000", "full"])
    ap.add_argument("--K", nargs="+", type=rc.int_at_least(1), default=[100])
    ap.add_argument("--T", type=rc.int_at_least(1), default=5, help="deepest network (rows for T = 1..this)")
    ap.add_argument("--methods", nargs="+", default=["collapsed"], choices=["collapsed", "blocked", "partial"])
    ap.add_argument("--jobs", nargs="+", type=rc.n_jobs_arg, default=[1])
    ap.add_argument("--first", type=rc.int_at_least(1), default=40, help="iterations at T = 1")
    ap.add_argument("--per-layer", type=rc.int_at_least(1), default=12, help="iterations after adding each layer")
    ap.add_argument("--widths", choices=["equal", "halving"], default="equal")
    ap.add_argument("--links", action="store_true", help="also the Bernoulli-Poisson and PRG links (blocked)")
    ap.add_argument("--no-tomotopy", action="store_true")
    ap.add_argument("--parts", action="store_true",
                    help="also each upper layer of the deepest state part by part (product, gamma draws, upward "
                         "propagation, numpy's gamma floor)")
    ap.add_argument("--repeat", type=rc.int_at_least(1), default=7, help="calls per part with --parts (fastest kept)")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="cpu: this process's CPU seconds (time.process_time), robust to other processes on a "
                         "shared machine but the sum over threads (n_jobs=1 rows only)")
    args = ap.parse_args(argv)
    if args.clock == "cpu":
        CLOCK[0] = time.process_time
    for vocab in args.vocab:      # before the header: a wrong --data fails at once
        path = corpus_path(args.data, vocab)
        if not path.is_file():
            ap.error(f"--data {args.data}: no {path.relative_to(args.data)} there (the folder holding "
                     f"debian-descriptions/)")

    print(f"# pygbn Gibbs benchmark ({os.cpu_count()} CPUs visible; {args.clock} clock; fastest iteration per depth "
          f"after {args.first} iterations at T = 1 and {args.per_layer} per added layer, widths {args.widths})")
    if not args.no_tomotopy and importlib.util.find_spec("tomotopy") is None:
        print("\nNote: tomotopy is not installed (`pip install tomotopy`): the tomotopy LDA column is empty.")
        args.no_tomotopy = True
    print()
    print(HEADER)
    parts = []
    for vocab in args.vocab:
        X = load_corpus(args.data, vocab)
        configs = [("poisson", get_link("poisson").check_data(X), m) for m in args.methods]
        if args.links:
            configs += [("bernoulli", get_link("bernoulli").check_data((X > 0).astype(np.float64)), "blocked"),
                        ("prg", get_link("prg").check_data(X.astype(np.float64) / 4.0), "blocked")]
        for K in args.K:
            tomo = None if args.no_tomotopy else time_tomotopy(X, K, args.first, args.per_layer)
            for link, Y, method in configs:
                for nj in args.jobs:
                    rows, s = depth_sweep(Y, link, K, args.T, method, nj, args.first, args.per_layer, args.widths)
                    label = f"debian-{vocab} / {link} / {K} / {method} / {nj}"
                    print("\n".join(format_rows(rows, label, tomo if link == "poisson" else None)), flush=True)
                    if args.parts:
                        parts += part_rows(s, label, args.repeat)
    if parts:
        print()
        print(f"Upper layers of the deepest state, part by part (fastest of {args.repeat} calls each):")
        print()
        print(PART_HEADER)
        print("\n".join(parts))


if __name__ == "__main__":
    main()
