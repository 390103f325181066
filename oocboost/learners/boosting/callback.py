"""Training callbacks: early stopping, evaluation logging, checkpoints, learning-rate
schedules.

A callback has four hooks, all optional::

    before_training(model) -> model
    after_training(model) -> model
    before_iteration(model, epoch, evals_log) -> bool   # True stops training
    after_iteration(model, epoch, evals_log) -> bool    # True stops training

``evals_log`` is a nested dict of floats: ``evals_log[data_name][metric_name]`` is the list
of that metric's values, one per round so far (XGBoost's layout).
"""
import os

from ...errors import ParameterError
from ...utils.log import get_logger, say

logger = get_logger(__name__)


class TrainingCallback:
    """Base class; override the hooks you need."""

    def before_training(self, model):
        return model

    def after_training(self, model):
        return model

    def before_iteration(self, model, epoch, evals_log):
        return False

    def after_iteration(self, model, epoch, evals_log):
        return False


class CallbackContainer:
    """Calls every callback's hook in order; stop if any asks to."""

    def __init__(self, callbacks):
        self.callbacks = list(callbacks or [])
        for cb in self.callbacks:
            if not isinstance(cb, TrainingCallback):
                raise ParameterError(
                    f"callbacks must be TrainingCallback instances, got {type(cb).__name__}")

    def before_training(self, model):
        for cb in self.callbacks:
            model = cb.before_training(model)
        return model

    def after_training(self, model):
        for cb in self.callbacks:
            model = cb.after_training(model)
        return model

    def before_iteration(self, model, epoch, evals_log):
        return any([cb.before_iteration(model, epoch, evals_log) for cb in self.callbacks])

    def after_iteration(self, model, epoch, evals_log):
        return any([cb.after_iteration(model, epoch, evals_log) for cb in self.callbacks])


def _last_metric(evals_log, data_name, metric_name):
    if not evals_log:
        raise ParameterError("early stopping needs at least one evaluation set in evals")
    data_name = data_name or list(evals_log)[-1]
    if data_name not in evals_log:
        raise ParameterError(f"early stopping data {data_name!r} is not among the evals "
                             f"{list(evals_log)}")
    metrics = evals_log[data_name]
    metric_name = metric_name or list(metrics)[-1]
    if metric_name not in metrics:
        raise ParameterError(f"early stopping metric {metric_name!r} is not evaluated on "
                             f"{data_name!r} (have {list(metrics)})")
    return data_name, metric_name, metrics[metric_name]


class EarlyStopping(TrainingCallback):
    """Stop when the metric has not improved for ``rounds`` rounds (XGBoost semantics).

    The last evaluation set and its last metric decide unless ``data_name`` /
    ``metric_name`` say otherwise. The model's ``best_iteration`` and ``best_score`` are
    set; with ``save_best`` the trees after the best round are dropped at the end.

    Parameters
    ----------
    rounds : int
    metric_name, data_name : str or None
    maximize : bool or None
        None: taken from the metric (auc, accuracy and r2 are maximised).
    save_best : bool
    min_delta : float
        An improvement must exceed this to count.
    """

    def __init__(self, rounds, metric_name=None, data_name=None, maximize=None,
                 save_best=False, min_delta=0.0):
        if int(rounds) < 1:
            raise ParameterError(f"early stopping rounds must be >= 1, got {rounds}")
        self.rounds = int(rounds)
        self.metric_name = metric_name
        self.data_name = data_name
        self.maximize = maximize
        self.save_best = save_best
        self.min_delta = float(min_delta)
        self.best_score = None
        self.best_iteration = None

    def before_training(self, model):
        self.best_score = None
        self.best_iteration = None
        return model

    def after_iteration(self, model, epoch, evals_log):
        from ...model.metrics import get_metric

        data_name, metric_name, values = _last_metric(evals_log, self.data_name,
                                                      self.metric_name)
        maximize = self.maximize
        if maximize is None:
            try:
                maximize = get_metric(metric_name).higher_is_better
            except ParameterError:  # a custom metric's name: minimised, as XGBoost does
                maximize = False
        score = values[-1]
        improved = (self.best_score is None or
                    (score > self.best_score + self.min_delta if maximize
                     else score < self.best_score - self.min_delta))
        if improved:
            self.best_score = score
            self.best_iteration = epoch
            model.best_iteration = epoch
            model.best_score = float(score)
        return epoch - self.best_iteration >= self.rounds

    def after_training(self, model):
        if self.save_best and self.best_iteration is not None:
            model = model.slice_rounds(0, self.best_iteration + 1)
            model.best_iteration = self.best_iteration
            model.best_score = float(self.best_score)
        return model


class EvaluationMonitor(TrainingCallback):
    """Show the evaluation results every ``period`` rounds (and the last round).

    Parameters
    ----------
    period : int
    stream : file-like or None
        Where the lines go. None (default): the ``oocboost`` logger at INFO, shown on
        stdout unless the application gave that logger a handler (``utils/log.py``).
    """

    def __init__(self, period=1, stream=None):
        self.period = max(int(period), 1)
        self.stream = stream
        self._last_printed = -1

    def _line(self, epoch, evals_log):
        parts = [f"[{epoch}]"]
        for data_name, metrics in evals_log.items():
            for metric_name, values in metrics.items():
                parts.append(f"{data_name}-{metric_name}:{values[-1]:.5f}")
        return "\t".join(parts)

    def _show(self, line):
        if self.stream is not None:
            print(line, file=self.stream)  # the caller's own stream, as asked
        else:
            say(logger, line)

    def after_iteration(self, model, epoch, evals_log):
        if evals_log and epoch % self.period == 0:
            self._show(self._line(epoch, evals_log))
            self._last_printed = epoch
        self._last_epoch = epoch
        self._last_log = evals_log
        return False

    def after_training(self, model):
        last = getattr(self, "_last_epoch", None)
        if last is not None and last != self._last_printed and self._last_log:
            self._show(self._line(last, self._last_log))
        return model


class TrainingCheckPoint(TrainingCallback):
    """Save the model atomically every ``interval`` rounds, so a killed run can resume.

    Resume with ``train(..., init_model=path)``: boosting continues from the saved rounds.

    Parameters
    ----------
    path : str
        The checkpoint file (JSON model); replaced atomically each time.
    interval : int
    """

    def __init__(self, path, interval=10):
        self.path = os.fspath(path)
        self.interval = max(int(interval), 1)

    def after_iteration(self, model, epoch, evals_log):
        if (epoch + 1) % self.interval == 0:
            model.save_model(self.path)
        return False

    def after_training(self, model):
        model.save_model(self.path)
        return model


class LearningRateScheduler(TrainingCallback):
    """Set the learning rate of each round from ``schedule(epoch) -> float`` or a list."""

    def __init__(self, schedule):
        self.schedule = schedule

    def rate(self, epoch):
        if callable(self.schedule):
            return float(self.schedule(epoch))
        return float(self.schedule[epoch])

    def before_iteration(self, model, epoch, evals_log):
        model.learning_rate_override = self.rate(epoch)
        return False
