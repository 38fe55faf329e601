"""PNG and SVG encoders for images held in numpy arrays (numpy, zlib and struct only)."""
from __future__ import annotations

import os
import struct
import zlib

import numpy as np

from pygbn._utils import check_int


def to_uint8(image, scale: int, invert: bool) -> np.ndarray:
    """``image`` as uint8 pixels, inverted and enlarged as asked: integers (any integer
    dtype) are pixel values in 0..255, floats and bools in [0, 1] are scaled by 255
    (floats clipped to [0, 1] first)."""
    a = np.asarray(image)
    if a.ndim not in (2, 3) or (a.ndim == 3 and a.shape[2] != 3) or a.size == 0:
        raise ValueError(f"image must have shape (height, width) or (height, width, 3), got {a.shape}")
    if a.dtype.kind not in "biuf":
        raise ValueError(f"image must hold numbers, got dtype {a.dtype}")
    scale = check_int(scale, "scale", 1)
    if a.dtype.kind in "iu":
        lo, hi = int(a.min()), int(a.max())
        if lo < 0 or hi > 255:
            raise ValueError(f"image of integer dtype {a.dtype} must hold pixel values in 0..255, got "
                             f"values in {lo}..{hi} (pass floats in [0, 1] to have them scaled)")
        pix = a.astype(np.uint8)     # a copy
    else:
        f = np.asarray(a, dtype=np.float64)
        if not np.isfinite(f).all():
            raise ValueError("image values must be finite")
        pix = np.rint(np.clip(f, 0.0, 1.0) * 255.0).astype(np.uint8)
    if invert:
        pix = 255 - pix
    if scale > 1:
        pix = np.repeat(np.repeat(pix, scale, axis=0), scale, axis=1)
    return pix


def png_chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data and the CRC-32 of type and data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def encode_png(image, scale: int = 1, invert: bool = False) -> bytes:
    """Encode an image as PNG bytes (pure numpy + zlib + struct).

    Parameters
    ----------
    image : array_like, shape (h, w) or (h, w, 3)
        Floats (or bools) in [0, 1] (clipped; 1 is white), or integers of any
        integer dtype in 0..255 (255 is white; a value outside raises
        ValueError).  A 2-D image becomes 8-bit grayscale (PNG colour type 0),
        a 3-D one 8-bit RGB (colour type 2).
    scale : int, default 1
        Enlarge each pixel to a ``scale x scale`` block.
    invert : bool, default False
        Write ``255 - value`` (dark ink on white paper).

    Returns
    -------
    bytes
        Signature, IHDR, one zlib-compressed IDAT (filter type 0 on every
        row), IEND; see the PNG specification (ISO/IEC 15948).
    """
    pix = to_uint8(image, scale, invert)
    h, w = pix.shape[:2]
    colour_type = 0 if pix.ndim == 2 else 2
    rows = pix.reshape(h, -1)
    raw = np.hstack([np.zeros((h, 1), dtype=np.uint8), rows]).tobytes()
    ihdr = struct.pack(">IIBBBBB", w, h, 8, colour_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", zlib.compress(raw, 9))
        + png_chunk(b"IEND", b"")
    )


def write_png(path, image, scale: int = 1, invert: bool = False) -> str:
    """Write ``image`` to ``path`` (str, bytes or path-like) as PNG (see :func:`encode_png`);
    return the path as a str."""
    data = encode_png(image, scale=scale, invert=invert)
    path = os.fsdecode(os.fspath(path))
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def encode_svg_image(image, scale: int = 4, invert: bool = False) -> str:
    """Encode a grayscale image as an SVG document of one square per pixel.

    Parameters
    ----------
    image : array_like, shape (h, w)
        As for :func:`encode_png`: floats in [0, 1] (1 is white) or integers
        in 0..255.
    scale : int, default 4
        Side of a pixel's square.
    invert : bool, default False

    Returns
    -------
    str
        Well-formed SVG; rows of equal pixels are merged into one rectangle.
    """
    pix = to_uint8(image, 1, invert)
    if pix.ndim != 2:
        raise ValueError(f"image must be 2-D (grayscale) for SVG, got shape {pix.shape}")
    scale = check_int(scale, "scale", 1)
    h, w = pix.shape
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w * scale}" height="{h * scale}" '
        f'viewBox="0 0 {w * scale} {h * scale}" shape-rendering="crispEdges">',
    ]
    for y in range(h):
        x = 0
        while x < w:
            v = int(pix[y, x])
            x2 = x + 1
            while x2 < w and pix[y, x2] == v:
                x2 += 1
            out.append(
                f'<rect x="{x * scale}" y="{y * scale}" width="{(x2 - x) * scale}" height="{scale}" '
                f'fill="#{v:02x}{v:02x}{v:02x}"/>'
            )
            x = x2
    out.append("</svg>")
    return "\n".join(out) + "\n"
