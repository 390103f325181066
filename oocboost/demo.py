"""``oocboost demo``: the whole path on a built-in synthetic dataset, end to end.

Generates a HIGGS-like binary task (28 float features with missing values, two string
columns), writes it as CSV, builds the training cache and a validation cache binned with
the training edges, trains gradient boosting with early stopping under a memory limit,
saves the model, predicts the validation file from raw CSV and reports AUC and where
time and memory went.
"""
import os
import time

from .utils.rss import current_rss
from .utils.sizes import format_size


def run_demo(workdir="demo_data", n_rows=200_000, rounds=50, memory_limit=None, quiet=False):
    """Run the demo; returns 0 on success (the CLI's exit code).

    Parameters
    ----------
    workdir : str
        Folder for the CSV files, caches and model (created).
    n_rows : int
        Training rows (validation gets a quarter as many).
    rounds : int
        Boosting rounds.
    memory_limit : str or int or None
    """
    from . import build_cache, load_model, train
    from .datasets import generate
    from .model.predict import evaluate

    def say(msg):
        if not quiet:
            print(msg, flush=True)

    from .kernels import warmup

    # a first run (numba's cache empty) compiles the training and prediction kernels on
    # every core while this process generates the data and builds the caches
    helpers = warmup.auto_start("boosting")
    if helpers:
        say(f"      first run: compiling the kernels on {len(helpers)} processes in the "
            f"background (once; `oocboost warmup` does it ahead)")
    os.makedirs(workdir, exist_ok=True)
    train_csv = os.path.join(workdir, "train.csv")
    valid_csv = os.path.join(workdir, "valid.csv")
    n_valid = max(n_rows // 4, 1000)
    t0 = time.perf_counter()
    say(f"[1/5] generating {n_rows} + {n_valid} rows of synthetic binary data in {workdir}/")
    generate(train_csv, n_rows, 28, n_categorical=2, missing_rate=0.02, seed=7)
    generate(valid_csv, n_valid, 28, n_categorical=2, missing_rate=0.02, seed=7,
             row_start=n_rows)
    say(f"      {format_size(os.path.getsize(train_csv))} + "
        f"{format_size(os.path.getsize(valid_csv))} of CSV "
        f"({time.perf_counter() - t0:.1f}s)")

    t1 = time.perf_counter()
    say("[2/5] oocboost build-cache train.csv (2 passes: sketch, then bin) and valid.csv "
        "(binned with the training edges)")
    train_cache = build_cache(train_csv, os.path.join(workdir, "train.oocb"), label="label",
                              memory_limit=memory_limit, overwrite=True, quiet=quiet)
    valid_cache = build_cache(valid_csv, os.path.join(workdir, "valid.oocb"), label="label",
                              reference=train_cache, memory_limit=memory_limit,
                              overwrite=True, quiet=quiet)
    say(f"      {train_cache.n_rows} rows x {train_cache.n_features} features in "
        f"{train_cache.n_blocks} blocks, {format_size(train_cache.nbytes_stored)} on disk "
        f"({time.perf_counter() - t1:.1f}s)")

    if helpers:
        t_wait = time.perf_counter()
        warmup.wait(helpers)
        say(f"      waited {time.perf_counter() - t_wait:.1f}s for the kernels to compile")
    t2 = time.perf_counter()
    say(f"[3/5] training {rounds} rounds of binary:logistic, depth 6, eta 0.1, "
        f"early stopping 10")
    params = {"objective": "binary:logistic", "eta": 0.1, "max_depth": 6,
              "eval_metric": ["logloss", "auc"], "verbosity": 0 if quiet else 1}
    model = train(params, train_cache, rounds, evals=[(valid_cache, "valid")],
                  early_stopping_rounds=10, verbose_eval=False if quiet else 10,
                  memory_limit=memory_limit)
    log = model.training_log
    say(f"      {model.n_trees} trees in {time.perf_counter() - t2:.1f}s; "
        f"{log['passes_per_round']:.1f} data passes per tree; histogram "
        f"{log['histogram_s']:.1f}s, split {log['split_s']:.1f}s, I/O wait "
        f"{log['io_wait_s']:.1f}s")

    model_path = os.path.join(workdir, "model.json")
    model.save_model(model_path)
    say(f"[4/5] saved {model_path}")

    say("[5/5] predicting valid.csv from raw CSV with the saved model")
    loaded = load_model(model_path)
    results = evaluate(loaded, valid_csv, metrics=["auc", "logloss"], label="label")
    say(f"      validation AUC {results['auc']:.4f}, logloss {results['logloss']:.4f}; "
        f"peak RSS {format_size(max(current_rss(), log['peak_rss_bytes']))}; "
        f"total {time.perf_counter() - t0:.1f}s")
    return 0
