"""The classic tree methods (issue 20) next to their nearest peer, on the same train/test
split::

    python -m bench classic [--only random_subspace,adaboost_m1,...] [--out bench_out]

Accuracy (classification) or R^2 (regression) on the held-out rows, and fit seconds, per
method and library; one process, in-memory data (each oocboost fit builds its temporary
cache, which its time includes). Datasets are scikit-learn's bundled ones and seeded
generators, so the run needs no download. Prints a Markdown table and writes
``OUT/results-classic.json``.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def _split(X, y, seed=0, test=0.3):
    idx = np.random.default_rng(seed).permutation(len(y))
    cut = int(len(y) * (1 - test))
    return X[idx[:cut]], X[idx[cut:]], y[idx[:cut]], y[idx[cut:]]


def _digits():
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    return "digits (1,797 x 64, 10 classes)", _split(X.astype(float), y)


def _classification():
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=20000, n_features=40, n_informative=12,
                               n_redundant=8, n_classes=4, random_state=0)
    return "make_classification (20,000 x 40, 4 classes)", _split(X, y)


def _fit_score(name, lib, make, data):
    Xtr, Xte, ytr, yte = data
    # a fit on a few rows first, untimed: numba loads (or compiles) its kernels once
    make().fit(Xtr[:300], ytr[:300])
    est = make()
    t0 = time.perf_counter()
    est.fit(Xtr, ytr)
    seconds = time.perf_counter() - t0
    return {"method": name, "lib": lib, "score": float(est.score(Xte, yte)),
            "fit_seconds": seconds}


def random_subspace():
    """Ho (1998): every row, half the columns per tree; scikit-learn's bagging with the
    same parameters is the peer."""
    from sklearn.ensemble import BaggingClassifier as SkBagging
    from sklearn.tree import DecisionTreeClassifier as SkTree

    import oocboost

    kw = dict(n_estimators=50, bootstrap=False, max_features=0.5, random_state=0)
    out = []
    for dataset, data in (_digits(), _classification()):
        name = f"random subspace, 50 trees, {dataset}"
        out.append(_fit_score(name, "oocboost", lambda: oocboost.BaggingClassifier(
            oocboost.DecisionTreeClassifier(), **kw), data))
        out.append(_fit_score(name, "scikit-learn", lambda: SkBagging(SkTree(), **kw), data))
    return out


def adaboost_m1_mh():
    """AdaBoost.M1 and AdaBoost.MH with depth-5 trees (M1 needs weak trees with an error
    under 1/2 on ten classes), 100 rounds; scikit-learn's SAMME (its only multi-class
    AdaBoost) with the same trees is the peer."""
    from sklearn.ensemble import AdaBoostClassifier as SkAda
    from sklearn.tree import DecisionTreeClassifier as SkTree

    import oocboost

    out = []
    for dataset, data in (_digits(), _classification()):
        name = f"AdaBoost, depth-5 trees, 100 rounds, {dataset}"
        for algorithm, lr in (("M1", 1.0), ("MH", 0.5), ("SAMME", 1.0)):
            out.append(_fit_score(name, f"oocboost {algorithm} (lr {lr})",
                                  lambda a=algorithm, lr=lr: oocboost.AdaBoostClassifier(
                                      oocboost.DecisionTreeClassifier(max_depth=5),
                                      algorithm=a, n_estimators=100, learning_rate=lr),
                                  data))
        out.append(_fit_score(name, "scikit-learn SAMME (lr 1.0)",
                              lambda: SkAda(SkTree(max_depth=5), n_estimators=100,
                                            random_state=0), data))
    return out


def _breast_cancer():
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    return "breast cancer (569 x 30, correlated features)", _split(X, y)


def _blank(X, columns=None, share=None, seed=1):
    """A copy of X with ``columns`` missing, or ``share`` of all values missing."""
    X = X.copy()
    if columns is not None:
        X[:, columns] = np.nan
    else:
        X[np.random.default_rng(seed).random(X.shape) < share] = np.nan
    return X


def surrogate_splits():
    """Depth-4 trees trained on complete rows, scored on test rows where the root's
    feature (then 30% of all values) is missing: surrogate splits (rpart's rule, the
    same as a brute-force rpart reference in tests/engine/test_surrogates.py) against
    the learned missing direction (ours and scikit-learn's)."""
    from sklearn.tree import DecisionTreeClassifier as SkTree

    import oocboost

    dataset, (Xtr, Xte, ytr, yte) = _breast_cancer()
    out = []
    fitted = {
        "oocboost, missing_values='surrogate'": oocboost.DecisionTreeClassifier(
            max_depth=4, missing_values="surrogate").fit(Xtr, ytr),
        "oocboost, learned direction": oocboost.DecisionTreeClassifier(max_depth=4)
        .fit(Xtr, ytr),
        "scikit-learn, learned direction": SkTree(max_depth=4, random_state=0).fit(Xtr, ytr),
    }
    root = int(fitted["oocboost, learned direction"].model_.trees[0].feature[0])
    for label, Xt in ((f"root feature ({root}) missing", _blank(Xte, columns=[root])),
                      ("30% of values missing", _blank(Xte, share=0.3)),
                      ("complete", Xte)):
        name = f"depth-4 tree, {dataset}, test rows: {label}"
        for lib, est in fitted.items():
            out.append({"method": name, "lib": lib, "score": float(est.score(Xt, yte)),
                        "fit_seconds": float("nan")})
    return out


def lookup_tables(rows=1_000_000, rounds=100, repeats=3):
    """Prediction from a cache of ``rows`` x 20 features by boosted trees of depth 2-6:
    lookup tables ("bonsai", used automatically) against the traversal of the same
    trees (``Model.use_leaf_tables = False``), median of ``repeats`` runs, 2 threads.
    Scored as rows per second; the same margins bit for bit."""
    import tempfile

    import oocboost

    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 20)).astype(np.float32)
    y = (X[:, 0] + X[:, 1] * X[:, 2] - X[:, 3] + 0.5 * rng.normal(size=rows) > 0)
    out = []
    with tempfile.TemporaryDirectory() as folder:
        cache = oocboost.build_cache(X, f"{folder}/c.oocb", label=y.astype(np.float64),
                                     quiet=True)
        del X
        for depth in (2, 3, 4, 5, 6):
            model = oocboost.train({"objective": "binary:logistic", "max_depth": depth},
                                   cache, rounds)
            name = f"predict from a cache, {rows:,} x 20, {rounds} depth-{depth} trees"
            for label, tables in (("oocboost, lookup tables", True),
                                  ("oocboost, traversal", False)):
                model.use_leaf_tables = tables
                model.predict(cache)          # warm: kernels, tables, blocks
                seconds = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    model.predict(cache)
                    seconds.append(time.perf_counter() - t0)
                n_tab = model._tables_cache[2].n_tabulated \
                    if tables and model._tables_cache[2] is not None else 0
                out.append({"method": name, "lib": f"{label} ({n_tab} trees tabulated)"
                            if tables else label, "score": rows / float(np.median(seconds)),
                            "fit_seconds": float(np.median(seconds)), "unit": "rows/s"})
    return out


def decision_stream():
    """Decision streams against a CART tree of the same depth (ours and scikit-learn's):
    test score and leaves."""
    from sklearn.tree import DecisionTreeClassifier as SkTree

    import oocboost

    out = []
    for dataset, data in (_digits(), _classification(), _breast_cancer()):
        Xtr, Xte, ytr, yte = data
        name = f"depth-10 graph or tree, {dataset}"
        for lib, make in (
            (
                "oocboost DecisionStreamClassifier",
                lambda: oocboost.DecisionStreamClassifier(max_depth=10),
            ),
            (
                "oocboost DecisionTreeClassifier",
                lambda: oocboost.DecisionTreeClassifier(max_depth=10),
            ),
            (
                "scikit-learn DecisionTreeClassifier",
                lambda: SkTree(max_depth=10, random_state=0),
            ),
        ):
            r = _fit_score(name, lib, make, data)
            est = make().fit(Xtr, ytr)
            r["lib"] = f"{lib} ({est.get_n_leaves()} leaves)"
            out.append(r)
    return out


_PYEARTH = """
import json, sys, time
import numpy as np
np.int, np.float, np.bool = int, float, bool      # py-earth 0.1 predates NumPy 1.24
sys.path.insert(0, sys.argv[1])
import pyearth
from sklearn.datasets import make_friedman1
out = []
for rows in (5000, 50000):
    X, y = make_friedman1(n_samples=rows, noise=1.0, random_state=0)
    Xt, yt = make_friedman1(n_samples=2000, noise=1.0, random_state=1)
    t0 = time.perf_counter()
    m = pyearth.Earth(max_degree=2).fit(X, y)
    out.append([rows, float(m.score(Xt, yt)), time.perf_counter() - t0])
print(json.dumps(out))
"""


def mars(pyearth=None):
    """MARS (degree 2) on Friedman #1 (10 features, 5 of them noise, sigma 1) at 5,000
    and 50,000 rows, against py-earth's ``Earth(max_degree=2)`` when ``pyearth`` is
    ``(python, source folder)`` of a build of it (it needs NumPy < 2 and Cython < 3;
    see docs/guide/classic-methods.md)."""
    import subprocess

    from sklearn.datasets import make_friedman1

    import oocboost

    out = []
    theirs = {}
    if pyearth:
        run = subprocess.run([pyearth[0], "-c", _PYEARTH, pyearth[1]], capture_output=True,
                             text=True)
        if run.returncode:
            raise RuntimeError(run.stderr[-2000:])
        theirs = {r: (s, t) for r, s, t in json.loads(run.stdout.strip().splitlines()[-1])}
    for rows in (5000, 50000):
        X, y = make_friedman1(n_samples=rows, noise=1.0, random_state=0)
        Xt, yt = make_friedman1(n_samples=2000, noise=1.0, random_state=1)
        name = f"MARS, degree 2, Friedman #1, {rows:,} rows (test R^2 on 2,000)"
        out.append(_fit_score(name, "oocboost MARSRegressor",
                              lambda: oocboost.MARSRegressor(max_degree=2), (X, Xt, y, yt)))
        if rows in theirs:
            out.append({"method": name, "lib": "py-earth 0.1 Earth", "score": theirs[rows][0],
                        "fit_seconds": theirs[rows][1]})
    return out


def _rotated():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(20000, 6))
    y = (X[:, 0] + X[:, 1] - 0.5 * X[:, 2] > 0.1).astype(int)
    y ^= (rng.random(20000) < 0.02)
    return "rotated boundary (20,000 x 6, 2% label noise)", _split(X, y)


def oblique():
    """Oblique trees (depth 3) and forests (50 trees, depth 8) against axis-aligned ones,
    ours and scikit-learn's (it has no oblique trees; neither has LightGBM or XGBoost)."""
    from sklearn.ensemble import RandomForestClassifier as SkForest
    from sklearn.tree import DecisionTreeClassifier as SkTree

    import oocboost

    out = []
    for dataset, data in (_rotated(), _classification(), _breast_cancer()):
        tree = f"depth-3 tree, {dataset}"
        for lib, make in (
                ("oocboost, splitter='oblique'", lambda: oocboost.DecisionTreeClassifier(
                    max_depth=3, splitter="oblique")),
                ("oocboost, axis-aligned", lambda: oocboost.DecisionTreeClassifier(
                    max_depth=3)),
                ("scikit-learn, axis-aligned", lambda: SkTree(max_depth=3, random_state=0))):
            out.append(_fit_score(tree, lib, make, data))
        forest = f"50 trees of depth 8, {dataset}"
        kw = dict(n_estimators=50, max_depth=8, random_state=0)
        for lib, make in (
                ("oocboost, splitter='oblique'", lambda: oocboost.RandomForestClassifier(
                    splitter="oblique", **kw)),
                ("oocboost, axis-aligned", lambda: oocboost.RandomForestClassifier(**kw)),
                ("scikit-learn, axis-aligned", lambda: SkForest(**kw))):
            out.append(_fit_score(forest, lib, make, data))
    return out


def isolation_forest(rows=1_000_000, n_features=28, seeds=5):
    """Liu et al.'s isolation forest, 100 trees of 256 rows: scikit-learn's on the array
    in memory, ours from a cache built beforehand (the out-of-core path: its build is not
    in the fit time, and neither is scikit-learn's read of the data). Gaussian rows with
    1% anomalies shifted by 1-3 standard deviations in 4 of the features; the score is the
    detection AUC on the training rows, averaged over ``seeds`` seeds (one seed's AUC
    varies by about 0.015 here, for both libraries), the fit time their median, and each
    library's ``score_samples`` of every row (last seed) is timed as its prediction."""
    import tempfile

    from sklearn.ensemble import IsolationForest as SkIsolation
    from sklearn.metrics import roc_auc_score

    import oocboost

    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, n_features))
    n_anomalies = rows // 100
    X[:n_anomalies, :4] += rng.uniform(1.0, 3.0, size=(n_anomalies, 4)) \
        * rng.choice([-1, 1], size=(n_anomalies, 4))
    y = np.zeros(rows)
    y[:n_anomalies] = 1
    name = (f"isolation forest, 100 trees, {rows:,} x {n_features} Gaussian, 1% anomalies "
            f"in 4 features")
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = oocboost.build_cache(X, os.path.join(tmp, "c"), quiet=True)
        oocboost.IsolationForest(n_estimators=2).fit(cache).score_samples(X[:100])
        for lib, make, data in (
                ("oocboost (from a cache)", oocboost.IsolationForest, cache),
                ("scikit-learn", SkIsolation, X)):
            aucs, fits = [], []
            for seed in range(seeds):
                t0 = time.perf_counter()
                est = make(random_state=seed).fit(data)
                fits.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                scores = est.score_samples(X)
                predict_s = time.perf_counter() - t0
                aucs.append(roc_auc_score(y, -scores))
            out.append({"method": name, "lib": lib, "score": float(np.mean(aucs)),
                        "fit_seconds": float(np.median(fits)), "aucs": aucs})
            out.append({"method": name + ", score_samples of every row",
                        "lib": lib, "score": rows / predict_s, "unit": "rows/s",
                        "fit_seconds": predict_s})
    return out


METHODS = {"random_subspace": random_subspace, "adaboost_m1_mh": adaboost_m1_mh, "mars": mars,
           "oblique": oblique,
           "decision_stream": decision_stream,
           "surrogate_splits": surrogate_splits, "lookup_tables": lookup_tables,
           "isolation_forest": isolation_forest}


def table(runs):
    lines = ["| method, data | library | test score (or rows/s) | fit (or predict) s |",
             "|---|---|---|---|"]
    last = None
    for r in runs:
        label = r["method"] if r["method"] != last else ""
        last = r["method"]
        seconds = "" if r["fit_seconds"] != r["fit_seconds"] else f"{r['fit_seconds']:.2f}"
        score = f"{r['score']:,.0f}" if r.get("unit") == "rows/s" else f"{r['score']:.4f}"
        lines.append(f"| {label} | {r['lib']} | {score} | {seconds} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m bench classic",
                                description=__doc__.split("\n")[0])
    p.add_argument("--only", default=None, help=f"comma-separated of {', '.join(METHODS)}")
    p.add_argument("--out", default="bench_out")
    p.add_argument("--pyearth", nargs=2, metavar=("PYTHON", "SOURCE"), default=None,
                   help="an interpreter that imports py-earth from SOURCE (mars only)")
    args = p.parse_args(argv)
    names = args.only.split(",") if args.only else list(METHODS)
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        p.error(f"unknown method(s) {unknown}; choose from {list(METHODS)}")
    runs = []
    for name in names:
        runs.extend(METHODS[name](args.pyearth) if name == "mars" else METHODS[name]())
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "results-classic.json"), "w") as f:
        json.dump({"command": "python -m bench classic " + " ".join(argv or sys.argv[1:]),
                   "runs": runs}, f, indent=1)
    print(table(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
