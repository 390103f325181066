"""Which stored columns a build may keep sparse, and the code their absent entries take.

A block stores a column sparse (``kernels.codes.SparseCodes``: the rows off its implied
code, as CSC) when the column's *implied code* covers at least ``sparse_threshold`` of
the block's rows (LightGBM's ``sparse_threshold``, 0.8 by default). The implied code is
the code of an absent entry: of 0.0 (a scipy.sparse or svmlight zero, a one-hot
column's off value), or the missing code when absent entries are missing values
(``absent_as_missing``, XGBoost's reading of svmlight). Categorical features have none
(they stay dense): their codes have no "zero". A bundled column's implied code is the
bundle's with every feature at its implied code. Only the arrow backend stores sparse
columns; the HDF5 backend's fixed chunks keep every column dense.
"""
import numpy as np

from ..errors import ParameterError
from .binning import NUMERIC

#: LightGBM's defaults: ``is_enable_sparse=true``, ``sparse_threshold=0.8``.
SPARSE_DEFAULTS = (True, 0.8)


def check_sparse_params(enable_sparse, sparse_threshold):
    """Validated ``(enable_sparse, sparse_threshold)``; ParameterError naming the
    parameter."""
    if not isinstance(enable_sparse, (bool, np.bool_)):
        raise ParameterError(f"enable_sparse must be True or False, got {enable_sparse!r}")
    ok = (isinstance(sparse_threshold, (int, float, np.integer, np.floating))
          and not isinstance(sparse_threshold, bool) and 0.0 < sparse_threshold <= 1.0)
    if not ok:
        raise ParameterError(f"sparse_threshold must be a number in (0, 1], got "
                             f"{sparse_threshold!r}")
    return bool(enable_sparse), float(sparse_threshold)


def implied_codes(mapper, bundles=None, absent_as_missing=False):
    """Each stored column's implied code (int64, -1 for a column never sparse).

    Parameters
    ----------
    mapper : BinMapper
    bundles : FeatureBundles or None
    absent_as_missing : bool
        Absent entries are missing values (their code the missing code), not zeros.
    """
    numeric = np.array([t == NUMERIC for t in mapper.feature_types], bool)
    codes = np.where(numeric, mapper.codes_of_value(np.nan if absent_as_missing else 0.0),
                     -1)
    if bundles is None:
        return codes
    kept = bundles.conflicts.copy()
    try:
        stored = bundles.encode(np.maximum(codes, 0).astype(mapper.codes_dtype)[:, None])
    finally:
        bundles.conflicts[:] = kept
    never = np.zeros(bundles.n_columns, bool)
    np.logical_or.at(never, bundles.column_of_feature, codes < 0)
    return np.where(never, -1, stored[:, 0].astype(np.int64))
