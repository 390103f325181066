"""scikit-learn style gradient boosting over the learners (it translates parameters and
data only).

``fit`` takes arrays or DataFrames (a temporary cache is built from them and removed after
training) or a ``Cache`` (trained from directly: the out-of-core path). Parameter names
and defaults are XGBoost's scikit-learn API's (``n_estimators=100``, ``learning_rate=0.3``,
``max_depth=6``), since the engine is XGBoost's algorithm; scikit-learn's own
``GradientBoostingClassifier`` defaults differ (0.1, depth 3).

Example
-------
>>> from oocboost import GradientBoostingClassifier
>>> clf = GradientBoostingClassifier(n_estimators=50, learning_rate=0.1)   # doctest: +SKIP
>>> clf.fit(X_train, y_train, eval_set=[(X_valid, y_valid)])              # doctest: +SKIP
>>> clf.predict_proba(X_valid)[:, 1]                                       # doctest: +SKIP
"""

import inspect

import numpy as np

from ..errors import ParameterError
from ..learners.boosting.params import BOOSTER_SPEC
from ..learners.common.data import require_classes
from .base import (
    ClassifierMixin,
    ParamsMixin,
    RegressorMixin,
    TrainingData,
    continued_model,
    edges_of,
    importances_per_input,
    set_feature_attributes,
)
from .validation import fit_input, predict_input, prediction_module


class _GradientBoosting(ParamsMixin):
    #: Defaults that differ from the booster's spec (learners/boosting/params.py), and why.
    _DEFAULTS_DIFFER = {
        "objective": "None: the estimator's (binary:logistic or multi:softprob for a "
                     "classifier, reg:squarederror, rank:ndcg for the ranker)",
        "max_delta_step": "None: the booster's, 0 or 0.7 for count:poisson (XGBoost's "
                          "scikit-learn API)",
        "max_bin": "256: the codes of the cache fit builds; train() takes its cache's",
        "verbosity": "0: an estimator is quiet unless asked",
    }
    _objective = None

    def __init__(
        self,
        n_estimators=100,
        *,
        objective=None,
        learning_rate=0.3,
        max_depth=6,
        max_leaves=0,
        min_child_weight=1.0,
        gamma=0.0,
        reg_lambda=1.0,
        reg_alpha=0.0,
        max_delta_step=None,
        subsample=1.0,
        colsample_bytree=1.0,
        colsample_bylevel=1.0,
        colsample_bynode=1.0,
        scale_pos_weight=1.0,
        class_weight=None,
        is_unbalance=False,
        base_score=None,
        grow_policy="depthwise",
        max_cat_to_onehot=4,
        max_bin=256,
        eval_metric=None,
        early_stopping_rounds=None,
        huber_slope=1.0,
        quantile_alpha=0.5,
        tweedie_variance_power=1.5,
        interaction_constraints=None,
        monotone_constraints=None,
        feature_weights=None,
        max_cat_threshold=None,
        booster="gbtree",
        rate_drop=0.0,
        one_drop=0,
        skip_drop=0.0,
        normalize_type="tree",
        sample_type="uniform",
        lambdarank_pair_method="topk",
        lambdarank_num_pair_per_sample=None,
        lambdarank_normalization=True,
        lambdarank_score_normalization=True,
        ndcg_exp_gain=True,
        categorical_split="lightgbm",
        cat_smooth=10.0,
        cat_l2=10.0,
        min_data_per_group=100,
        sampling_method="uniform",
        data_sample_strategy="bagging",
        top_rate=0.2,
        other_rate=0.1,
        cat_encoding="native",
        ts_combinations=1,
        linear_tree=False,
        boosting_type="plain",
        linear_lambda=0.0,
        use_quantized_grad=False,
        num_grad_quant_bins=4,
        quant_train_renew_leaf=False,
        stochastic_rounding=True,
        random_state=0,
        n_jobs=None,
        memory_limit=None,
        cache_dir=None,
        verbosity=0,
    ):
        self.n_estimators = n_estimators
        self.objective = objective
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.max_leaves = max_leaves
        self.min_child_weight = min_child_weight
        self.gamma = gamma
        self.reg_lambda = reg_lambda
        self.reg_alpha = reg_alpha
        self.max_delta_step = max_delta_step
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.colsample_bylevel = colsample_bylevel
        self.colsample_bynode = colsample_bynode
        self.scale_pos_weight = scale_pos_weight
        self.class_weight = class_weight
        self.is_unbalance = is_unbalance
        self.base_score = base_score
        self.grow_policy = grow_policy
        self.max_cat_to_onehot = max_cat_to_onehot
        self.max_bin = max_bin
        self.eval_metric = eval_metric
        self.early_stopping_rounds = early_stopping_rounds
        self.huber_slope = huber_slope
        self.quantile_alpha = quantile_alpha
        self.tweedie_variance_power = tweedie_variance_power
        self.interaction_constraints = interaction_constraints
        self.monotone_constraints = monotone_constraints
        self.feature_weights = feature_weights
        self.max_cat_threshold = max_cat_threshold
        self.booster = booster
        self.rate_drop = rate_drop
        self.one_drop = one_drop
        self.skip_drop = skip_drop
        self.normalize_type = normalize_type
        self.sample_type = sample_type
        self.lambdarank_pair_method = lambdarank_pair_method
        self.lambdarank_num_pair_per_sample = lambdarank_num_pair_per_sample
        self.lambdarank_normalization = lambdarank_normalization
        self.lambdarank_score_normalization = lambdarank_score_normalization
        self.ndcg_exp_gain = ndcg_exp_gain
        self.categorical_split = categorical_split
        self.cat_smooth = cat_smooth
        self.cat_l2 = cat_l2
        self.min_data_per_group = min_data_per_group
        self.sampling_method = sampling_method
        self.data_sample_strategy = data_sample_strategy
        self.top_rate = top_rate
        self.other_rate = other_rate
        self.cat_encoding = cat_encoding
        self.ts_combinations = ts_combinations
        self.linear_tree = linear_tree
        self.boosting_type = boosting_type
        self.linear_lambda = linear_lambda
        self.use_quantized_grad = use_quantized_grad
        self.num_grad_quant_bins = num_grad_quant_bins
        self.quant_train_renew_leaf = quant_train_renew_leaf
        self.stochastic_rounding = stochastic_rounding
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.memory_limit = memory_limit
        self.cache_dir = cache_dir
        self.verbosity = verbosity

    # ------------------------------------------------------------------ fitting
    def _named_objective(self, default):
        """The objective name: ``default`` when ``objective`` is a callable, whose
        gradients then replace the default's (XGBoost's scikit-learn API)."""
        return default if callable(self.objective) else (self.objective or default)

    def _custom_callables(self):
        """``(obj, custom_metric)`` for ``train`` from callable ``objective`` /
        ``eval_metric``, which take ``(y_true, y_pred)`` as in XGBoost's scikit-learn API
        (``train`` takes ``(predt, labels)``)."""
        obj = metric = None
        if callable(self.objective):
            fn = self.objective
            obj = lambda predt, labels: fn(labels, predt)  # noqa: E731
        if callable(self.eval_metric):
            fn_m = self.eval_metric
            name = getattr(fn_m, "__name__", "custom")
            metric = lambda predt, labels: (name, fn_m(labels, predt))  # noqa: E731
        return obj, metric

    def _booster_params(self, objective, extra=None):
        # None means "the booster's default" (XGBoost's scikit-learn API: max_delta_step
        # is then 0, or 0.7 for count:poisson)
        params = {name: getattr(self, name) for name in _BOOSTER_ARGS
                  if getattr(self, name) is not None}
        if callable(params.get("eval_metric")):
            params.pop("eval_metric")
        params.update(objective=objective, seed=self.random_state or 0,
                      n_threads=self.n_jobs if self.n_jobs and self.n_jobs > 0 else None,
                      verbosity=self.verbosity)
        params.update(extra or {})
        if self.class_weight is not None and "class_weight" not in params:
            raise ParameterError(f"class_weight weights the classes of one label column; "
                                 f"{type(self).__name__} is not fitting one here: weight "
                                 f"the rows with sample_weight")
        return params

    def _encode_labels(self, y):
        return y, None

    def _cross_val_predictions(self, cache, fold_of_row):
        """Out-of-fold predictions of these parameters on a cache, as ``predict`` /
        ``predict_proba`` lay them out, every fold grown in the same passes
        (:func:`oocboost.cv`; early stopping is not used: it would look at the held-out
        rows)."""
        from ..learners.boosting.cv import cv

        objective, extra = self._cache_objective(cache)
        _, oof = cv(self._booster_params(objective, extra), cache, self.n_estimators,
                    folds=fold_of_row, return_oof=True, as_pandas=False,
                    memory_limit=self.memory_limit)
        if "num_class" not in (extra or {}) and \
                getattr(self, "_estimator_type", "") == "classifier":
            return np.column_stack([1.0 - oof, oof])
        return oof

    def _fit(self, X, y, sample_weight, eval_set, sample_weight_eval_set, objective,
             extra=None, group=None, eval_group=None, offsets=(None, None),
             init_model=None):
        from ..learners.boosting.training import train

        base_margin, base_margin_eval_set = offsets
        if self.ts_combinations != 1 and self.cat_encoding != "ordered_ts":
            raise ParameterError("ts_combinations goes with cat_encoding='ordered_ts'")
        # a class label's ordered TS: one statistic per class (CatBoost's)
        per_class = objective in ("multi:softprob", "multi:softmax")
        data = TrainingData(self.cache_dir, self.memory_limit, self.max_bin,
                            cat_encoding=self.cat_encoding,
                            ts_options={"ts_per_class": per_class,
                                        "ts_combinations": self.ts_combinations})
        try:
            train_cache = data.cache(X, y, sample_weight, "train", group=group,
                                     base_margin=base_margin,
                                     **edges_of(init_model, data._folder()))
            evals = []
            for i, item in enumerate(eval_set or ()):
                Xe, ye = item
                we = sample_weight_eval_set[i] if sample_weight_eval_set else None
                ge = eval_group[i] if eval_group else None
                me = base_margin_eval_set[i] if base_margin_eval_set else None
                evals.append((data.cache(Xe, ye, we, f"valid_{i}", reference=train_cache,
                                         group=ge, base_margin=me), f"validation_{i}"))
            self.evals_result_ = {}
            obj, custom_metric = self._custom_callables()
            self.model_ = train(self._booster_params(objective, extra), train_cache,
                                self.n_estimators, evals=evals,
                                early_stopping_rounds=self.early_stopping_rounds,
                                verbose_eval=self.verbosity > 0,
                                evals_result=self.evals_result_,
                                memory_limit=self.memory_limit, obj=obj,
                                custom_metric=custom_metric, init_model=init_model)
        finally:
            data.close()
        set_feature_attributes(self, X)
        return self

    # ------------------------------------------------------------------ fitted

    @property
    def best_iteration_(self):
        self._check_fitted()
        return self.model_.best_iteration

    @property
    def feature_importances_(self):
        """Total gain per feature, normalised to sum 1 (XGBoost's sklearn default)."""
        self._check_fitted()
        imp = importances_per_input(self.model_, self.model_.feature_importance(
            "total_gain"))
        total = imp.sum()
        return imp / total if total > 0 else imp

    def _iteration_range(self, iteration_range):
        if iteration_range is None and self.model_.best_iteration is not None:
            return (0, self.model_.best_iteration + 1)
        return iteration_range

    def _margin(self, X, iteration_range=None, base_margin=None):
        X = predict_input(self, X)
        return prediction_module().predict(self.model_, X, output_margin=True,
                                     iteration_range=self._iteration_range(iteration_range),
                                     base_margin=base_margin)

    def apply(self, X):
        """Leaf index of each row in each tree, (n_rows, n_trees) int32."""
        from ..model.predict import predict

        X = predict_input(self, X)
        return predict(self.model_, X, pred_leaf=True)


def fit_offsets(base_margin, init_score, base_margin_eval_set, eval_init_score):
    """``(base_margin, base_margin_eval_set)`` from XGBoost's names or LightGBM's
    aliases (``init_score``, ``eval_init_score``), not both."""
    for name, value, alias, other in (("base_margin", base_margin, "init_score", init_score),
                                      ("base_margin_eval_set", base_margin_eval_set,
                                       "eval_init_score", eval_init_score)):
        if value is not None and other is not None:
            raise ParameterError(f"{alias} is an alias of {name}: give one of them")
    return (init_score if base_margin is None else base_margin,
            eval_init_score if base_margin_eval_set is None else base_margin_eval_set)


#: The estimator's arguments passed to the booster as they are: those the booster's spec
#: declares by that name, but for the ones ``_booster_params`` sets itself.
_BOOSTER_ARGS = tuple(
    name for name in inspect.signature(_GradientBoosting.__init__).parameters
    if name in BOOSTER_SPEC and name not in ("objective", "max_bin", "memory_limit",
                                             "verbosity", "class_weight"))


class GradientBoostingRegressor(RegressorMixin, _GradientBoosting):
    """Gradient-boosted trees for regression (default objective ``reg:squarederror``).

    See :func:`oocboost.train` for the parameters; names and defaults follow XGBoost's
    ``XGBRegressor``. Extra: ``memory_limit`` (e.g. ``"1GB"``) and ``cache_dir`` (where
    temporary caches of in-memory data go).
    """

    def fit(self, X, y=None, sample_weight=None, eval_set=None, sample_weight_eval_set=None,
            base_margin=None, base_margin_eval_set=None, *, init_score=None,
            eval_init_score=None, init_model=None, xgb_model=None):
        """Train on arrays/DataFrames (a temporary cache is built) or on a ``Cache``.
        ``base_margin`` (alias ``init_score``): each row's offset, (n_rows,) or
        (n_rows, n_outputs), as XGBoost's; ``base_margin_eval_set`` (alias
        ``eval_init_score``) those of each ``eval_set`` entry. ``init_model`` (alias
        ``xgb_model``): a model to continue, ``n_estimators`` more rounds (arrays are
        binned on its edges)."""
        offsets = fit_offsets(base_margin, init_score, base_margin_eval_set,
                              eval_init_score)
        X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=False)
        return self._fit(X, y, sample_weight, eval_set, sample_weight_eval_set,
                         *self._cache_objective(None), offsets=offsets,
                         init_model=continued_model(init_model, xgb_model))

    def _cache_objective(self, cache):
        return self._named_objective("reg:squarederror"), None

    def predict(self, X, iteration_range=None, base_margin=None):
        """Predictions (n_rows,) using the best iteration when early stopping ran;
        ``base_margin``: each row's offset, as at ``fit``."""
        margin = self._margin(X, iteration_range, base_margin)
        return prediction_module().model_objective(self.model_).transform(margin)

    def staged_predict(self, X):
        """Yield predictions after each boosting round."""
        from ..model.predict import model_objective

        objective = model_objective(self.model_)
        for r in range(1, self.model_.n_rounds + 1):
            yield objective.transform(self._margin(X, (0, r)))

    def score(self, X, y, sample_weight=None):
        """R^2 of the predictions (scikit-learn's regressor score)."""
        from ..model.metrics import get_metric

        y = np.asarray(y, np.float64)
        prediction = self.predict(X)
        if y.ndim == 2:  # several targets: the mean of their R^2, as scikit-learn's
            return float(np.mean([get_metric("r2")(y[:, j], prediction[:, j], sample_weight)
                                  for j in range(y.shape[1])]))
        return get_metric("r2")(y, prediction, sample_weight)


def _class_weight_of_codes(class_weight, classes):
    """An estimator's ``class_weight`` keyed by class code (the index in ``classes_``,
    what the booster sees): a dict's labels mapped, ``"balanced"`` as it is."""
    if not isinstance(class_weight, dict):
        return class_weight
    code = {(c.item() if hasattr(c, "item") else c): k for k, c in enumerate(classes)}
    out = {}
    for label, weight in class_weight.items():
        key = label.item() if hasattr(label, "item") else label
        if key not in code:
            raise ParameterError(f"class_weight names class {label!r}, which is not among "
                                 f"the classes {list(code)}")
        out[code[key]] = weight
    return out


class GradientBoostingClassifier(ClassifierMixin, _GradientBoosting):
    """Gradient-boosted trees for classification: ``binary:logistic`` for two classes,
    ``multi:softprob`` (one tree per class per round) for more.

    Labels may be any sortable values; ``classes_`` holds them in order.
    """

    def fit(self, X, y=None, sample_weight=None, eval_set=None, sample_weight_eval_set=None,
            base_margin=None, base_margin_eval_set=None, *, init_score=None,
            eval_init_score=None, init_model=None, xgb_model=None):
        """Train on arrays/DataFrames (a temporary cache is built) or on a ``Cache``.
        ``base_margin`` (alias ``init_score``): each row's offset in margin units (log
        odds; (n_rows, n_classes) for several classes), as XGBoost's;
        ``base_margin_eval_set`` (alias ``eval_init_score``) those of ``eval_set``.
        ``init_model`` (alias ``xgb_model``): a model of the same classes to continue,
        ``n_estimators`` more rounds (arrays are binned on its edges)."""
        from ..cache.store import Cache

        offsets = fit_offsets(base_margin, init_score, base_margin_eval_set,
                              eval_init_score)
        X, y, sample_weight = fit_input(self, X, y, sample_weight, classifier=True)
        if isinstance(X, Cache):
            if y is not None:
                raise ParameterError("when X is a Cache its labels come from the cache: "
                                     "pass y=None")
            self.classes_ = require_classes(X)
            y_enc, evals = None, eval_set
        else:
            if y is None:
                raise ParameterError("y is required when X is not a Cache")
            if np.ndim(y) == 2:
                return self._fit_multilabel(X, y, sample_weight, eval_set,
                                            sample_weight_eval_set, offsets,
                                            (init_model, xgb_model))
            self.classes_, y_enc = np.unique(np.asarray(y), return_inverse=True)
            evals = []
            for Xe, ye in eval_set or ():
                ye = np.asarray(ye)
                pos = np.searchsorted(self.classes_, ye)
                pos = np.clip(pos, 0, len(self.classes_) - 1)
                if not np.all(self.classes_[pos] == ye):
                    raise ParameterError("eval_set has labels not seen in y")
                evals.append((Xe, pos))
        self.n_classes_ = len(self.classes_)
        objective, extra = self._objective_for(self.classes_)
        self._fit(X, y_enc, sample_weight, evals, sample_weight_eval_set, objective, extra,
                  offsets=offsets,
                  init_model=continued_model(init_model, xgb_model, self.classes_))
        self.model_.classes = self.classes_.tolist()
        self.model_.n_classes = self.n_classes_
        return self

    def _fit_multilabel(self, X, y, sample_weight, eval_set, sample_weight_eval_set,
                        offsets, continued=(None, None)):
        """A 0/1 indicator matrix (n, k): one ``binary:logistic`` target per column, as
        XGBoost's multi-label classifier (``classes_`` is ``0 .. k-1``)."""
        y = np.asarray(y, dtype=np.float64)
        if not np.all((y == 0) | (y == 1)):
            raise ParameterError("a 2-D y is a multi-label indicator matrix: every value "
                                 "must be 0 or 1")
        self.classes_ = np.arange(y.shape[1])
        self.n_classes_ = y.shape[1]
        self._fit(X, y, sample_weight, eval_set, sample_weight_eval_set,
                  self._named_objective("binary:logistic"), offsets=offsets,
                  init_model=continued_model(*continued, self.classes_))
        self.model_.classes = self.classes_.tolist()
        self.model_.n_classes = self.n_classes_
        return self

    def _is_multilabel(self):
        objective = prediction_module().model_objective(self.model_)
        return objective.n_outputs > 1 and objective.name == "binary:logistic"

    def _objective_for(self, classes):
        if len(classes) < 2:
            raise ParameterError(f"y has a single class (1 class: {list(classes)}); "
                                 f"classification needs at least two")
        extra = {} if self.class_weight is None else \
            {"class_weight": _class_weight_of_codes(self.class_weight, classes)}
        if len(classes) == 2:
            return self._named_objective("binary:logistic"), extra
        return self._named_objective("multi:softprob"), {"num_class": len(classes), **extra}

    def _cache_objective(self, cache):
        return self._objective_for(require_classes(cache))

    def predict_proba(self, X, iteration_range=None, base_margin=None):
        """Class probabilities (n_rows, n_classes); ``base_margin``: each row's offset,
        as at ``fit``."""
        margin = self._margin(X, iteration_range, base_margin)
        return prediction_module().model_objective(self.model_).transform_proba(margin)

    def predict(self, X, iteration_range=None, base_margin=None):
        """Most probable class labels (from ``classes_``); for a multi-label model the
        0/1 indicator matrix (probability over 0.5)."""
        proba = self.predict_proba(X, iteration_range, base_margin)
        if self._is_multilabel():
            return (proba > 0.5).astype(np.int64)
        return self.classes_[np.argmax(proba, axis=1)]

    def staged_predict_proba(self, X):
        """Yield class probabilities after each boosting round."""
        from ..model.predict import model_objective

        objective = model_objective(self.model_)
        for r in range(1, self.model_.n_rounds + 1):
            yield objective.transform_proba(self._margin(X, (0, r)))

    def staged_predict(self, X):
        """Yield predicted labels after each boosting round."""
        for proba in self.staged_predict_proba(X):
            yield self.classes_[np.argmax(proba, axis=1)]

    def score(self, X, y, sample_weight=None):
        """Accuracy (scikit-learn's classifier score)."""
        y = np.asarray(y)
        hit = (self.predict(X) == y).astype(np.float64)
        if hit.ndim == 2:  # multi-label: subset accuracy, as scikit-learn's
            hit = hit.min(axis=1)
        return float(np.average(hit, weights=sample_weight))
