"""Booster parameters: XGBoost's names, aliases and defaults, validated in one place.

Where we differ from XGBoost (documented in docs/parameters.md):

- ``max_bin`` is a property of the cache (set at ``build-cache``); passing a different value
  to training is refused rather than silently ignored.
- ``grow_policy="lossguide"`` expands ``leaves_per_pass`` leaves per data pass (XGBoost
  expands one at a time in memory); out of core each pass is a read of the data.
- ``memory_limit`` and ``prefetch`` are ours; so is ``grow_policy="symmetric"``
  (CatBoost's oblivious trees, ``engine/symmetric.py``).
- Categorical partitions follow LightGBM (``categorical_split="lightgbm"``: ``cat_smooth``,
  ``cat_l2``, ``min_data_per_group``, ``max_cat_threshold`` 32, LightGBM's defaults);
  ``categorical_split="xgboost"`` gives XGBoost's search (``max_cat_threshold`` 64).
- Gradient-based row sampling: LightGBM's GOSS (``data_sample_strategy="goss"``,
  ``top_rate``, ``other_rate``) and XGBoost's ``sampling_method="gradient_based"``
  (with ``subsample``), both drawn block by block (``row_sampling.py``).
- LightGBM 4's quantized training (``use_quantized_grad``, ``num_grad_quant_bins``,
  ``quant_train_renew_leaf``, ``stochastic_rounding``, LightGBM's defaults) takes one
  more pass a round (``quantized.py``).
"""
from ...errors import ParameterError
from ...utils.params import Param, ParamSpec
from .dart import check_dart_params
from .linear_fit import check_linear_params
from .ordered import check_boosting_type
from .quantized import MAX_QUANT_BINS, check_quantized_params
from .row_sampling import check_sampling_params


def _fraction(name, doc):
    return Param(name, "float", 1.0, doc, low=0.0, low_open=True, high=1.0)


def _at_least_zero(name, default, doc, **kw):
    return Param(name, "float", default, doc, low=0.0, **kw)


#: Every booster parameter: XGBoost 2/3 names and defaults, LightGBM's for its
#: categorical search and GOSS, ours for out-of-core running (docs/parameters.md 1.1).
BOOSTER_SPEC = ParamSpec("gbtree", [
    Param("objective", "any", "reg:squarederror", "loss (objectives/)"),
    Param("learning_rate", "float", 0.3, "multiplies every leaf value", low=0.0,
          low_open=True, aliases=("eta",)),
    Param("max_depth", "int", 6, "depth limit; 0 = none (needs lossguide and max_leaves)",
          low=0),
    Param("max_leaves", "int", 0, "leaf limit per tree; 0 = none", low=0),
    _at_least_zero("min_child_weight", 1.0, "smallest hessian sum of a child"),
    _at_least_zero("gamma", 0.0, "smallest gain of a split", aliases=("min_split_loss",)),
    _at_least_zero("reg_lambda", 1.0, "L2 on leaf weights", aliases=("lambda",)),
    _at_least_zero("reg_alpha", 0.0, "L1 on leaf weights", aliases=("alpha",)),
    _at_least_zero("max_delta_step", 0.0, "clips leaf weights (0.7 for count:poisson)"),
    _fraction("subsample", "rows kept per round"),
    Param("sampling_method", "choice", "uniform", "uniform or XGBoost's gradient_based",
          choices=("uniform", "gradient_based")),
    Param("data_sample_strategy", "choice", "bagging", "bagging or LightGBM's goss",
          choices=("bagging", "goss")),
    Param("top_rate", "float", 0.2, "GOSS: share of rows with the largest gradients kept",
          low=0.0, low_open=True, high=1.0, high_open=True),
    Param("other_rate", "float", 0.1, "GOSS: share of rows drawn from the rest",
          low=0.0, low_open=True, high=1.0, high_open=True),
    _fraction("colsample_bytree", "features drawn per tree"),
    _fraction("colsample_bylevel", "features drawn per level, from the tree's"),
    _fraction("colsample_bynode", "features drawn per node, from the level's"),
    Param("scale_pos_weight", "float", 1.0, "binary: weight of the positive rows",
          low=0.0, low_open=True),
    Param("class_weight", "any", None, "classification: 'balanced', {class: weight} or "
          "'0:1,1:5'; multiplies the sample weights"),
    Param("is_unbalance", "bool", False, "binary: LightGBM's balancing weights",
          aliases=("unbalance", "unbalanced_sets")),
    Param("base_score", "float", None, "intercept in prediction space (None: estimated)"),
    Param("seed", "int", 0, "feature and row sampling", low=0,
          aliases=("random_state",)),
    Param("n_threads", "int", None, "kernel threads (None: every core)", low=1,
          aliases=("nthread", "n_jobs")),
    Param("grow_policy", "choice", "depthwise", "depthwise, lossguide (best first), or "
                                                "symmetric (CatBoost's oblivious trees)",
          choices=("depthwise", "lossguide", "symmetric")),
    Param("leaves_per_pass", "int", 8, "lossguide: leaves expanded per read of the data",
          low=1),
    Param("max_cat_to_onehot", "int", 4, "fewer categories: one-vs-rest splits", low=1),
    Param("num_class", "int", None, "classes of multi:*", low=2),
    Param("eval_metric", "any", None, "a metric name or a list (None: the objective's)"),
    Param("huber_slope", "float", 1.0, "reg:pseudohubererror's slope", low=0.0,
          low_open=True),
    Param("quantile_alpha", "any", 0.5, "reg:quantileerror's level, or a list of levels"),
    Param("tweedie_variance_power", "float", 1.5, "reg:tweedie's power", low=1.0,
          low_open=True, high=2.0, high_open=True),
    Param("lambdarank_pair_method", "choice", "topk", "rank:*: pairs from the top or mean",
          choices=("topk", "mean")),
    Param("lambdarank_num_pair_per_sample", "int", None, "rank:*: pairs per document",
          low=1),
    Param("lambdarank_normalization", "bool", True, "rank:*: normalise by pair count"),
    Param("lambdarank_score_normalization", "bool", True,
          "rank:*: normalise by score difference"),
    Param("lambdarank_unbiased", "bool", False, "rank:*: position-bias correction"),
    Param("ndcg_exp_gain", "bool", True, "rank:ndcg: gain 2^y - 1 (else y)"),
    Param("aft_loss_distribution", "choice", "normal", "survival:aft's distribution",
          choices=("normal", "logistic", "extreme")),
    Param("aft_loss_distribution_scale", "float", 1.0, "survival:aft's scale", low=0.0,
          low_open=True),
    Param("interaction_constraints", "any", None, "sets of features that may interact"),
    Param("monotone_constraints", "any", None, "+1 / -1 / 0 per feature"),
    Param("feature_weights", "any", None, "colsample_* draw features by these weights"),
    Param("max_cat_threshold", "int", None, "categories moved to one side at most", low=1,
          default_doc="32 (lightgbm), 64 (xgboost)"),
    Param("categorical_split", "choice", "lightgbm", "LightGBM's or XGBoost's search",
          choices=("lightgbm", "xgboost")),
    _at_least_zero("cat_smooth", 10.0, "lightgbm search: smoothing of category order"),
    _at_least_zero("cat_l2", 10.0, "lightgbm search: extra L2 of a partition"),
    Param("min_data_per_group", "int", 100, "lightgbm search: rows between partitions",
          low=0),
    Param("linear_tree", "bool", False, "LightGBM's linear models in the leaves",
          aliases=("linear_trees",)),
    _at_least_zero("linear_lambda", 0.0, "linear_tree: L2 on the leaves' coefficients"),
    Param("booster", "choice", "gbtree", "gbtree or dart (gblinear is not offered)",
          choices=("gbtree", "dart")),
    Param("boosting_type", "str", "plain", "CatBoost's plain or ordered boosting (each "
          "row's gradient from the rows before it in the cache's order)"),
    Param("multi_strategy", "str", "one_output_per_tree",
          "multi-output trees: one_output_per_tree (multi_output_tree is not offered)"),
    Param("rate_drop", "float", 0.0, "dart: share of trees dropped", low=0.0, high=1.0),
    Param("one_drop", "int", 0, "dart: drop at least one tree", low=0, high=1),
    Param("skip_drop", "float", 0.0, "dart: probability of no drop", low=0.0, high=1.0),
    Param("normalize_type", "choice", "tree", "dart: weights of new and dropped trees",
          choices=("tree", "forest")),
    Param("sample_type", "choice", "uniform", "dart: how trees are drawn",
          choices=("uniform", "weighted")),
    Param("use_quantized_grad", "bool", False, "LightGBM's quantized training: int8 "
          "gradients, int32 histograms"),
    Param("num_grad_quant_bins", "int", 4, "use_quantized_grad: levels of a gradient",
          low=2, high=MAX_QUANT_BINS),
    Param("quant_train_renew_leaf", "bool", False, "use_quantized_grad: leaf values from "
          "the full-precision gradients (one more pass a round)"),
    Param("stochastic_rounding", "bool", True, "use_quantized_grad: unbiased random "
          "rounding (else to nearest)"),
    Param("max_bin", "int", None, "the cache's (a different value is refused)", low=2),
    Param("memory_limit", "any", None, "peak memory of the process (bytes or '1GB')"),
    Param("prefetch", "int", None, "blocks read ahead (None: from the memory plan)",
          low=0),
    Param("verbosity", "int", 1, "0 silent, 1 progress, 2 memory plan and timings", low=0,
          high=3),
], refused={"n_estimators": "pass it to train() as num_boost_round"})

#: name -> default (the spec's).
BOOSTER_DEFAULTS = BOOSTER_SPEC.defaults()
#: ``max_cat_threshold`` by ``categorical_split``: LightGBM's and XGBoost's defaults.
MAX_CAT_THRESHOLD = {"lightgbm": 32, "xgboost": 64}


def resolve_params(params):
    """Defaults plus ``params`` (aliases resolved), each checked against
    :data:`BOOSTER_SPEC`, then the rules between parameters.

    Parameters
    ----------
    params : dict
        XGBoost-style parameters; unknown names raise ``ParameterError`` listing the
        nearest known names.

    Returns
    -------
    dict
        Every parameter of ``BOOSTER_SPEC`` with a checked value.

    Examples
    --------
    >>> resolve_params({"eta": 0.1, "max_depth": 4})["learning_rate"]
    0.1
    """
    out = BOOSTER_SPEC.resolve(params)
    if out["max_cat_threshold"] is None:
        out["max_cat_threshold"] = MAX_CAT_THRESHOLD[out["categorical_split"]]
    if out["max_depth"] == 0 and (out["grow_policy"] != "lossguide" or not out["max_leaves"]):
        raise ParameterError("max_depth=0 (no limit) needs grow_policy='lossguide' and "
                             "max_leaves > 0, as in XGBoost")
    check_symmetric_params(out)
    check_dart_params(out)
    check_linear_params(out)
    check_sampling_params(out)
    check_boosting_type(out)
    check_quantized_params(out)
    if isinstance(out["eval_metric"], str):
        out["eval_metric"] = [out["eval_metric"]]
    return out


#: Deepest symmetric tree (2^16 leaves, as CatBoost's limit of depth 16).
MAX_SYMMETRIC_DEPTH = 16


def check_symmetric_params(p):
    """``grow_policy="symmetric"`` (CatBoost's ``SymmetricTree``): one split a level, so
    no leaf limit, no feature draw per node, no interaction or monotone constraints."""
    if p["grow_policy"] != "symmetric":
        return
    if not 1 <= p["max_depth"] <= MAX_SYMMETRIC_DEPTH:
        raise ParameterError(f"grow_policy='symmetric' needs max_depth in [1, "
                             f"{MAX_SYMMETRIC_DEPTH}] (CatBoost's depth), got "
                             f"{p['max_depth']}")
    refused = [name for name, on in (
        ("max_leaves", bool(p["max_leaves"])), ("colsample_bynode",
                                                p["colsample_bynode"] < 1.0),
        ("interaction_constraints", bool(p["interaction_constraints"])),
        ("monotone_constraints", bool(p["monotone_constraints"]))) if on]
    if refused:
        raise ParameterError(f"grow_policy='symmetric' gives every node of a level one "
                             f"split: {', '.join(refused)} cannot apply (use "
                             f"colsample_bylevel to draw features per level)")


def objective_params(params):
    """The subset of resolved parameters an objective takes."""
    keys = ("num_class", "scale_pos_weight", "huber_slope", "quantile_alpha",
            "max_delta_step", "tweedie_variance_power", "lambdarank_pair_method",
            "lambdarank_num_pair_per_sample", "lambdarank_normalization",
            "lambdarank_score_normalization", "lambdarank_unbiased", "ndcg_exp_gain",
            "aft_loss_distribution", "aft_loss_distribution_scale")
    out = {k: params[k] for k in keys if params.get(k) is not None}
    if params["objective"] != "count:poisson":
        out.pop("max_delta_step", None)
    return out
