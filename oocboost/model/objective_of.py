"""The ``Objective`` a model was trained with, made once per objective and parameters
(its output transforms: probabilities, expected counts)."""
from .objectives import get_objective

#: Objectives made for models, by (name, parameters): making one took a quarter of a
#: one-row prediction. Objectives hold their parameters only.
_OBJECTIVES = {}


def model_objective(model):
    """The ``Objective`` a model was trained with (for output transforms)."""
    params = dict(model.objective_params or {})
    try:
        key = (model.objective, tuple(sorted(params.items())))
        hash(key)
    except TypeError:            # a parameter that is a list: made each time
        return get_objective(model.objective, params)
    objective = _OBJECTIVES.get(key)
    if objective is None:
        if len(_OBJECTIVES) > 64:
            _OBJECTIVES.clear()
        objective = _OBJECTIVES[key] = get_objective(model.objective, params)
    return objective
