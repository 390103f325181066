"""Looking into fitted models: trees as text, feature importance (split statistics or
mean |SHAP|), permutation importance and partial dependence (streamed over a cache).
Above the estimators: it takes them as they are.

>>> from oocboost.inspection import feature_importance, partial_dependence
"""
from .dependence import partial_dependence
from .importance import feature_importance
from .permutation import permutation_importance
from .tree_text import export_text

__all__ = ["feature_importance", "partial_dependence", "permutation_importance",
           "export_text"]
