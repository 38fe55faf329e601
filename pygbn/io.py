"""Save and load fitted models without pickle.

A model file is one ``.npz`` archive (written with ``allow_pickle=False``):
the arrays (every Phi^(t), r, the vocabulary) are stored as plain numpy
arrays, and everything else as JSON in the ``__meta__`` entry, which carries
a format name and version.  Floats go through JSON's shortest round-trip
representation, so a saved model loads back bit for bit.
"""
from __future__ import annotations

import json
import os
import zipfile
from typing import Union

import numpy as np

from pygbn.model.layer import Layer
from pygbn.model.links import get_link
from pygbn.model.network import Hyperparameters, Network

__all__ = ["save", "load", "FORMAT_NAME", "FORMAT_VERSION"]

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


def save(obj, path: Union[str, os.PathLike]) -> None:
    """Save a fitted :class:`~pygbn.GBN` or a :class:`~pygbn.model.Network`.

    Parameters that cannot be stored as data (a ``Generator`` as
    ``random_state``, a ``callback``) are saved as ``None``.
    """
    from pygbn.estimator import GBN

    arrays: dict = {}
    meta: dict = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION}
    try:
        from pygbn import __version__
        meta["pygbn_version"] = __version__
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, GBN):
        obj._check_fitted()
        meta["kind"] = "GBN"
        meta["params"] = {k: _jsonable(v) for k, v in obj.get_params().items()}
        fitted = {"widths_": list(obj.widths_), "n_features_in_": int(obj.n_features_in_),
                  "seconds_per_iteration_": [float(x) for x in obj.seconds_per_iteration_],
                  "method_": obj.method_}
        if hasattr(obj, "perplexity_"):
            fitted["perplexity_"] = [float(x) for x in obj.perplexity_]
        meta["fitted"] = fitted
        meta["networks"] = [_network_meta(n, f"net{d}_", arrays) for d, n in enumerate(obj.networks_)]
    elif isinstance(obj, Network):
        meta["kind"] = "Network"
        meta["networks"] = [_network_meta(obj, "net0_", arrays)]
    else:
        raise ValueError(f"can only save a fitted GBN or a Network, got {type(obj).__name__}")
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    path = os.fspath(path)
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def load(path: Union[str, os.PathLike]):
    """Load a model saved by :func:`save` (or ``GBN.save``); never unpickles.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    ValueError
        If the file is not a pygbn model (corrupted, foreign or from a newer
        format version).
    """
    from pygbn.estimator import GBN

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
        if meta.get("kind") == "Network":
            return nets[0]
        if meta.get("kind") != "GBN":
            raise ValueError(f"unknown model kind {meta.get('kind')!r}")
        params = dict(meta["params"])
        for k in ("burn_in", "transform_iter", "eta", "n_collect"):
            if isinstance(params.get(k), list):
                params[k] = tuple(params[k])
        if isinstance(params.get("link"), dict):
            params["link"] = get_link(params["link"]["name"]).from_dict(params["link"])
        model = GBN(**params)
        f = meta["fitted"]
        model.networks_ = nets
        model.widths_ = list(f["widths_"])
        model.n_features_in_ = int(f["n_features_in_"])
        model.seconds_per_iteration_ = list(f["seconds_per_iteration_"])
        model.method_ = f["method_"]
        if "perplexity_" in f:
            model.perplexity_ = list(f["perplexity_"])
        return model
    except (KeyError, TypeError, IndexError) as exc:
        raise ValueError(f"{path!r} is an incomplete or corrupted pygbn model file ({exc!r})") from None
