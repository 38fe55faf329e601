"""Model files without pickle: networks and a dict of plain values in one ``.npz``.

A model file is one ``.npz`` archive (written with ``allow_pickle=False``):
the arrays of each network (every Phi^(t), r, the vocabulary) are stored as
plain numpy arrays, and everything else as JSON in the ``__meta__`` entry,
which carries a format name and version, the ``kind`` of object and the
writer's own entries.  Floats go through JSON's shortest round-trip
representation, so a saved model loads back bit for bit.  The members are
deflated, except a float array of doubles deflate cannot shrink (a Phi of random
draws), which is stored as is (``np.load`` reads both kinds).

This module knows networks and JSON, not the estimator: :meth:`pygbn.GBN.save`
and :func:`pygbn.load` decide what a fitted GBN stores (its parameters and
fitted attributes) and how it is rebuilt.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import time
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from pygbn._utils import MAX_PARAMETER, MAX_PRIOR_MASS, SIMPLEX_TOLERANCE, replacing
from pygbn._version import __version__
from pygbn.model.layer import Layer, check_simplex
from pygbn.model.links import get_link
from pygbn.model.network import Hyperparameters, Network

__all__ = ["write_model", "read_model", "ModelFile", "check_phi", "FORMAT_NAME", "FORMAT_VERSION",
           "MAX_META_BYTES", "MAX_META_DEPTH", "SIMPLEX_TOLERANCE", "MAX_PARAMETER", "MAX_PRIOR_MASS"]

FORMAT_NAME = "pygbn-model"
FORMAT_VERSION = 1
#: largest metadata (JSON bytes) :func:`read_model` reads
MAX_META_BYTES = 1 << 22
#: deepest nesting of JSON arrays and objects :func:`read_model` parses
MAX_META_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


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


class _Bad(Exception):
    """A problem with a model file's content (turned into one ValueError by :func:`read_model`)."""


def _need(ok: bool, msg: str) -> None:
    if not ok:
        raise _Bad(msg)


def _array(arrays: dict, key: str, ndim: int, kind: str = "f") -> np.ndarray:
    _need(key in arrays, f"array {key!r} is missing")
    a = arrays[key]
    _need(a.ndim == ndim and a.dtype.kind in kind,
          f"array {key!r} must be {ndim}-D of kind {kind!r}, got shape {a.shape} and dtype {a.dtype}")
    return a


def check_phi(phi: np.ndarray, what: str) -> None:
    """Raise ValueError unless every entry of ``phi`` is finite and nonnegative and
    every column sums to 1 within :data:`SIMPLEX_TOLERANCE` (paper eq:Phi)."""
    check_simplex(np.asarray(phi, dtype=np.float64), what)


def _network_from(meta, prefix: str, arrays: dict) -> Network:
    """The network a file's metadata ``meta`` and arrays describe.

    The file's structure is checked here (JSON types, the arrays the metadata names, their
    dimensions, kinds and sizes); the values (Phi on the simplex, shapes that chain,
    parameter ranges, the prior mass) by Layer and :meth:`Network.check`, each once,
    their messages prefixed with the network's place in the file.
    """
    where = f"network {prefix[3:-1]}"
    _need(isinstance(meta, dict), f"{where}: the metadata must be an object, got {type(meta).__name__}")
    layers_meta = meta.get("layers")
    _need(isinstance(layers_meta, list) and len(layers_meta) > 0, f"{where}: 'layers' must be a non-empty list")
    _need(meta.get("depth") == len(layers_meta) and not isinstance(meta.get("depth"), bool),
          f"{where}: depth {meta.get('depth')!r} does not match its {len(layers_meta)} layers")
    # the archive's own arrays (read for this call alone): no second copy of a large Phi
    phis = [_array(arrays, f"{prefix}phi{t}", 2) for t in range(1, len(layers_meta) + 1)]
    r = _array(arrays, f"{prefix}r", 1)
    vocab = None
    has_vocab = meta.get("vocabulary")
    _need(isinstance(has_vocab, bool), f"{where}: 'vocabulary' must be true or false, got {has_vocab!r}")
    if has_vocab:
        words = _array(arrays, f"{prefix}vocabulary", 1, kind="U")
        _need(words.size == phis[0].shape[0], f"{where}: the vocabulary has {words.size} terms but Phi^(1) "
              f"has {phis[0].shape[0]} rows")
        vocab = [str(v) for v in words]
    hyper = meta.get("hyper")
    _need(isinstance(hyper, dict), f"{where}: 'hyper' must be an object with keys among a0, b0, e0, f0, "
          f"got {hyper!r}")
    link = _link_from(meta.get("link"), where)
    layers = []
    for t, (lm, phi) in enumerate(zip(layers_meta, phis), start=1):
        _need(isinstance(lm, dict), f"{where}: layer {t} must be an object")
        try:
            layers.append(Layer(phi=phi, eta=lm.get("eta"), c_median=lm.get("c_median")))
        except ValueError as exc:   # "eta must be ...": named as Network.check names it
            raise _Bad(f"{where}: layer {t}'s {exc}") from None
    try:
        return Network._strict(layers=layers, r=r, gamma0=meta.get("gamma0"), c0=meta.get("c0"),
                               hyper=hyper, link=link, vocabulary=vocab)
    except ValueError as exc:
        raise _Bad(f"{where}: {exc}") from None


def _link_from(d, where: str):
    _need(isinstance(d, dict) and isinstance(d.get("name"), str), f"{where}: 'link' must be an object "
          f"with a name, got {d!r}")
    try:
        link = get_link(d["name"])
    except ValueError as exc:
        raise _Bad(f"{where}: {exc}") from None
    expected = link.to_dict()
    _need(set(d) == set(expected), f"{where}: link {d['name']!r} must have the entries {sorted(expected)}, "
          f"got {sorted(d)}")
    try:
        return link.from_dict(d)     # its parameters checked by the link's constructor
    except ValueError as exc:
        raise _Bad(f"{where}: the link's {exc}") from None


def _bracket_depth(text: str) -> int:
    """Deepest nesting of ``[`` and ``{`` in JSON text (brackets inside strings ignored)."""
    depth = deepest = 0
    for ch in re.findall(r"[\[\]{}]", _JSON_STRING.sub("", text)):
        depth += 1 if ch in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


#: the JSON object a ``SeedSequence`` is stored as (:func:`seed_sequence_from_json` reads it)
SEED_SEQUENCE_KEY = "SeedSequence"


def _jsonable(v):
    """``v`` as JSON values, or TypeError naming what JSON cannot hold.

    numpy scalars and arrays become Python numbers and lists, tuples lists,
    a ``SeedSequence`` ``{"SeedSequence": {entropy, spawn_key, pool_size}}``,
    Hyperparameters and objects with ``to_dict`` (a Link) their dicts; what
    holds state that is not data (a ``Generator``, a ``BitGenerator``, a
    callable) becomes None.
    """
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.ndarray):
        return _jsonable(v.tolist())
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, Hyperparameters):
        return {"a0": v.a0, "b0": v.b0, "e0": v.e0, "f0": v.f0}
    if isinstance(v, np.random.SeedSequence):
        return {SEED_SEQUENCE_KEY: {"entropy": _jsonable(v.entropy),
                                    "spawn_key": [int(k) for k in v.spawn_key],
                                    "pool_size": int(v.pool_size)}}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if hasattr(v, "to_dict"):
        return v.to_dict()
    if isinstance(v, (np.random.Generator, np.random.BitGenerator)) or callable(v):
        return None  # state that is not data: dropped (documented)
    raise TypeError(f"a model file cannot hold a value of type {type(v).__name__}: {v!r}")


def _natural(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def seed_sequence_from_json(value) -> np.random.SeedSequence:
    """The ``SeedSequence`` that :func:`write_model` stored as ``value`` (see
    SEED_SEQUENCE_KEY); ValueError unless ``value`` is such an object."""
    inner = value.get(SEED_SEQUENCE_KEY) if isinstance(value, dict) and len(value) == 1 else None
    ok = isinstance(inner, dict) and set(inner) == {"entropy", "spawn_key", "pool_size"}
    if ok:
        entropy, key, pool = inner["entropy"], inner["spawn_key"], inner["pool_size"]
        ok = ((_natural(entropy) or (isinstance(entropy, list) and entropy and all(map(_natural, entropy))))
              and isinstance(key, list) and all(map(_natural, key)) and _natural(pool) and pool >= 4)
    if not ok:
        raise ValueError(f"a stored random_state must be an int, a list of ints, null or "
                         f"{{{SEED_SEQUENCE_KEY!r}: {{entropy, spawn_key, pool_size}}}}, got {value!r}")
    return np.random.SeedSequence(entropy, spawn_key=tuple(key), pool_size=pool)


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

    The file appears whole or not at all (:func:`pygbn._utils.replacing`): it
    is written to a temporary file in the same folder and moved onto ``path``
    (``os.replace``; an existing file keeps its permission bits); on any
    error or interruption the temporary file is removed.  A ``path`` that is
    a symbolic link or not a regular file is written through instead.

    Parameters
    ----------
    path : str, bytes or path-like
        The name of the file to write (not a file object).
    networks : sequence of Network
        Stored as arrays (every Phi^(t), r, the vocabulary) plus JSON
        metadata.  Each must pass :meth:`Network.check` (every Phi^(t) with
        its columns on the simplex, r and the parameters in range), as
        :func:`read_model` requires: checked here too, as a network may have
        been changed since it was built.
    kind : str
        What the file holds, returned by :func:`read_model` as ``kind``.
    fields : dict, optional
        More JSON entries (str keys).  numpy scalars and arrays are stored as
        Python numbers and lists, tuples as lists, objects with a ``to_dict``
        method (a Link) and Hyperparameters as their dicts, a
        ``SeedSequence`` as an object (:func:`seed_sequence_from_json`); a
        ``Generator``, a ``BitGenerator`` or a callable (state, not data) as
        ``None``.

    Raises
    ------
    ValueError
        If a network fails :meth:`Network.check` (the message names the
        network), a vocabulary term ends in a NUL character (numpy's str
        arrays, in which the terms are stored, would drop it), or
        ``networks`` is empty (nothing is written).
    TypeError
        If ``fields`` holds a value of another type (nothing is written).
    FileNotFoundError
        If the folder of ``path`` does not exist.
    IsADirectoryError
        If ``path`` is a folder, or names none (empty, or ending in a separator).
    TypeError
        If ``path`` is not a file name (a file object, say).
    """
    networks = list(networks)
    if not networks:
        raise ValueError("a model file needs at least one network")
    for d, net in enumerate(networks):
        try:
            net.check()   # what read_model will check: a network changed since it was built too
        except ValueError as exc:
            raise ValueError(f"network {d}: {exc}") from None
        # the terms are stored as a numpy str array, whose fixed-width entries drop trailing NULs
        bad = next((t for t in net.vocabulary or () if str(t).endswith("\0")), None)
        if bad is not None:
            raise ValueError(f"network {d}: the vocabulary term {bad!r} ends in a NUL character, which a "
                             f"model file cannot store (numpy str arrays drop trailing NULs)")
    arrays: dict = {}
    meta: dict = {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                  "pygbn_version": __version__, "kind": str(kind)}
    for key, value in (fields or {}).items():
        if key in meta or key == "networks":
            raise ValueError(f"fields must not redefine the reserved entry {key!r}")
        meta[key] = _jsonable(value)
    meta["networks"] = [_network_meta(n, f"net{d}_", arrays) for d, n in enumerate(networks)]
    arrays["__meta__"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    path = os.fsdecode(_file_name(path))
    if not os.path.basename(path):      # "" or "folder/": no file name to write to
        raise IsADirectoryError(errno.EISDIR, "cannot write the model file: path names no file "
                                              "(it is empty or ends in a separator)", path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(errno.ENOENT, f"cannot write the model file: no folder {folder!r}", path)
    with replacing(path) as tmp, open(tmp, "wb") as f:    # whole or not at all
        _write_npz(f, arrays)


def _file_name(path) -> Union[str, bytes]:
    """``os.fspath(path)``, or TypeError naming ``path`` (a file object, say: model files
    are read and written by name, written whole through a temporary file beside them)."""
    try:
        return os.fspath(path)
    except TypeError:
        raise TypeError(f"path must be a file name (str, bytes or os.PathLike), got "
                        f"{type(path).__name__}: a model file is read and written by its name "
                        f"(written whole, through a temporary file beside it), not through a "
                        f"file object") from None


def _write_npz(f, arrays: Dict[str, np.ndarray]) -> None:
    """The ``.npz`` archive of ``arrays`` that ``np.savez_compressed`` writes, except that a
    float array of random-looking doubles is stored, not deflated (:func:`_deflates`).
    ``np.load`` reads either kind of member, and the files of earlier versions (every
    member deflated) read as before."""
    with zipfile.ZipFile(f, mode="w", compression=zipfile.ZIP_DEFLATED, allowZip64=True) as zf:
        for key, a in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=time.localtime()[:6])
            info.compress_type = zipfile.ZIP_DEFLATED if _deflates(a) else zipfile.ZIP_STORED
            with zf.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, a, allow_pickle=False)


#: a float array of fewer bytes is always deflated (:func:`_deflates`)
_PROBE_MIN_BYTES = 1 << 20


def _deflates(a: np.ndarray) -> bool:
    """Whether deflating ``a`` pays: deflate runs at about 16 MiB/s on doubles it cannot
    shrink (a Phi of gamma draws gains 2%: 18-44 s for 763 MiB), and at 50-180 MiB/s on
    a fitted Phi, a posterior mean that shrinks to 3-13%.  A float array of at least
    ``_PROBE_MIN_BYTES`` is deflated if 8 slices of 64 KiB spread through it shrink by 10%."""
    if a.dtype.kind != "f" or a.nbytes < _PROBE_MIN_BYTES:
        return True
    raw = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
    step, width = raw.size // 8, 1 << 16
    sample = b"".join(raw[i * step:i * step + width].tobytes() for i in range(8))
    return len(zlib.compress(sample)) < 0.9 * len(sample)


def _read_archive(path: str) -> dict:
    """Every array of the ``.npz`` at ``path`` (metadata size checked before it is read)."""
    # the file is opened here, not by np.load: np.load(path) leaves it open when the zip
    # is damaged (its NpzFile raises after np.load has given up closing the file)
    with contextlib.ExitStack() as stack:
        try:
            fh = stack.enter_context(open(path, "rb"))
            z = np.load(fh, allow_pickle=False)
        except Exception as exc:  # a corrupted archive raises many kinds of errors
            if "pickle" in str(exc):  # numpy's guess for what is neither .npz nor .npy
                raise _Bad("it is not a .npz archive (pygbn never reads pickles)") from None
            raise _Bad(f"cannot read it as .npz: {_short(exc)}") from None
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise _Bad("it is a single array, not a .npz archive")
        return _read_npz(z)


def _read_npz(z) -> dict:
    """:func:`_read_archive`'s reading of an open ``NpzFile``."""
    with z:
        try:
            info = {i.filename: i.file_size for i in z.zip.infolist()}
            _need(info.get("__meta__.npy", 0) <= MAX_META_BYTES + 1024,
                  f"its metadata is larger than {MAX_META_BYTES} bytes")
            return {k: z[k] for k in z.files}
        except _Bad:
            raise
        except ValueError as exc:
            if "allow_pickle" in str(exc):
                raise _Bad("it holds object arrays, which pygbn never writes (they would need "
                           "unpickling, which pygbn refuses)") from None
            raise _Bad(f"cannot read it as .npz: {_short(exc)}") from None
        except Exception as exc:
            raise _Bad(f"cannot read it as .npz: {_short(exc)}") from None


def _short(exc: BaseException) -> str:
    return (" ".join(str(exc).split()) or type(exc).__name__)[:200]


def _read_meta(arrays: dict) -> dict:
    _need("__meta__" in arrays, "no __meta__ entry")
    raw = arrays["__meta__"]
    _need(raw.ndim == 1 and raw.dtype == np.uint8, "the __meta__ entry is not JSON bytes")
    _need(raw.size <= MAX_META_BYTES, f"its metadata is larger than {MAX_META_BYTES} bytes")
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Bad(f"its metadata is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    _need(_bracket_depth(text) <= MAX_META_DEPTH, f"its metadata nests deeper than {MAX_META_DEPTH} levels")
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _Bad(f"its metadata is not valid JSON ({_short(exc)})") from None
    _need(isinstance(meta, dict) and meta.get("format") == FORMAT_NAME,
          f"not a pygbn model (format {meta.get('format') if isinstance(meta, dict) else None!r})")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION
        raise _Bad(f"it has model format version {version!r}; this pygbn reads versions 1 to "
                   f"{FORMAT_VERSION} " + ("(a newer version needs a newer pygbn)" if newer else
                                          "(format versions are integers from 1: no pygbn wrote this)"))
    _need(isinstance(meta.get("kind"), str), f"'kind' must be a string, got {meta.get('kind')!r}")
    nets = meta.get("networks")
    _need(isinstance(nets, list) and len(nets) > 0, f"'networks' must be a non-empty list, got {nets!r}"[:200])
    return meta


def read_model(path: Union[str, os.PathLike]) -> ModelFile:
    """Read a file written by :func:`write_model`; never unpickles.

    Reads every format version up to :data:`FORMAT_VERSION` (version 1 is
    the only one so far).  Everything is validated before a network is
    built: the archive (no object arrays), the metadata (at most
    :data:`MAX_META_BYTES` bytes of JSON nested at most
    :data:`MAX_META_DEPTH` levels, checked before it is parsed), each
    network's entries against its arrays (depth, shapes that chain, the
    vocabulary's length; eta, gamma0, c0, the hyper-parameters and the
    link's parameters positive and at most :data:`MAX_PARAMETER`, c_median
    positive and finite, r
    nonnegative and at most that, the prior's expected count per sample
    ``sum(r) / prod(c_median)`` at most :data:`MAX_PRIOR_MASS`, Phi columns
    on the simplex) and no array the metadata does not describe.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    TypeError
        If ``path`` is not a file name (str, bytes or path-like; a file
        object, say).
    ValueError
        For anything else: one message saying what is wrong (a corrupted,
        foreign or inconsistent file, or one from a newer format version).
    """
    path = _file_name(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"no such model file: {path!r}")
    try:
        if os.path.isdir(path):
            raise _Bad("it is a folder")
        arrays = _read_archive(path)
        meta = _read_meta(arrays)
        nets = [_network_from(m, f"net{d}_", arrays) for d, m in enumerate(meta["networks"])]
        expected = {"__meta__"} | {f"net{d}_{k}" for d, n in enumerate(nets)
                                   for k in [f"phi{t}" for t in range(1, n.depth + 1)] + ["r"]
                                   + (["vocabulary"] if n.vocabulary is not None else [])}
        extra = sorted(set(arrays) - expected)
        _need(not extra, f"it holds arrays its metadata does not describe: {extra[:5]}")
    except _Bad as exc:
        raise ValueError(f"{path!r} is not a pygbn model file, or a damaged one: {exc}") from None
    fields = {k: v for k, v in meta.items()
              if k not in ("format", "format_version", "pygbn_version", "kind", "networks")}
    return ModelFile(kind=meta["kind"], networks=nets, fields=fields)
