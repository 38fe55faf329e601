"""CPU time of a test-time chain iteration per document beside a training iteration's.

Usage::

    python tools/bench_test_chain.py                    # digits (PRG) and Debian (Poisson), T = 3
    python tools/bench_test_chain.py --data digits --T 1 3 5

For each data set a network is fitted briefly (``--fit`` burn-in iterations
per layer, blocked sampler, widths ``[K] * T`` bounded by the usual pruning),
then the training chain's iteration (:meth:`GibbsSampler.sweep` with every
global update: its per-document half and the draws of every Phi^(t), r,
gamma0 and c0, divided over the training documents; "of it global" is the
latter) and the test-time chain's iteration (the loop body of
:func:`pygbn.inference.infer_local`:
:func:`pygbn.inference.fixed.sweep_fixed` and the feature average) are
timed alternately, ``--repeat`` times each; the table gives the fastest of
each per document, their ratio, and the fastest time of each part of the
test iteration (layer one's split with the PRG link's a_j; the upward
propagation of every upper layer; p and c; every theta; the feature
average).
Digits: the first ``--n-train`` images (features scaled to [0, 1], PRG link)
train, the rest are the new samples. Debian: ``--n-train`` training and
``--n-test`` test documents of the top-2000 counts (Poisson link). Times are
this process's CPU seconds (``time.process_time``) on one thread.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402
from pygbn.inference.fixed import FeatureAverage, sweep_fixed  # noqa: E402
from pygbn.inference.gibbs import GibbsSampler  # noqa: E402
from pygbn.inference.layerwise import Schedule, fit_layerwise  # noqa: E402
from pygbn.model.links import get_link  # noqa: E402


def load(name, data_dir, n_train, n_test):
    if name == "digits":
        z = np.load(rc.need(data_dir / "digits" / "digits.npz", "digits"))
        X = sp.csr_matrix(z["X"].astype(np.float64) / 16.0)
        return "prg", X[:n_train], X[n_train:n_train + n_test]
    X, _, _, split = rc.load_debian(data_dir)
    tr = rc.subset_rows(X.shape[0], n_train, 0, np.flatnonzero(split == "train"))
    te = rc.subset_rows(X.shape[0], n_test, 1, np.flatnonzero(split == "test"))
    return "poisson", X[tr], X[te]


def test_iteration(s, features, parts=None):
    """One iteration of infer_local's loop (a collected one: the feature average too),
    each part's CPU seconds added to ``parts`` when given."""
    clock = [time.process_time()]

    def lap(name):
        now = time.process_time()
        if parts is not None:
            parts[name] = parts.get(name, 0.0) + now - clock[0]
        clock[0] = now

    sweep_fixed(s, lap)
    features.add(s.network.layers[0].theta)
    lap("features")


def train_iteration(s):
    """:meth:`GibbsSampler.sweep` of a blocked training chain; returns its CPU seconds
    and those of its global update among them (:meth:`GibbsSampler.update_globals_from`:
    every Phi^(t), r, gamma0, c0), timed by wrapping that method for this call."""
    spent = []
    update = s.update_globals_from

    def timed(stats):
        t = time.process_time()
        update(stats)
        spent.append(time.process_time() - t)

    s.update_globals_from = timed
    try:
        t0 = time.process_time()
        s.sweep(update_p_c=True)
        return time.process_time() - t0, sum(spent)
    finally:
        del s.update_globals_from


PARTS = ("split", "up", "p/c", "theta", "features")


def measure(link, Xtr, Xte, K, T, fit_iters, repeat, seed=0):
    lk = get_link(link)
    Ytr, Yte = lk.check_data(Xtr), lk.check_data(Xte)
    res = fit_layerwise(Ytr, Schedule.for_layers(T, burn_in=(fit_iters, fit_iters), n_collect=1), link=link,
                        n_components=K, method="blocked", random_state=seed)
    train, net = res.sampler, res.networks[-1]
    test = GibbsSampler.for_inference(net, Yte, random_state=seed + 1)
    test.check_state()
    acc = FeatureAverage(Yte.shape[0], net.widths[0])
    for _ in range(2):                           # warm both chains
        train_iteration(train)
        test_iteration(test, acc)
    tr = te = glob = np.inf
    parts = {name: np.inf for name in PARTS}
    for _ in range(repeat):
        total, g = train_iteration(train)
        if total < tr:
            tr, glob = total, g
        laps = {}
        t0 = time.process_time()
        test_iteration(test, acc, laps)
        te = min(te, time.process_time() - t0)
        for name in PARTS:
            parts[name] = min(parts[name], laps[name])
    us_test = {name: 1e6 * v / Yte.shape[0] for name, v in parts.items()}
    return {"widths": list(net.widths), "train_us_doc": 1e6 * tr / Ytr.shape[0],
            "global_us_doc": 1e6 * glob / Ytr.shape[0], "test_us_doc": 1e6 * te / Yte.shape[0],
            "test_parts": us_test, "n_train": Ytr.shape[0], "n_test": Yte.shape[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["digits", "debian"], choices=["digits", "debian"])
    ap.add_argument("--data-dir", type=Path, default=rc.default_data_dir())
    ap.add_argument("--K", type=rc.int_at_least(1), default=100)
    ap.add_argument("--T", type=rc.int_at_least(1), nargs="+", default=[3])
    ap.add_argument("--fit", type=rc.int_at_least(1), default=40, help="burn-in iterations per layer of the brief fit")
    ap.add_argument("--repeat", type=rc.int_at_least(1), default=10)
    ap.add_argument("--n-train", type=rc.int_at_least(1), default=None, help="digits: 1000; debian: 4000")
    ap.add_argument("--n-test", type=rc.int_at_least(1), default=None, help="digits: the rest (797); debian: 1000")
    a = ap.parse_args(argv)
    print("| data / link | K1max | T | widths | train docs | test docs | training (us / doc-iteration) | "
          "of it global | test chain (us / doc-iteration) | test / training | test parts: "
          + " / ".join(PARTS) + " |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in a.data:
        n_train = a.n_train or (1000 if name == "digits" else 4000)
        n_test = a.n_test or (10**9 if name == "digits" else 1000)
        link, Xtr, Xte = load(name, a.data_dir, n_train, n_test)
        for T in a.T:
            r = measure(link, Xtr, Xte, a.K, T, a.fit, a.repeat)
            print(f"| {name} / {link} | {a.K} | {T} | {r['widths']} | {r['n_train']} | {r['n_test']} | "
                  f"{r['train_us_doc']:.1f} | {r['global_us_doc']:.1f} | {r['test_us_doc']:.1f} | "
                  f"{r['test_us_doc'] / r['train_us_doc']:.2f} | "
                  + " / ".join(f"{r['test_parts'][name]:.1f}" for name in PARTS) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
