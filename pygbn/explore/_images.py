"""The projected factors of an image model as image grids (paper Section 4.3, MNIST figures)."""
from __future__ import annotations

import math
import numbers
import os
from typing import Sequence

import numpy as np

from pygbn._utils import check_int
from pygbn.explore._encode import encode_svg_image, write_png
from pygbn.explore._weights import project


def check_shape(shape, n_pixels: int) -> tuple[int, int]:
    """Return the image ``(height, width)`` after checking it holds ``n_pixels`` pixels."""
    try:
        h, w = shape
    except (TypeError, ValueError):
        raise ValueError(f"shape must be an (height, width) pair, got {shape!r}") from None
    for v in (h, w):
        if isinstance(v, bool) or not isinstance(v, (numbers.Integral, np.integer)) or v < 1:
            raise ValueError(f"shape must hold two positive ints, got {shape!r}")
    if int(h) * int(w) != n_pixels:
        raise ValueError(f"shape {tuple(shape)!r} has {int(h) * int(w)} pixels but the data dimension is {n_pixels}")
    return int(h), int(w)


def factor_images(phis, t: int, shape, nodes: Sequence[int] | None = None, normalize: bool = True) -> np.ndarray:
    """The projected factors of layer t as images (paper Section 4.3, MNIST figures).

    Parameters
    ----------
    phis : list of 2-D arrays
        ``[Phi^(1), ..., Phi^(T)]`` of an image model (V pixels).
    t : int
        Layer number, ``1 <= t <= T``.
    shape : (int, int)
        Image ``(height, width)`` with ``height * width == V``; data dimension
        ``v`` is pixel ``(v // width, v % width)`` (row-major, as in
        ``numpy.reshape``).
    nodes : sequence of int, optional
        Which nodes (columns) to show, in order (at least one); default all.
    normalize : bool, default True
        Scale each image by its maximum so it spans [0, 1].

    Returns
    -------
    ndarray, shape (n_nodes, height, width)
        Column k of :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection)
        reshaped.
    """
    proj = project(phis, t)
    h, w = check_shape(shape, proj.shape[0])
    if nodes is not None:
        if isinstance(nodes, (str, bytes)):
            raise ValueError(f"nodes must be a sequence of ints, got {nodes!r}")
        try:
            idx = np.asarray(list(nodes))
        except (TypeError, ValueError):      # not iterable (nodes=3), or ragged
            raise ValueError(f"nodes must be a sequence of ints, got {nodes!r}") from None
        if idx.size == 0:
            raise ValueError(f"nodes must name at least one node, got {nodes!r}")
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise ValueError(f"nodes must be a sequence of ints, got {nodes!r}")
        if idx.min() < 0 or idx.max() >= proj.shape[1]:
            raise ValueError(f"nodes must be in 0..{proj.shape[1] - 1}, got {nodes!r}")
        proj = proj[:, idx.astype(np.int64)]
    imgs = proj.T.reshape(proj.shape[1], h, w).copy()
    if normalize:
        m = imgs.reshape(imgs.shape[0], -1).max(axis=1)
        m[m <= 0] = 1.0
        imgs /= m[:, None, None]
    return imgs


def image_grid(images, n_cols: int | None = None, pad: int = 1, pad_value: float = 1.0) -> np.ndarray:
    """Tile a stack of equally sized images into one 2-D array.

    Parameters
    ----------
    images : array_like, shape (n, h, w)
    n_cols : int, optional
        Tiles per row; default ``ceil(sqrt(n))``.  A grid has at most n
        columns: a larger ``n_cols`` gives one row of n tiles.
    pad : int, default 1
        Pixels between tiles and around the grid.
    pad_value : float, default 1.0
        Value of the padding (and of empty cells of the last row); a finite
        number (1.0 is white for :func:`encode_png`).

    Returns
    -------
    ndarray, shape (rows * (h + pad) + pad, cols * (w + pad) + pad)
        ``cols = min(n_cols, n)`` and ``rows = ceil(n / cols)``.
    """
    imgs = np.asarray(images, dtype=np.float64)
    if imgs.ndim != 3 or imgs.shape[0] == 0:
        raise ValueError(f"images must have shape (n, height, width) with n >= 1, got {imgs.shape}")
    n, h, w = imgs.shape
    if n_cols is None:
        n_cols = int(math.ceil(math.sqrt(n)))
    n_cols = check_int(n_cols, "n_cols", 1)
    n_cols = min(n_cols, n)
    pad = check_int(pad, "pad", 0)
    if isinstance(pad_value, (bool, np.bool_)) or not isinstance(pad_value, numbers.Real) \
            or not math.isfinite(pad_value):
        raise ValueError(f"pad_value must be a finite number, got {pad_value!r}")
    n_rows = int(math.ceil(n / n_cols))
    grid = np.full((n_rows * (h + pad) + pad, n_cols * (w + pad) + pad), float(pad_value))
    for i in range(n):
        rr, cc = divmod(i, n_cols)
        y0, x0 = pad + rr * (h + pad), pad + cc * (w + pad)
        grid[y0 : y0 + h, x0 : x0 + w] = imgs[i]
    return grid


def save_factor_grid(
    phis,
    t: int,
    shape,
    path,
    nodes: Sequence[int] | None = None,
    n_cols: int | None = None,
    pad: int = 1,
    scale: int = 4,
    invert: bool = False,
) -> str:
    """Write the projected factors of layer t as one image grid (PNG or SVG).

    The format follows the file suffix: ``.png`` or ``.svg``.  Each tile is
    one column of :math:`\\prod_{\\ell=1}^{t}\\Phi^{(\\ell)}` (eq:projection)
    reshaped to ``shape`` and scaled to its maximum (see
    :func:`factor_images`); tiles are in node order (call
    :func:`relabel_by_popularity` first for the paper's popularity order).
    Call once per layer to see the factors grow more general with depth.

    ``path`` may be a str, bytes or path-like; ``nodes`` selects the tiles
    as in :func:`factor_images`; ``n_cols`` and ``pad`` are those of
    :func:`image_grid`, ``scale`` and ``invert`` those of :func:`encode_png`
    (:func:`encode_svg_image` for ``.svg``).

    Returns
    -------
    str
        The path written.
    """
    path = os.fsdecode(os.fspath(path))
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"path must end in .png or .svg, got {path!r}")
    grid = image_grid(factor_images(phis, t, shape, nodes=nodes), n_cols=n_cols, pad=pad)
    if suffix == ".png":
        return write_png(path, grid, scale=scale, invert=invert)
    text = encode_svg_image(grid, scale=scale, invert=invert)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path
