"""Command line interface: ``pygbn`` / ``python -m pygbn``."""
from __future__ import annotations

import argparse
import sys

import numpy as np


def _cmd_demo(args) -> int:
    from pygbn import random as gbr

    rng = np.random.default_rng(args.seed)
    draws = gbr.crt(1000, 2.0, size=5, random_state=rng)
    sys.stdout.write(f"CRT(1000, 2.0) draws: {draws.tolist()}\n")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pygbn", description="Augmentable gamma belief networks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run the demo")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_demo)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
