"""What :func:`~oocboost.model.model.load_model` checks beyond types and shapes, so that
every top-level field of a model file is either checked or refused:

==================  =================================================================
field               checked
==================  =================================================================
format, version     :meth:`Model._from_json_dict` (this format, not newer)
n_outputs, trees,   ``fields.read_*`` (type, range, length) and :meth:`Model.validate`
tree_group, ...     (groups, weights, base margin, best iteration, classes, trees)
learner             one of :data:`LEARNERS` or a name a registered learner declared
                    (:func:`allow_learner`)
objective,          a known objective whose parameters it accepts, with ``n_outputs``
objective_params    outputs ("" : raw margins, no link function)
feature_types       each "numeric", "categorical" or "ordered_ts"
bin_mapper          a valid ``BinMapper`` description over the model's features, or null
attributes          ``label``, ``group`` (str or null), ``seed`` (int), ``adaboost`` (see
                    :func:`_check_adaboost`); other keys are free JSON, never read
params              free JSON (the training parameters, for the record; never read)
a part's key        optional: a learner's part (``model/parts.py``), read and validated
                    by its class against the core: ``naive_bayes`` (naive Bayes leaves,
                    each table against its tree, the classes and the bin mapper),
                    ``stream_state`` (Hoeffding trees' learning state, each array against
                    its tree and the bin mapper), ``mars`` (terms: hinges on numeric
                    features at their bin edges, finite, one column per output),
                    ``leaf_samples`` (a quantile forest's labels: leaves of their tree,
                    ascending values, positive weights), ``linear_leaves`` (boosting's
                    leaf models: leaves of their tree, distinct numeric features, finite
                    coefficients), and the keys of parts registered
                    at run time (``register_part``)
anything else       refused: an unknown field
==================  =================================================================
"""
import math

from ..errors import ModelError, OocboostError

#: The core's top-level fields of format version 1 (the parts' keys come from
#: ``model/parts.py``, :func:`known_fields`).
FIELDS = ("format", "format_version", "learner", "objective", "objective_params",
          "aggregation", "n_outputs", "trees_per_round", "base_margin", "tree_group",
          "tree_weight", "best_iteration", "n_classes", "classes", "feature_names",
          "feature_types", "bin_mapper", "params", "attributes", "trees")
LEARNERS = ("gbtree", "random_forest", "extra_trees", "decision_tree", "bagging",
            "adaboost", "hoeffding_tree", "online_bagging", "adaptive_random_forest",
            "hoeffding_adaptive_tree",
            "decision_stream", "mars", "isolation_forest")
#: ``learner`` values of learners registered at run time (``learners/registry.py``).
_REGISTERED_LEARNERS = set()
#: "ordered_ts": a categorical column encoded as its ordered target statistic (a numeric
#: feature whose raw strings the bin mapper's encoder turns into values).
FEATURE_TYPES = ("numeric", "categorical", "ordered_ts")
ADABOOST_PREDICTIONS = ("margin", "weighted_median")


def allow_learner(name):
    """Accept ``name`` as a model's ``learner`` from now on: a learner registered outside
    this package declares the name its models carry (its models then load in any process
    that registered it)."""
    if not isinstance(name, str) or not name:
        raise ModelError(f"a learner's model name must be a non-empty string, got {name!r}")
    _REGISTERED_LEARNERS.add(name)


def known_learners():
    """Every accepted model ``learner``: the built-in ones, then the registered ones."""
    return LEARNERS + tuple(sorted(_REGISTERED_LEARNERS - set(LEARNERS)))


def known_fields():
    """Every top-level field a model file may have: the core's, then the parts'."""
    from .parts import part_classes

    return FIELDS + tuple(part_classes())


def check_no_unknown_fields(doc, where):
    """Refuse a field this format does not have (a typo, or a newer writer's)."""
    fields = known_fields()
    unknown = sorted(k for k in doc if k not in fields)
    if unknown:
        raise ModelError(f"{where}: unknown field {unknown[0]!r} (format version 1 has "
                         f"{', '.join(fields)})")


def check_model_fields(model):
    """The checks of the module docstring on a built model; raises ModelError naming the
    field."""
    if model.learner not in LEARNERS and model.learner not in _REGISTERED_LEARNERS:
        raise ModelError(f"learner must be one of {known_learners()}, got "
                         f"{model.learner!r}")
    _check_objective(model)
    bad = [t for t in model.feature_types if t not in FEATURE_TYPES]
    if bad:
        raise ModelError(f"feature_types must each be one of {FEATURE_TYPES}, got {bad[0]!r}")
    if model.bin_mapper is not None:
        _check_bin_mapper(model)
    _check_attributes(model)


def _check_objective(model):
    if model.objective == "":
        return
    from .objectives import get_objective

    try:
        objective = get_objective(model.objective, dict(model.objective_params))
    except OocboostError as exc:
        raise ModelError(f"objective {model.objective!r} with objective_params "
                         f"{model.objective_params}: {exc}") from None
    if objective.n_outputs != model.n_outputs:
        raise ModelError(f"objective {model.objective!r} has {objective.n_outputs} "
                         f"outputs but n_outputs = {model.n_outputs}")


def _check_bin_mapper(model):
    from ..cache.binning import BinMapper

    try:
        mapper = BinMapper.from_dict(model.bin_mapper)
    except ModelError as exc:
        raise ModelError(f"bin_mapper: {exc}") from None
    if list(mapper.feature_names) != list(model.feature_names):
        raise ModelError(f"bin_mapper: features {list(mapper.feature_names)[:5]} differ "
                         f"from feature_names {list(model.feature_names)[:5]}")
    if list(mapper.feature_types) != list(model.feature_types):
        raise ModelError("bin_mapper: feature types differ from feature_types")


def _check_attributes(model):
    attributes = model.attributes
    for key in ("label", "group"):
        column = attributes.get(key)
        names = key == "label" and isinstance(column, list) and column and \
            all(isinstance(c, str) for c in column)
        if column is not None and not isinstance(column, str) and not names:
            raise ModelError(f"attributes.{key} must be a column name"
                             f"{' (or a list of names)' if key == 'label' else ''} or "
                             f"null, got {column!r}")
    seed = attributes.get("seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ModelError(f"attributes.seed must be an integer, got {seed!r}")
    k = attributes.get("tree_features")
    if k is not None and (not isinstance(k, int) or isinstance(k, bool)
                          or not 1 <= k <= model.n_features):
        raise ModelError(f"attributes.tree_features must be null or an integer in "
                         f"[1, {model.n_features}], got {k!r}")
    if not isinstance(attributes.get("bootstrap_features", False), bool):
        raise ModelError(f"attributes.bootstrap_features must be true or false, got "
                         f"{attributes['bootstrap_features']!r}")
    if model.learner == "adaboost" or "adaboost" in attributes:
        _check_adaboost(model, attributes.get("adaboost"))


def _check_adaboost(model, info):
    """``attributes.adaboost``: what AdaBoost's prediction reads."""
    from .adaboost import REGRESSOR_ALGORITHM

    def fail(msg):
        raise ModelError(f"attributes.adaboost: {msg}")

    if model.learner != "adaboost":
        fail(f"present in a model of learner {model.learner!r}")
    if not isinstance(info, dict):
        fail("missing or not an object (an AdaBoost model needs it to predict)")
    algorithm = info.get("algorithm")
    if algorithm not in ("SAMME", "SAMME.R", "gentle", "logitboost", "arc-x4", "M1", "MH",
                         REGRESSOR_ALGORITHM):
        fail(f"unknown algorithm {algorithm!r}")
    prediction = info.get("prediction")
    expected = "weighted_median" if algorithm == REGRESSOR_ALGORITHM else "margin"
    if prediction != expected:
        fail(f"prediction must be {expected!r} for {algorithm}, got {prediction!r}")
    n_classes = info.get("n_classes")
    if not isinstance(n_classes, int) or isinstance(n_classes, bool) or n_classes < 0:
        fail(f"n_classes must be a non-negative integer, got {n_classes!r}")
    for key in ("estimator_weights", "estimator_errors"):
        values = info.get(key)
        if not isinstance(values, list) or len(values) < model.n_rounds or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                for v in values):
            fail(f"{key} must be a list of at least {model.n_rounds} finite numbers")
