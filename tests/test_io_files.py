"""Model files: every failure of ``load`` is one clear ValueError; writes are atomic.

The fuzz tests mutate saved files (bytes of the archive, JSON metadata,
arrays) and assert that ``load`` either raises ValueError or returns a
model whose ``transform`` works.
"""
import copy
import gc
import json
import os
import re
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pygbn
from pygbn import GBN, io
from pygbn.model import Layer, Network

QUICK = dict(burn_in=(4, 3), n_collect=3, transform_iter=(1, 2))
FUZZ = settings(derandomize=True, max_examples=250, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class _Files(dict):
    """Saved files by name (a short repr: hypothesis prints its arguments)."""

    def __repr__(self):
        return f"<model files {sorted(self)}>"


def _counts(n=40, V=10, seed=0):
    rng = np.random.default_rng(seed)
    return rng.poisson(1.5, size=(n, V))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Saved model files: a GBN with vocabulary and perplexity_, a PRG GBN, a bare Network."""
    d = tmp_path_factory.mktemp("models")
    X = _counts()
    Xtr, Xho = pygbn.split_tokens(X, 0.5, random_state=0)
    m = GBN(n_components=4, n_layers=2, min_width=0, random_state=1, **QUICK)
    m.fit(Xtr, heldout=Xho, vocabulary=[f"t{i}" for i in range(X.shape[1])])
    m.save(d / "gbn.npz")
    GBN(link="prg", n_components=3, n_layers=1, random_state=2, **QUICK).fit(X * 0.5).save(d / "prg.npz")
    pygbn.save(m.network_, d / "net.npz")
    return _Files({name: (d / f"{name}.npz").read_bytes() for name in ("gbn", "prg", "net")})


def _arrays(data: bytes, tmp_path):
    p = tmp_path / "orig.npz"
    p.write_bytes(data)
    with np.load(p, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(arrays.pop("__meta__").tobytes())
    return meta, arrays


def _write(tmp_path, meta, arrays, name="mutated.npz", raw_meta=None):
    p = tmp_path / name
    text = raw_meta if raw_meta is not None else json.dumps(meta)
    np.savez(p, __meta__=np.frombuffer(text.encode(), dtype=np.uint8), **arrays)
    return p


def _loads_or_value_error(path):
    """``load(path)`` raises ValueError, or gives a model whose transform works."""
    try:
        model = pygbn.load(path)
    except ValueError as exc:
        msg = str(exc)
        assert "allow_pickle" not in msg and "\n" not in msg and "pygbn model file" in msg, msg
        return None
    if isinstance(model, Network):
        model = GBN.from_networks(model, transform_iter=(1, 2), random_state=0)
    V = model.n_features_in_
    X = np.ones((3, V)) if model.network_.link.name != "prg" else np.full((3, V), 0.5)
    feats = model.transform(X)
    assert feats.shape == (3, model.network_.layers[0].width)
    assert np.isfinite(feats).all()
    return model


def test_round_trip_still_exact(files, tmp_path):
    for name, data in files.items():
        p = tmp_path / f"{name}.npz"
        p.write_bytes(data)
        assert _loads_or_value_error(p) is not None


# ----------------------------------------------------------- named failures
def _mutated(files, tmp_path, name, change):
    meta, arrays = _arrays(files[name], tmp_path)
    change(meta, arrays)
    return _write(tmp_path, meta, arrays)


def _set(path, value):
    def change(meta, arrays):
        obj = meta
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return change


CASES = [
    ("gbn", _set(("networks",), []), "'networks' must be a non-empty list"),
    ("gbn", _set(("networks", 0, "layers", 0, "eta"), -0.5), "layer 1's eta must be a finite positive"),
    ("gbn", _set(("networks", 1, "layers", 1, "c_median"), float("nan")), "c_median"),
    ("gbn", _set(("networks", 0, "gamma0"), 0), "gamma0"),
    ("gbn", _set(("networks", 0, "c0"), "1.0"), "c0"),
    ("gbn", _set(("networks", 0, "hyper", "a0"), -1), "a0"),
    ("gbn", _set(("networks", 0, "hyper", "zz"), 1), "hyper"),
    ("gbn", _set(("networks", 0, "depth"), 3), "depth 3 does not match"),
    ("gbn", _set(("networks", 0, "link"), {"name": "gaussian"}), "link"),
    ("gbn", _set(("networks", 0, "vocabulary"), "yes"), "vocabulary"),
    ("prg", _set(("networks", 0, "link", "a_median"), -2.0), "a_median"),
    ("gbn", _set(("fitted", "n_features_in_"), 11), "n_features_in_"),
    ("gbn", _set(("fitted", "widths_"), [99]), "widths_"),
    ("gbn", _set(("fitted", "method_"), "magic"), "method_"),
    ("gbn", _set(("fitted", "perplexity_"), [1.0, 2.0, 3.0]), "perplexity_"),
    ("gbn", _set(("params", "n_components"), -3), "n_components"),
    ("gbn", _set(("params", "bogus"), 1), "params"),
    ("gbn", _set(("params", "link"), "bernoulli"), "link"),
    ("gbn", _set(("kind",), "Forest"), "kind 'Forest'"),
    ("net", _set(("fitted",), {}), "kind 'Network'"),
    ("gbn", _set(("format_version",), 2), "version 2.*needs a newer pygbn"),
    ("gbn", _set(("format_version",), True), "version True.*no pygbn wrote this"),
    ("gbn", _set(("format_version",), 0), "version 0.*no pygbn wrote this"),
    ("gbn", _set(("format_version",), "1"), "version '1'.*no pygbn wrote this"),
    ("gbn", lambda m, a: a.update(net0_vocabulary=a["net0_vocabulary"][:-1]), "vocabulary has 9 terms"),
    ("gbn", lambda m, a: a.update(net1_phi1=a["net1_phi1"] * 1.5), "simplex"),
    ("gbn", lambda m, a: a.update(net1_phi2=a["net1_phi2"][:-1]), r"Phi\^\(2\) has"),
    ("gbn", lambda m, a: a.update(net0_phi1=a["net0_phi1"].astype(np.int64)), "kind"),
    ("gbn", lambda m, a: a.update(net0_r=-a["net0_r"]), "r must be finite and nonnegative"),
    ("gbn", lambda m, a: a.update(net0_r=a["net0_r"][:1]), "r has 1 entries"),
    ("gbn", lambda m, a: a.pop("net1_phi2"), "'net1_phi2' is missing"),
    ("gbn", lambda m, a: a.update(net5_phi1=np.ones((2, 2))), "does not describe"),
    ("gbn", lambda m, a: a.update(net0_phi1=np.array([[1.0], [np.nan]])), "non-finite|rows"),
]


@pytest.mark.parametrize("name,change,match", CASES)
def test_load_names_what_is_wrong(files, tmp_path, name, change, match):
    path = _mutated(files, tmp_path, name, change)
    with pytest.raises(ValueError, match=match):
        pygbn.load(path)
    assert _loads_or_value_error(path) is None


def test_deep_or_huge_metadata_is_refused_before_parsing(files, tmp_path):
    meta, arrays = _arrays(files["gbn"], tmp_path)
    deep = json.dumps(meta)[:-1] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(ValueError, match="nests deeper than 32"):
        pygbn.load(_write(tmp_path, meta, arrays, raw_meta=deep))
    # brackets inside strings do not count
    meta["note"] = "[" * 100
    assert isinstance(pygbn.load(_write(tmp_path, meta, arrays)), GBN)
    meta["note"] = "x" * (io.MAX_META_BYTES + 10)
    with pytest.raises(ValueError, match="larger than"):
        pygbn.load(_write(tmp_path, meta, arrays))
    with pytest.raises(ValueError, match="not valid JSON"):
        pygbn.load(_write(tmp_path, meta, arrays, raw_meta='{"format": "pygbn-model", '))


def test_object_arrays_and_other_files(files, tmp_path):
    meta, arrays = _arrays(files["gbn"], tmp_path)
    p = tmp_path / "objects.npz"
    np.savez(p, __meta__=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
             **{**arrays, "net0_r": np.array([{"a": 1}, None], dtype=object)})
    with pytest.raises(ValueError, match="object arrays, which pygbn never writes") as info:
        pygbn.load(p)
    assert "allow_pickle" not in str(info.value)
    npy = tmp_path / "array.npy"
    np.save(npy, np.arange(3))
    with pytest.raises(ValueError, match="single array"):
        pygbn.load(npy)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"\x80\x04 not a pickle either")
    with pytest.raises(ValueError, match="not a .npz archive") as info:
        pygbn.load(junk)
    assert "allow_pickle" not in str(info.value)
    with pytest.raises(ValueError, match="folder"):
        pygbn.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        pygbn.load(tmp_path / "absent.npz")


def test_writes_are_atomic(files, tmp_path, monkeypatch):
    model = pygbn.load(_write(tmp_path, *_arrays(files["gbn"], tmp_path)))
    target = tmp_path / "out" / "model.npz"
    with pytest.raises(FileNotFoundError):
        model.save(target)
    target.parent.mkdir()
    model.save(target)
    before = target.read_bytes()
    assert os.listdir(target.parent) == ["model.npz"]

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(np.lib.format, "write_array", interrupted)   # the archive half written
    with pytest.raises(KeyboardInterrupt):
        model.save(target)
    with pytest.raises(KeyboardInterrupt):
        model.save(target.parent / "other.npz")
    monkeypatch.undo()
    assert os.listdir(target.parent) == ["model.npz"] and target.read_bytes() == before


@pytest.mark.parametrize("params", [
    dict(eta=np.array([0.1, 0.05]), burn_in=np.array([4, 3]), n_collect=np.int64(3)),
    dict(prune=np.True_, check=np.False_, verbose=np.False_),
    dict(random_state=np.random.SeedSequence(7, spawn_key=(2, 5))),
    dict(random_state=np.array([3, 9])),
    dict(hyperparameters={"a0": np.float32(0.5), "e0": np.int64(2)}),
])
def test_numpy_valued_parameters_round_trip(tmp_path, params):
    """Parameters given as numpy values (arrays, numpy bools and scalars, a SeedSequence)
    come back with the same values, and the loaded model draws what the saved one does."""
    X = _counts()
    kw = dict(n_components=4, n_layers=2, min_width=0, random_state=1, **QUICK)
    m = GBN(**{**kw, **params}).fit(X)
    m.save(tmp_path / "m.npz")
    back = pygbn.load(tmp_path / "m.npz")
    for k, v in params.items():
        got = back.get_params()[k]
        if isinstance(v, np.random.SeedSequence):
            assert isinstance(got, np.random.SeedSequence)
            assert (got.entropy, got.spawn_key, got.pool_size) == (v.entropy, v.spawn_key, v.pool_size)
        elif isinstance(v, dict):
            assert {a: float(b) for a, b in v.items()} == got
        else:
            np.testing.assert_array_equal(np.asarray(got), np.asarray(v))
    np.testing.assert_array_equal(back.transform(X), m.transform(X))


def test_state_parameters_are_dropped_and_others_refused(tmp_path):
    X = _counts()
    m = GBN(n_components=4, n_layers=1, random_state=np.random.PCG64(0), callback=lambda info: None,
            **QUICK).fit(X)
    m.save(tmp_path / "m.npz")
    back = pygbn.load(tmp_path / "m.npz")
    assert back.random_state is None and back.callback is None
    with pytest.raises(TypeError, match="cannot hold a value of type object"):
        io.write_model(tmp_path / "x.npz", m.networks_, kind="GBN", fields={"thing": object()})
    assert not (tmp_path / "x.npz").exists()
    meta, arrays = _arrays((tmp_path / "m.npz").read_bytes(), tmp_path)
    meta["params"]["random_state"] = {"SeedSequence": {"entropy": -1, "spawn_key": [], "pool_size": 4}}
    with pytest.raises(ValueError, match="stored random_state"):
        pygbn.load(_write(tmp_path, meta, arrays))


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_written_files_get_the_usual_permissions(files, tmp_path):
    """A new model file gets 0o666 less the umask (as open() gives), an existing one keeps
    its mode; a missing folder is named."""
    net = pygbn.load(_write_bytes(tmp_path, files["net"]))
    mask = os.umask(0o027)
    try:
        pygbn.save(net, tmp_path / "new.npz")
    finally:
        os.umask(mask)
    assert os.stat(tmp_path / "new.npz").st_mode & 0o777 == 0o640
    os.chmod(tmp_path / "new.npz", 0o604)
    pygbn.save(net, tmp_path / "new.npz")
    assert os.stat(tmp_path / "new.npz").st_mode & 0o777 == 0o604
    with pytest.raises(FileNotFoundError, match="no folder"):
        pygbn.save(net, tmp_path / "missing" / "m.npz")
    pygbn.save(net, os.fsencode(tmp_path / "bytes.npz"))
    assert pygbn.load(tmp_path / "bytes.npz").widths == net.widths


def _write_bytes(tmp_path, data: bytes, name="copy.npz"):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_networks_off_the_simplex_are_not_written(tmp_path):
    net = Network(layers=[Layer(np.full((3, 2), 1 / 3))], r=np.ones(2))
    net.layers[0].phi = np.full((3, 2), 0.5)      # changed after the network was checked
    with pytest.raises(ValueError, match="simplex"):
        pygbn.save(net, tmp_path / "bad.npz")
    assert not os.listdir(tmp_path)


# -------------------------------------------------------------------- fuzz
@FUZZ
@given(name=st.sampled_from(["gbn", "prg", "net"]),
       edits=st.lists(st.tuples(st.integers(0, 10**9), st.integers(0, 255)), min_size=1, max_size=8))
def test_fuzz_archive_bytes(files, tmp_path, name, edits):
    data = bytearray(files[name])
    for pos, value in edits:
        data[pos % len(data)] = value
    p = tmp_path / "bytes.npz"
    p.write_bytes(bytes(data))
    _loads_or_value_error(p)


def test_a_damaged_archive_leaves_no_file_open(files, tmp_path):
    """A zip whose central directory is damaged: np.load(path) raised after giving up
    closing the file, so load left it open (a ResourceWarning when it was collected)."""
    data = bytearray(files["gbn"])
    for pos in range(len(data) - 22, len(data)):     # each byte of the end-of-directory record
        bad = bytearray(data)
        bad[pos] ^= 0xFF
        p = tmp_path / f"bad{pos}.npz"
        p.write_bytes(bytes(bad))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            try:
                pygbn.load(p)
            except ValueError:
                pass
            gc.collect()
        assert [w for w in seen if issubclass(w.category, ResourceWarning)] == [], pos


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.text(max_size=5),
                    st.floats(allow_nan=True, allow_infinity=True), st.just([]), st.just({}),
                    st.just([[[[1]]]]), st.just(1e300), st.just(1e-300), st.just(-1.0))


@FUZZ
@given(name=st.sampled_from(["gbn", "prg", "net"]), data=st.data())
def test_fuzz_metadata(files, tmp_path, name, data):
    meta, arrays = _arrays(files[name], tmp_path)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from([p for p in _paths(meta) if p]))
        parent = meta
        for k in path[:-1]:
            parent = parent[k]
        old = parent[path[-1]]
        op = data.draw(st.sampled_from(["delete", "replace", "scale", "nest"]))
        if op == "delete":
            del parent[path[-1]]
        elif op == "replace":
            parent[path[-1]] = data.draw(_VALUES)
        elif op == "scale" and isinstance(old, (int, float)) and not isinstance(old, bool):
            parent[path[-1]] = old * data.draw(st.sampled_from([-1, 0, 2, 1e-9, 1e9, 1.5]))
        else:
            for _ in range(data.draw(st.integers(1, 40))):
                old = [old]
            parent[path[-1]] = old
    _loads_or_value_error(_write(tmp_path, meta, arrays))


@FUZZ
@given(name=st.sampled_from(["gbn", "prg", "net"]), data=st.data())
def test_fuzz_arrays(files, tmp_path, name, data):
    meta, arrays = _arrays(files[name], tmp_path)
    key = data.draw(st.sampled_from(sorted(arrays)))
    a = arrays[key]
    op = data.draw(st.sampled_from(["drop_row", "transpose", "flatten", "dtype", "nan", "negative",
                                    "scale", "delete", "empty"]))
    if op == "drop_row" and a.shape[0] > 1:
        a = a[:-1]
    elif op == "transpose":
        a = a.T.copy()
    elif op == "flatten":
        a = a.reshape(-1)
    elif op == "dtype":
        dtype = data.draw(st.sampled_from([np.int64, np.float32, np.bool_, str]))
        a = np.zeros(a.shape, dtype=dtype) if a.dtype.kind == "U" else a.astype(dtype)
    elif op in ("nan", "negative") and a.dtype.kind == "f" and a.size:
        a = a.copy()
        a.flat[data.draw(st.integers(0, a.size - 1))] = np.nan if op == "nan" else -0.1
    elif op == "scale" and a.dtype.kind == "f":
        a = a * data.draw(st.sampled_from([0.0, 1 + 1e-9, 1.01, 1e300]))
    elif op == "delete":
        arrays.pop(key)
        a = None
    elif op == "empty":
        a = a[:0]
    if a is not None:
        arrays[key] = a
    _loads_or_value_error(_write(tmp_path, meta, arrays))


def test_a_fit_on_mostly_empty_samples_saves_and_loads(tmp_path):
    """Where most samples are empty their c_j^(2) run up to 1e300, and the median kept for
    the test-time chain passed 1e12: such a fit saved a file that load refused."""
    rng = np.random.default_rng(0)
    Y = rng.poisson(2.0, size=(200, 30))
    Y[:160] = 0
    m = GBN(n_components=4, n_layers=1, random_state=0, burn_in=30, n_collect=10).fit(Y)
    m.save(tmp_path / "m.npz")
    back = pygbn.load(tmp_path / "m.npz")
    assert back.network_.layers[0].c_median == m.network_.layers[0].c_median
    np.testing.assert_array_equal(back.transform(Y[150:]), m.transform(Y[150:]))


def test_reading_a_large_model_holds_one_copy_of_phi(tmp_path):
    """read_model copied every Phi it had just read from the archive: loading a network
    with a 40 MB Phi^(1) peaked above twice its size (1631 MiB for a 763 MiB Phi^(1));
    now the archive's array is the network's.  The model loads back bit for bit."""
    import tracemalloc

    rng = np.random.default_rng(0)
    phi = rng.gamma(0.1, size=(10000, 500))
    phi /= phi.sum(axis=0)
    path = tmp_path / "big.npz"
    io.write_model(path, [Network(layers=[Layer(phi)], r=np.ones(500))], kind="Network")
    tracemalloc.start()
    try:
        net = io.read_model(path).networks[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * phi.nbytes, (peak, phi.nbytes)
    np.testing.assert_array_equal(net.layers[0].phi, phi)
    assert net.layers[0].phi.flags.writeable and net.layers[0].phi.flags.c_contiguous


def test_model_file_through_a_symbolic_link_is_written_through(tmp_path):
    """A model saved to a symbolic link writes the file it points to (as the command line's
    -o files do: one rule, pygbn._utils.replacing), instead of replacing the link by a file."""
    from pygbn._utils import replacing

    net = Network([Layer(np.full((3, 2), 1 / 3))], r=np.ones(2))
    target = tmp_path / "real.npz"
    target.write_bytes(b"old")
    os.symlink(target.name, tmp_path / "link.npz")
    pygbn.save(net, tmp_path / "link.npz")
    assert os.path.islink(tmp_path / "link.npz")
    np.testing.assert_array_equal(pygbn.load(target).layers[0].phi, net.layers[0].phi)
    with pytest.raises(RuntimeError), replacing(str(tmp_path / "new.npz")) as tmp:
        open(tmp, "wb").write(b"half")
        raise RuntimeError("interrupted")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.npz", "real.npz"]


def test_loading_checks_each_phi_once(files, tmp_path, monkeypatch):
    """read_model checked every Phi with its own check_phi (finite, nonnegative, columns on the
    simplex), then Network.check checked it again: each Phi of a loaded file was scanned twice.
    Now the file's structure is read_model's, the values Network.check's, each Phi checked once."""
    from pygbn.model import network as network_module

    seen = []
    real = network_module.check_simplex
    monkeypatch.setattr(network_module, "check_simplex", lambda phi, *a, **k: seen.append(phi.shape) or real(phi, *a, **k))
    monkeypatch.setattr(io, "check_phi", lambda *a, **k: pytest.fail("io.check_phi ran on load"))
    p = tmp_path / "gbn.npz"
    p.write_bytes(files["gbn"])
    model = pygbn.load(p)
    assert seen == [layer.phi.shape for net in model.networks_ for layer in net.layers]


def test_a_loose_phi_in_a_file_is_refused_not_renormalised(files, tmp_path):
    """A Network built in memory divides Phi columns within 1e-4 of the simplex by their sums;
    a model file holds what write_model checked, so read_model refuses them (as before Network
    did the file's checks)."""
    path = _mutated(files, tmp_path, "net", lambda m, a: a.update(net0_phi1=a["net0_phi1"] * (1 + 5e-5)))
    with pytest.raises(ValueError, match=r"network 0: Phi\^\(1\) column 0 sums to 1.00005.*simplex"):
        pygbn.load(path)


def test_phi_errors_name_the_entry(files, tmp_path):
    def change(meta, arrays):
        arrays["net1_phi2"] = arrays["net1_phi2"].copy()
        arrays["net1_phi2"][2, 1] = -0.25
    with pytest.raises(ValueError, match=r"network 1: Phi\^\(2\) must be finite and nonnegative, got a "
                                         r"negative entry -0.25 at \(2, 1\)"):
        pygbn.load(_mutated(files, tmp_path, "gbn", change))
    phi = np.full((3, 2), 1 / 3)
    phi[1, 0] = np.nan
    with pytest.raises(ValueError, match=r"w must be finite and nonnegative, got a non-finite entry nan at \(1, 0\)"):
        io.check_phi(phi, "w")


@pytest.mark.parametrize("entry", [("layers", 0, "eta"), ("layers", 0, "c_median"), ("gamma0",), ("c0",),
                                   ("hyper", "a0")])
def test_an_integer_past_float_range_is_a_value_error(files, tmp_path, entry):
    """JSON holds integers of any length: a 400-digit eta, gamma0, ... made load raise TypeError
    (np.isfinite of a Python int) and Layer(eta=10**400) OverflowError, not ValueError."""
    meta, arrays = _arrays(files["net"], tmp_path)
    _set(("networks", 0) + entry, "BIG")(meta, arrays)
    path = _write(tmp_path, meta, arrays, raw_meta=json.dumps(meta).replace('"BIG"', "1" + "0" * 400))
    with pytest.raises(ValueError, match=entry[-1]):
        pygbn.load(path)
    with pytest.raises(ValueError, match="eta must be a finite positive number"):
        Layer(np.full((3, 2), 1 / 3), eta=10**400)


def test_a_network_changed_after_it_was_built_is_not_written(tmp_path):
    """write_model checked only the Phi's of a network: one whose r, eta or vocabulary had been
    changed after it was built was written, and load refused the file.  It runs Network.check."""
    for change, match in [(lambda n: setattr(n, "r", -n.r), "network 0: r must be finite"),
                          (lambda n: setattr(n.layers[0], "eta", -1.0), "network 0: layer 1's eta"),
                          (lambda n: setattr(n, "vocabulary", ["a"]), "network 0: vocabulary must hold 3")]:
        net = Network(layers=[Layer(np.full((3, 2), 1 / 3))], r=np.ones(2), vocabulary=["a", "b", "c"])
        change(net)
        with pytest.raises(ValueError, match=match):
            pygbn.save(net, tmp_path / "bad.npz")
        assert not os.listdir(tmp_path)


def test_a_term_ending_in_nul_is_not_written(tmp_path):
    """The terms are stored as a numpy str array, whose entries drop trailing NULs: a network
    with the terms "a" and "a\\0" was written and loaded back with "a" twice (and a lone "b\\0"
    came back as "b").  write_model refuses such a term, naming it; NULs inside a term are kept."""
    for vocab, bad in [(["a", "a\0", "c"], "a\0"), (["x", "y", "b\0"], "b\0")]:
        net = Network(layers=[Layer(np.full((3, 2), 1 / 3))], r=np.ones(2), vocabulary=vocab)
        with pytest.raises(ValueError, match=re.escape(f"network 0: the vocabulary term {bad!r} ends in a NUL")):
            pygbn.save(net, tmp_path / "bad.npz")
        assert not os.listdir(tmp_path)
    net = Network(layers=[Layer(np.full((3, 2), 1 / 3))], r=np.ones(2), vocabulary=["a\0b", "\0c", "d"])
    pygbn.save(net, tmp_path / "ok.npz")
    assert pygbn.load(tmp_path / "ok.npz").vocabulary == ["a\0b", "\0c", "d"]


def test_random_doubles_are_stored_and_the_rest_deflated(tmp_path):
    """write_model deflated every array: 16 MiB/s on a Phi of random-looking doubles, which
    it shrinks by 2% (18-44 s for a 763 MiB Phi).  Such an array is now stored; a fitted Phi
    (a posterior mean, mostly (eta + small counts) / sums), the vocabulary and the metadata
    are deflated.  Files of earlier versions (every member deflated) load as before."""
    import zipfile

    rng = np.random.default_rng(0)
    noisy = rng.gamma(0.1, size=(2000, 100))
    p = 1 / np.arange(1, 2001)
    fitted = 0.05 + rng.poisson(np.outer(p / p.sum(), rng.gamma(1.0, size=100)) * 2000)
    net = Network(layers=[Layer(noisy / noisy.sum(axis=0)), Layer(fitted[:100] / fitted[:100].sum(axis=0))],
                  r=np.ones(100), vocabulary=[f"term{i}" for i in range(2000)])
    net2 = Network(layers=[Layer(fitted / fitted.sum(axis=0))], r=np.ones(100))
    path = tmp_path / "m.npz"
    io.write_model(path, [net, net2], kind="Networks")
    with zipfile.ZipFile(path) as z:
        kinds = {i.filename: i.compress_type for i in z.infolist()}
    assert kinds.pop("net0_phi1.npy") == zipfile.ZIP_STORED
    assert set(kinds.values()) == {zipfile.ZIP_DEFLATED}, kinds
    back = io.read_model(path)
    old = tmp_path / "old.npz"          # as earlier versions wrote it: np.savez_compressed
    with np.load(path, allow_pickle=False) as z:
        np.savez_compressed(old, **{k: z[k] for k in z.files})
    for got in (back, io.read_model(old)):
        for a, b in zip([net, net2], got.networks):
            for la, lb in zip(a.layers, b.layers):
                np.testing.assert_array_equal(la.phi, lb.phi)
            np.testing.assert_array_equal(a.r, b.r)
            assert a.vocabulary == b.vocabulary


def test_paths_that_name_no_file_are_refused_clearly(tmp_path, monkeypatch):
    """A file object (np.savez takes one; a model file is written by name, through a temporary
    file beside it) is a TypeError naming ``path``, not os.fspath's message; an empty path or
    one ending in a separator is refused before a temporary file is made in the wrong folder
    (``""`` made one in the parent of the working folder and failed renaming it onto ``''``)."""
    import io as stdio

    net = Network([Layer(np.full((3, 2), 1 / 3))], r=np.ones(2))
    pygbn.save(net, tmp_path / "m.npz")
    with open(tmp_path / "m.npz", "rb") as fh:
        with pytest.raises(TypeError, match="path must be a file name.*BufferedReader"):
            pygbn.load(fh)
    for target in (stdio.BytesIO(), open(tmp_path / "f.npz", "wb")):
        with target, pytest.raises(TypeError, match=f"path must be a file name.*{type(target).__name__}"):
            pygbn.save(net, target)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for bad in ("", str(tmp_path / "new") + os.sep, str(tmp_path / "cwd") + os.sep):
        with pytest.raises(IsADirectoryError, match="names no file"):
            pygbn.save(net, bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "f.npz", "m.npz"]
    assert not os.listdir(tmp_path / "cwd")
    name = "dir with spaces ü/mödel ✓.npz"          # spaces and non-ASCII are fine
    (tmp_path / os.path.dirname(name)).mkdir()
    pygbn.save(net, tmp_path / name)
    np.testing.assert_array_equal(pygbn.load(str(tmp_path / name).encode()).layers[0].phi, net.layers[0].phi)


def test_save_refuses_parameters_that_load_would_refuse(tmp_path):
    """A parameter changed by set_params after the fit (set_params does not validate, as in
    scikit-learn) was written as is, giving a file that load refused later ('eta must be
    positive and finite, got inf'); save now refuses it and writes nothing."""
    m = GBN(n_components=4, n_layers=1, random_state=1, **QUICK).fit(_counts())
    for change, match in [(dict(eta=float("inf")), "eta must be positive and finite"),
                          (dict(link="bernoulli"), "link='bernoulli' is not the networks' link 'poisson'"),
                          (dict(random_state=-3), "random_state"),
                          (dict(transform_iter=(5, 0)), r"transform_iter\[1\]")]:
        bad = copy.deepcopy(m).set_params(**change)
        with pytest.raises(ValueError, match="cannot save a model that load would refuse: .*" + match):
            bad.save(tmp_path / "bad.npz")
        assert not (tmp_path / "bad.npz").exists()
    m.set_params(random_state=np.random.default_rng(0))      # saved as None, as documented
    m.save(tmp_path / "ok.npz")
    assert pygbn.load(tmp_path / "ok.npz").random_state is None
