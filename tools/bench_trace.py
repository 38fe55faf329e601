"""Cost of the convergence traces: one training log-likelihood evaluation against one sweep.

Runs a chain on the demo corpus (collapsed and blocked, K_1 = 100), grows
it to three layers and times, at each depth, ``--sweeps`` sweeps and as
many log-likelihood evaluations (:func:`pygbn.inference.trace.document_loglik`),
min over ``--repeats`` of the process CPU time (one thread); the overhead of ``trace_every = E`` is
``evaluation / (E * sweep)``.  Then whole fits with ``trace_every=0`` and
the default, min over repeats.  Run it under ``flock /work/bench.lock`` with
``OMP_NUM_THREADS=1``.

Usage::

    python tools/bench_trace.py [--sweeps 20] [--repeats 3]
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402

from pygbn import GBN  # noqa: E402
from pygbn.datasets import load_demo  # noqa: E402
from pygbn.inference import GibbsSampler  # noqa: E402
from pygbn.inference.layerwise import TRACE_EVERY  # noqa: E402
from pygbn.inference.trace import document_loglik  # noqa: E402


def _min_time(fn, repeats):
    """Min over ``repeats`` of the process CPU time of ``fn()`` (one thread: its compute time,
    little disturbed by other processes on the machine); the wall time is logged too."""
    best = wall = float("inf")
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        best = min(best, time.process_time() - c0)
        wall = min(wall, time.perf_counter() - t0)
    print(f"  (min wall {wall:.3f} s, min CPU {best:.3f} s)", flush=True)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=rc.int_at_least(1), default=20)
    ap.add_argument("--repeats", type=rc.int_at_least(1), default=3)
    ap.add_argument("--fit-iterations", type=rc.int_at_least(1), default=100)
    a = ap.parse_args(argv)
    Y = load_demo().counts.astype(np.float64).tocsr()
    print(f"demo corpus {Y.shape}, {int(Y.sum())} tokens, nnz {Y.nnz}; load {os.getloadavg()}")
    print("method     depth  sweep (ms)  loglik (ms)  ratio  overhead at trace_every=%d" % TRACE_EVERY)
    for method in ("collapsed", "blocked"):
        s = GibbsSampler.for_training(Y, 100, method=method, random_state=0)
        for depth in (1, 2, 3):
            if depth > 1:
                s.add_layer(0.05)
            for _ in range(20):
                s.sweep()
            sweep = _min_time(lambda: [s.sweep() for _ in range(a.sweeps)], a.repeats) / a.sweeps
            ll = _min_time(lambda: [document_loglik(s) for _ in range(a.sweeps)], a.repeats) / a.sweeps
            print(f"{method:10s} {depth:5d}  {1e3 * sweep:10.2f}  {1e3 * ll:11.2f}  {ll / sweep:5.3f}  "
                  f"{100 * ll / (TRACE_EVERY * sweep):5.2f} %")
    n = a.fit_iterations
    for method in ("collapsed", "blocked"):
        times = {}
        for every in (0, TRACE_EVERY):
            times[every] = _min_time(lambda: GBN(n_components=100, n_layers=3, burn_in=n // 2, n_collect=n // 2,
                                                 method=method, random_state=0, trace_every=every).fit(Y),
                                     a.repeats)
        print(f"fit {method:10s} 3 x {n} iterations: trace_every=0 {times[0]:.2f} s, "
              f"trace_every={TRACE_EVERY} {times[TRACE_EVERY]:.2f} s "
              f"({100 * (times[TRACE_EVERY] / times[0] - 1):+.1f} %)")
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
