"""Turn ``<out>/results-<suite>.json`` into ``RESULTS.md`` tables and PNG plots.

``python -m bench.report [--out bench/out] [--results bench/RESULTS.md]``

Every figure is ``median [min-max]`` over the repeats (just the value for one run). Ratios
to a peer are computed pair by pair: oocboost's run of repeat *r* divided by the peer's run
of the same repeat *r* (same data, same suite invocation), and then summarised the same
way. A ratio below 1 means oocboost took less time or memory.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import time

MiB = 2 ** 20
SUITE_ORDER = ("build", "boost", "forest", "adaboost", "predict", "scale", "limit",
               "categorical")
OURS = {"boost": "ooc", "build": "ooc", "predict": "ooc", "scale": "ooc", "forest": "ooc_rf",
        "adaboost": "ooc_ada"}


# ---------------------------------------------------------------------------- arithmetic

def summarize(values):
    """(median, min, max, n) of the non-None values, or None when there are none."""
    vals = sorted(float(v) for v in values if v is not None)
    if not vals:
        return None
    n = len(vals)
    med = vals[n // 2] if n % 2 else 0.5 * (vals[n // 2 - 1] + vals[n // 2])
    return med, vals[0], vals[-1], n


def _num(x, digits):
    if x != x:  # NaN
        return "nan"
    a = abs(x)
    if digits is None:
        if a >= 100:
            digits = 0
        elif a >= 10:
            digits = 1
        elif a >= 1:
            digits = 2
        else:
            digits = 3
    return f"{x:,.{digits}f}"


def fmt(values, digits=None):
    """``median [min-max]`` (``median`` alone for one value, ``-`` for none)."""
    s = summarize(values)
    if s is None:
        return "-"
    med, lo, hi, n = s
    if n == 1 or lo == hi:
        return _num(med, digits)
    return f"{_num(med, digits)} [{_num(lo, digits)}-{_num(hi, digits)}]"


def paired_ratios(runs, ours, peer, getter, group=None):
    """``getter(ours run) / getter(peer run)`` for every repeat where both succeeded."""
    by = {}
    for r in runs:
        if r.get("status") != "ok" or (group is not None and r.get("group") != group):
            continue
        if r.get("lib") in (ours, peer):
            by.setdefault((r.get("group"), r.get("repeat")), {})[r["lib"]] = r
    out = []
    for key in sorted(by, key=lambda k: (k[0] or 0, k[1] or 0)):
        pair = by[key]
        if ours in pair and peer in pair:
            a, b = getter(pair[ours]), getter(pair[peer])
            if a is not None and b not in (None, 0):
                out.append(a / b)
    return out


# ---------------------------------------------------------------------------- getters

def t(name):
    return lambda r: r.get("times", {}).get(name)


def total_s(r):
    ts = r.get("times", {})
    parts = [ts.get(k) for k in ("load_s", "build_s", "train_s")]
    parts = [p for p in parts if p is not None]
    return sum(parts) if parts else None


def peak_mib(r):
    return r["peak_rss"] / MiB if r.get("peak_rss") else None


def base_mib(r):
    return r["baseline_rss"] / MiB if r.get("baseline_rss") else None


def above_mib(r):
    if r.get("peak_rss") and r.get("baseline_rss"):
        return (r["peak_rss"] - r["baseline_rss"]) / MiB
    return None


def metric(name):
    return lambda r: r.get("metrics", {}).get(name)


def extra(name, scale=1.0):
    def get(r):
        v = r.get("extra", {}).get(name)
        return None if v is None else v * scale
    return get


def csv_mb_s(r):
    b = r.get("times", {}).get("build_s")
    ts = (r.get("times", {}).get("load_s") or 0) + (b or 0)
    return r["train_bytes"] / 1e6 / ts if ts and r.get("train_bytes") else None


def log_get(name):
    return lambda r: (r.get("extra", {}).get("training_log") or {}).get(name)


def per_pass_s(r):
    log = r.get("extra", {}).get("training_log") or {}
    passes = log.get("data_passes")
    train = r.get("times", {}).get("train_s")
    return train / passes if passes and train else None


def hist_per_pass_s(r):
    log = r.get("extra", {}).get("training_log") or {}
    passes, h = log.get("data_passes"), log.get("histogram_s")
    return h / passes if passes and h is not None else None


# ---------------------------------------------------------------------------- tables

def _cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _rows_in_order(runs, group=None):
    """(lib, label, runs of that lib) in first-appearance order."""
    order, by = [], {}
    for r in runs:
        if r.get("role") == "info" and r.get("lib") == "ooc_warmup":
            continue
        if group is not None and r.get("group") != group:
            continue
        lib = r.get("lib")
        if lib not in by:
            order.append(lib)
            by[lib] = []
        by[lib].append(r)
    return [(lib, by[lib][0].get("label", lib), by[lib]) for lib in order]


def _status_text(rs):
    bad = [r for r in rs if r.get("status") != "ok"]
    if not bad:
        return ""
    r = bad[0]
    reason = str(r.get("reason", "")).strip().splitlines()
    reason = reason[0] if reason else ""
    if r.get("status") == "unavailable":
        return f"not available yet ({reason[:160]})"
    return f"{r.get('status')}: {reason[:160]}" + (
        f" ({len(bad)}/{len(rs)} runs)" if len(rs) > 1 else ""
    )


def table(runs, columns, group=None, first="library"):
    """Markdown table: one row per library, ``columns`` = [(header, getter, digits)]."""
    head = [first] + [c[0] for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lib, label, rs in _rows_in_order(runs, group):
        ok = [r for r in rs if r.get("status") == "ok"]
        status = _status_text(rs)
        if not ok:
            cells = [status] + ["-"] * (len(columns) - 1)
        else:
            cells = [fmt([g(r) for r in ok], d) for _, g, d in columns]
            if status:
                label = f"{label} ({status})"
        lines.append("| " + " | ".join(_cell(x) for x in [label] + cells) + " |")
    return "\n".join(lines)


def paired_deltas(runs, ours, peer, getter, group=None):
    by = {}
    for r in runs:
        if r.get("status") == "ok" and (group is None or r.get("group") == group):
            by.setdefault((r.get("group"), r.get("repeat")), {})[r.get("lib")] = r
    out = []
    for pair in by.values():
        if ours in pair and peer in pair:
            a, b = getter(pair[ours]), getter(pair[peer])
            if a is not None and b is not None:
                out.append(a - b)
    return out


def ratio_block(runs, ours, ratio_cols, group=None, delta_metric="auc"):
    peers = [(lib, label) for lib, label, rs in _rows_in_order(runs, group)
             if lib != ours and rs[0].get("role") == "peer"]
    if not any(r.get("lib") == ours and r.get("status") == "ok"
               and (group is None or r.get("group") == group) for r in runs):
        return "_No ratios: oocboost has no successful run here yet._"
    head = ["oocboost vs"] + [c[0] for c in ratio_cols]
    if delta_metric:
        head.append(f"{delta_metric.upper()} oocboost - peer")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lib, label in peers:
        cells = [fmt(paired_ratios(runs, ours, lib, g, group), d) for _, g, d in ratio_cols]
        if delta_metric:
            cells.append(fmt(paired_deltas(runs, ours, lib, metric(delta_metric), group), 4))
        lines.append("| " + " | ".join(_cell(x) for x in [label] + cells) + " |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- suites

def train_peak_mib(r):
    """The process's peak RSS when training ended (``ru_maxrss`` read in the job right
    after the train phase): load + build + train for in-memory peers, training from the
    cache for oocboost; the test set is loaded and predicted afterwards."""
    v = r.get("extra", {}).get("peak_rss_after", {}).get("train_s")
    return v / 2**20 if v else None


def build_peak_mib(r):
    """oocboost's cache build, run as a job of its own before the training job."""
    v = r.get("extra", {}).get("build_peak_rss")
    return v / 2**20 if v else None


#: Said under every table where oocboost trains from a cache built by a separate job.
SEPARATE_BUILD_NOTE = (
    "oocboost builds its cache in a process of its own first (`build s`, `build peak RSS "
    "MiB`), then trains from the cache in a fresh process: its `peak RSS` is training plus "
    "prediction. The in-memory peers' `peak RSS` includes loading the CSV, which they "
    "need to train. `peak RSS to end of training` is each process's high-water mark "
    "(`ru_maxrss`) read right after training, before the test rows are loaded.")


BOOST_COLS = [("load s", t("load_s"), None), ("build s", t("build_s"), None),
              ("train s", t("train_s"), None), ("total s", total_s, None),
              ("predict rows/s", extra("predict_rows_s"), 0), ("AUC", metric("auc"), 4),
              ("logloss", metric("logloss"), 4), ("peak RSS MiB", peak_mib, 0),
              ("peak RSS to end of training MiB", train_peak_mib, 0),
              ("RSS after imports MiB", base_mib, 0), ("peak above imports MiB", above_mib, 0),
              ("build peak RSS MiB", build_peak_mib, 0)]
RATIO_COLS = [("train time", t("train_s"), 2), ("total time (CSV to model)", total_s, 2),
              ("peak RSS", peak_mib, 2), ("peak RSS to end of training", train_peak_mib, 2),
              ("peak above imports", above_mib, 2)]


def _warmup_note(runs):
    w = [r for r in runs if r.get("lib") == "ooc_warmup"]
    if not w:
        return ""
    r = w[0]
    if r.get("status") == "ok":
        variants = r.get("variants", 0)
        extra = (f" (and 2 rounds of each of {variants} variant(s) with kernels of "
                 f"their own, such as quantized gradients)" if variants else "")
        return (f"oocboost cold start (first run: numba compiles and caches its kernels; "
                f"5k-row build + 2 rounds + predict{extra}, whole process): "
                f"{r.get('outer_wall_s', 0):.1f} s. The measured runs above start warm.\n")
    return f"oocboost warm-up run: {_status_text([r])}\n"


def _limit_value(all_results):
    lim = [r for res in all_results.values() for r in res["runs"]
           if r.get("lib") == "limit" and r.get("status") == "ok"]
    return summarize([r["times"]["hist_pass_s"] for r in lim])


def section_build(res, all_results):
    runs = res["runs"]
    cols = [("load s", t("load_s"), None), ("build s", t("build_s"), None),
            ("total s", total_s, None), ("CSV MB/s", csv_mb_s, 0),
            ("peak RSS MiB", peak_mib, 0), ("RSS after imports MiB", base_mib, 0),
            ("peak above imports MiB", above_mib, 0),
            ("output MB (cache / XGBoost disk cache / array)",
             lambda r: (r.get("extra", {}).get("cache_bytes")
                        or r.get("extra", {}).get("disk_cache_bytes")
                        or r.get("extra", {}).get("in_memory_bytes") or 0) / 1e6 or None, 1)]
    out = ["CSV file -> a structure a learner can train from. oocboost: `build_cache` "
           "(parse, sketch, bin, compress, write); LightGBM: `Dataset.construct()`; XGBoost: "
           "`QuantileDMatrix` / `ExtMemQuantileDMatrix` (from `.npy` shards, written "
           "beforehand and not timed); in-memory peers first load the CSV with pandas "
           "(`load s`). The parse-only rows are the floor of reading the text.",
           "", table(runs, cols), "",
           ratio_block(runs, "ooc", [("total time", total_s, 2), ("peak RSS", peak_mib, 2),
                                     ("peak above imports", above_mib, 2)],
                       delta_metric=None)]
    return "\n".join(out)


def section_boost(res, all_results):
    runs = [r for r in res["runs"] if r.get("lib") != "limit"]
    out = ["Same data, same hyperparameters (rounds, eta 0.1, depth 6, 256 bins, lambda 1, "
           "min_child_weight 1, logistic loss), 2 threads each. `total s` = load + build + "
           "train (CSV to model). Predictions on the held-out test rows, from an in-memory "
           "float32 array. " + SEPARATE_BUILD_NOTE, "", table(runs, BOOST_COLS), "",
           "Pairwise ratios (oocboost / peer, same repeat; < 1: oocboost uses less):", "",
           ratio_block(runs, "ooc", RATIO_COLS), ""]
    ooc = [r for r in runs if r.get("lib") == "ooc" and r.get("status") == "ok"]
    if ooc:
        lim = _limit_value(all_results)
        cols = [
            ("data passes", log_get("data_passes"), 0),
            ("passes/round", log_get("passes_per_round"), 2),
            ("histogram s", log_get("histogram_s"), None),
            ("split s", log_get("split_s"), None),
            ("partition s", log_get("partition_s"), None),
            ("I/O wait s", log_get("io_wait_s"), None),
            ("train s per pass", per_pass_s, 4),
            ("histogram s per pass", hist_per_pass_s, 4),
        ]
        if lim:
            cols.append(
                (
                    "train per pass / reference pass",
                    lambda r: (per_pass_s(r) or 0) / lim[0] or None,
                    1,
                )
            )
            cols.append(("histogram per pass / reference pass",
                         lambda r: (hist_per_pass_s(r) or 0) / lim[0] or None, 1))
        out += ["oocboost's training log (`model.training_log`):", "", table(ooc, cols), ""]
    out += _sampling_block(runs)
    out.append(_warmup_note(res["runs"]))
    return "\n".join(out)


#: The boost suite's variants, each against the same library's full training:
#: (variant lib, full lib, library, what the variant is).
BOOST_VARIANTS = (
    ("ooc_goss", "ooc", "oocboost", "GOSS"), ("lgb_goss", "lgb", "LightGBM", "GOSS"),
    ("ooc_quant", "ooc", "oocboost", "quantized"),
    ("lgb_quant", "lgb", "LightGBM", "quantized"))


def _sampling_block(runs):
    """GOSS (``data_sample_strategy="goss"``, top_rate 0.2, other_rate 0.1) and quantized
    gradients (``use_quantized_grad=True``, 4 bins) against the same library's full
    training, pair by pair; then oocboost's quantized training against LightGBM's."""
    lines = []
    for variant, full, name, what in BOOST_VARIANTS:
        ratios = paired_ratios(runs, variant, full, t("train_s"))
        if not ratios:
            continue
        if not lines:
            lines = ["GOSS (`data_sample_strategy=\"goss\"`, top_rate 0.2, other_rate 0.1) "
                     "and quantized gradients (`use_quantized_grad=True`, LightGBM's "
                     "defaults: 4 bins, stochastic rounding) against the same library's "
                     "full training, pair by pair:", "",
                     "| library | variant | train time variant / full | "
                     "AUC variant - full |", "|---|---|---|---|"]
        lines.append(f"| {name} | {what} | {fmt(ratios, 2)} | "
                     f"{fmt(paired_deltas(runs, variant, full, metric('auc')), 4)} |")
    quantized = paired_ratios(runs, "ooc_quant", "lgb_quant", t("train_s"))
    if quantized:
        auc = paired_deltas(runs, "ooc_quant", "lgb_quant", metric("auc"))
        lines += ["", f"oocboost quantized / LightGBM quantized, train time: "
                      f"{fmt(quantized, 2)}; AUC difference {fmt(auc, 4)}"]
    return lines + [""] if lines else []


def section_categorical(res, all_results):
    runs = res["runs"]
    out = ["A label driven by per-category effects: `shop` (10,000 categories, Zipf-like "
           "frequencies, 2% missing), `region` (300 categories) and 6 numeric columns "
           "(`bench/cat_data.py`). Each library with its own categorical handling and the "
           "boosting suite's parameters (rounds, eta 0.1, depth 6, 256 bins, lambda 1), 2 "
           "threads: oocboost with native categories (LightGBM's partition search) and with "
           "ordered target statistics (`cat_encoding=\"ordered_ts\"`), LightGBM with pandas "
           "`category` columns, CatBoost with `cat_features`, XGBoost with "
           "`enable_categorical`. Predictions on the held-out rows (oocboost from the test "
           "CSV, raw strings). " + SEPARATE_BUILD_NOTE, "",
           table(runs, BOOST_COLS), ""]
    for ours in ("ooc_cat", "ooc_cat_ts"):
        label = LIBS_LABELS.get(ours, ours)
        out += [f"{label} / peer (same repeat):", "",
                ratio_block(runs, ours, RATIO_COLS[:2] + RATIO_COLS[3:4]), ""]
    return "\n".join(out)


#: Labels of oocboost's rows in the categorical suite's ratio blocks.
LIBS_LABELS = {"ooc_cat": "oocboost native categories",
               "ooc_cat_ts": "oocboost ordered target statistics"}


def section_ensemble(res, all_results, ours):
    runs = res["runs"]
    cfg = res.get("config", {})
    if ours == "ooc_rf":
        intro = (
            f"Random forests: {cfg.get('forest_trees')} trees, max_depth "
            f"{cfg.get('forest_depth')}, sqrt(features) candidates per split (LightGBM: "
            f"`feature_fraction_bynode`), "
            "bootstrap / bagging 0.632."
        )
    else:
        intro = (f"AdaBoost (SAMME): {cfg.get('ada_estimators')} stumps "
                 f"(max_depth {cfg.get('ada_depth')}).")
    cols = [c for c in BOOST_COLS if c[0] != "logloss"] + [("accuracy", metric("accuracy"), 4)]
    out = [intro + " " + SEPARATE_BUILD_NOTE, "", table(runs, cols), "",
           "Pairwise ratios (oocboost / peer, same repeat):", "",
           ratio_block(runs, ours, RATIO_COLS), ""]
    logged = [r for r in runs if r.get("lib") == ours and r.get("status") == "ok"
              and r.get("extra", {}).get("training_log")]
    if logged:
        log_cols = [("data passes", log_get("data_passes"), 0),
                    ("passes per tree", log_get("passes_per_tree"), 2),
                    ("trees per pass", log_get("trees_per_pass"), 0),
                    ("histogram s", log_get("histogram_s"), None),
                    ("split s", log_get("split_s"), None),
                    ("partition s", log_get("partition_s"), None),
                    ("statistics s", log_get("stats_s"), None),
                    ("I/O wait s", log_get("io_wait_s"), None)]
        out += ["oocboost's training log (`model_.training_log`; a pass reads the data once "
                "for every tree grown in it):", "", table(logged, log_cols), ""]
    out.append(_warmup_note(runs))
    return "\n".join(out)


def section_predict(res, all_results):
    runs = res["runs"]
    cols = [
        ("test rows", extra("predict_rows"), 0),
        ("predict s (median of 3 calls)", t("predict_s"), 4),
        ("rows/s", extra("predict_rows_s"), 0),
        ("predict from the CSV file s", t("predict_file_s"), 3),
        ("AUC", metric("auc"), 4),
    ]
    return "\n".join([
        "Prediction of the trained model (same rounds as `boost`) on the test rows: an "
        "in-memory float32 array, the same for every library; oocboost also streams the test "
        "CSV file (`predict from the CSV file`).", "", table(runs, cols), "",
        "Pairwise ratios of predict time (oocboost / peer; < 1: oocboost is faster):", "",
        ratio_block(runs, "ooc", [("predict time", t("predict_s"), 2)], delta_metric=None),
        "", _warmup_note(runs)])


def section_limit(res, all_results):
    runs = [r for r in res["runs"] if r.get("lib") == "limit"]
    cols = [("rows x features", lambda r: None, 0),
            ("histogram pass ms", extra("hist_pass_ms"), 2),
            ("GB/s (codes + g + h)", extra("hist_gb_s"), 1),
            ("ns per (row, feature)", extra("hist_ns_per_cell"), 3),
            ("memory read pass ms", extra("read_pass_ms"), 2),
            ("read GB/s", extra("read_gb_s"), 1)]
    ok = [r for r in runs if r.get("status") == "ok"]
    shape = (f"{ok[0]['extra']['rows']:,} x {ok[0]['extra']['features']}" if ok else "-")
    cols[0] = ("rows x features", lambda r: None, 0)
    body = table(runs, cols[1:])
    return "\n".join([
        f"A plain reference histogram pass over {shape} uint8 codes (column-major, one "
        "task per feature, scalar read-modify-writes, float32 gradient and hessian per row, "
        "float64 sums; median of 20 calls after compilation), and a pure memory read of the "
        "same bytes. It is a yardstick, not a floor: oocboost's kernel (several features per "
        "row visit, vector adds, unrolled updates) builds a root pass in less. Divide "
        "oocboost's per-pass time (boost suite) by the reference pass to compare runs.",
        "", body, ""])


def section_scale(res, all_results, plot_dir, plot_prefix):
    runs = res["runs"]
    cfg = res.get("config", {})
    groups = sorted({r.get("group") for r in runs if r.get("lib") != "ooc_warmup"})
    cols = [
        ("load s", t("load_s"), None),
        ("build s", t("build_s"), None),
        ("train s", t("train_s"), None),
        ("total s", total_s, None),
        ("AUC", metric("auc"), 4),
        ("peak RSS MiB", peak_mib, 0),
        ("peak RSS to end of training MiB", train_peak_mib, 0),
        ("peak above imports MiB", above_mib, 0),
        ("build peak RSS MiB", build_peak_mib, 0),
    ]
    out = [
        f"Rows grow with a fixed oocboost `memory_limit` = {cfg.get('scale_memory_limit')}; "
        f"{cfg.get('scale_rounds')} rounds, otherwise the boost parameters. "
        + SEPARATE_BUILD_NOTE,
        "",
    ]
    for g in groups:
        out += [f"**{g:,} training rows**", "", table(runs, cols, group=g), "",
                ratio_block(runs, "ooc", RATIO_COLS, group=g), ""]
    out += [growth_table(runs, groups), ""]
    plots = make_scale_plots(runs, plot_dir, plot_prefix)
    for title, fname in plots:
        out.append(f"![{title}]({fname})")
    out.append("")
    out.append(_warmup_note(runs))
    return "\n".join(out)


GROWTH_COLS = (("train time", t("train_s")), ("total time", total_s),
               ("peak above imports", above_mib))


def growth_table(runs, groups):
    """How each library's medians grow with the rows, against its smallest row count:
    ``x`` times that figure (rows grow by the first column's factor). A library missing
    at a row count (skipped, failed) shows ``-``."""
    if len(groups) < 2:
        return ""
    first = groups[0]
    head = (["library", "figure"]
            + [f"{g:,} rows ({g / first:g}x)" for g in groups])
    lines = [f"Growth with the rows (median at each row count / median at {first:,} rows):",
             "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for lib, label, rs in _rows_in_order(runs):
        for name, getter in GROWTH_COLS:
            med = {}
            for g in groups:
                got = summarize(getter(r) for r in rs
                                if r.get("group") == g and r.get("status") == "ok")
                med[g] = got[0] if got else None
            if not med[first]:
                continue
            cells = ["-" if med[g] is None else f"{med[g] / med[first]:.1f}x" for g in groups]
            lines.append("| " + " | ".join([label, name] + cells) + " |")
    return "\n".join(lines)


def make_scale_plots(runs, plot_dir, prefix="scale"):
    """Peak RSS vs rows and time vs rows, one line per library (log-log). Returns
    [(title, file name relative to plot_dir)]."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001
        return []
    libs = _rows_in_order(runs)
    made = []
    for fname, title, getter, ylabel in [
            (f"{prefix}_rss.png", "Peak RSS vs training rows", peak_mib, "peak RSS (MiB)"),
            (f"{prefix}_time.png", "Time vs training rows (CSV to model)", total_s,
             "load + build + train (s)"),
            (f"{prefix}_train_time.png", "Training time vs training rows", t("train_s"),
             "train (s)")]:
        fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=110)
        any_line = False
        for lib, label, rs in libs:
            pts = {}
            for r in rs:
                if r.get("status") == "ok" and getter(r) is not None:
                    pts.setdefault(r["group"], []).append(getter(r))
            if not pts:
                continue
            xs = sorted(pts)
            med = [summarize(pts[x])[0] for x in xs]
            lo = [summarize(pts[x])[1] for x in xs]
            hi = [summarize(pts[x])[2] for x in xs]
            ax.plot(xs, med, marker="o", label=label, lw=2.5 if lib == "ooc" else 1.5)
            ax.fill_between(xs, lo, hi, alpha=0.15)
            any_line = True
        if not any_line:
            plt.close(fig)
            continue
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("training rows")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        os.makedirs(plot_dir, exist_ok=True)
        fig.savefig(os.path.join(plot_dir, fname))
        plt.close(fig)
        made.append((title, fname))
    return made


# ---------------------------------------------------------------------------- document

def machine_section(machine):
    v = machine.get("versions", {})
    lines = [f"- CPU: {machine.get('cpu_model') or '?'}; `os.cpu_count()` = "
             f"{machine.get('cpu_count')} (usable: {machine.get('cpu_affinity')}); "
             f"{machine.get('threads_per_job')} threads per library",
             f"- RAM: {machine.get('ram_bytes', 0) / 2**30:.1f} GiB",
             f"- {machine.get('platform')}; Python {machine.get('python')}",
             "- " + ", ".join(f"{k} {val}" for k, val in v.items())]
    return "\n".join(lines)


def load_results(out_dir):
    found = {}
    for path in glob.glob(os.path.join(out_dir, "results-*.json")):
        with open(path) as fh:
            res = json.load(fh)
        found[res["suite"]] = res
    return {s: found[s] for s in SUITE_ORDER if s in found} | {
        s: r for s, r in found.items() if s not in SUITE_ORDER}


def render(all_results, plot_dir, plot_prefix="scale"):
    if not all_results:
        return "# oocboost benchmarks\n\nNo results yet: run `python -m bench all`.\n"
    first = next(iter(all_results.values()))
    out = ["# oocboost benchmarks", "",
           "Generated by `python -m bench.report` from the raw runs in `bench/out/` "
           f"on {time.strftime('%Y-%m-%d %H:%M')}. Each job is its own process; peak RSS is "
           "the larger of a 10 ms poll of the process's RSS plus its descendants' (listed "
           "every 0.25 s) and the kernel's `ru_maxrss` of that process. "
           "Figures are `median [min-max]` over the repeats; ratios are oocboost / peer "
           "computed within the same repeat.", "", "## Machine", "",
           machine_section(first.get("machine", {})), ""]
    for suite, res in all_results.items():
        cfg = res.get("config", {})
        rows = cfg.get("n_train")
        header = [
            f"## {suite}",
            "",
            f"Command: `{res.get('command')}`  ",
            f"Run {res.get('started')} - {res.get('finished', 'unfinished')}; "
            f"{'QUICK mode; ' if cfg.get('quick') else ''}"
            f"{cfg.get('repeats')} repeat(s); "
            + (
                f"{rows:,} training rows, {cfg.get('n_test'):,} test rows; "
                if suite != "scale" and rows
                else ""
            )
            + (
                f"{cfg.get('rounds')} rounds; "
                if suite in ("boost", "predict", "categorical")
                else ""
            )
            + "oocboost memory_limit "
            + str(cfg.get("memory_limit" if suite != "scale" else "scale_memory_limit"))
            + ".",
            "",
        ]
        other = [
            r["other_cpu_cores"] for r in res["runs"] if r.get("other_cpu_cores") is not None
        ]
        if other and max(other) > 0.25:
            busy = sorted({r.get("label", r.get("lib")) for r in res["runs"]
                           if (r.get("other_cpu_cores") or 0) > 0.25})
            header += [f"**Warning: the machine was busy during this suite**: other processes "
                       f"used up to {max(other):.2f} cores while a job ran (jobs affected: "
                       f"{', '.join(busy)}). Those timings are unreliable (memory figures are "
                       "not affected); re-run on an idle machine.", ""]
        if res.get("machine") and res["machine"] != first.get("machine"):
            header += ["Machine for this suite:", "", machine_section(res["machine"]), ""]
        if suite == "build":
            body = section_build(res, all_results)
        elif suite == "boost":
            body = section_boost(res, all_results)
            if any(r.get("lib") == "limit" for r in res["runs"]):
                body += "\n\n" + section_limit(res, all_results)
        elif suite == "forest":
            body = section_ensemble(res, all_results, "ooc_rf")
        elif suite == "adaboost":
            body = section_ensemble(res, all_results, "ooc_ada")
        elif suite == "predict":
            body = section_predict(res, all_results)
        elif suite == "scale":
            body = section_scale(res, all_results, plot_dir, plot_prefix)
        elif suite == "limit":
            body = section_limit(res, all_results)
        elif suite == "categorical":
            body = section_categorical(res, all_results)
        else:
            body = table(res["runs"], BOOST_COLS)
        out += header + [body, ""]
    return "\n".join(out).rstrip() + "\n"


def write_report(out_dir, results_path):
    all_results = load_results(out_dir)
    plot_dir = os.path.dirname(os.path.abspath(results_path))
    text = render(all_results, plot_dir)
    tmp = results_path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, results_path)
    return text


def default_results_path(out_dir):
    """Where a report of ``out_dir``'s runs goes unless ``--results`` says: the published
    ``bench/RESULTS.md`` (and its plots) only for the runs of ``bench/out``; runs kept
    elsewhere (a quick check in /tmp) report beside them, so they never overwrite the
    published figures."""
    here = os.path.dirname(os.path.abspath(__file__))
    if os.path.abspath(out_dir) == os.path.join(here, "out"):
        return os.path.join(here, "RESULTS.md")
    return os.path.join(os.path.abspath(out_dir), "RESULTS.md")


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(prog="python -m bench.report")
    p.add_argument("--out", default=os.path.join(here, "out"))
    p.add_argument("--results", default=None,
                   help="the report's path (bench/RESULTS.md for the runs of bench/out, "
                        "else OUT/RESULTS.md)")
    a = p.parse_args(argv)
    a.results = a.results or default_results_path(a.out)
    write_report(a.out, a.results)
    print(a.results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
