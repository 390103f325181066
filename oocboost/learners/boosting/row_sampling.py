"""Gradient-based row sampling: LightGBM's GOSS and XGBoost's ``gradient_based`` (MVS).

Both keep the rows whose gradients matter most and weight the others up, so each round's
tree sees a fraction of the rows with unbiased sums:

- **GOSS** (Ke et al. 2017, ``data_sample_strategy="goss"``): the ``top_rate`` share of
  rows with the largest ``|g h|`` (summed over the outputs) is kept whole; of the rest a
  share ``other_rate`` of all rows is drawn and weighted ``(1 - top_rate) / other_rate``
  (exactly: the rest's count over the expected draws). As LightGBM, the first
  ``1 / learning_rate`` rounds use every row.
- **MVS** (Ibragimov and Gusev 2019, XGBoost's ``sampling_method="gradient_based"``): row
  ``i`` is kept with probability ``min(1, r_i / u)``, ``r_i = sqrt(sum g^2 + 0.1 h^2)``,
  and weighted by its inverse, ``u`` set so that ``subsample`` of the rows are expected.

Where we differ: the large-gradient threshold (GOSS) and ``u`` (MVS) are taken block by
block, from each block's own rows, so a sample depends on ``block_rows`` (LightGBM takes
GOSS's threshold per thread's share of the rows, so its sample depends on the thread
count; XGBoost takes ``u`` over all rows). The draws are counter-based per global row, so
a run is repeatable for a given cache.

A sample of a round that fits the memory plan is copied into memory during the round's
first pass (its codes and statistics, :class:`SampleBlock`), and the round's deeper
levels are grown from that copy: one pass over the cache per round instead of one per
level. The next round's first pass then routes every row through the whole tree
(``TreeGrower.route_from_root``) to update its margin.
"""
import numpy as np

from ...common import G_H_DTYPE, NODE_DTYPE
from ...errors import ParameterError
from ...kernels.sampling import gather_rows, goss_sample, gradient_scores, mvs_sample

GOSS = "goss"
MVS = "gradient_based"
#: XGBoost's lambda of the regularised gradient ``sqrt(g^2 + lambda h^2)`` (its
#: ``kDefaultMvsLambda``).
MVS_LAMBDA = 0.1
#: Room for more sampled rows than expected (the draws of small-gradient rows are coin
#: flips), as a share of the expected count; a sample that overflows it grows.
SAMPLE_SLACK = 0.05


def check_sampling_params(p):
    """The rules between the sampling parameters of resolved booster params (each one
    is checked by the booster's spec, ``params.BOOSTER_SPEC``)."""
    if p["data_sample_strategy"] == GOSS:
        if p["top_rate"] + p["other_rate"] > 1.0:
            raise ParameterError(f"GOSS needs top_rate + other_rate <= 1, got "
                                 f"{p['top_rate']} + {p['other_rate']}")
        if p["subsample"] < 1.0 or p["sampling_method"] != "uniform":
            raise ParameterError("data_sample_strategy='goss' is the round's row sampling: "
                                 "leave subsample at 1 and sampling_method at 'uniform'")


def sampling_kind(p):
    """``"goss"``, ``"gradient_based"`` or None (uniform ``subsample`` or none)."""
    if p["data_sample_strategy"] == GOSS:
        return GOSS
    if p["sampling_method"] == MVS and p["subsample"] < 1.0:
        return MVS
    return None


def check_sampling_use(p, objective, folds):
    """Refuse gradient-based sampling where it is not offered, naming why."""
    kind = sampling_kind(p)
    if kind is None:
        return
    what = "data_sample_strategy='goss'" if kind == GOSS else \
        "sampling_method='gradient_based'"
    if folds is not None:
        raise ParameterError(f"{what} is not offered in oocboost.cv: each fold would draw "
                             f"its own sample; train each fold with train()")
    if getattr(objective, "needs_groups", False) or getattr(objective, "needs_all_rows",
                                                            False):
        raise ParameterError(f"{what} is not offered with {objective.name}: its gradients "
                             f"tie rows together (query groups, risk sets)")


def sampled_round(p, round_index):
    """True when round ``round_index`` draws a gradient-based sample."""
    kind = sampling_kind(p)
    if kind == GOSS:
        # LightGBM: every row in the first 1 / learning_rate rounds
        return round_index >= int(1.0 / p["learning_rate"])
    return kind == MVS


def expected_share(p):
    """Share of the rows a sampled round keeps, expected."""
    if sampling_kind(p) == GOSS:
        return p["top_rate"] + p["other_rate"]
    return p["subsample"]


def goss_threshold(score, top_rate, other_rate):
    """``(threshold, p_other)`` of GOSS for one block's scores: the smallest score of the
    ``max(1, n top_rate)`` largest, and the probability of keeping one of the rest that
    draws ``n other_rate`` of them (1 when there are no more rest rows than that)."""
    n = score.shape[0]
    top_k = max(1, int(n * top_rate))
    other_k = int(n * other_rate)
    if top_k + other_k >= n:
        return -np.inf, 1.0
    threshold = float(np.partition(score, n - top_k)[n - top_k])
    rest = n - int(np.count_nonzero(score >= threshold))
    return threshold, (min(1.0, other_k / rest) if rest else 1.0)


def mvs_threshold(reg_grad, sample_rows):
    """XGBoost's ``u`` for one block: ``sum_i min(1, r_i / u) = sample_rows``; ``inf``
    when no row is to be kept."""
    n = reg_grad.shape[0]
    if sample_rows <= 0:
        return np.inf
    r = np.sort(reg_grad)
    csum = np.cumsum(r)
    upper = np.append(r[1:], np.inf)
    denom = sample_rows - (n - np.arange(n) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        u = np.where(denom > 0, csum / np.where(denom > 0, denom, 1), np.nan)
    valid = np.flatnonzero((denom > 0) & (u > r) & (u <= upper))
    return float(u[valid[0]]) if valid.size else float(csum[-1] / sample_rows)


def sample_block(p, stats, round_index, row_start):
    """Draw one block's sample for the round and scale its statistics in place.

    Parameters
    ----------
    p : dict, resolved booster parameters
    stats : ndarray (n_outputs, n_rows, 2) float32, gradients and hessians   # IN/OUT
    round_index : int
    row_start : int, global index of the block's first row

    Returns
    -------
    keep : ndarray (n_rows,) bool, the rows in the sample
    """
    n_rows = stats.shape[1]
    keep = np.empty(n_rows, np.bool_)
    score = np.empty(n_rows, np.float64)
    if sampling_kind(p) == GOSS:
        gradient_scores(stats, -1.0, score)
        threshold, p_other = goss_threshold(score, p["top_rate"], p["other_rate"])
        multiply = 1.0 / p_other if p_other > 0.0 else 0.0
        goss_sample(score, threshold, p_other, multiply, p["seed"], round_index,
                    row_start, stats, keep)
    else:
        gradient_scores(stats, MVS_LAMBDA, score)
        threshold = mvs_threshold(score, int(n_rows * p["subsample"]))
        mvs_sample(score, threshold, p["seed"], round_index, row_start, stats, keep)
    return keep


class SampleBlock:
    """The sampled rows of one round, gathered block by block into one in-memory block
    that the round's later passes read instead of the cache.

    Parameters
    ----------
    n_features, n_outputs : int
    codes_dtype : numpy dtype of the cache's codes
    capacity : int, rows to allocate for (grows if the draws exceed it)

    Attributes (after :meth:`finish`)
    ----------
    codes : ndarray (n_features, n_rows), stats : ndarray (n_outputs, n_rows, 2) float32,
    node : ndarray (n_outputs, n_rows) int32 (every row at the root)
    """

    def __init__(self, n_features, n_outputs, codes_dtype, capacity):
        capacity = max(int(capacity), 1)
        self._codes = np.empty((n_features, capacity), codes_dtype)
        self._stats = np.empty((n_outputs, capacity, 2), G_H_DTYPE)
        self.n_rows = 0

    @staticmethod
    def nbytes_per_row(n_features, n_outputs, codes_itemsize):
        """Bytes one sampled row takes: its codes, statistics and node position."""
        return n_features * codes_itemsize + n_outputs * (2 * 4 + 4)

    def append(self, codes, stats, keep):
        """Add the rows of one block where ``keep`` is True."""
        index = np.flatnonzero(keep)
        end = self.n_rows + index.shape[0]
        if end > self._codes.shape[1]:
            grow = max(end, int(self._codes.shape[1] * (1 + SAMPLE_SLACK)) + 1024)
            self._codes = _grown(self._codes, 1, grow)
            self._stats = _grown(self._stats, 1, grow)
        gather_rows(codes, stats, index, self.n_rows, self._codes, self._stats)
        self.n_rows = end

    def finish(self):
        """Trim to the rows gathered; returns self."""
        self.codes = np.ascontiguousarray(self._codes[:, :self.n_rows])
        self.stats = np.ascontiguousarray(self._stats[:, :self.n_rows])
        self.node = np.zeros((self.stats.shape[0], self.n_rows), NODE_DTYPE)
        del self._codes, self._stats
        return self


def _grown(array, axis, size):
    shape = list(array.shape)
    shape[axis] = size
    out = np.empty(shape, array.dtype)
    out[(slice(None),) * axis + (slice(0, array.shape[axis]),)] = array
    return out
