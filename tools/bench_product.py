"""Time the upper layers' Phi theta product on this machine's BLAS (issue 13).

The upper layers form the prior shapes ``Phi^(t+1) theta^(t+1)_j`` of every
document each iteration by ``pygbn.inference._upper.doc_prior``: BLAS
``dgemm`` calls of at most ``PRODUCT_LIMIT`` multiply-adds (about 26 rows of
100 x 100 at a time), which OpenBLAS runs on the calling thread.  This script
times that path beside one ``numpy`` matrix product and one
``scipy.linalg.blas.dgemm`` call of the same size, and the BLAS library and
kernel architecture in use (``threadpoolctl`` where installed), so that a
machine whose BLAS is slow at small calls shows itself::

    python tools/bench_product.py                      # J = 33821, K = 100 (Debian's upper layers)
    OPENBLAS_CORETYPE=SkylakeX python tools/bench_product.py   # another OpenBLAS kernel

Prints milliseconds per product (fastest of ``--repeat``) and GFLOP/s, one thread.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np  # noqa: E402


def best_ms(f, repeat: int) -> float:
    t = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        t = min(t, time.perf_counter() - t0)
    return 1e3 * t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=33821)
    ap.add_argument("--K", type=int, default=100, help="K_t = K_(t+1)")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--block", type=int, default=512, help="documents per block of doc_prior")
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
    rows = [
        ("_upper.doc_prior (dgemm calls of <= 262,144 multiply-adds)",
         lambda: _upper.doc_prior(theta, phi, bounds, out, 1)),
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
