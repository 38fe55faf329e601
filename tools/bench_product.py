"""Time the upper layers' Phi theta product on this machine (issue 13).

The upper layers form the prior shapes ``Phi^(t+1) theta^(t+1)_j`` of every
document each iteration by ``pygbn.inference._upper.doc_prior``: the
module's own kernel (register tiles of fused multiply-adds; AVX-512, AVX2 +
FMA, NEON or portable C, chosen at run time; on x86-64 CPUs without FMA, SSE2
tiles of separate multiplies and adds).  This script times each path this CPU
runs (the portable C one with ``--portable``) beside one ``numpy`` matrix product and one
``scipy.linalg.blas.dgemm`` call of the same size, and names the BLAS
library and kernel architecture in use (``threadpoolctl`` where installed)::

    python tools/bench_product.py                      # J = 33821, K = 100 (Debian's upper layers)
    OPENBLAS_CORETYPE=SkylakeX python tools/bench_product.py   # another OpenBLAS kernel

Prints CPU milliseconds per product (fastest of ``--repeat``; the process's CPU time,
one thread) and GFLOP/s.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import _repro_common as rc  # noqa: E402


def best_ms(f, repeat: int) -> float:
    t = np.inf
    for _ in range(repeat):
        t0 = time.process_time()
        f()
        t = min(t, time.process_time() - t0)
    return 1e3 * t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=rc.int_at_least(1), default=33821)
    ap.add_argument("--K", type=rc.int_at_least(1), default=100, help="K_t = K_(t+1)")
    ap.add_argument("--repeat", type=rc.int_at_least(1), default=7)
    ap.add_argument("--block", type=rc.int_at_least(1), default=512, help="documents per block of doc_prior")
    ap.add_argument("--portable", action="store_true", help="time the portable C path too (slow)")
    a = ap.parse_args(argv)
    import scipy.linalg.blas as sblas
    from pygbn.inference import _upper

    rng = np.random.default_rng(0)
    J, K = a.docs, a.K
    theta = rng.gamma(0.3, 1.0, size=(J, K))
    phi = rng.dirichlet(np.full(K, 0.5), size=K).T.copy()       # K_t x K_(t+1), columns sum to 1
    bounds = np.arange(0, J + a.block, a.block, dtype=np.int64)
    bounds[-1] = J
    out = np.empty((J, K))
    flops = 2.0 * J * K * K
    try:
        from threadpoolctl import threadpool_info
        for lib in threadpool_info():
            if lib.get("user_api") == "blas":
                print(f"# {lib.get('internal_api')} {lib.get('version')} {lib.get('architecture')} "
                      f"threads {lib.get('num_threads')} {lib.get('filepath', '').rsplit('/', 1)[-1]}")
    except ImportError:
        print("# threadpoolctl not installed")
    print(f"# OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')} J={J} K={K} block={a.block}")
    if hasattr(_upper, "_product_path"):
        paths = dict(enumerate(_upper._product_path_names()))
        best = _upper._product_path()
        chosen = [p for p in range(best, -1, -1) if p > 0 or a.portable or best == 0]
    else:                                       # an older build (BLAS calls)
        best, chosen = None, [None]

    def doc_prior(path):
        def f():
            if path is not None:
                _upper._product_path(path)
            try:
                _upper.doc_prior(theta, phi, bounds, out, 1)
            finally:
                if path is not None:
                    _upper._product_path(-1)
        return f

    rows = [(f"_upper.doc_prior ({'BLAS calls' if p is None else paths[p]})", doc_prior(p)) for p in chosen]
    rows += [
        ("numpy theta @ phi.T (one call)", lambda: np.matmul(theta, phi.T, out=out)),
        ("scipy.linalg.blas.dgemm (one call)", lambda: sblas.dgemm(1.0, theta, phi, trans_b=True)),
    ]
    print("| product | ms | GFLOP/s |")
    print("|---|---|---|")
    for name, f in rows:
        f()
        ms = best_ms(f, a.repeat)
        print(f"| {name} | {ms:.1f} | {flops / ms / 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
