"""``anomaly:isolation``: the output of an isolation forest (``learners/isolation``), not
a training loss.

The trees' leaves hold path lengths ``h = depth + c(n_leaf)`` (``c`` of
``kernels.isolation.average_path_length``) and the forest averages them; the transform
is the anomaly score of Liu, Ting and Zhou (2008)::

    s(x) = 2 ** (-E[h(x)] / c(max_samples))        in (0, 1]; higher is more anomalous

scikit-learn's ``IsolationForest.score_samples`` is ``-s(x)`` (the estimator,
``oocboost.IsolationForest``, returns that).
"""
import numpy as np

from ...errors import ParameterError
from ...kernels.isolation import average_path_length
from .base import Objective


class IsolationScore(Objective):
    """``anomaly:isolation`` with parameter ``max_samples``, the rows each tree was grown
    on (module docstring)."""

    name = "anomaly:isolation"
    #: the anomaly score ranks rows labelled 1 (anomalies) above those labelled 0
    default_metric = "auc"

    def __init__(self, params):
        super().__init__(params)
        self.normaliser = float(average_path_length(params["max_samples"]))

    def _gradients(self, label, margin, weight, has_weight, out_grad, out_hess):
        raise ParameterError("anomaly:isolation is the output of isolation forests, not a "
                             "boosting objective")

    def _transform(self, margin):
        h = margin[:, 0]
        if self.normaliser == 0.0:  # one row per tree: scikit-learn's ratio of 1
            return np.full(h.shape, 0.5)
        return np.exp2(-h / self.normaliser)


def make_isolation_score(params):
    """The objective of ``params["max_samples"]`` (an integer >= 1)."""
    value = params.get("max_samples")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ParameterError(f"anomaly:isolation: max_samples must be an integer >= 1, got "
                             f"{value!r}")
    return IsolationScore({"max_samples": int(value)})
