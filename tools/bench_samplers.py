"""Benchmark pygbn's samplers against numpy's own, in the same run.

Prints nanoseconds per draw for every sampler of :mod:`pygbn.random` at
small, medium and large parameters, beside numpy's ``poisson``,
``standard_gamma`` and ``logseries`` (and, where numpy has the same
distribution, that one), with the ratio ours / reference; and our gamma
kernels (every gamma draw, and the row kernel of the theta draws) beside
numpy's ``standard_gamma``.  The reference for
"comparable magnitude" is numpy's Poisson with the mean of our distribution.

Usage::

    python tools/bench_samplers.py            # full table (about a minute)
    python tools/bench_samplers.py --quick    # fewer draws
    python tools/bench_samplers.py --rows     # the gamma row kernel at the Dirichlet's
                                              # and the theta draws' shapes

Timings are the best of ``--repeat`` runs of this thread's CPU time,
single-threaded (``n_jobs=1``), through the public Python API (validation and
block streams included).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402

import pygbn.random as R
from pygbn import stats as S
from pygbn.random._api import _kernel


def best_ns(fn, size, repeat):
    """Best of ``repeat`` runs, in ns per draw, measured as this thread's CPU
    time (robust to other processes on a shared machine; every call here runs
    on the calling thread)."""
    best = np.inf
    for _ in range(repeat):
        t0 = time.thread_time()
        fn(size)
        best = min(best, time.thread_time() - t0)
    return best / size * 1e9


def _dirichlet_counts(V, K, eta_frac, rng):
    """(V, K) int32 counts: a fraction ``eta_frac`` of the entries 0 (their
    shape is eta alone), the others log-uniform in 1..1000."""
    n = np.exp(rng.uniform(0.0, np.log(1000.5), size=(V, K))).astype(np.int32)
    n[rng.random((V, K)) < eta_frac] = 0
    return np.ascontiguousarray(n)


def _test_chain_shapes(J, K, rng):
    """(J, K) shapes r_k + m_jk like the digits test chain's theta^(1) draws (PRG link, T = 1):
    r_k uniform in 0.37-1.15, m_jk = 0 for 60% of the entries, else 1 + Geometric(0.5) - 1."""
    r = rng.uniform(0.37, 1.15, size=K)
    m = rng.geometric(0.5, size=(J, K)).astype(np.float64)
    m[rng.random((J, K)) < 0.6] = 0.0
    return r[None, :] + m


def gamma_row_table(repeat, scale):
    """ns per gamma draw of the row kernels at the Dirichlet's shapes (eta + n_vk)
    and the theta draws' shapes: ``_gamma.gamma_rows`` (the row kernel, rows of
    the given length), the public fill ``_kernel("gamma_row")`` (rows of 64),
    ``random_gamma_fast`` per entry (``_kernel("gamma_fast")``) and numpy's
    ``standard_gamma``; then the two Dirichlet draws of Phi (partial's and
    blocked's ``dirichlet_columns``) per entry on (V, K) counts."""
    from pygbn._utils import BlockStreams, block_bounds
    from pygbn.inference import _blocked, _partial
    from pygbn.inference.gibbs import COLUMN_BLOCK
    from pygbn.random import _gamma

    rng = np.random.default_rng(5)
    V, K = 20_000 // scale, 50
    print(f"gamma rows (ns per draw, best of {repeat} CPU times; rows of {V})")
    head = f"{'shapes':34s} {'row kernel':>10s} {'fill(64)':>9s} {'gamma_fast':>10s} {'numpy':>7s}"
    print(head)
    print("-" * len(head))
    sets = [(f"a={a:g}", np.full((K, V), a))
            for a in (1e-3, 0.01, 0.015, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 0.999)]
    sets += [(f"a={a:g}", np.full((K, V), a)) for a in (1.01, 10.01, 100.01, 1000.01)]
    for eta in (0.01, 0.05):
        for frac in (0.99, 0.9, 0.5):
            sets.append((f"eta={eta:g}+n, {frac:.0%} n=0", eta + _dirichlet_counts(K, V, frac, rng)))
    theta = np.exp(rng.uniform(np.log(1e-3), np.log(0.1), size=(K, V)))
    sets.append(("theta prior 0.001-0.1", theta))
    sets.append(("theta 0.001-0.1, 10% +1..1000", theta + _dirichlet_counts(K, V, 0.9, rng)))
    sets.append(("r 0.37-1.15 + m, 60% m=0", _test_chain_shapes(K, V, rng)))
    for label, a in sets:
        a = np.ascontiguousarray(a, dtype=np.float64)
        flat = a.ravel()
        bounds = np.array([0, K], dtype=np.int64)
        rate = np.ones(K)
        out, sums = np.empty_like(a), np.empty(K)

        def rows(s, a=a, bounds=bounds, rate=rate, out=out, sums=sums):
            st = BlockStreams(np.random.default_rng(2), 1)
            _gamma.gamma_rows(a, rate, bounds, st.addresses, out, sums, 1)
        t = [best_ns(rows, a.size, repeat)]
        t.append(best_ns(lambda s, f=flat: _kernel("gamma_row", f, random_state=2, n_jobs=1), a.size, repeat))
        t.append(best_ns(lambda s, f=flat: _kernel("gamma_fast", f, random_state=2, n_jobs=1), a.size, repeat))
        t.append(best_ns(lambda s, f=flat: rng.standard_gamma(f), a.size, repeat))
        print(f"{label:34s} {t[0]:10.1f} {t[1]:9.1f} {t[2]:10.1f} {t[3]:7.1f}")
    print()
    J, k = 10_000 // scale, 100
    print(f"gamma rows of {k} ({J} rows, rate 1.3; ns per draw, best of {repeat} CPU times)")
    head = f"{'shapes':34s} {'row kernel':>10s}"
    print(head)
    print("-" * len(head))
    short = [(f"a={a:g}", np.full((J, k), a)) for a in (0.01, 0.3, 0.5, 0.7, 0.9)]
    short.append(("r 0.37-1.15 + m, 60% m=0", _test_chain_shapes(J, k, rng)))
    for label, a in short:
        a = np.ascontiguousarray(a, dtype=np.float64)
        bounds = np.array([0, J], dtype=np.int64)
        rate = np.full(J, 1.3)
        out, sums = np.empty_like(a), np.empty(J)

        def rows(s, a=a, bounds=bounds, rate=rate, out=out, sums=sums):
            st = BlockStreams(np.random.default_rng(2), 1)
            _gamma.gamma_rows(a, rate, bounds, st.addresses, out, sums, 1)
        print(f"{label:34s} {best_ns(rows, a.size, repeat):10.1f}")
    print()
    print(f"Dirichlet draws of Phi, ({V}, {K}) counts, blocks of {COLUMN_BLOCK} columns, one thread"
          " (ns per entry)")
    # partial's own dirichlet_columns where the build still has one (main before 2026-11-27)
    mods = [m for m in (_partial, _blocked) if hasattr(m, "dirichlet_columns")]
    head = f"{'counts':34s}" + "".join(f" {m.__name__.rsplit('.', 1)[-1]:>9s}" for m in mods)
    print(head)
    print("-" * len(head))
    for eta in (0.01, 0.05):
        for frac in (0.99, 0.9, 0.5):
            c = _dirichlet_counts(V, K, frac, rng)
            bounds = block_bounds(K, COLUMN_BLOCK)
            phi = np.empty((V, K))
            t = []
            for mod in mods:
                def draw(s, mod=mod, c=c, eta=eta, bounds=bounds, phi=phi):
                    st = BlockStreams(np.random.default_rng(3), len(bounds) - 1)
                    mod.dirichlet_columns(c, eta, bounds, st.addresses, phi, 1)
                t.append(best_ns(draw, c.size, repeat))
            print(f"{f'eta={eta:g}, {frac:.0%} n=0':34s}" + "".join(f" {x:9.1f}" for x in t))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10x fewer draws")
    ap.add_argument("--repeat", type=rc.int_at_least(1), default=5)
    ap.add_argument("--rows", action="store_true",
                    help="only the gamma row kernels at the Dirichlet's and theta's shapes")
    args = ap.parse_args(argv)
    if args.rows:
        gamma_row_table(args.repeat, 10 if args.quick else 1)
        return
    scale = 10 if args.quick else 1
    big = 200_000 // scale
    rng = np.random.default_rng(1)
    rows = []

    def np_pois(lam):
        return best_ns(lambda s: rng.poisson(lam, size=s), big, args.repeat)

    def add(name, params, fn, size, mean, extra_ref=None):
        ours = best_ns(fn, size, args.repeat)
        lam = float(min(max(mean, 0.0), 1e18))
        ref = np_pois(lam)
        line = [name, params, ours, f"poisson({lam:.3g})", ref, ours / ref]
        if extra_ref is not None:
            rname, rfn = extra_ref
            rns = best_ns(rfn, big, args.repeat)
            line += [rname, rns, ours / rns]
        rows.append(line)

    # numpy's own kernels, for reference
    for lam in (0.5, 5.0, 1e3, 1e6, 1e12):
        rows.append(["numpy poisson", f"lam={lam:g}", np_pois(lam), "", np.nan, np.nan])
    for a in (1e-4, 0.5, 5.0, 1e3, 1e8):
        rows.append(["numpy standard_gamma", f"a={a:g}",
                     best_ns(lambda s: rng.standard_gamma(a, size=s), big, args.repeat), "", np.nan, np.nan])
    for p in (0.1, 0.9, 0.999999):
        rows.append(["numpy logseries", f"p={p:g}",
                     best_ns(lambda s: rng.logseries(p, size=s), big, args.repeat), "", np.nan, np.nan])

    # CRT: the rows of issue 13's goal (n <= 100), the upper layers' regime (small n, r of
    # a few hundredths: the concentrations Phi theta of Debian's layer 2), r > 1, huge n
    for n, r in ((5, 0.1), (10, 1.0), (20, 1.0), (20, 0.1), (50, 1.0), (100, 1.0), (3, 0.04), (64, 0.04),
                 (5, 0.5), (20, 0.5), (40, 0.3), (64, 0.25), (20, 3.0), (64, 3.0), (64, 10.0), (100, 3.0),
                 (200, 2.0), (300, 3.0), (1000, 10.0), (10**6, 0.01), (10**7, 0.1), (10**7, 1.0),
                 (10**7, 100.0), (10**7, 1e4), (10**12, 1.0), (10**6, 1e9)):
        size = big if (r <= 10 or n <= 1000) else max(200, big // (100 if r < 1e3 else 1000))
        add("crt", f"n={n:g}, r={r:g}",
            lambda s, n=n, r=r: R.crt(n, r, size=s, random_state=2, n_jobs=1), size,
            float(S.crt_mean(n, r)))
    for p in (0.1, 0.9, 0.999999):
        add("logarithmic", f"p={p:g}",
            lambda s, p=p: R.logarithmic(p, size=s, random_state=2, n_jobs=1), big,
            float(S.logarithmic_mean(p)),
            ("numpy logseries", lambda s, p=p: rng.logseries(p, size=s)))
    for lam in (1e-6, 0.5, 5.0, 1e3, 1e6, 1e12):
        add("truncated_poisson", f"lam={lam:g}",
            lambda s, lam=lam: R.truncated_poisson(lam, size=s, random_state=2, n_jobs=1), big,
            float(S.truncated_poisson_mean(lam)))
    for a in (1e-3, 1.0, 10.0, 30.0, 60.0, 1e3, 1e6, 1e12):
        add("truncated_bessel", f"alpha={a:g}",
            lambda s, a=a: R.truncated_bessel(a, size=s, random_state=2, n_jobs=1), big,
            float(S.truncated_bessel_mean(a)))
    for lam in (0.5, 10.0, 1e4, 1e12):
        add("poisson_randomized_gamma", f"lam={lam:g}, c=2",
            lambda s, lam=lam: R.poisson_randomized_gamma(lam, 2.0, size=s, random_state=2, n_jobs=1),
            big, lam,
            ("numpy gamma(poisson)", lambda s, lam=lam: rng.standard_gamma(rng.poisson(lam, size=s))))
    for r, p in ((0.5, 0.5), (10.0, 0.5), (1e3, 0.9), (1.0, 0.9999)):
        add("negative_binomial", f"r={r:g}, p={p:g}",
            lambda s, r=r, p=p: R.negative_binomial(r, p, size=s, random_state=2, n_jobs=1), big,
            r * p / (1 - p),
            ("numpy negative_binomial", lambda s, r=r, p=p: rng.negative_binomial(r, 1 - p, size=s)))
    # vector samplers: time per row
    for n, k in ((5, 100), (1000, 10), (10**6, 100)):
        w = rng.random(k) + 0.01
        rows_n = max(100, big // k)
        add("multinomial_split", f"n={n:g}, k={k} (per row)",
            lambda s, n=n, w=w: R.multinomial_split(n, w, size=s, random_state=2, n_jobs=1), rows_n,
            float(n),
            ("numpy multinomial", lambda s, n=n, w=w: rng.multinomial(n, w / w.sum(), size=max(1, s // k))))
        # numpy's reference above runs s // k rows: rescale its time per row
        rows[-1][7] *= k
        rows[-1][8] = rows[-1][2] / rows[-1][7]
    for a, k in ((1e-4, 10), (0.1, 100), (5.0, 100)):
        alpha = np.full(k, a)
        rows_n = max(100, big // k)
        add("dirichlet", f"alpha={a:g}, k={k} (per row)",
            lambda s, alpha=alpha: R.dirichlet(alpha, size=s, random_state=2, n_jobs=1), rows_n, float(k),
            ("numpy dirichlet", lambda s, alpha=alpha: rng.dirichlet(alpha, size=max(1, s // k))))
        rows[-1][7] *= k
        rows[-1][8] = rows[-1][2] / rows[-1][7]
    # gamma variates: the kernel of every gamma draw (random_gamma_exact) and the row
    # kernel of the theta draws (rows of 64 equal shapes here), beside numpy's
    for a in (1e-3, 0.015, 0.1, 0.3, 0.5, 0.9, 1.5, 5.0, 1e3):
        for name in ("gamma_fast", "gamma_row"):
            try:
                _kernel(name, a, size=10, random_state=2, n_jobs=1)
            except KeyError:        # an older pygbn without the kernel
                continue
            add(f"gamma ({name})", f"a={a:g}",
                lambda s, a=a, name=name: _kernel(name, a, size=s, random_state=2, n_jobs=1), big, a,
                ("numpy standard_gamma", lambda s, a=a: rng.standard_gamma(a, size=s)))
    # single algorithms behind the switches
    for lam in (1e10, 1e15):
        add("poisson (ours, PTRS)", f"lam={lam:g}",
            lambda s, lam=lam: _kernel("poisson_ptrs", lam, size=s, random_state=2, n_jobs=1), big, lam)
    for a in (1e10, 1e15):
        add("gamma (ours, M-T)", f"a={a:g}",
            lambda s, a=a: _kernel("gamma_mt", a, size=s, random_state=2, n_jobs=1), big, a,
            ("numpy standard_gamma", lambda s, a=a: rng.standard_gamma(a, size=s)))

    head = f"{'sampler':26s} {'parameters':26s} {'ns/draw':>9s}  {'reference':22s} {'ns':>8s} {'ratio':>6s}"
    print(head)
    print("-" * len(head))
    for line in rows:
        name, params, ours, rname, ref, ratio = line[:6]
        if rname == "":
            print(f"{name:26s} {params:26s} {ours:9.1f}")
            continue
        print(f"{name:26s} {params:26s} {ours:9.1f}  {rname:22s} {ref:8.1f} {ratio:6.2f}")
        if len(line) > 6:
            print(f"{'':26s} {'':26s} {'':9s}  {line[6]:22s} {line[7]:8.1f} {line[8]:6.2f}")


if __name__ == "__main__":
    main()
