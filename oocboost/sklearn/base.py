"""The base every scikit-learn style estimator shares: parameters as constructor
arguments (``get_params`` / ``set_params``) and the temporary cache that ``fit`` builds
from arrays or DataFrames."""
import inspect
import shutil
import tempfile

import numpy as np

from ..errors import ParameterError


class ParamsMixin:
    """``get_params`` / ``set_params`` from the ``__init__`` signature (scikit-learn's
    contract, so ``sklearn.base.clone`` and grid searches work without importing sklearn)."""

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind != p.VAR_KEYWORD)

    def get_params(self, deep=True):
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ParameterError(f"invalid parameter {key!r} for {type(self).__name__}; "
                                     f"valid: {valid}")
            setattr(self, key, value)
        return self

    def __repr__(self):
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if defaults.get(k, inspect.Parameter.empty) is not v
                   and defaults.get(k) != v]
        return f"{type(self).__name__}({', '.join(changed)})"


class TrainingData:
    """Turns estimator inputs into caches; removes temporary caches when closed."""

    def __init__(self, cache_dir=None, memory_limit=None, max_bin=256, block_rows=None):
        self.cache_dir = cache_dir
        self.memory_limit = memory_limit
        self.max_bin = max_bin
        self.block_rows = block_rows
        self._tmp = None

    def _folder(self):
        if self._tmp is None:
            self._tmp = tempfile.mkdtemp(prefix="oocboost-fit-", dir=self.cache_dir)
        return self._tmp

    def cache(self, X, y, sample_weight=None, name="train", reference=None):
        from ..cache.build import build_cache
        from ..cache.store import Cache

        if isinstance(X, Cache):
            if y is not None:
                raise ParameterError("when X is a Cache its labels come from the cache: "
                                     "pass y=None")
            return X
        if y is None:
            raise ParameterError("y is required when X is not a Cache")
        y = np.asarray(y, dtype=np.float64)
        if y.ndim != 1 or len(y) != _n_rows(X):
            raise ParameterError(f"y must be 1-D with one value per row of X "
                                 f"({_n_rows(X)}), got shape {y.shape}")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if sample_weight.shape != y.shape:
                raise ParameterError("sample_weight must have the shape of y")
        import os

        return build_cache(X, os.path.join(self._folder(), name), label=y,
                           weight=sample_weight, max_bin=self.max_bin, quiet=True,
                           block_rows=self.block_rows,
                           memory_limit=self.memory_limit, reference=reference,
                           overwrite=True)

    def close(self):
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None


def _n_rows(X):
    shape = getattr(X, "shape", None)
    if shape is not None:
        return int(shape[0])
    num_rows = getattr(X, "num_rows", None)
    if num_rows is not None:
        return int(num_rows)
    return len(X)
