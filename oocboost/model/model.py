"""Tree ensembles: trees plus how they combine, and their safe versioned JSON format.

A :class:`Model` is a list of :class:`~oocboost.model.tree.Tree` plus how their outputs
combine (traversal and importances in :mod:`oocboost.model.prediction`):

* ``tree_group[t]``: the output tree ``t`` adds to (its ``value`` has one column), or -1
  when its ``value`` has ``n_outputs`` columns and column ``k`` adds to output ``k`` (a
  multi-output forest tree);
* ``tree_weight[t]``: multiplies the tree's leaf values;
* ``aggregation``, over the trees ``T`` of the iteration range, with
  ``T_k = {t in T : tree_group[t] in (k, -1)}``::

      "sum":   margin[i, k] = base_margin[k] + sum_{t in T_k} w_t * v_t(x_i)[k]
      "mean":  margin[i, k] = base_margin[k] + (sum_{t in T_k} w_t * v_t(x_i)[k]) / W_k,
               W_k = sum_{t in T_k} w_t  (no division when W_k == 0)
      "median": the prediction is the median over the trees of v_t(x_i) (one output,
               tree weights 1; NumPy's median, the middle two averaged for an even
               count), its margin the "mean" (an adaptive random forest regressor's)

  where ``v_t(x)[k]`` is column ``k`` of the reached leaf's value (column 0 for a tree of
  group ``k``). Boosting uses "sum" with weights 1 (the learning rate is in the leaf
  values); a random forest uses "mean" with weights 1 and base 0 (the average of its
  trees); AdaBoost can use "mean" with its estimator weights (scikit-learn's
  ``decision_function``) or "sum".

Sums are taken tree by tree in tree order, starting from ``base_margin`` for "sum" and
from 0 for "mean", so the naive loop in the tests reproduces them bit for bit.

The output transform (sigmoid, softmax, ...) is not applied here: ``Model.objective_name``
tells the caller which one to use.

The file format is JSON (never pickle)::

    {"format": "oocboost-model", "format_version": 1, "learner": ..., "objective": ...,
     "trees": [{"n_nodes": n, "n_outputs": k, "n_words": w, "left": [...], ...}], ...}

Loading validates everything before any array reaches a kernel; every problem raises
:class:`~oocboost.errors.ModelError` naming the file and what is wrong.
"""
from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..common import MAX_CATEGORIES, X_DTYPE, category_value_bins
from ..errors import ModelError
from ..utils.files import write_text_atomic

# the built-in parts register themselves (model/parts.py) when their modules load
from . import leaf_samples, linear_leaves, mars, naive_bayes, stream_state  # noqa: F401
from .checks import check_model_fields, check_no_unknown_fields
from .contributions import ModelContributions
from .fields import (
    INT32_MAX,
    jsonable,
    read_array,
    read_int,
    read_typed,
)
from .formats import ModelExport
from .parts import ModelPart, read_parts
from .prediction import ModelPrediction
from .tree import MAX_BITSET_CELLS, MAX_OUTPUTS, Tree, coerce

FORMAT = "oocboost-model"
FORMAT_VERSION = 1
#: Model files larger than this are refused unless ``load_model(max_bytes=...)`` says so.
MAX_MODEL_BYTES = 2 << 30
AGGREGATIONS = ("sum", "mean", "median")


# ---------------------------------------------------------------------- Model


def source_attributes(cache, uses_base_margin=False):
    """Attributes every model trained from ``cache`` records: the label column's name (and
    the query group column's, for ranking, and the base margin's), so ``evaluate`` on a
    raw file knows which columns hold them. Every learner makes its model with them, so
    here a learner that does not add per-row base margins (all but boosting:
    ``uses_base_margin``) warns that it ignores a cache's."""
    manifest = getattr(cache, "manifest", None) or {}
    out = {"label": manifest.get("label")}
    if manifest.get("groups"):
        out["group"] = manifest["groups"]["column"]
    if manifest.get("base_margin"):
        columns = list(manifest["base_margin"]["columns"])
        if uses_base_margin:
            out["base_margin"] = columns
        else:
            warnings.warn(f"cache {getattr(cache, 'path', '')} has per-row base margins "
                          f"({', '.join(columns)}); only gradient boosting adds them, this "
                          f"learner ignores them", UserWarning, stacklevel=3)
    return out


class Model(ModelPrediction, ModelContributions, ModelExport):
    """A tree ensemble: trees, how they combine, the feature schema and training metadata.

    Parameters
    ----------
    trees : sequence of Tree
    tree_group : array-like (n_trees,) int32, optional
        Output each tree adds to, or -1 for all outputs. Default 0 for every tree.
    tree_weight : array-like (n_trees,) float64, optional
        Default 1.
    base_margin : array-like (n_outputs,) float64, optional
        Default 0.
    n_outputs : int
        Margin columns (1, or K for multiclass).
    objective : str
        Objective name (``Model.objective_name``); the caller maps margins to predictions.
    objective_params : dict, optional
    learner : str
        "gbtree", "random_forest", "extra_trees", "decision_tree", "adaboost", ...
    aggregation : {"sum", "mean", "median"}
        See the module docstring.
    trees_per_round : int
        Trees added per boosting round (``iteration_range`` counts rounds).
    feature_names : list of str, optional
        Default ``f0 .. f{n_features-1}`` (then ``n_features`` is required).
    feature_types : list of str, optional
        "numeric" or "categorical" per feature. Default all "numeric".
    bin_mapper : dict or None
        ``BinMapper.to_dict()``, kept opaque; its ``max_bin`` (if any) bounds the bin
        thresholds.
    params : dict, optional
        Training parameters.
    best_iteration : int or None
        Best boosting round (0-based) found by early stopping.
    n_classes : int or None
    classes : list or None
        Class labels (JSON scalars).
    attributes : dict, optional
        Free JSON-able metadata (evals_result, estimator weights, OOB score, ...).
    n_features : int, optional
        Only when ``feature_names`` is None.
    parts : iterable of ModelPart, optional
        A learner's state beside the trees, one per key (``model/parts.py``): MARS terms
        (``"mars"``), naive Bayes leaves (``"naive_bayes"``), Hoeffding trees' learning
        state (``"stream_state"``). Read them with :meth:`part`.
    """

    def __init__(self, trees: Iterable[Tree] = (), *, tree_group: Any = None,
                 tree_weight: Any = None, base_margin: Any = None, n_outputs: int = 1,
                 objective: str = "", objective_params: dict | None = None,
                 learner: str = "gbtree", aggregation: str = "sum", trees_per_round: int = 1,
                 feature_names: list[str] | None = None,
                 feature_types: list[str] | None = None, bin_mapper: dict | None = None,
                 params: dict | None = None, best_iteration: int | None = None,
                 n_classes: int | None = None, classes: list | None = None,
                 attributes: dict | None = None, n_features: int | None = None,
                 parts: Iterable[ModelPart] = ()) -> None:
        self.trees = list(trees)
        self.parts = {}
        for part in parts:
            if not isinstance(part, ModelPart):
                raise ModelError(f"a model part must be a ModelPart, got "
                                 f"{type(part).__name__}")
            if part.key in self.parts:
                raise ModelError(f"two model parts with key {part.key!r}")
            self.parts[part.key] = part
        n_trees = len(self.trees)
        self.n_outputs = n_outputs
        self.tree_group = (np.zeros(n_trees, dtype=np.int32) if tree_group is None
                           else coerce("tree_group", tree_group, np.int32, 1))
        self.tree_weight = (np.ones(n_trees, dtype=np.float64) if tree_weight is None
                            else coerce("tree_weight", tree_weight, np.float64, 1))
        self.base_margin = (np.zeros(int(n_outputs), dtype=np.float64) if base_margin is None
                            else coerce("base_margin", np.atleast_1d(base_margin),
                                         np.float64, 1))
        self.objective = objective
        self.objective_params = {} if objective_params is None else objective_params
        self.learner = learner
        self.aggregation = aggregation
        self.trees_per_round = trees_per_round
        if feature_names is None:
            if n_features is None:
                raise ModelError("give feature_names or n_features")
            feature_names = [f"f{j}" for j in range(int(n_features))]
        self.feature_names = list(feature_names)
        self.feature_types = (["numeric"] * len(self.feature_names) if feature_types is None
                              else list(feature_types))
        self.bin_mapper = bin_mapper
        self.params = {} if params is None else params
        self.best_iteration = best_iteration
        self.n_classes = n_classes
        self.classes = classes
        self.attributes = {} if attributes is None else attributes
        self._flat = None
        self._flat_key = None
        self._csr_plan = None   # (flat, positions, compact trees): predict_margin_csr

    # ------------------------------------------------------------------ properties
    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def n_rounds(self) -> int:
        """Boosting rounds: ``n_trees // trees_per_round``."""
        return len(self.trees) // int(self.trees_per_round)

    @property
    def n_features(self) -> int:
        return len(self.feature_names)

    @property
    def objective_name(self) -> str:
        return self.objective

    @property
    def max_bin(self) -> int | None:
        """``bin_mapper["max_bin"]`` when the bin mapper dict has an integer one, else None."""
        if isinstance(self.bin_mapper, dict):
            mb = self.bin_mapper.get("max_bin")
            if isinstance(mb, (int, np.integer)) and not isinstance(mb, bool):
                return int(mb)
        return None

    def _code_span(self):
        """Codes of the widest categorical feature of the bin mapper dict (0 when it
        has none or is not well-formed: :meth:`validate` then checks ``max_bin``)."""
        max_bin = self.max_bin
        features = self.bin_mapper.get("features") if isinstance(self.bin_mapper, dict) \
            else None
        if max_bin is None or not isinstance(features, list):
            return 0
        span = 0
        for feat in features:
            cats = feat.get("categories") if isinstance(feat, dict) else None
            if isinstance(cats, list):
                n = len(cats) + int(bool(feat.get("has_other")))
                span = max(span, category_value_bins(min(n, MAX_CATEGORIES), max_bin))
        return span

    def __repr__(self):
        return (f"Model(learner={self.learner!r}, objective={self.objective!r}, "
                f"n_trees={self.n_trees}, n_outputs={self.n_outputs}, "
                f"n_features={self.n_features})")

    def add_tree(self, tree: Tree, group: int = 0, weight: float = 1.0) -> Model:
        """Append one tree adding to output ``group`` (-1: all outputs) with ``weight``."""
        self.trees.append(tree)
        self.tree_group = np.append(self.tree_group, np.int32(group)).astype(np.int32)
        self.tree_weight = np.append(self.tree_weight, float(weight))
        return self

    # ------------------------------------------------------------------ building
    @classmethod
    def empty_boosted(cls, objective: Any, base_margin: Any, cache: Any, params: dict,
                      trees_per_round: int = 1) -> Model:
        """An empty "gbtree" model over ``cache``'s features, for boosting to fill.

        Parameters
        ----------
        objective : Objective
            Its ``name``, ``params`` and ``n_outputs`` are recorded.
        base_margin : array-like (n_outputs,) float64
        cache : Cache
            Gives ``feature_names`` and the ``bin_mapper`` (saved as its ``to_dict()``).
        params : dict
            Training parameters; entries that are not JSON-able are left out.
        trees_per_round : int
        """
        mapper = cache.bin_mapper
        kept = {}
        for k, v in dict(params).items():
            try:
                kept[str(k)] = jsonable(v, k)
            except ModelError:
                pass
        n_classes = getattr(objective, "params", {}).get("num_class")
        return cls([], n_outputs=int(objective.n_outputs), base_margin=base_margin,
                   objective=objective.name,
                   objective_params=jsonable(dict(getattr(objective, "params", {})),
                                              "objective_params"),
                   learner="gbtree", aggregation="sum", trees_per_round=trees_per_round,
                   feature_names=list(cache.feature_names),
                   feature_types=list(mapper.feature_types), bin_mapper=mapper.to_dict(),
                   params=kept, n_classes=None if n_classes is None else int(n_classes),
                   attributes=source_attributes(cache, uses_base_margin=True))

    def add_round(self, trees: list, weights: Any = None) -> Model:
        """Append one round of ``trees_per_round`` trees.

        Parameters
        ----------
        trees : list of Tree or of dicts of Tree arrays (``Tree(**d)``)
            Tree ``c`` adds to output ``c``; a tree whose value has ``n_outputs > 1``
            columns adds to all outputs (group -1).
        weights : list of float, optional
            Default 1.
        """
        trees = [t if isinstance(t, Tree) else Tree(**t) for t in trees]
        if len(trees) != int(self.trees_per_round):
            raise ModelError(f"a round has {self.trees_per_round} trees, got {len(trees)}")
        n_outputs = int(self.n_outputs)
        for c, tree in enumerate(trees):
            group = -1 if (n_outputs > 1 and tree.n_outputs == n_outputs) else c % n_outputs
            self.add_tree(tree, group, 1.0 if weights is None else weights[c])
        return self

    def extend_from(self, other: Model) -> Model:
        """Append ``other``'s trees (same outputs and round size), e.g. an ``init_model``."""
        if int(other.n_outputs) != int(self.n_outputs) or \
                int(other.trees_per_round) != int(self.trees_per_round):
            raise ModelError(f"cannot continue a model with {other.n_outputs} outputs and "
                             f"{other.trees_per_round} trees per round into one with "
                             f"{self.n_outputs} and {self.trees_per_round}")
        if list(other.feature_names) != list(self.feature_names):
            raise ModelError("cannot continue a model trained on other features")
        n_trees = len(self.trees)
        for key, theirs in other.parts.items():
            mine = self.parts.get(key)
            self.parts[key] = (theirs.shifted(n_trees) if mine is None
                               else mine.appended(theirs, n_trees))
        self.trees.extend(other.trees)
        self.tree_group = np.concatenate((self.tree_group, other.tree_group)).astype(np.int32)
        self.tree_weight = np.concatenate((self.tree_weight, other.tree_weight))
        return self

    def slice_rounds(self, start: int, end: int) -> Model:
        """A new Model with rounds ``[start, end)`` (trees shared, metadata copied)."""
        t0, t1 = self._tree_range((start, end))
        if end == 0:
            end = self.n_rounds
        bi = self.best_iteration
        return Model(
            self.trees[t0:t1], tree_group=self.tree_group[t0:t1].copy(),
            tree_weight=self.tree_weight[t0:t1].copy(), base_margin=self.base_margin.copy(),
            n_outputs=self.n_outputs, objective=self.objective,
            objective_params=dict(self.objective_params), learner=self.learner,
            aggregation=self.aggregation, trees_per_round=self.trees_per_round,
            feature_names=list(self.feature_names), feature_types=list(self.feature_types),
            bin_mapper=self.bin_mapper, params=dict(self.params),
            best_iteration=bi - start if bi is not None and start <= bi < end else None,
            n_classes=self.n_classes,
            classes=None if self.classes is None else list(self.classes),
            attributes=dict(self.attributes),
            parts=[p for p in (part.sliced(t0, t1) for part in self.parts.values())
                   if p is not None])

    def part(self, key: str) -> ModelPart | None:
        """The model's part ``key`` (``"mars"``, ``"naive_bayes"``, ...), or None."""
        return self.parts.get(key)

    def mapper(self) -> Any:
        """The :class:`~oocboost.cache.binning.BinMapper` of ``bin_mapper``, built once
        (parts bin raw values with it)."""
        from ..cache.binning import BinMapper

        key = id(self.bin_mapper)
        if getattr(self, "_mapper_key", None) != key:
            self._mapper = BinMapper.from_dict(self.bin_mapper)
            self._mapper_key = key
        return self._mapper

    def bin_representatives(self) -> np.ndarray:
        """(n_features, max_bin) float64: the value each bin code stands for (its middle,
        NaN for missing and categorical codes), built once: MARS terms and oblique
        splits read cache codes as these values."""
        from .mars import representatives

        mapper = self.mapper()
        if getattr(self, "_rep_key", None) != id(mapper):
            self._rep = representatives(mapper, mapper.max_bin)
            self._rep_key = id(mapper)
        return self._rep

    def refit(self, data: Any, decay_rate: float = 0.9, **options: Any) -> Model:
        """LightGBM's ``Booster.refit``: a copy whose leaves are refitted to ``data`` (a
        labelled cache binned with this model's edges), ``decay_rate * old + (1 -
        decay_rate) * learning_rate * w(G, H)`` round by round, the trees kept.
        ``options``: ``learning_rate``, ``reg_lambda``, ``reg_alpha``,
        ``max_delta_step`` (default: the model's), ``memory_limit``
        (``model/refit.py``)."""
        from .refit import refit_model

        return refit_model(self, data, decay_rate=decay_rate, **options)

    def summary(self) -> str:
        """What ``oocboost train`` says it saved: ``"100 trees"``, or a part's words."""
        for part in self.parts.values():
            words = part.describe()
            if words:
                return f"{self.n_trees} trees, {words}" if part.beside_trees else words
        return f"{self.n_trees} trees"

    # Training metadata kept in ``attributes`` so that it is saved with the model.
    @property
    def best_score(self) -> float | None:
        """Best evaluation score of early stopping (saved in attributes)."""
        return self.attributes.get("best_score")

    @best_score.setter
    def best_score(self, value: float | None) -> None:
        self.attributes["best_score"] = value

    @property
    def evals_result(self) -> dict | None:
        """Evaluation log {data: {metric: [floats]}} (saved in attributes)."""
        return self.attributes.get("evals_result")

    @evals_result.setter
    def evals_result(self, value: dict | None) -> None:
        self.attributes["evals_result"] = value

    @property
    def training_log(self) -> dict | None:
        """Training telemetry dict (saved in attributes)."""
        return self.attributes.get("training_log")

    @training_log.setter
    def training_log(self, value: dict | None) -> None:
        self.attributes["training_log"] = value

    def invalidate_cache(self) -> None:
        """Drop the flattened trees; needed only after editing a tree's arrays in place."""
        self._flat = None
        self._flat_key = None

    # ------------------------------------------------------------------ validation
    def validate(self) -> Model:
        """Check every field and every tree; raise ModelError naming what is wrong.

        Returns
        -------
        self
        """
        def fail(msg):
            raise ModelError(msg)

        for key in ("n_outputs", "trees_per_round"):
            v = getattr(self, key)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                fail(f"{key} must be a positive integer, got {v!r}")
        if self.n_outputs > MAX_OUTPUTS:
            fail(f"n_outputs = {self.n_outputs} exceeds {MAX_OUTPUTS}")
        if self.aggregation not in AGGREGATIONS:
            fail(f"aggregation must be one of {AGGREGATIONS}, got {self.aggregation!r}")
        if self.aggregation == "median" and (int(self.n_outputs) != 1 or np.any(
                np.asarray(self.tree_weight) != 1.0)):
            fail("aggregation 'median' takes one output and tree weights of 1")
        for key in ("objective", "learner"):
            if not isinstance(getattr(self, key), str):
                fail(f"{key} must be a string, got {getattr(self, key)!r}")
        for key in ("objective_params", "params", "attributes"):
            if not isinstance(getattr(self, key), dict):
                fail(f"{key} must be a dict, got {type(getattr(self, key)).__name__}")
        if self.bin_mapper is not None and not isinstance(self.bin_mapper, dict):
            fail(f"bin_mapper must be a dict (BinMapper.to_dict()) or None, got "
                 f"{type(self.bin_mapper).__name__}")
        n_trees = len(self.trees)
        if n_trees % int(self.trees_per_round):
            fail(f"{n_trees} trees is not a whole number of rounds of "
                 f"{self.trees_per_round} trees")
        for key, dtype in (("tree_group", np.int32), ("tree_weight", np.float64)):
            a = getattr(self, key)
            if not isinstance(a, np.ndarray) or a.dtype != dtype or a.shape != (n_trees,):
                fail(f"{key} must be a ({n_trees},) {np.dtype(dtype)} array, got "
                     f"{getattr(a, 'shape', type(a))}")
        if not isinstance(self.base_margin, np.ndarray) or self.base_margin.dtype != X_DTYPE \
                or self.base_margin.shape != (self.n_outputs,):
            fail(f"base_margin must be a ({self.n_outputs},) float64 array")
        if not np.all(np.isfinite(self.base_margin)):
            fail("base_margin is not finite")
        bad = np.flatnonzero(~np.isfinite(self.tree_weight))
        if bad.size:
            fail(f"tree {bad[0]}: weight {float(self.tree_weight[bad[0]])!r} is not finite")
        bad = np.flatnonzero((self.tree_group < -1) | (self.tree_group >= self.n_outputs))
        if bad.size:
            fail(f"tree {bad[0]}: group {self.tree_group[bad[0]]} is outside "
                 f"[-1, {self.n_outputs})")
        names, types = self.feature_names, self.feature_types
        if not all(isinstance(s, str) for s in names):
            fail("feature_names must be strings")
        if len(set(names)) != len(names):
            fail("feature_names has duplicates")
        if len(types) != len(names) or not all(isinstance(s, str) for s in types):
            fail(f"feature_types must be {len(names)} strings")
        bi = self.best_iteration
        if bi is not None and (not isinstance(bi, (int, np.integer)) or isinstance(bi, bool)
                               or not 0 <= bi < max(self.n_rounds, 1)):
            fail(f"best_iteration {bi!r} is not a round in [0, {self.n_rounds})")
        nc = self.n_classes
        if nc is not None and (not isinstance(nc, (int, np.integer)) or isinstance(nc, bool)
                               or nc < 0):
            fail(f"n_classes must be a non-negative integer or None, got {nc!r}")
        if self.classes is not None:
            if not isinstance(self.classes, list) or not all(
                    isinstance(c, (str, int, float, bool)) for c in self.classes):
                fail("classes must be a list of strings or numbers")
            if nc is not None and len(self.classes) != nc:
                fail(f"{len(self.classes)} classes listed but n_classes = {nc}")
        max_bin = self.max_bin
        code_span = self._code_span()
        for t, tree in enumerate(self.trees):
            if not isinstance(tree, Tree):
                fail(f"tree {t} is a {type(tree).__name__}, not a Tree")
            tree.validate(self.n_features, max_bin, tree_index=t, code_span=code_span,
                          shared_nodes=self.learner == "decision_stream",
                          feature_types=self.feature_types)
            want = 1 if self.tree_group[t] >= 0 else self.n_outputs
            if tree.n_outputs != want:
                fail(f"tree {t}: value has {tree.n_outputs} columns, expected {want} "
                     f"(group {self.tree_group[t]})")
        for part in self.parts.values():
            part.validate(self, fail)
        return self

    # ------------------------------------------------------------------ JSON
    def to_json_dict(self) -> dict:
        """The model as a JSON-able dict (``format``, ``format_version``, fields, trees)."""
        return {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "learner": self.learner,
            "objective": self.objective,
            "objective_params": jsonable(self.objective_params, "objective_params"),
            "aggregation": self.aggregation,
            "n_outputs": int(self.n_outputs),
            "trees_per_round": int(self.trees_per_round),
            "base_margin": self.base_margin.tolist(),
            "tree_group": self.tree_group.tolist(),
            "tree_weight": self.tree_weight.tolist(),
            "best_iteration": None
            if self.best_iteration is None
            else int(self.best_iteration),
            "n_classes": None if self.n_classes is None else int(self.n_classes),
            "classes": jsonable(self.classes, "classes"),
            "feature_names": list(self.feature_names),
            "feature_types": list(self.feature_types),
            "bin_mapper": jsonable(self.bin_mapper, "bin_mapper"),
            "params": jsonable(self.params, "params"),
            "attributes": jsonable(self.attributes, "attributes"),
            "trees": [tree.to_json_dict() for tree in self.trees],
            **{key: part.to_json() for key, part in self.parts.items()},
        }

    @classmethod
    def from_json_dict(cls, doc: dict, source: str = "<dict>") -> Model:
        """Build and validate a Model from :meth:`to_json_dict` output.

        Parameters
        ----------
        doc : dict
        source : str
            Named in error messages (the file path for :func:`load_model`).

        Raises
        ------
        ModelError
            Unknown format, newer version, missing keys, wrong types or lengths, or any
            invalid tree.
        """
        where = f"model {source}"
        try:
            return cls._from_json_dict(doc, where)
        except ModelError as exc:
            msg = str(exc)
            raise ModelError(msg if msg.startswith(where) else f"{where}: {msg}") from None

    @classmethod
    def _from_json_dict(cls, doc, where):
        if not isinstance(doc, dict):
            raise ModelError(f"{where}: not an oocboost model (top level is a "
                             f"{type(doc).__name__}, expected an object)")
        if doc.get("format") != FORMAT:
            raise ModelError(f"{where}: not an oocboost model (format {doc.get('format')!r}, "
                             f"expected {FORMAT!r})")
        version = doc.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ModelError(f"{where}: invalid format_version {version!r}")
        if version > FORMAT_VERSION:
            raise ModelError(f"{where}: written by a newer oocboost (format version "
                             f"{version}); this oocboost reads format version "
                             f"{FORMAT_VERSION}: upgrade oocboost to load it")
        check_no_unknown_fields(doc, where)
        n_outputs = read_int(doc, "n_outputs", where, 1, MAX_OUTPUTS)
        trees_per_round = read_int(doc, "trees_per_round", where, 1, INT32_MAX)
        raw_trees = read_typed(doc, "trees", (list,), where)
        n_trees = len(raw_trees)
        tree_group = read_array(doc, "tree_group", np.int32, n_trees, where)
        tree_weight = read_array(doc, "tree_weight", np.float64, n_trees, where)
        base_margin = read_array(doc, "base_margin", np.float64, n_outputs, where)
        feature_names = read_typed(doc, "feature_names", (list,), where)
        feature_types = read_typed(doc, "feature_types", (list,), where)
        # Bitsets are allocated (n_nodes, n_words) per tree but stored only for categorical
        # nodes: bound the total before allocating so a small file cannot claim gigabytes.
        cells = 0
        for d in raw_trees:
            if isinstance(d, dict) and all(
                isinstance(d.get(k), int) and d.get(k) >= 0 for k in ("n_nodes", "n_words")
            ):
                cells += d["n_nodes"] * d["n_words"]
        if cells > MAX_BITSET_CELLS:
            raise ModelError(f"{where}: categorical bitsets would take {cells} words, more "
                             f"than the limit of {MAX_BITSET_CELLS}")
        trees = [Tree.from_json_dict(d, f"tree {t}") for t, d in enumerate(raw_trees)]
        model = cls(
            trees, tree_group=tree_group, tree_weight=tree_weight, base_margin=base_margin,
            n_outputs=n_outputs,
            objective=read_typed(doc, "objective", (str,), where),
            objective_params=read_typed(doc, "objective_params", (dict,), where),
            learner=read_typed(doc, "learner", (str,), where),
            aggregation=read_typed(doc, "aggregation", (str,), where),
            trees_per_round=trees_per_round,
            feature_names=feature_names, feature_types=feature_types,
            bin_mapper=_current_bin_mapper(
                read_typed(doc, "bin_mapper", (dict,), where, optional=True), where),
            params=read_typed(doc, "params", (dict,), where),
            best_iteration=read_int(doc, "best_iteration", where, 0, INT32_MAX,
                                     optional=True),
            n_classes=read_int(doc, "n_classes", where, 0, INT32_MAX, optional=True),
            classes=read_typed(doc, "classes", (list,), where, optional=True),
            attributes=read_typed(doc, "attributes", (dict,), where),
            parts=read_parts(doc, where),
        )
        model.validate()
        check_model_fields(model)
        return model

    def save_model(self, path: str | os.PathLike, state: bool = True) -> None:
        """Validate and write the model as JSON, atomically.

        The text goes to a temporary file in the destination's folder, is flushed to disk
        and renamed over ``path``, so a crash or a full disk never leaves a half-written
        model (:class:`~oocboost.errors.OutputError` names the path). A replaced file keeps
        its permission bits; a new one gets the umask's. In the
        free-form dicts (params, attributes, ...) non-finite floats are written as null.

        Parameters
        ----------
        path : str or os.PathLike
        state : bool
            Keep the parts that are learning state (Hoeffding trees' ``stream_state``, to
            continue learning later); False writes a file that only predicts.
        """
        self.validate()
        check_model_fields(self)  # never write what load_model would refuse
        doc = self.to_json_dict()
        if not state:
            for key, part in self.parts.items():
                if part.is_learning_state:
                    doc.pop(key, None)
        text = json.dumps(doc, allow_nan=False, separators=(",", ":"))
        write_text_atomic(path, text)


def _current_bin_mapper(doc, where):
    """An older file's bin mapper description rewritten in the current version (edges
    as base64), so that it compares equal with a cache's of the same bins."""
    if doc is None or doc.get("version") is None:
        return doc
    from ..cache.binning import current_mapper_doc

    try:
        return current_mapper_doc(doc)
    except ModelError as exc:
        raise ModelError(f"{where}: bin_mapper: {exc}") from None


def load_model(path: str | os.PathLike, *, max_bytes: int = MAX_MODEL_BYTES,
               memory_limit: int | str | None = None) -> Model:
    """Read and validate a model file: one saved by :meth:`Model.save_model` (or an
    estimator's ``save_model``), an XGBoost JSON or UBJSON model, or a LightGBM text model,
    told apart by their content (``model/loading.py``).

    Parameters
    ----------
    path : str or os.PathLike
    max_bytes : int
        Files larger than this are refused (a guard against hostile files).
    memory_limit : int, str or None
        Peak memory of the process (bytes or a size such as ``"1GB"``); the load is
        refused when its estimate (``model.loading.LOAD_BYTES_PER_FILE_BYTE`` times the file's
        size) does not fit what is left of it. None: the machine's available memory.

    Returns
    -------
    Model

    Raises
    ------
    ModelError
        Unreadable, too large, not UTF-8, not JSON, truncated, of another format or a
        newer version, or failing any check of :meth:`Model.from_json_dict` (or of the
        foreign format's reader).
    MemoryLimitError
        The file would not fit the memory limit (or the available memory) once parsed.
    """
    from .loading import read_model_file

    return read_model_file(path, max_bytes=max_bytes, model_class=Model,
                           memory_limit=memory_limit)
