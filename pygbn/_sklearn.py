"""The scikit-learn protocol of :class:`pygbn.GBN` beyond ``fit``/``transform``.

Output names (``get_feature_names_out``), the output container
(``set_output``) and the estimator tags, in both the tag API of scikit-learn
1.6 and later (``__sklearn_tags__``) and the older dict-based one.
scikit-learn, pandas and polars are imported only when these are used: none is
a dependency of pygbn.
"""
from __future__ import annotations

from typing import Optional

import numpy as np


class TransformerProtocol:
    """Mixin of :class:`pygbn.GBN`: scikit-learn's transformer protocol.

    Needs ``_check_fitted``, ``n_features_in_``, ``networks_`` and (optionally)
    ``feature_names_in_`` from the estimator.
    """

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the columns of :meth:`transform`: ``gbn0, gbn1, ...`` (one per layer-one node).

        Parameters
        ----------
        input_features : sequence of str, optional
            Checked against ``feature_names_in_`` (or their number against
            ``n_features_in_``), as scikit-learn does; not used otherwise.

        Returns
        -------
        ndarray of str (dtype object)
            The lowercased class name followed by the node index, as
            scikit-learn's decomposition estimators name their outputs.
        """
        self._check_fitted()
        if input_features is not None:
            given = [str(v) for v in input_features]
            fitted = self.__dict__.get("feature_names_in_")
            if fitted is not None and given != [str(v) for v in fitted]:
                raise ValueError("input_features is not equal to feature_names_in_")
            if len(given) != self.n_features_in_:
                raise ValueError(f"input_features should have length equal to the number of features "
                                 f"({self.n_features_in_}), got {len(given)}")
        return np.array(self._output_names(self.networks_[-1].layers[0].width), dtype=object)

    def _output_names(self, n: int) -> list:
        """``gbn0 .. gbn{n-1}``: the lowercased class name followed by the node index."""
        prefix = type(self).__name__.lower()
        return [f"{prefix}{k}" for k in range(n)]

    def __sklearn_tags__(self):
        """scikit-learn's tags (imported here, only when scikit-learn asks for them).

        A transformer (no target) of nonnegative 2-D data, dense or sparse,
        without missing values; its output is float64.
        """
        from sklearn.utils import InputTags, Tags, TargetTags, TransformerTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    transformer_tags=TransformerTags(preserves_dtype=["float64"]),
                    input_tags=InputTags(two_d_array=True, sparse=True, positive_only=True,
                                         allow_nan=False),
                    requires_fit=True, non_deterministic=False)

    def _more_tags(self) -> dict:
        """The same tags for scikit-learn before 1.6 (its dict-based tag API)."""
        return {"requires_positive_X": True, "X_types": ["2darray", "sparse"], "allow_nan": False,
                "requires_y": False, "requires_fit": True, "non_deterministic": False,
                "preserves_dtype": [np.float64]}

    def _get_tags(self) -> dict:
        """scikit-learn before 1.6: its default tags updated with :meth:`_more_tags`."""
        return {**_OLD_DEFAULT_TAGS, **self._more_tags()}

    def set_output(self, *, transform: Optional[str] = None) -> "TransformerProtocol":
        """Set the container of :meth:`transform` and :meth:`fit_transform` (scikit-learn's API).

        ``Pipeline.set_output`` and ``ColumnTransformer.set_output`` call it
        on every step (and fail on a step without it).

        Parameters
        ----------
        transform : str or None, default=None
            One of "default", "pandas", "polars" or None.  "default": an ndarray; "pandas": a ``pandas.DataFrame`` with the
            columns of :meth:`get_feature_names_out` (``gbn0, gbn1, ...``) and,
            when ``X`` is a pandas DataFrame, its index; "polars": a
            ``polars.DataFrame`` with those columns; None: unchanged.  pandas
            or polars is imported only then (neither is a dependency of
            pygbn): ImportError here when it is missing.  scikit-learn's
            global ``set_config(transform_output=...)`` is not read.

        Returns
        -------
        self
        """
        if transform is None:
            return self
        if not isinstance(transform, str) or transform not in ("default", "pandas", "polars"):
            raise ValueError(f"transform must be 'default', 'pandas', 'polars' or None, got {transform!r}")
        if transform != "default":
            _output_library(transform)
        self._sklearn_output_config = {"transform": transform}
        return self

    def _output_kind(self) -> str:
        """The container :meth:`set_output` chose: "default", "pandas" or "polars"."""
        return self.__dict__.get("_sklearn_output_config", {}).get("transform", "default")

    def _wrap_output(self, features: np.ndarray, X):
        """``features`` (of the rows of ``X``) in the container of :meth:`set_output`."""
        kind = self._output_kind()
        if kind == "default":
            return features
        lib = _output_library(kind)
        columns = self._output_names(features.shape[1])
        if kind == "polars":
            return lib.DataFrame(features, schema=columns, orient="row")
        index = X.index if isinstance(X, lib.DataFrame) else None
        return lib.DataFrame(features, columns=columns, index=index)


#: scikit-learn's default tags before 1.6 (its _DEFAULT_TAGS), completed by GBN._more_tags
_OLD_DEFAULT_TAGS = {
    "array_api_support": False, "non_deterministic": False, "requires_positive_X": False,
    "requires_positive_y": False, "X_types": ["2darray"], "poor_score": False, "no_validation": False,
    "multioutput": False, "allow_nan": False, "stateless": False, "multilabel": False,
    "_skip_test": False, "_xfail_checks": False, "multioutput_only": False, "binary_only": False,
    "requires_fit": True, "preserves_dtype": [np.float64], "requires_y": False, "pairwise": False,
}


def _output_library(kind: str):
    """The module of a :meth:`GBN.set_output` container (``pandas`` or ``polars``), imported now."""
    import importlib

    try:
        return importlib.import_module(kind)
    except ImportError:
        raise ImportError(f"set_output(transform={kind!r}) needs {kind}, which is not installed "
                          f"(pip install {kind}); pygbn itself does not depend on it") from None
