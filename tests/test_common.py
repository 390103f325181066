"""Helpers of oocboost/common.py used across the layers."""
import numpy as np
import pytest

from oocboost.common import scratch_view


def test_scratch_view_is_c_contiguous_and_reuses_its_buffer_until_too_small():
    buffer, view = scratch_view(None, (3, 10), np.int32)
    assert view.shape == (3, 10) and view.dtype == np.int32 and view.flags.c_contiguous
    view[:] = np.arange(30).reshape(3, 10)
    same, shorter = scratch_view(buffer, (3, 7), np.int32)   # a shorter last block
    assert same is buffer and shorter.flags.c_contiguous
    assert np.shares_memory(shorter, buffer)
    np.testing.assert_array_equal(shorter.ravel(), np.arange(21))
    larger, view = scratch_view(buffer, (4, 10), np.int32)
    assert larger is not buffer and larger.shape == (40,) and view.shape == (4, 10)


def test_weighted_sum_matches_dot_and_never_calls_blas(monkeypatch):
    from oocboost.common import weighted_sum

    rng = np.random.default_rng(0)
    w, x = rng.random(100_003), rng.normal(size=100_003)
    expected = float(np.dot(w, x))

    def no_blas(*_args, **_kwargs):
        raise AssertionError("np.dot called")

    monkeypatch.setattr(np, "dot", no_blas)
    got = weighted_sum(w, x)
    assert isinstance(got, float)
    assert got == pytest.approx(expected, rel=1e-12)
    assert weighted_sum(w.astype(np.float32), x.astype(np.float32)) == pytest.approx(
        expected, rel=1e-5)
    assert weighted_sum(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 11.0
    assert weighted_sum(np.empty(0), np.empty(0)) == 0.0
