"""Pictures of models (matplotlib, an optional extra: ``pip install 'oocboost[plot]'``):
``plot_importance``, ``plot_metric``, ``plot_tree``, ``plot_partial_dependence``,
``plot_contributions``, and the HTML report ``write_report``."""
from .charts import (
    plot_contributions,
    plot_importance,
    plot_metric,
    plot_partial_dependence,
    plot_tree,
)
from .report import write_report

__all__ = ["plot_importance", "plot_metric", "plot_tree", "plot_partial_dependence",
           "plot_contributions", "write_report"]
