"""Learning to rank: oocboost ``rank:ndcg`` from a cache against XGBoost ``rank:ndcg``
(``hist``) and LightGBM ``lambdarank`` in memory, on the synthetic ranking task (queries
of 20 rows, relevance 0-4), each side in its own process for its peak RSS::

    python -m bench.ranking --rows 1000000 --rounds 50 --out bench_out [--memory-limit 512MB]

prints, per library, the training seconds (oocboost: the cache is built once beforehand,
its build time is printed apart), the peak RSS of the process and NDCG@10 on 200,000
held-out rows.
"""
import argparse
import json
import os
import subprocess
import sys
import time

_COMMON = """
import json, sys, time
import numpy as np
import pyarrow.csv as pacsv
from oocboost.model.metrics import get_metric
from oocboost.utils.rss import peak_rss
train_csv, valid_csv, rounds, limit = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def load(path):
    t = pacsv.read_csv(path)
    y = t.column("label").to_numpy().astype(np.float64)
    qid = t.column("qid").to_numpy()
    X = np.column_stack([t.column(n).to_numpy(zero_copy_only=False).astype(np.float64)
                         for n in t.column_names[2:]])
    return X, y, qid
Xv, yv, qv = load(valid_csv)
ptr = np.flatnonzero(np.r_[True, qv[1:] != qv[:-1], True]).astype(np.int64)
ndcg10 = get_metric("ndcg@10")
"""

_JOBS = {
    "oocboost": _COMMON + """
import oocboost
cache = train_csv
t0 = time.perf_counter()
model = oocboost.train({"objective": "rank:ndcg", "max_depth": 6, "eta": 0.1,
                        "verbosity": 0}, cache, rounds, verbose_eval=False,
                       memory_limit=None if limit == "none" else limit)
seconds = time.perf_counter() - t0
score = ndcg10(yv, model.predict(Xv), group_ptr=ptr)
""",
    "xgboost": _COMMON + """
import xgboost as xgb
X, y, qid = load(train_csv)
t0 = time.perf_counter()
booster = xgb.train({"objective": "rank:ndcg", "max_depth": 6, "eta": 0.1,
                     "tree_method": "hist"}, xgb.DMatrix(X, y, qid=qid), rounds)
seconds = time.perf_counter() - t0
score = ndcg10(yv, booster.predict(xgb.DMatrix(Xv)), group_ptr=ptr)
""",
    "lightgbm": _COMMON + """
import lightgbm as lgb
X, y, qid = load(train_csv)
sizes = np.diff(np.flatnonzero(np.r_[True, qid[1:] != qid[:-1], True]))
t0 = time.perf_counter()
ranker = lgb.LGBMRanker(n_estimators=rounds, learning_rate=0.1, num_leaves=63,
                        verbose=-1).fit(X, y, group=sizes)
seconds = time.perf_counter() - t0
score = ndcg10(yv, ranker.predict(Xv), group_ptr=ptr)
""",
}
_TAIL = """
print(json.dumps({"seconds": seconds, "peak_rss_mib": peak_rss() / 2**20,
                  "ndcg@10": float(score)}))
"""


def _data(out, rows):
    from oocboost.datasets import generate

    os.makedirs(out, exist_ok=True)
    train = os.path.join(out, f"rank-{rows}.csv")
    valid = os.path.join(out, "rank-valid.csv")
    if not os.path.exists(train):
        generate(train, rows, task="ranking")
    if not os.path.exists(valid):
        generate(valid, 200_000, task="ranking", row_start=rows)
    return train, valid


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench.ranking",
                                description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=50)
    p.add_argument("--out", default="bench_out")
    p.add_argument("--memory-limit", default=None, help="oocboost's, e.g. 512MB")
    p.add_argument("--only", default="oocboost,xgboost,lightgbm")
    args = p.parse_args(argv)
    import oocboost

    train_csv, valid_csv = _data(args.out, args.rows)
    cache = os.path.join(args.out, f"rank-{args.rows}.oocb")
    t0 = time.perf_counter()
    oocboost.build_cache(train_csv, cache, label="label", group="qid", quiet=True)
    print(f"oocboost build-cache: {time.perf_counter() - t0:.1f} s")
    for name in args.only.split(","):
        source = cache if name == "oocboost" else train_csv
        run = subprocess.run([sys.executable, "-c", _JOBS[name] + _TAIL, source, valid_csv,
                              str(args.rounds), args.memory_limit or "none"],
                             capture_output=True, text=True)
        if run.returncode:
            print(f"{name}: failed\n{run.stderr[-2000:]}")
            continue
        r = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"{name:9s} train {r['seconds']:7.1f} s   peak RSS {r['peak_rss_mib']:7.0f} MiB"
              f"   NDCG@10 {r['ndcg@10']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
