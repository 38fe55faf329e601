"""Shared helpers of the ``tools/reproduce_*.py`` scripts (not part of the library).

Data loading and subsetting, run metadata (command, seed, versions, wall
time), markdown tables, JSON records and SVG line plots (pygbn's
dependency-free :func:`pygbn.explore.line_plot_svg`).  Only numpy and scipy
are needed at import; pygbn is imported by the scripts themselves (and by
:func:`svg_line_plot` when it runs).
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import logging
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import scipy.sparse as sp

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "docs" / "results"


# --------------------------------------------------------------------- data
def default_data_dir() -> Path:
    """``$PYGBN_DATA_DIR``, else ``../shared/data`` beside the checkout, else ``/work/shared/data``."""
    env = os.environ.get("PYGBN_DATA_DIR")
    if env:
        return Path(env)
    for cand in (REPO.parent / "shared" / "data", Path("/work/shared/data")):
        if cand.is_dir():
            return cand
    return Path("/work/shared/data")


def need(path: Path, what: str) -> Path:
    """Exit with a clear message when a data file is missing."""
    if not path.exists():
        sys.exit(f"error: {what} not found at {path} (pass --data-dir or set PYGBN_DATA_DIR)")
    return path


def _load_count_corpus(d: Path, counts: str, vocab: str, what: str):
    """``X`` (CSR int64), ``words``, ``labels`` and ``split`` of a counts corpus folder.

    ``d/counts`` is a scipy.sparse documents x terms matrix, ``d/vocab`` one term per
    line (the column order) and ``d/docs.tsv`` a header line, then one row per document
    whose second column is the label and third the ``train``/``test`` split.
    """
    X = sp.load_npz(need(d / counts, f"{what} counts")).tocsr().astype(np.int64)
    words = need(d / vocab, f"{what} vocabulary").read_text(encoding="utf-8").split("\n")
    words = [w for w in words if w]
    rows = need(d / "docs.tsv", f"{what} docs.tsv").read_text(encoding="utf-8").split("\n")[1:]
    rows = [r.split("\t") for r in rows if r]
    if len(rows) != X.shape[0] or len(words) != X.shape[1]:
        sys.exit(f"error: inconsistent {what} files in {d}")
    labels = np.array([r[1] for r in rows])
    split = np.array([r[2] for r in rows])
    return X, words, labels, split


def load_debian(data_dir: Path, vocab: str = "top2000"):
    """The Debian package-description corpus.

    Returns ``X`` (CSR int64 counts, documents x terms), ``words`` (list of
    str), ``labels`` (ndarray of str, the Debian section) and ``split``
    (ndarray of str, ``train``/``test``), rows in the same order.
    """
    suffix = "-top2000" if vocab == "top2000" else ""
    return _load_count_corpus(Path(data_dir) / "debian-descriptions", f"counts{suffix}.npz", f"vocab{suffix}.txt",
                              "Debian")


def load_manpages(data_dir: Path):
    """The Linux man-pages corpus (``linux-manpages``: 2,533 pages, 7,735 terms).

    Returns ``X`` (CSR int64 counts), ``words``, ``labels`` (ndarray of str,
    the man section: ``"2"``, ``"3"``, ``"7"``, ...) and ``split`` (ndarray
    of str, ``train``/``test``, from ``docs.tsv``), rows in the same order.
    """
    return _load_count_corpus(Path(data_dir) / "linux-manpages", "counts.npz", "vocab.txt", "man-pages")


#: The text corpora the reproduce scripts take by name (``--dataset``): loader, the
#: words of the pages' "data" line, the short name in output names and plot titles.
CORPORA = {
    "debian": dict(load=load_debian, describe="Debian descriptions, top-2000 vocabulary", stem="debian",
                   short="Debian top-2000"),
    "linux-manpages": dict(load=load_manpages, describe="Linux man pages (7,735-term vocabulary)",
                           stem="manpages", short="Linux man pages"),
}


def load_corpus(name: str, data_dir: Path):
    """``(X, words, labels, split)`` of the text corpus ``name`` (a key of :data:`CORPORA`)."""
    if name not in CORPORA:
        raise SystemExit(f"error: unknown corpus {name!r} (one of {', '.join(CORPORA)})")
    return CORPORA[name]["load"](data_dir)


def load_digits(data_dir: Path):
    """The 8x8 digits: ``X`` float64 scaled to [0, 1] (values / 16) and ``y``."""
    z = np.load(need(Path(data_dir) / "digits" / "digits.npz", "digits.npz"))
    return z["X"].astype(np.float64) / 16.0, z["y"].astype(np.int64)


def subset_rows(n_total: int, n: Optional[int], seed: int, candidates: Optional[np.ndarray] = None) -> np.ndarray:
    """Sorted indices of ``n`` rows drawn without replacement (all when ``n`` is None or too large)."""
    idx = np.arange(n_total) if candidates is None else np.asarray(candidates)
    if n is None or n <= 0 or n >= idx.size:
        return np.sort(idx)
    rng = np.random.default_rng([seed, 20160101])
    return np.sort(rng.choice(idx, size=n, replace=False))


# ------------------------------------------------------------- bookkeeping
class Timer:
    """Wall-clock and process-CPU stopwatch."""

    def __init__(self):
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()

    @property
    def wall(self) -> float:
        return time.perf_counter() - self.wall0

    @property
    def cpu(self) -> float:
        return time.process_time() - self.cpu0


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "pygbn"],
                               capture_output=True, text=True, timeout=10)
        return out.stdout.strip() + ("+dirty(pygbn)" if dirty.stdout.strip() else "")
    except Exception:  # pragma: no cover
        return "unknown"


_COMMAND: Optional[str] = None


def set_command(script: str, argv: Optional[Sequence[str]]) -> str:
    """Record the command of this run: the script (relative to the repository) and its arguments."""
    global _COMMAND
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(script).resolve()
    try:
        path = path.relative_to(REPO)
    except ValueError:
        pass
    _COMMAND = "python " + " ".join(shlex.quote(str(a)) for a in [path, *args])
    return _COMMAND


def command_line() -> str:
    """The command recorded by :func:`set_command` (else ``sys.argv``)."""
    if _COMMAND is not None:
        return _COMMAND
    return set_command(sys.argv[0], sys.argv[1:])


def environment() -> Dict[str, str]:
    import numpy
    import scipy

    env = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "pygbn_commit": git_commit(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "machine": f"{platform.machine()}, {os.cpu_count()} logical CPUs",
    }
    threads = [f"{k}={os.environ[k]}" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
               if k in os.environ]
    env["BLAS threads"] = " ".join(threads) if threads else "not limited"
    try:
        env["load_average_at_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # pragma: no cover
        pass
    return env


def fmt_seconds(s: float) -> str:
    if s < 120:
        return f"{s:.1f} s"
    if s < 7200:
        return f"{s / 60:.1f} min"
    return f"{s / 3600:.2f} h"


def write_json(path: Path, obj) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)

    def default(o):
        if isinstance(o, (np.integer,)):
            return int(o)
        if isinstance(o, (np.floating,)):
            return float(o)
        if isinstance(o, np.ndarray):
            return o.tolist()
        raise TypeError(type(o))

    text = json.dumps(obj, indent=1, default=default) + "\n"
    tmp = path.with_name(path.name + ".tmp")  # then renamed: a process killed mid-write leaves the old file
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


#: pygbn's line at the end of every depth of a layer-wise fit (``fit_layerwise``), as logged
#: through the ``"pygbn"`` logger: ``depth T done: widths [...], S s/iteration[, held-out perplexity P]``.
DEPTH_DONE = re.compile(r"depth (\d+) done: widths \[([\d, ]*)\], ([\d.]+) s/iteration"
                        r"(?:, held-out perplexity ([\d.]+|nan))?")


def parse_depth_done(message: str):
    """``(depth, widths, seconds_per_iteration, perplexity or None)`` of a :data:`DEPTH_DONE` line, else None."""
    m = DEPTH_DONE.search(message)
    if m is None:
        return None
    ppl = m.group(4)
    return (int(m.group(1)), [int(w) for w in m.group(2).split(",") if w.strip()], float(m.group(3)),
            None if ppl is None else float(ppl))


class _DepthDoneHandler(logging.Handler):
    def __init__(self, fn, forward_from=None):
        super().__init__(logging.NOTSET)
        self.fn = fn
        self.forward_from = forward_from  # pass on records of at least this level (see on_depth_done)

    def emit(self, record):
        try:
            done = parse_depth_done(record.getMessage())
            if done is not None:
                self.fn(*done)
        except Exception:  # a failed checkpoint is reported, and the fit goes on
            self.handleError(record)
        if self.forward_from is not None and record.levelno >= self.forward_from:
            logging.getLogger().handle(record)


@contextlib.contextmanager
def on_depth_done(fn):
    """Call ``fn(depth, widths, seconds_per_iteration, perplexity)`` at the end of every depth of a fit.

    Listens to pygbn's per-depth log line (:data:`DEPTH_DONE`; values as logged, the
    perplexity to two decimals) for the duration of the ``with`` block, so a script can
    checkpoint a long layer-wise fit depth by depth through the public API.  If the
    ``"pygbn"`` logger was not enabled for INFO, it is for the block, but its records stop
    at this handler unless they are of a level that would have passed before (warnings).
    """
    lg = logging.getLogger("pygbn")
    old_level, old_propagate = lg.level, lg.propagate
    forward = None
    if not lg.isEnabledFor(logging.INFO):
        forward = lg.getEffectiveLevel() if old_propagate else None
        lg.setLevel(logging.INFO)
        lg.propagate = False
    handler = _DepthDoneHandler(fn, forward)
    lg.addHandler(handler)
    try:
        yield
    finally:
        lg.removeHandler(handler)
        lg.setLevel(old_level)
        lg.propagate = old_propagate


def timing_context(rec: Dict) -> str:
    """Where a record's timings come from: ``n_jobs=N, on <machine>`` (records without ``n_jobs`` ran with 1)."""
    machine = (rec.get("environment") or {}).get("machine", "an unrecorded machine")
    return f"n_jobs={rec.get('n_jobs', 1)}, on {machine}"


def mean_se(values: Sequence[float]) -> Tuple[float, float, int]:
    """Mean, standard error of the mean (NaN for fewer than two values) and count; NaNs for no values."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return np.nan, np.nan, 0
    se = a.std(ddof=1) / np.sqrt(a.size) if a.size > 1 else np.nan
    return float(a.mean()), float(se), int(a.size)


def md_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    def cell(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            if not np.isfinite(v):
                return "-"
            return f"{v:.1f}" if abs(v) >= 100 else f"{v:.4g}"
        return str(v)

    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for r in rows:
        lines.append("| " + " | ".join(cell(v) for v in r) + " |")
    return "\n".join(lines)


def run_header(title: str, env: Dict[str, str], wall: float, cpu: float, extra: Sequence[Tuple[str, str]] = (),
               command: Optional[str] = None) -> str:
    lines = [f"# {title}", "", "Command (from the repository root, with the compiled package on `PYTHONPATH`):", "",
             "```", command or command_line(), "```", ""]
    lines.append("| | |")
    lines.append("| --- | --- |")
    for k, v in list(extra) + [("total wall time", fmt_seconds(wall)), ("process CPU time", fmt_seconds(cpu))] \
            + list(env.items()):
        lines.append(f"| {k} | {v} |")
    lines.append("")
    return "\n".join(lines)


# ------------------------------------------------------------------- plots
_PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def svg_line_plot(path: Path, series: Sequence[Dict], title: str, xlabel: str, ylabel: str,
                  xticks: Optional[Sequence[float]] = None, width: int = 560, height: int = 380,
                  hlines: Sequence[Dict] = ()) -> str:
    """Write a standalone SVG line plot (:func:`pygbn.explore.line_plot_svg`) to ``path``.

    ``series``: dicts with ``label``, ``x``, ``y`` (NaN points are skipped),
    optional ``dash`` (bool).  ``hlines``: dicts with ``label``, ``y``,
    optional ``colour`` (dashed horizontal reference lines, e.g. baselines).
    """
    from pygbn.explore import line_plot_svg

    text = line_plot_svg(series, title, xlabel, ylabel, xticks=xticks, width=width, height=height,
                         hlines=hlines)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return text


def add_mode_args(p, modes, default: str) -> None:
    """``--mode`` (one of ``modes``, default ``default``) and ``--quick`` (same as ``--mode quick``)."""
    p.add_argument("--mode", choices=sorted(modes), default=default, help=f"preset (default: {default})")
    p.add_argument("--quick", action="store_true", help="same as --mode quick")


def add_run_args(p, name_default: str, from_json: bool = False) -> None:
    """Options every reproduce script shares: threads, data and output folders, output name, progress.

    ``from_json``: also ``--from-json RECORD`` (rewrite a finished run's page).  ``--out-dir``
    then defaults to None, and :func:`resolve_outputs` fills it and ``--name`` in.
    """
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--data-dir", type=Path, default=None,
                   help="folder of the data sets (default: $PYGBN_DATA_DIR, else ../shared/data beside the "
                        "checkout, else /work/shared/data)")
    p.add_argument("--out-dir", type=Path, default=None if from_json else RESULTS,
                   help="output folder (default: docs/results" + ("; with --from-json the record's folder)"
                                                                   if from_json else ")"))
    p.add_argument("--name", help=f"output file stem (default: {name_default}"
                                  + ("; with --from-json the record's stem)" if from_json else ")"))
    p.add_argument("--verbose", type=int, default=0, help="progress every N iterations (0: off)")
    if from_json:
        p.add_argument("--from-json", type=Path, default=None, metavar="RECORD",
                       help="only rewrite the markdown and SVG of a finished run from its JSON record: "
                            "<out-dir>/<name>.md and .svg, beside the record under its stem unless "
                            "--out-dir or --name is given")


def resolve_outputs(a, name_default: str) -> None:
    """Fill in ``a.out_dir`` and ``a.name`` (see :func:`add_run_args` with ``from_json``).

    With ``--from-json`` what is not given comes from the record (its folder, its stem),
    else ``docs/results`` and ``name_default``.
    """
    if a.from_json is not None:
        a.out_dir = a.from_json.parent if a.out_dir is None else a.out_dir
        a.name = a.name or a.from_json.stem
    else:
        a.out_dir = RESULTS if a.out_dir is None else a.out_dir
        a.name = a.name or name_default


def read_record(path: Path, script: str, hint: str = "") -> Dict:
    """The JSON record ``path`` written by ``tools/<script>.py``, with a clear error otherwise.

    ``hint`` ends the message of a file that is not JSON (e.g. what else the tool takes).
    """
    path = Path(path)
    if not path.is_file():
        raise SystemExit(f"error: {path} not found")
    try:
        rec = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        why = "not text" if isinstance(e, UnicodeDecodeError) else f"not JSON: {e}"
        raise SystemExit(f"error: {path} is not a JSON record of {script}.py ({why}){hint}")
    if not isinstance(rec, dict) or rec.get("script") != script:
        raise SystemExit(f"error: {path} is not a {script} record")
    return rec


def parse_ints(text: str, name: str) -> List[int]:
    """``"25,50,100"`` -> [25, 50, 100] with a clear error."""
    try:
        vals = [int(v) for v in str(text).replace(" ", "").split(",") if v]
    except ValueError:
        raise SystemExit(f"error: {name} must be comma-separated integers, got {text!r}")
    if not vals or min(vals) < 1:
        raise SystemExit(f"error: {name} must be positive integers, got {text!r}")
    return vals


def int_at_least(low: int):
    """An argparse ``type``: an int >= ``low``, else argparse's error naming the flag and the
    value (status 2), instead of failing later in the run or printing a table of inf and nan:
    the command line's own (:func:`pygbn.cli.parser.int_at_least`)."""
    from pygbn.cli.parser import int_at_least as conv

    return conv(low)


def n_jobs_arg(text: str) -> int:
    """An argparse ``type`` for a thread count passed on as pygbn's ``n_jobs``: a non-zero int
    (-1: all CPUs), as the command line's ``--jobs`` (:func:`pygbn.cli.parser.n_jobs_arg`)."""
    from pygbn.cli.parser import n_jobs_arg as conv

    return conv(text)


# ------------------------------------------------------ seed-spread pages
def collect_by_seed(paths: Sequence[Path], runs_from_record, runs_from_log, key, depths: str) -> Dict:
    """``{key(run): {seed: run}}`` from JSON records and ``--verbose`` logs (a ``.log`` suffix).

    ``runs_from_record(path)`` / ``runs_from_log(path)`` return run dicts with a ``seed`` and a
    per-depth list ``run[depths]``.  For the same key and seed a record beats a log, then the
    deeper run wins.
    """
    table: Dict = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise SystemExit(f"error: {path} not found")
        from_log = path.suffix == ".log"
        for run in runs_from_log(path) if from_log else runs_from_record(path):
            run["_rank"] = (not from_log, len(run[depths]))
            slot = table.setdefault(key(run), {})
            if run["seed"] not in slot or run["_rank"] > slot[run["seed"]]["_rank"]:
                slot[run["seed"]] = run
    return table


def fmt_mean_se(values: Sequence[float]) -> str:
    """``+m ± se (n)`` of ``values`` (``+m (1)`` for one value, empty for none)."""
    m, se, n = mean_se(values)
    return "" if n == 0 else (f"{m:+.2f} ± {se:.2f} ({n})" if n > 1 else f"{m:+.2f} (1)")


def depth_cells(values: Sequence[float], T: int, fmt) -> List[str]:
    """``fmt(values[t])`` for t < T, empty cells past the end of a run that stopped early."""
    return [fmt(values[t]) if t < len(values) else "" for t in range(T)]


def depth_columns(curves: Sequence[Sequence[float]], T: int, nd: int, better: str):
    """Per depth over seeds: ``mean ± sd (n)`` cells, and paired-change-vs-T=1 cells and means.

    ``curves`` holds one per-depth list per seed (possibly shorter than ``T``); a paired cell is
    ``mean ± standard error (k/n better)`` with ``better`` ``"lower"`` or ``"higher"``.
    """
    spread, paired, means = [], [], []
    for t in range(T):
        a = np.asarray([c[t] for c in curves if t < len(c)], dtype=float)
        spread.append(f"{a.mean():.{nd}f} ± {a.std(ddof=1):.{nd}f} ({a.size})" if a.size > 1
                      else (f"{a[0]:.{nd}f} (1)" if a.size else ""))
        d = [c[t] - c[0] for c in curves if t < len(c)]
        m, se, n = mean_se(d)
        means.append(m if n else np.nan)
        if t == 0 or n == 0:
            paired.append("0" if t == 0 else "")
            continue
        k = sum(1 for v in d if (v < 0 if better == "lower" else v > 0))
        paired.append(f"{m:+.2f} ± {se:.2f} ({k}/{n} {better})" if n > 1 else f"{m:+.2f} (1)")
    return spread, paired, means


def spread_main(argv, doc: str, name: str, title: str, collect, write_page) -> int:
    """Command line of the ``*_spread.py`` tools: inputs -> ``collect`` -> ``write_page``."""
    import argparse

    p = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=doc)
    p.add_argument("inputs", nargs="+", type=Path, help="JSON records and/or --verbose logs")
    p.add_argument("--out-dir", type=Path, default=RESULTS)
    p.add_argument("--name", default=name, help="output name (<name>.md, <name>.svg)")
    p.add_argument("--title", default=title)
    a = p.parse_args(argv)
    table = collect(a.inputs)
    if not table:
        raise SystemExit("error: no runs found in the inputs")
    page = write_page(table, a.out_dir, a.name, a.title, a.inputs)
    print(f"[spread] wrote {page}", file=sys.stderr)
    return 0


def write_spread_page(out: Path, name: str, md: Sequence[str], series, n_depths: int, what: str) -> Path:
    """``<name>.md`` from the lines ``md`` and ``<name>.svg``: the paired change of ``what`` vs depth."""
    out.mkdir(parents=True, exist_ok=True)
    page = out / f"{name}.md"
    page.write_text("\n".join(md), encoding="utf-8")
    svg_line_plot(out / f"{name}.svg", series, f"Paired change in {what} vs depth (mean over seeds)",
                  "layers T", f"{what}(T) - {what}(1)", xticks=list(range(1, n_depths + 1)),
                  hlines=[{"label": "T = 1", "y": 0.0, "colour": "#888"}])
    return page


def tomotopy_lda(X, K: int):
    """tomotopy's LDA (alpha 0.1, eta 0.01, seed 1) holding the documents of the
    CSR count matrix ``X`` (term v is the word ``str(v)``): the benchmarks'
    reference model.  Raises ImportError when tomotopy is not installed."""
    import tomotopy as tp

    mdl = tp.LDAModel(k=K, alpha=0.1, eta=0.01, seed=1)
    words = [str(v) for v in range(X.shape[1])]
    for j in range(X.shape[0]):
        lo, hi = X.indptr[j], X.indptr[j + 1]
        toks = [words[v] for v, n in zip(X.indices[lo:hi], X.data[lo:hi]) for _ in range(int(n))]
        if toks:
            mdl.add_doc(toks)
    return mdl
