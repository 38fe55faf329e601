"""Model files without pickle: networks and a dict of plain values in one ``.npz``.

A model file is one ``.npz`` archive (written with ``allow_pickle=False``):
the arrays of each network (every Phi^(t), r, the vocabulary) are stored as
plain numpy arrays, and everything else as JSON in the ``__meta__`` entry,
which carries a format name and version, the ``kind`` of object and the
writer's own entries.  Floats go through JSON's shortest round-trip
representation, so a saved model loads back bit for bit.

This module knows networks and JSON, not the estimator: :meth:`pygbn.GBN.save`
and :func:`pygbn.load` decide what a fitted GBN stores (its parameters and
fitted attributes) and how it is rebuilt.
"""
from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from pygbn._version import __version__
from pygbn.model.layer import Layer
from pygbn.model.links import get_link
from pygbn.model.network import Hyperparameters, Network

__all__ = ["write_model", "read_model", "ModelFile", "FORMAT_NAME", "FORMAT_VERSION"]

FORMAT_NAME = "pygbn-model"
FORMAT_VERSION = 1


def _network_meta(net: Network, prefix: str, arrays: dict) -> dict:
    for t, layer in enumerate(net.layers, start=1):
        arrays[f"{prefix}phi{t}"] = np.ascontiguousarray(layer.phi, dtype=np.float64)
    arrays[f"{prefix}r"] = np.ascontiguousarray(net.r, dtype=np.float64)
    if net.vocabulary is not None:
        arrays[f"{prefix}vocabulary"] = np.array([str(v) for v in net.vocabulary], dtype=str)
    h = net.hyper
    return {
        "depth": net.depth,
        "gamma0": float(net.gamma0),
        "c0": float(net.c0),
        "hyper": {"a0": h.a0, "b0": h.b0, "e0": h.e0, "f0": h.f0},
        "link": net.link.to_dict(),
        "layers": [{"eta": float(l.eta), "c_median": float(l.c_median)} for l in net.layers],
        "vocabulary": net.vocabulary is not None,
    }


def _network_from(meta: dict, prefix: str, arrays) -> Network:
    layers = []
    for t, lm in enumerate(meta["layers"], start=1):
        layers.append(Layer(phi=np.array(arrays[f"{prefix}phi{t}"], dtype=np.float64),
                            eta=float(lm["eta"]), c_median=float(lm["c_median"])))
    vocab = [str(v) for v in arrays[f"{prefix}vocabulary"]] if meta.get("vocabulary") else None
    link = get_link(meta["link"]["name"]).from_dict(meta["link"])
    return Network(layers=layers, r=np.array(arrays[f"{prefix}r"], dtype=np.float64),
                   gamma0=float(meta["gamma0"]), c0=float(meta["c0"]),
                   hyper=Hyperparameters(**meta["hyper"]), link=link, vocabulary=vocab)


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, Hyperparameters):
        return {"a0": v.a0, "b0": v.b0, "e0": v.e0, "f0": v.f0}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "to_dict"):
        return v.to_dict()
    return None  # not representable (a Generator, a callback): dropped


@dataclass(frozen=True)
class ModelFile:
    """What :func:`read_model` returns: the content of one model file.

    Attributes
    ----------
    kind : str
        What the file holds (``"GBN"`` for a fitted estimator, ``"Network"``
        for a bare network); the writer's choice, not interpreted here.
    networks : list of Network
        The stored networks, in order.
    fields : dict
        The other JSON entries the writer stored (for a GBN: ``params`` and
        ``fitted``).
    """

    kind: str
    networks: List[Network]
    fields: Dict[str, Any]


def write_model(path: Union[str, os.PathLike], networks: Sequence[Network], *, kind: str,
                fields: Optional[Dict[str, Any]] = None) -> None:
    """Write networks and a dict of plain values to one ``.npz`` file (no pickle).

    Parameters
    ----------
    path : str or path-like
        The file to write.
    networks : sequence of Network
        Stored as arrays (every Phi^(t), r, the vocabulary) plus JSON
        metadata.
    kind : str
        What the file holds, returned by :func:`read_model` as ``kind``.
    fields : dict, optional
        More JSON entries (str keys).  Values that JSON cannot hold (a
        ``Generator``, a callable) are stored as ``None``; objects with a
        ``to_dict`` method (a Link) and Hyperparameters as their dicts; numpy
        scalars as Python numbers and tuples as lists.
    """
    arrays: dict = {}
    meta: dict = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                  "pygbn_version": __version__, "kind": str(kind)}
    for key, value in (fields or {}).items():
        if key in meta or key == "networks":
            raise ValueError(f"fields must not redefine the reserved entry {key!r}")
        meta[key] = _jsonable(value)
    meta["networks"] = [_network_meta(n, f"net{d}_", arrays) for d, n in enumerate(networks)]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    with open(os.fspath(path), "wb") as f:
        np.savez_compressed(f, **arrays)


def read_model(path: Union[str, os.PathLike]) -> ModelFile:
    """Read a file written by :func:`write_model`; never unpickles.

    Reads every format version up to :data:`FORMAT_VERSION` (version 1 is
    the only one so far).

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a pygbn model (corrupted, foreign or from a newer
        format version).
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such model file: {path!r}")
    try:
        with np.load(path, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError) as exc:
        raise ValueError(f"{path!r} is not a pygbn model file (cannot read it as .npz: {exc})") from None
    if "__meta__" not in arrays:
        raise ValueError(f"{path!r} is not a pygbn model file (no __meta__ entry)")
    try:
        meta = json.loads(arrays["__meta__"].tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path!r} has corrupted metadata: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        raise ValueError(f"{path!r} is not a pygbn model file (format {meta.get('format')!r})"
                         if isinstance(meta, dict) else f"{path!r} is not a pygbn model file")
    version = meta.get("format_version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise ValueError(f"{path!r} has model format version {version!r}; this pygbn reads "
                         f"versions up to {FORMAT_VERSION} (upgrade pygbn)")
    try:
        nets = [_network_from(m, f"net{d}_", arrays) for d, m in enumerate(meta["networks"])]
        kind = meta["kind"]
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise ValueError(f"{path!r} is an incomplete or corrupted pygbn model file ({exc!r})") from None
    fields = {k: v for k, v in meta.items()
              if k not in ("format", "format_version", "pygbn_version", "kind", "networks")}
    return ModelFile(kind=kind, networks=nets, fields=fields)
