"""Looking into fitted models: trees as text, permutation importance and partial
dependence (streamed over a cache). Above the estimators: it takes them as they are.

>>> from oocboost.inspection import partial_dependence, permutation_importance
"""
from .dependence import partial_dependence
from .permutation import permutation_importance
from .tree_text import export_text

__all__ = ["partial_dependence", "permutation_importance", "export_text"]
