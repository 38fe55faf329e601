"""Digests of fixed-seed fits: check that a refactor changed no result.

Usage::

    python tools/fit_digest.py                 # print one line per configuration
    python tools/fit_digest.py --check FILE    # compare with a saved output (exit 1 on a difference)

Each configuration fits a small ``GBN`` on the bundled demo corpus (or its
binarised / scaled form for the Bernoulli-Poisson and PRG links) with a fixed
seed, then runs ``transform`` and, for counts, ``perplexity``.  The SHA-256 of
every fitted array (each Phi^(t), r, gamma0, c0, the c medians, the link's
summary), of the features and of the perplexity is printed.  Two runs of the
same code give the same lines; a change that should not alter any chain
(reorganised code, a new data layout) must leave them unchanged.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

import _path  # noqa: F401,E402  (pygbn: the importable one, else this checkout's)

import pygbn  # noqa: E402
from pygbn.datasets import load_demo  # noqa: E402


def _data():
    demo = load_demo()
    X = demo.counts[:300].tocsr()
    keep = np.asarray(X.sum(axis=0)).ravel() > 0
    X = X[:, keep].tocsr()
    X = X[np.asarray(X.sum(axis=1)).ravel() > 0].tocsr()
    obs, held = pygbn.split_tokens(X, 0.7, random_state=1)
    B = X.copy()
    B.data[:] = 1.0
    R = X.copy().astype(np.float64)
    R.data = R.data * 0.37 + 0.05
    return X, obs, held, B, R


CONFIGS = {
    "poisson-collapsed": dict(link="poisson", method="collapsed", n_jobs=1),
    "poisson-blocked-1": dict(link="poisson", method="blocked", n_jobs=1),
    "poisson-blocked-2": dict(link="poisson", method="blocked", n_jobs=2),
    "bernoulli-blocked": dict(link="bernoulli", method="blocked", n_jobs=2),
    "prg-blocked": dict(link="prg", method="blocked", n_jobs=1),
    "poisson-partial-1": dict(link="poisson", method="partial", n_jobs=1),
    "poisson-partial-2": dict(link="poisson", method="partial", n_jobs=2),
}


def _h(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(np.asarray(a, dtype=np.float64))
        h.update(str(a.shape).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:16]


def network_digest(net) -> str:
    parts = [layer.phi for layer in net.layers] + [net.r, [net.gamma0, net.c0]]
    parts.append([layer.c_median for layer in net.layers])
    parts.append([float(v) for v in json.dumps(net.link.to_dict(), sort_keys=True).encode()])
    return _h(*parts)


def run() -> list:
    X, obs, held, B, R = _data()
    lines = []
    for name, cfg in CONFIGS.items():
        data = {"poisson": obs, "bernoulli": B, "prg": R}[cfg["link"]]
        model = pygbn.GBN(n_components=30, n_layers=3, burn_in=(60, 30), n_collect=10,
                          transform_iter=(10, 10), random_state=7, **cfg)
        kw = {"heldout": held} if cfg["link"] == "poisson" else {}
        model.fit(data, **kw)
        nets = " ".join(network_digest(n) for n in model.networks_)
        feats = _h(model.transform(data[:40]))
        extra = ""
        if cfg["link"] == "poisson":
            ppl = model.perplexity(obs[:40], held[:40])
            extra = f" fit-ppl={_h(model.perplexity_)} ppl={_h([ppl])}"
        lines.append(f"{name}: widths={model.widths_} nets={nets} transform={feats}{extra}")
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", type=Path, help="compare with the lines saved in this file")
    args = ap.parse_args(argv)
    want = None
    if args.check:  # read before the fits: a missing or unreadable file fails at once
        try:
            want = [ln for ln in args.check.read_text(encoding="utf-8").splitlines() if ln.strip()]
        except (OSError, UnicodeDecodeError) as e:
            ap.error(f"--check {args.check}: cannot read it ({e.strerror if isinstance(e, OSError) else e})")
    print(f"# pygbn {pygbn.__version__} from {Path(pygbn.__file__).parent}", file=sys.stderr)
    lines = run()
    for line in lines:
        print(line)
    if want is not None:
        if want != lines:
            print("fit_digest: DIFFERENT from", args.check, file=sys.stderr)
            for a, b in zip(want, lines):
                if a != b:
                    print("  was:", a, "\n  now:", b, file=sys.stderr)
            for extra in lines[len(want):]:
                print("  new:", extra, file=sys.stderr)
            for gone in want[len(lines):]:
                print("  gone:", gone, file=sys.stderr)
            return 1
        print("fit_digest: identical to", args.check, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
