"""Standalone SVG line plots (no plotting library): the convergence trace plot and the
plots of the reproduction pages (``tools/_repro_common.svg_line_plot``)."""
from __future__ import annotations

import math
import numbers
from typing import Dict, List, Optional, Sequence

import numpy as np

from pygbn._utils import check_int
from pygbn.explore._graph import xml_escape

#: line colours of the plots' series, in order
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def nice_ticks(lo: float, hi: float, n: int = 5) -> List[float]:
    """About ``n`` round tick values (steps of 1, 2, 2.5 or 5 times a power of ten) in [lo, hi].

    Tick k is the decimal ``k * step`` correctly rounded, not a running sum of steps (which
    stalls when ``step`` is below the resolution of the floats near ``lo``, and drifts), and
    not rounded to a fixed number of decimals (which turned the ticks of a range below
    1e-10 into zeros).  Empty when the range or its step is not a finite positive float.
    """
    if not np.isfinite(lo) or not np.isfinite(hi):
        return []
    lo, hi = float(lo), float(hi)
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n, 1)
    if not math.isfinite(raw) or raw <= 0:
        return []
    e = math.floor(math.log10(raw))
    # step = num * 10**exp, the first of 1, 2, 2.5, 5 and 10 times 10**e that reaches raw
    num, exp = next(((m, x) for m, x in ((1, e), (2, e), (25, e - 1), (5, e)) if m * 10.0**x >= raw), (1, e + 1))
    scale = 10.0 ** abs(exp)
    if not math.isfinite(scale) or scale == 0:
        return []
    step = num * scale if exp >= 0 else num / scale

    def tick(k: int) -> float:
        return k * num * scale if exp >= 0 else k * num / scale

    k0 = math.ceil(lo / step - 1e-9)
    k1 = math.floor(hi / step + 1e-9)
    ticks: List[float] = []
    for k in range(k0, min(k1, k0 + 10 * max(n, 1)) + 1):
        v = tick(k)
        if not ticks or v != ticks[-1]:       # below the floats' resolution, k's share a value
            ticks.append(v)
    return ticks


def _fmt_tick(v: float, unit: float = 1.0, digits: int = 6) -> str:
    """Label of tick ``v`` of an axis whose ticks are ``unit`` apart: an int when within
    ``1e-9 * min(1, unit)`` of one below 1e15 (a small tick is not rounded to 0), else
    ``v`` to ``digits`` significant digits."""
    if abs(v) < 1e15 and abs(v - round(v)) < 1e-9 * min(1.0, unit):
        return str(int(round(v)))
    return f"{v:.{digits}g}"


def _tick_labels(ticks: Sequence[float]) -> List[str]:
    """The labels of an axis's ticks (:func:`_fmt_tick`), with more significant digits
    than six where that is what tells two ticks apart (the ticks of a narrow range)."""
    vals = [float(v) for v in ticks]
    distinct = sorted(set(vals))
    unit = min((b - a for a, b in zip(distinct, distinct[1:])), default=1.0)
    for digits in range(6, 18):
        labels = [_fmt_tick(v, unit, digits) for v in vals]
        if len(set(labels)) == len(distinct):
            break
    return labels


def _points(series: Sequence[Dict]) -> List[tuple]:
    """Each series' ``x`` and ``y`` as float64 arrays, and the mask of its finite points
    (both coordinates finite), after checking the two have one value per point."""
    out = []
    for i, s in enumerate(series):
        x = np.asarray(s["x"], dtype=np.float64).ravel()
        y = np.asarray(s["y"], dtype=np.float64).ravel()
        if x.size != y.size:
            raise ValueError(f"series[{i}] ({s.get('label')!r}) has {x.size} x values but {y.size} y values")
        out.append((x, y, np.isfinite(x) & np.isfinite(y)))
    return out


def _pieces(s: Dict, x, y, ok, X, Y) -> List[List[tuple]]:
    """The polylines of a series: its finite points, cut at non-finite ones when ``s["breaks"]``."""
    pieces: List[List[tuple]] = [[]]
    for xv, yv, good in zip(x, y, ok):
        if good:
            pieces[-1].append((X(float(xv)), Y(float(yv))))
        elif s.get("breaks") and pieces[-1]:
            pieces.append([])
    return [p for p in pieces if p]


def line_plot_svg(series: Sequence[Dict], title: str, xlabel: str, ylabel: str,
                  xticks: Optional[Sequence[float]] = None, width: int = 560, height: int = 380,
                  hlines: Sequence[Dict] = (), vlines: Sequence[Dict] = (), markers: bool = True,
                  ylim: Optional[Sequence[float]] = None) -> str:
    """A standalone SVG line plot, as text.

    Parameters
    ----------
    series : sequence of dict
        ``label``, ``x``, ``y`` (as many x as y values; a point with a
        non-finite x or y is skipped), optional
        ``dash`` (bool), ``colour`` and ``breaks`` (bool: a non-finite point
        ends the line, which starts again after it).
    title, xlabel, ylabel : str
    xticks : sequence of float, optional
        Default: about six round values.
    width, height : int
        Size in px, margins and legend included: at least 241 by 96.
    hlines : sequence of dict
        Dashed horizontal reference lines: ``label``, ``y`` (finite),
        optional ``colour``.
    vlines : sequence of dict
        Dotted vertical lines: ``x`` (finite), optional ``label`` (written at
        the top).
    markers : bool, default=True
        Draw a dot at every point.
    ylim : (float, float), optional
        The y range shown, finite, low first (default: all points,
        padded); lines beyond it are clipped at the plot's frame.

    Returns
    -------
    str
        A well-formed SVG 1.1 document; text is XML-escaped.

    Raises
    ------
    ValueError
        For a series with more x than y values or fewer, a non-finite
        reference line, tick or ``ylim``, or a plot too small for its margins.
    """
    ml, mr, mt, mb = 70, 170, 40, 55
    width = check_int(width, "width", ml + mr + 1)
    height = check_int(height, "height", mt + mb + 1)
    pw, ph = width - ml - mr, height - mt - mb
    points = _points(series)
    for name, lines, key in (("hlines", hlines, "y"), ("vlines", vlines, "x")):
        for i, ln in enumerate(lines):
            if not np.isfinite(float(ln[key])):
                raise ValueError(f"{name}[{i}][{key!r}] must be finite, got {ln[key]!r}")
    if xticks is not None and not np.isfinite(np.asarray(xticks, dtype=np.float64)).all():
        raise ValueError(f"xticks must be finite numbers, got {list(xticks)!r}")
    if ylim is not None:
        lim = np.asarray(ylim, dtype=np.float64)
        if lim.shape != (2,) or not np.isfinite(lim).all() or not lim[0] <= lim[1]:
            raise ValueError(f"ylim must be two finite numbers (low, high) with low <= high, got {ylim!r}")
    xs = [float(v) for x, _, ok in points for v in x[ok]]
    ys = [float(v) for _, y, ok in points for v in y[ok]] + [float(h["y"]) for h in hlines]
    if not xs:
        xs, ys = [0.0, 1.0], [0.0, 1.0]
    xs += [float(v["x"]) for v in vlines]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x0, x1 = x0 - 0.5, x1 + 0.5
    y0, y1 = (min(ys), max(ys)) if ylim is None else (float(ylim[0]), float(ylim[1]))
    pad = (y1 - y0) * 0.08 or max(abs(y0) * 0.05, 1e-3)
    y0, y1 = y0 - pad, y1 + pad

    def X(v):
        return ml + (v - x0) / (x1 - x0) * pw

    def Y(v):
        return mt + (1 - (v - y0) / (y1 - y0)) * ph

    esc = xml_escape
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="12">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="white"/>',
           f'<clipPath id="frame"><rect x="{ml}" y="{mt}" width="{pw}" height="{ph}"/></clipPath>',
           f'<text x="{ml + pw / 2:.1f}" y="22" text-anchor="middle" font-size="14" '
           f'font-weight="bold">{esc(title)}</text>']
    yt = nice_ticks(y0, y1, 6)
    xt = list(xticks) if xticks is not None else nice_ticks(x0, x1, 6)
    for t, label in zip(yt, _tick_labels(yt)):
        y = Y(t)
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="#e5e5e5"/>')
        out.append(f'<text x="{ml - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    for t, label in zip(xt, _tick_labels(xt)):
        x = X(t)
        out.append(f'<line x1="{x:.1f}" y1="{mt + ph}" x2="{x:.1f}" y2="{mt + ph + 5}" stroke="black"/>')
        out.append(f'<text x="{x:.1f}" y="{mt + ph + 18}" text-anchor="middle">{label}</text>')
    out.append(f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
    out.append(f'<text x="{ml + pw / 2:.1f}" y="{height - 12}" text-anchor="middle">{esc(xlabel)}</text>')
    out.append(f'<text x="16" y="{mt + ph / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {mt + ph / 2:.1f})">{esc(ylabel)}</text>')
    for v in vlines:
        x = X(float(v["x"]))
        out.append(f'<line x1="{x:.1f}" y1="{mt}" x2="{x:.1f}" y2="{mt + ph}" stroke="#888888" '
                   f'stroke-dasharray="2 3"/>')
        if v.get("label"):
            out.append(f'<text x="{x + 4:.1f}" y="{mt + 14}" fill="#555555">{esc(v["label"])}</text>')
    legend_y = mt + 6
    for i, h in enumerate(hlines):
        col = esc(h.get("colour", PALETTE[i % len(PALETTE)]))
        y = Y(float(h["y"]))
        out.append(f'<line x1="{ml}" y1="{y:.1f}" x2="{ml + pw}" y2="{y:.1f}" stroke="{col}" '
                   f'stroke-width="1.2" stroke-dasharray="6 4" opacity="0.8"/>')
    for i, (s, (sx, sy, ok)) in enumerate(zip(series, points)):
        col = esc(s.get("colour", PALETTE[i % len(PALETTE)]))
        dash = ' stroke-dasharray="6 4"' if s.get("dash") else ""
        for pts in _pieces(s, sx, sy, ok, X, Y):
            if len(pts) > 1:
                d = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
                out.append(f'<polyline points="{d}" fill="none" stroke="{col}" stroke-width="2"{dash} '
                           'clip-path="url(#frame)"/>')
            if markers:
                for px, py in pts:
                    out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3.5" fill="{col}" clip-path="url(#frame)"/>')
        out.append(f'<line x1="{ml + pw + 12}" y1="{legend_y:.1f}" x2="{ml + pw + 36}" y2="{legend_y:.1f}" '
                   f'stroke="{col}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{ml + pw + 42}" y="{legend_y + 4:.1f}">{esc(s["label"])}</text>')
        legend_y += 18
    for i, h in enumerate(hlines):
        col = esc(h.get("colour", PALETTE[i % len(PALETTE)]))
        out.append(f'<line x1="{ml + pw + 12}" y1="{legend_y:.1f}" x2="{ml + pw + 36}" y2="{legend_y:.1f}" '
                   f'stroke="{col}" stroke-width="1.2" stroke-dasharray="6 4"/>')
        out.append(f'<text x="{ml + pw + 42}" y="{legend_y + 4:.1f}">{esc(h["label"])}</text>')
        legend_y += 18
    out.append("</svg>")
    return "\n".join(out) + "\n"


def trace_svg(loglikelihoods, iterations, labels: Optional[Sequence[str]] = None,
              title: str = "Training log-likelihood per token", width: int = 640, height: int = 380,
              warmup: float = 0.1) -> str:
    """A standalone SVG plot of the convergence traces of one or several fits.

    The depths' stages follow one another along the x axis (dotted lines
    mark where a layer was added); each chain is one colour, broken between
    depths: only values within one stage are draws of one model.

    Parameters
    ----------
    loglikelihoods : sequence of sequence of sequence of float
        Per chain, per depth, the traced values (``GBN.loglikelihoods_`` of
        each fit: ``[g.loglikelihoods_ for g in fits]``).
    iterations : sequence of sequence of sequence of int
        The matching iterations within each depth (``GBN.trace_iterations_``).
    labels : sequence of str, optional
        One legend entry per chain (default ``chain 1``, ``chain 2``, ...).
    title : str
    width, height : int
        As in :func:`line_plot_svg`: at least 241 by 96.
    warmup : float in [0, 1), default=0.1
        The y range leaves out the first ``warmup`` share of the first
        depth's values of each chain (the initial climb, whose range would
        flatten the rest); their lines run off the top or bottom of the plot.

    Returns
    -------
    str
        The SVG document.
    """
    if isinstance(warmup, (bool, np.bool_)) or not isinstance(warmup, numbers.Real) or not 0 <= warmup < 1:
        raise ValueError(f"warmup must be a number in [0, 1), got {warmup!r}")
    chains = [[np.asarray(d, dtype=np.float64).ravel() for d in c] for c in loglikelihoods]
    its = [[np.asarray(d, dtype=np.float64).ravel() for d in c] for c in iterations]
    if any(not c for c in chains):
        raise ValueError("every chain of loglikelihoods must hold at least one depth (a list of values "
                         "per depth, as GBN.loglikelihoods_), got a chain with none")
    if not chains or len(its) != len(chains) or any(len(a) != len(b) or any(
            x.size != y.size for x, y in zip(a, b)) for a, b in zip(chains, its)):
        raise ValueError("loglikelihoods and iterations must hold the same number of chains, depths "
                         "and values (one list per chain of one list per depth)")
    labels = [f"chain {i + 1}" for i in range(len(chains))] if labels is None else list(labels)
    if len(labels) != len(chains):
        raise ValueError(f"labels must have one entry per chain ({len(chains)}), got {len(labels)}")
    n_depths = max(len(c) for c in chains)
    lengths = [max((float(d[-1]) for c in its if t < len(c) for d in [c[t]] if d.size), default=0.0)
               for t in range(n_depths)]
    offsets = np.concatenate([[0.0], np.cumsum(lengths)])
    series = []
    for i, (c, it) in enumerate(zip(chains, its)):
        x = np.concatenate([np.append(d + offsets[t], np.nan) for t, d in enumerate(it)])
        y = np.concatenate([np.append(v, np.nan) for v in c])
        series.append({"label": labels[i], "x": x, "y": y, "breaks": True,
                       "colour": PALETTE[i % len(PALETTE)]})
    vlines = [{"x": offsets[t], "label": f"T={t + 1}"} for t in range(n_depths)]
    kept = [v for c in chains for t, d in enumerate(c) for v in (d[int(warmup * d.size):] if t == 0 else d)]
    kept = [v for v in kept if np.isfinite(v)]
    ylim = (min(kept), max(kept)) if kept else None
    return line_plot_svg(series, title, "iteration (all depths in turn)", "log-likelihood per token",
                         width=width, height=height, vlines=vlines, markers=False, ylim=ylim)
