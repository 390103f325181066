"""Booster parameters: XGBoost's names, aliases and defaults, validated in one place.

Where we differ from XGBoost (documented in docs/parameters.md):

- ``max_bin`` is a property of the cache (set at ``build-cache``); passing a different value
  to training is refused rather than silently ignored.
- ``grow_policy="lossguide"`` expands ``leaves_per_pass`` leaves per data pass (XGBoost
  expands one at a time in memory); out of core each pass is a read of the data.
- ``memory_limit`` and ``prefetch`` are ours.
- Categorical partitions follow LightGBM (``categorical_split="lightgbm"``: ``cat_smooth``,
  ``cat_l2``, ``min_data_per_group``, ``max_cat_threshold`` 32, LightGBM's defaults);
  ``categorical_split="xgboost"`` gives XGBoost's search (``max_cat_threshold`` 64).
- Gradient-based row sampling: LightGBM's GOSS (``data_sample_strategy="goss"``,
  ``top_rate``, ``other_rate``) and XGBoost's ``sampling_method="gradient_based"``
  (with ``subsample``), both drawn block by block (``row_sampling.py``).
"""
import numbers

from ...errors import ParameterError
from .dart import check_dart_params
from .row_sampling import check_sampling_params

#: name -> default. XGBoost 2/3 defaults.
BOOSTER_DEFAULTS = {
    "objective": "reg:squarederror",
    "learning_rate": 0.3,
    "max_depth": 6,
    "max_leaves": 0,
    "min_child_weight": 1.0,
    "gamma": 0.0,
    "reg_lambda": 1.0,
    "reg_alpha": 0.0,
    "max_delta_step": 0.0,
    "subsample": 1.0,
    "sampling_method": "uniform",
    "data_sample_strategy": "bagging",
    "top_rate": 0.2,
    "other_rate": 0.1,
    "colsample_bytree": 1.0,
    "colsample_bylevel": 1.0,
    "colsample_bynode": 1.0,
    "scale_pos_weight": 1.0,
    "base_score": None,
    "seed": 0,
    "n_threads": None,
    "grow_policy": "depthwise",
    "leaves_per_pass": 8,
    "max_cat_to_onehot": 4,
    "num_class": None,
    "eval_metric": None,
    "huber_slope": 1.0,
    "quantile_alpha": 0.5,
    "tweedie_variance_power": 1.5,
    "lambdarank_pair_method": "topk",
    "lambdarank_num_pair_per_sample": None,
    "lambdarank_normalization": True,
    "lambdarank_score_normalization": True,
    "lambdarank_unbiased": False,
    "ndcg_exp_gain": True,
    "aft_loss_distribution": "normal",
    "aft_loss_distribution_scale": 1.0,
    "interaction_constraints": None,
    "monotone_constraints": None,
    "feature_weights": None,
    "max_cat_threshold": None,
    "categorical_split": "lightgbm",
    "cat_smooth": 10.0,
    "cat_l2": 10.0,
    "min_data_per_group": 100,
    "booster": "gbtree",
    "multi_strategy": "one_output_per_tree",
    "rate_drop": 0.0,
    "one_drop": 0,
    "skip_drop": 0.0,
    "normalize_type": "tree",
    "sample_type": "uniform",
    "max_bin": None,
    "memory_limit": None,
    "prefetch": None,
    "verbosity": 1,
}

ALIASES = {
    "eta": "learning_rate",
    "lambda": "reg_lambda",
    "alpha": "reg_alpha",
    "min_split_loss": "gamma",
    "nthread": "n_threads",
    "n_jobs": "n_threads",
    "random_state": "seed",
    "n_estimators": None,  # a scikit-learn name: a train() argument, not a parameter
}

_RANGES = {
    "learning_rate": (0.0, None, False),
    "min_child_weight": (0.0, None, True),
    "gamma": (0.0, None, True),
    "reg_lambda": (0.0, None, True),
    "reg_alpha": (0.0, None, True),
    "max_delta_step": (0.0, None, True),
    "scale_pos_weight": (0.0, None, False),
    "huber_slope": (0.0, None, False),
    "cat_smooth": (0.0, None, True),
    "cat_l2": (0.0, None, True),
}
#: ``max_cat_threshold`` by ``categorical_split``: LightGBM's and XGBoost's defaults.
MAX_CAT_THRESHOLD = {"lightgbm": 32, "xgboost": 64}
_FRACTIONS = ("subsample", "colsample_bytree", "colsample_bylevel", "colsample_bynode")


def _number(name, value):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"parameter {name} must be a number, got {value!r}") from None
    return float(value)


def _integer(name, value, minimum):
    try:
        as_int = int(value)
    except (TypeError, ValueError):
        raise ParameterError(f"parameter {name} must be an integer, got {value!r}") from None
    if as_int != float(value) or as_int < minimum:
        raise ParameterError(
            f"parameter {name} must be an integer >= {minimum}, got {value!r}"
        )
    return as_int


def resolve_params(params):
    """Defaults plus ``params`` (aliases resolved), validated.

    Parameters
    ----------
    params : dict
        XGBoost-style parameters; unknown names raise ``ParameterError`` listing the
        nearest known names.

    Returns
    -------
    dict
        Every parameter of ``BOOSTER_DEFAULTS`` with a checked value.

    Examples
    --------
    >>> resolve_params({"eta": 0.1, "max_depth": 4})["learning_rate"]
    0.1
    """
    out = dict(BOOSTER_DEFAULTS)
    seen = {}
    for key, value in (params or {}).items():
        name = ALIASES.get(key, key)
        if key in ALIASES and name is None:
            raise ParameterError(f"{key} is not a booster parameter: pass it to train() as "
                                 f"num_boost_round")
        if name not in BOOSTER_DEFAULTS:
            import difflib

            close = difflib.get_close_matches(name, list(BOOSTER_DEFAULTS) + list(ALIASES))
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise ParameterError(f"unknown parameter {key!r}{hint}")
        if name in seen and seen[name] != key:
            raise ParameterError(
                f"parameters {seen[name]!r} and {key!r} are aliases; give one"
            )
        seen[name] = key
        out[name] = value
    for name, (low, high, inclusive) in _RANGES.items():
        v = _number(name, out[name])
        if (v < low if inclusive else v <= low) or (high is not None and v > high):
            bound = ">=" if inclusive else ">"
            raise ParameterError(f"parameter {name} must be {bound} {low}, got {out[name]!r}")
        out[name] = v
    for name in _FRACTIONS:
        v = _number(name, out[name])
        if not 0.0 < v <= 1.0:
            raise ParameterError(f"parameter {name} must be in (0, 1], got {out[name]!r}")
        out[name] = v
    out["max_depth"] = _integer("max_depth", out["max_depth"], 0)
    out["max_leaves"] = _integer("max_leaves", out["max_leaves"], 0)
    out["leaves_per_pass"] = _integer("leaves_per_pass", out["leaves_per_pass"], 1)
    out["max_cat_to_onehot"] = _integer("max_cat_to_onehot", out["max_cat_to_onehot"], 1)
    if out["categorical_split"] not in MAX_CAT_THRESHOLD:
        raise ParameterError(f"categorical_split must be 'lightgbm' or 'xgboost', got "
                             f"{out['categorical_split']!r}")
    if out["max_cat_threshold"] is None:
        out["max_cat_threshold"] = MAX_CAT_THRESHOLD[out["categorical_split"]]
    out["max_cat_threshold"] = _integer("max_cat_threshold", out["max_cat_threshold"], 1)
    out["min_data_per_group"] = _integer("min_data_per_group", out["min_data_per_group"], 0)
    out["seed"] = _integer("seed", out["seed"], 0)
    if out["grow_policy"] not in ("depthwise", "lossguide"):
        raise ParameterError(f"grow_policy must be 'depthwise' or 'lossguide', got "
                             f"{out['grow_policy']!r}")
    if out["max_depth"] == 0 and (out["grow_policy"] != "lossguide" or not out["max_leaves"]):
        raise ParameterError("max_depth=0 (no limit) needs grow_policy='lossguide' and "
                             "max_leaves > 0, as in XGBoost")
    check_dart_params(out)
    check_sampling_params(out)
    if out["n_threads"] is not None:
        out["n_threads"] = _integer("n_threads", out["n_threads"], 1)
    if out["num_class"] is not None:
        out["num_class"] = _integer("num_class", out["num_class"], 2)
    if isinstance(out["eval_metric"], str):
        out["eval_metric"] = [out["eval_metric"]]
    return out


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
