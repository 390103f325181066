"""kernels/objective_kernels.py's links against their NumPy twins."""
import numpy as np
import pytest

from oocboost.kernels import objective_kernels as k


def _margins(n):
    rng = np.random.default_rng(n)
    m = rng.normal(scale=4.0, size=(n, 1))
    m[:3, 0] = [0.0, 40.0, -40.0][:min(3, n)]
    return m


@pytest.mark.parametrize("n", [1, 7, k.SERIAL_LINK_ROWS + 5])   # serial and parallel
def test_sigmoid_proba_is_sigmoid_in_both_columns(n):
    """Column 1 is sigmoid's value bit for bit (what column_stack of 1 - p and p gave)
    and column 0 is 1 - that; both the NumPy twin's to rounding."""
    margin = _margins(n)
    p = np.empty(n)
    k.sigmoid(margin, p)
    out = np.full((n, 2), np.nan)
    k.sigmoid_proba(margin, out)
    assert out[:, 1].tobytes() == p.tobytes()
    assert out[:, 0].tobytes() == (1.0 - p).tobytes()
    twin = 1.0 / (1.0 + np.exp(-margin[:, 0]))
    np.testing.assert_allclose(out[:, 1], twin, rtol=1e-15, atol=0)
