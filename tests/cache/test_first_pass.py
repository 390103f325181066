"""Pass 1 of a build: a wide batch's numeric columns cleaned and counted in one kernel
call give the same sketches, missing and infinite counts as a column at a time."""
import numpy as np
import pytest

import oocboost
from oocboost.cache import first_pass


@pytest.mark.parametrize("reference", [False, True])
def test_wide_batches_build_the_same_cache_as_narrow_ones(tmp_path, monkeypatch, reference):
    rng = np.random.default_rng(0)
    n, m = 3000, 70
    X = rng.normal(size=(n, m)) * rng.integers(1, 50, m)
    X[rng.random((n, m)) < 0.05] = np.nan
    X[5, 3], X[9, 3], X[11, 60] = np.inf, -np.inf, -0.0
    y = (X[:, 0] > 0).astype(float)
    ref = oocboost.build_cache(X[:500] * 0.5, tmp_path / "ref", label=y[:500], quiet=True) \
        if reference else None
    caches = []
    for wide_from in (first_pass.WIDE_COLUMNS, m + 1):
        monkeypatch.setattr(first_pass, "WIDE_COLUMNS", wide_from)
        caches.append(oocboost.build_cache(X, tmp_path / f"c{wide_from}", label=y,
                                           block_rows=997, reference=ref, quiet=True))
    wide, narrow = caches
    assert wide.bin_mapper == narrow.bin_mapper
    for key in ("features", "label_stats"):
        assert wide.manifest[key] == narrow.manifest[key]
    for i in range(wide.n_blocks):
        np.testing.assert_array_equal(wide.read_block(i).codes, narrow.read_block(i).codes)
    assert wide.manifest["features"][3]["n_inf"] == 2
    assert wide.manifest["features"][3]["n_missing"] == np.isnan(X[:, 3]).sum()
