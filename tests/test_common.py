"""Helpers of oocboost/common.py used across the layers."""
import numpy as np

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
