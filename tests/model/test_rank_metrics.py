"""ndcg / map / pre over query groups: each equals a direct computation in NumPy and
XGBoost's metric of the same name, with and without group weights."""
import numpy as np
import pytest

from oocboost.errors import InputError, ParameterError
from oocboost.model.metrics import get_metric


def _groups(seed=0, n_groups=12, empty=True):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, n_groups)
    ptr = np.r_[0, np.cumsum(sizes)]
    n = int(ptr[-1])
    y = rng.integers(0, 4, n).astype(float)
    if empty:
        y[ptr[2]:ptr[3]] = 0  # a group without relevant documents
    else:
        y[ptr[:-1]] = np.maximum(y[ptr[:-1]], 2)  # each group has a relevant one
    p = np.round(rng.normal(size=n), 1)  # ties
    return y, p, ptr, sizes


def _direct(kind, y, p, ptr, k, minus=False, weight=None):
    values = []
    for g in range(len(ptr) - 1):
        yy, pp = y[ptr[g]:ptr[g + 1]], p[ptr[g]:ptr[g + 1]]
        ranked = yy[sorted(range(len(yy)), key=lambda r: (-pp[r], r))]
        top = len(yy) if k == 0 else min(k, len(yy))
        disc = 1 / np.log2(np.arange(len(yy)) + 2)
        if kind == "pre":
            values.append(ranked[:top].sum() / top)
        elif kind == "ndcg":
            ideal = np.sum((2 ** np.sort(yy)[::-1][:top] - 1) * disc[:top])
            dcg = np.sum((2 ** ranked[:top] - 1) * disc[:top])
            values.append(dcg / ideal if ideal else (0.0 if minus else 1.0))
        else:
            hits = np.cumsum(ranked)
            ap = np.sum((hits / np.arange(1, len(yy) + 1) * ranked)[:top])
            values.append(ap / min(hits[-1], top) if hits[-1] else (0.0 if minus else 1.0))
    w = np.ones(len(values)) if weight is None else weight
    return float(np.sum(np.array(values) * w) / w.sum())


@pytest.mark.parametrize("name", ["ndcg", "ndcg@3", "ndcg@5-", "map", "map@2", "map@4-",
                                  "pre@1", "pre@5"])
@pytest.mark.parametrize("weighted", [False, True])
def test_equal_a_direct_computation_and_xgboost(name, weighted):
    # XGBoost's weighted ndcg counts a group without relevant documents as 1 whatever
    # its weight (ours weighs it like any group): compare those on groups with some
    y, p, ptr, sizes = _groups(empty=not (weighted and name.startswith("ndcg")))
    kind = name.split("@")[0].rstrip("-")
    if kind != "ndcg":
        y = (y > 1).astype(float)
    k = int(name.split("@")[1].rstrip("-")) if "@" in name else 0
    group_w = np.linspace(0.5, 2.0, len(sizes)) if weighted else None
    row_w = None if group_w is None else np.repeat(group_w, sizes)
    ours = get_metric(name)(y, p, row_w, group_ptr=ptr)
    assert ours == pytest.approx(_direct(kind, y, p, ptr, k, name.endswith("-"), group_w),
                                 abs=1e-12)
    xgb = pytest.importorskip("xgboost")
    d = xgb.DMatrix(np.zeros((len(y), 1)), y, qid=np.repeat(np.arange(len(sizes)), sizes),
                    base_margin=p, weight=group_w)
    booster = xgb.train({"objective": "rank:pairwise", "eval_metric": name}, d, 0)
    # XGBoost keeps the weights in float32
    assert ours == pytest.approx(float(booster.eval(d).split(":")[1]), abs=1e-7)


def test_without_groups_all_rows_are_one_group_and_bad_input_is_refused():
    y, p, ptr, _ = _groups()
    assert get_metric("ndcg")(y, p) == pytest.approx(_direct("ndcg", y, p, [0, len(y)], 0))
    with pytest.raises(InputError, match="group_ptr"):
        get_metric("ndcg")(y, p, group_ptr=[0, 3])
    with pytest.raises(InputError, match="0/1"):
        get_metric("map")(y, p, group_ptr=ptr)
    with pytest.raises(ParameterError, match="ndcg and map only"):
        get_metric("pre@3-")
    with pytest.raises(ParameterError, match="per query group"):
        get_metric("ndcg").partial(y, p)
    linear = get_metric("ndcg", ndcg_exp_gain=False)
    assert linear(y / 2, p, group_ptr=ptr) <= 1.0
