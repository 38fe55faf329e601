"""scikit-learn's own estimator checks and model selection on a bare GBN.

scikit-learn is a test-only tool here (pygbn does not depend on it): the whole
module is skipped where it is missing.

``check_estimator`` generates its own data: real numbers (uniform or normal,
shifted to be nonnegative because GBN declares ``positive_only``).  The PRG
link models nonnegative reals and passes every check.  The Poisson and
Bernoulli-Poisson links model counts and 0/1 data; they refuse real-valued
input with a ValueError, so every check that fits them on such data fails
for that reason alone: those checks are listed in ``COUNT_DATA_CHECKS`` with
the reason, and the test asserts that each of them fails *only* by that
refusal (the link's message is in the exception chain) and that no other
check fails.
"""
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import GridSearchCV, cross_val_score  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.utils.estimator_checks import check_estimator  # noqa: E402
from sklearn.utils.validation import check_is_fitted  # noqa: E402

import pygbn  # noqa: E402
from pygbn import GBN  # noqa: E402

SMALL = dict(n_components=3, n_layers=2, burn_in=(3, 2), n_collect=2, min_width=0,
             transform_iter=(2, 3), random_state=0)

_REAL_DATA = ("the check fits on real-valued data (uniform or normal draws), which a count "
              "link refuses with a ValueError")
#: checks that cannot pass for a link of counts or 0/1 data, because they fit
#: (or transform) on real-valued data; the reason of each
COUNT_DATA_CHECKS = {name: _REAL_DATA for name in (
    "check_fit_score_takes_y",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_n_features_in_after_fitting",
    "check_estimators_dtypes",
    "check_dtype_object",
    "check_pipeline_consistency",
    "check_estimators_nan_inf",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_transformer_data_not_an_array",
    "check_transformer_general",
    "check_transformer_preserve_dtypes",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_dict_unchanged",
    "check_fit_idempotent",
    "check_fit_check_is_fitted",
    "check_n_features_in",
    "check_fit2d_predict1d",
)}
COUNT_DATA_CHECKS.update({
    "check_estimator_sparse_tag": _REAL_DATA + " (sparse, so the check blames the sparse tag)",
    "check_estimator_sparse_array": _REAL_DATA + " (sparse, so the check asks for a 'sparse' message)",
    "check_estimator_sparse_matrix": _REAL_DATA + " (sparse, so the check asks for a 'sparse' message)",
    "check_fit2d_1sample": _REAL_DATA + " (the check then expects a message about one sample)",
    "check_fit2d_1feature": _REAL_DATA + " (the check then expects a message about one feature)",
})
#: what each link says when it refuses real-valued data
REFUSAL = {"poisson": "must hold integer counts", "bernoulli": "must be binary"}
EXPECTED_FAILURES = {"poisson": COUNT_DATA_CHECKS, "bernoulli": COUNT_DATA_CHECKS, "prg": {}}


def _messages(exc):
    """The messages of ``exc`` and of the exceptions it was raised from."""
    out = []
    while exc is not None:
        out.append(str(exc))
        exc = exc.__cause__ or exc.__context__
    return " | ".join(out)


@pytest.mark.parametrize("link", ["poisson", "bernoulli", "prg"])
def test_check_estimator(link):
    expected = EXPECTED_FAILURES[link]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. "does not inherit from BaseEstimator"
        results = check_estimator(GBN(link=link, **SMALL), expected_failed_checks=expected,
                                  on_fail=None, on_skip=None)
    status = {}
    for r in results:
        status.setdefault(r["check_name"], set()).add(r["status"])
        if r["status"] == "xfail":
            assert REFUSAL[link] in _messages(r["exception"]), (r["check_name"], _messages(r["exception"]))
    failed = sorted(name for name, s in status.items() if "failed" in s)
    assert not failed, {r["check_name"]: _messages(r["exception"]) for r in results if r["status"] == "failed"}
    # every listed check really fails (the list is not stale), and only those
    assert sorted(n for n, s in status.items() if "xfail" in s) == sorted(expected)
    passed = [n for n, s in status.items() if s == {"passed"}]
    assert len(passed) >= (40 if link == "prg" else 15)


def _counts(n=60, V=15, seed=0):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(V, 0.3), size=3).T
    theta = rng.gamma(1.0, 8.0, size=(n, 3))
    return rng.poisson(theta @ phi.T)


def test_grid_search_and_cross_val_score_on_a_bare_gbn():
    X = _counts()
    search = GridSearchCV(GBN(**SMALL), {"n_components": [2, 4]}, cv=3).fit(X)
    scores = search.cv_results_["mean_test_score"]
    assert np.isfinite(scores).all() and scores.shape == (2,)
    assert search.best_params_["n_components"] == [2, 4][int(np.argmax(scores))]
    assert search.best_estimator_.transform(X[:4]).shape[0] == 4
    cv = cross_val_score(GBN(**SMALL), X, cv=3)
    assert cv.shape == (3,) and np.isfinite(cv).all() and (cv < 0).all()
    # the same seeds give the same scores
    np.testing.assert_array_equal(cv, cross_val_score(GBN(**SMALL), X, cv=3))


def test_check_is_fitted_clone_and_pipeline():
    model = GBN(**SMALL)
    with pytest.raises(sklearn.exceptions.NotFittedError):
        check_is_fitted(model)
    assert not hasattr(model, "network_")
    X = _counts()
    check_is_fitted(model.fit(X))
    twin = clone(model)
    assert twin.get_params() == model.get_params() and not hasattr(twin, "networks_")
    pipe = make_pipeline(GBN(**SMALL)).fit(X)
    np.testing.assert_array_equal(pipe.transform(X), model.transform(X))
    assert pipe.score(X) == model.score(X)
    assert list(pipe.get_feature_names_out()) == ["gbn0", "gbn1", "gbn2"][: model.widths_[0]]


def test_tags():
    from sklearn.utils import get_tags

    tags = get_tags(GBN())
    assert tags.input_tags.positive_only and tags.input_tags.sparse and not tags.input_tags.allow_nan
    assert tags.transformer_tags is not None and not tags.target_tags.required
    assert pygbn.GBN()._get_tags()["requires_positive_X"]


# ----------------------------------------------------------- real workflows
_DOCS = ["sound mixer for alsa audio", "audio editor sound wave", "text editor for code",
         "code editor syntax text", "mail client imap", "mail server smtp imap",
         "game of chess board", "board game puzzle chess"] * 3
_LABELS = np.array([0, 0, 1, 1, 2, 2, 3, 3] * 3)


def test_pygbn_vectorizer_in_a_pipeline_before_gbn_and_a_classifier():
    """pygbn.text.CountVectorizer as a Pipeline's first step: Pipeline passes ``y`` to its
    fit/fit_transform and ``input_features`` to get_feature_names_out, and clone and
    GridSearchCV need its get_params/set_params."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    from pygbn.text import CountVectorizer

    pipe = Pipeline([("cv", CountVectorizer()), ("gbn", GBN(**SMALL)), ("lr", LogisticRegression())])
    pipe.fit(_DOCS, _LABELS)
    assert pipe.predict(_DOCS).shape == (len(_DOCS),)
    assert 0.0 <= pipe.score(_DOCS, _LABELS) <= 1.0
    unsupervised = Pipeline([("cv", CountVectorizer()), ("gbn", GBN(**SMALL))]).fit(_DOCS)
    assert list(unsupervised.get_feature_names_out()) == [f"gbn{k}" for k in range(unsupervised[-1].widths_[0])]
    assert np.isfinite(unsupervised.score(_DOCS))
    vec = CountVectorizer(min_df=2, stop_words=None)
    assert clone(vec).get_params() == vec.get_params() == dict(
        stop_words=None, min_df=2, max_df=1.0, max_features=None, min_length=3, vocabulary=None)
    assert vec.set_params(min_df=1) is vec and vec.min_df == 1
    with pytest.raises(ValueError, match="invalid parameter 'min_count' for CountVectorizer"):
        vec.set_params(min_count=1)
    search = GridSearchCV(pipe, {"cv__max_features": [5, 10]}, cv=2).fit(_DOCS, _LABELS)
    assert search.best_estimator_["cv"].max_features in (5, 10)
    assert len(search.best_estimator_["cv"].vocab_) == search.best_estimator_["cv"].max_features


def test_set_output_in_a_pipeline():
    """Pipeline.set_output calls set_output on every step, and refused a GBN without it."""
    X = _counts()
    pipe = make_pipeline(GBN(**SMALL)).set_output(transform="default")
    assert isinstance(pipe.fit_transform(X), np.ndarray)
    model = GBN(**SMALL)
    assert model.set_output() is model and model.set_output(transform="default") is model
    with pytest.raises(ValueError, match="transform must be .*got 'numpy'"):
        model.set_output(transform="numpy")


def test_set_output_pandas_without_pandas_is_an_import_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)       # import pandas fails
    with pytest.raises(ImportError, match=r"set_output\(transform='pandas'\) needs pandas"):
        GBN().set_output(transform="pandas")


def test_set_output_pandas_columns_index_and_clone():
    pd = pytest.importorskip("pandas")
    X = _counts(n=20)
    frame = pd.DataFrame(X, columns=[f"t{v}" for v in range(X.shape[1])], index=np.arange(100, 120))
    model = GBN(**SMALL).set_output(transform="pandas")
    out = model.fit_transform(frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == list(model.get_feature_names_out())
    assert list(out.index) == list(frame.index)
    np.testing.assert_array_equal(out.to_numpy(), GBN(**SMALL).fit(frame).transform(frame))
    assert isinstance(clone(model).fit(X).transform(X), pd.DataFrame)   # clone keeps the setting


def test_pickled_fitted_and_unfitted_models_and_parallel_grid_search():
    """joblib's processes pickle the estimator (GridSearchCV(n_jobs=2)): the scores are those
    of n_jobs=1, and a pickled fitted model transforms as the original."""
    import pickle

    X = _counts()
    model = GBN(**SMALL)
    assert pickle.loads(pickle.dumps(model)).get_params() == model.get_params()
    model.fit(X)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).transform(X[:5]), model.transform(X[:5]))
    twin = clone(model)
    assert not hasattr(twin, "networks_") and twin.get_params() == model.get_params()
    grid = {"n_components": [2, 4]}
    serial = GridSearchCV(GBN(**SMALL), grid, cv=2).fit(X).cv_results_["mean_test_score"]
    parallel = GridSearchCV(GBN(**SMALL), grid, cv=2, n_jobs=2).fit(X).cv_results_["mean_test_score"]
    np.testing.assert_array_equal(parallel, serial)


def test_set_params_checks_names_before_setting_any():
    model = GBN(**SMALL)
    with pytest.raises(ValueError, match="invalid parameter 'bogus' for GBN"):
        model.set_params(n_layers=3, bogus=1)
    assert model.n_layers == SMALL["n_layers"]
    with pytest.raises(ValueError, match="n_components must be a positive int, got 0"):
        model.set_params(n_components=0).fit(_counts())   # checked at fit, naming the parameter



def test_get_params_is_the_constructors_signature_and_deep_descends():
    """get_params lists the constructor's arguments as scikit-learn's BaseEstimator finds them;
    deep=True adds ``name__sub`` for a value that has get_params, which set_params takes
    (every name checked before any is set)."""
    from sklearn.base import BaseEstimator

    from pygbn.text import CountVectorizer

    for cls in (GBN, CountVectorizer):
        assert sorted(cls().get_params()) == BaseEstimator._get_param_names.__func__(cls)
    inner = CountVectorizer(min_df=2)
    model = GBN(callback=inner)
    assert model.get_params(deep=False)["callback"] is inner and "callback__min_df" not in model.get_params(deep=False)
    deep = model.get_params()
    assert deep["callback__min_df"] == 2 and deep["callback"] is inner
    assert set(deep) == set(model.get_params(deep=False)) | {f"callback__{k}" for k in inner.get_params()}
    with pytest.raises(ValueError, match="invalid parameter 'callback__bogus' for GBN"):
        model.set_params(n_layers=3, callback__bogus=1)
    assert model.n_layers == GBN().n_layers
    assert model.set_params(n_layers=3, callback__min_df=4) is model and model.n_layers == 3 and inner.min_df == 4
    with pytest.raises(ValueError, match="invalid parameter 'link__name' for GBN"):
        model.set_params(link__name="x")                   # a str has no parameters
    twin = clone(model)
    assert twin.callback is not inner and twin.get_params(deep=False).keys() == model.get_params(deep=False).keys()
    assert twin.get_params()["callback__min_df"] == 4


@pytest.mark.parametrize("kind", ["pandas", "polars"])
def test_set_output_builds_the_frame_with_the_output_names(fake_frame_module, kind):
    _FakeFrame = fake_frame_module(kind)
    X = _counts(n=10)
    model = GBN(**SMALL).fit(X)
    plain = model.transform(X)
    out = model.set_output(transform=kind).transform(X)
    assert isinstance(out, _FakeFrame)
    np.testing.assert_array_equal(out.data, plain)
    names = list(model.get_feature_names_out())
    expected = dict(schema=names, orient="row") if kind == "polars" else dict(columns=names, index=None)
    assert out.kwargs == expected
    assert isinstance(model.set_output(transform="default").transform(X), np.ndarray)
