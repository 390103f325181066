"""The ``oocboost`` command line.

Every error oocboost raises on purpose (``OocboostError``) ends the command with a
one-line message naming the file, row, column or parameter, and a non-zero exit code:
2 bad input or parameters, 3 cache problems, 4 model problems, 5 memory limit, 130 when
interrupted. No traceback is printed unless ``OOCBOOST_DEBUG=1``.
"""
import argparse
import json
import os
import sys

from .errors import OocboostError, ParameterError


def _csv_list(value):
    if value is None:
        return None
    return [v.strip() for v in value.split(",") if v.strip()]


def _parse_param(text):
    if "=" not in text:
        raise ParameterError(f"--param takes key=value, got {text!r}")
    key, value = text.split("=", 1)
    for cast in (int, float):
        try:
            return key.strip(), cast(value)
        except ValueError:
            pass
    if value.lower() in ("true", "false"):
        return key.strip(), value.lower() == "true"
    if value.lower() == "none":
        return key.strip(), None
    return key.strip(), value


def _iteration_range(text):
    if text is None:
        return None
    try:
        start, end = text.split(":")
        return int(start), int(end)
    except ValueError:
        raise ParameterError(f"--iteration-range takes START:END, got {text!r}") from None


# ----------------------------------------------------------------------------- commands
def cmd_build_cache(args):
    from .cache.build import build_cache
    from .cache.describe import describe_cache

    if args.append:
        return _append(args)
    if args.shards or args.scheduler:
        return _build_shards(args)

    categorical = args.categorical
    if categorical not in ("auto", "none"):
        categorical = _csv_list(categorical)
    elif categorical == "none":
        categorical = None
    na_values = _csv_list(args.na_values) if args.na_values is not None else None
    label = args.label
    if label is not None and "," in label:  # several targets, or an interval's bounds
        label = _csv_list(label)
    build_cache(args.input, args.output, label=label, weight=args.weight,
                group=args.group, categorical=categorical, drop=_csv_list(args.drop) or (),
                max_bin=args.max_bin, max_categories=args.max_categories,
                block_rows=args.block_rows, backend=args.format,
                compression=args.compression, memory_limit=args.memory_limit,
                delimiter=args.delimiter, na_values=na_values, encoding=args.encoding,
                on_bad_rows=args.on_bad_rows, reference=args.reference,
                header=not args.no_header, names=_csv_list(args.names),
                overwrite=args.overwrite, quiet=args.quiet, verbose=args.verbose,
                cat_encoding=args.cat_encoding, ts_prior=args.ts_prior,
                ts_prior_weight=args.ts_prior_weight, ts_permutations=args.ts_permutations,
                ts_seed=args.ts_seed, enable_bundle=args.enable_bundle,
                max_conflict_rate=args.max_conflict_rate)
    if not args.quiet:
        print(describe_cache(args.output))
    return 0


def _build_shards(args):
    """``--shards``: one shard per file of a folder or glob, on this machine or, with
    ``--scheduler``, on a Dask cluster's workers (docs/distributed.md)."""
    options = dict(label=args.label, weight=args.weight, drop=_csv_list(args.drop) or (),
                   categorical=args.categorical if args.categorical == "auto" else
                   (None if args.categorical == "none" else _csv_list(args.categorical)),
                   max_bin=args.max_bin, max_categories=args.max_categories,
                   memory_limit=args.memory_limit)
    if args.scheduler:
        from distributed import Client

        from .dask import build_cache as dask_build

        with Client(args.scheduler) as client:
            shards = dask_build(args.input, args.output, client=client, **options)
    else:
        from .cache.shards import build_shards

        shards = build_shards(args.input, args.output, **options)
    if not args.quiet:
        print(f"{args.output}: {len(shards.shards)} shards, {shards.n_rows} rows, "
              f"{len(shards.features)} features (shards.json)")
    return 0


def _append(args):
    from .cache.append import append_to_cache
    from .cache.describe import describe_cache

    fixed = {"--max-bin": args.max_bin != 256, "--block-rows": args.block_rows is not None,
             "--format": args.format != "arrow", "--compression": args.compression is not None,
             "--reference": args.reference is not None, "--overwrite": args.overwrite,
             "--cat-encoding": args.cat_encoding != "native"}
    given = [flag for flag, on in fixed.items() if on]
    if given:
        raise ParameterError(f"--append keeps the cache's settings: drop {', '.join(given)}")
    categorical = args.categorical
    if categorical not in ("auto", "none"):
        categorical = _csv_list(categorical)
    append_to_cache(args.input, args.output, label=args.label, weight=args.weight,
                    quiet=args.quiet, categorical=None if categorical == "none"
                    else categorical, drop=_csv_list(args.drop) or (),
                    memory_limit=args.memory_limit, delimiter=args.delimiter,
                    header=not args.no_header, names=_csv_list(args.names),
                    na_values=_csv_list(args.na_values) if args.na_values else None,
                    encoding=args.encoding, on_bad_rows=args.on_bad_rows)
    if not args.quiet:
        print(describe_cache(args.output))
    return 0


def cmd_info(args):
    from .cache.describe import describe_cache

    print(describe_cache(args.cache))
    if args.verify:
        from .cache.store import Cache

        n_rows = Cache(args.cache).verify()
        print(f"  verified: every block read whole ({n_rows} rows): files, checksums, "
              f"block ownership and bin codes are as the manifest says")
    return 0


def _train_params(args, spec):
    """``--param`` pairs and the dedicated options as parameters. ``--num-class`` is the
    request's ``num_class``; a parameter too for learners that declare one (boosting)."""
    params = {}
    for text in args.param or []:
        key, value = _parse_param(text)
        params[key] = value
    for name in ("objective", "learning_rate", "max_depth", "num_class", "eval_metric",
                 "seed", "n_threads", "algorithm"):
        value = getattr(args, name, None)
        if name == "num_class" and (spec.params is None or name not in spec.params):
            continue
        if value is not None:
            params[name] = _csv_list(value) if name == "eval_metric" else value
    return params


def cmd_train(args):
    from .kernels import warmup
    from .learners import registry

    profile = registry.get(args.learner).warmup_profile
    helpers = warmup.auto_start(profile) if profile else []
    if helpers and not args.quiet:
        print(f"first run: compiling the kernels on {len(helpers)} processes (once; "
              f"`oocboost warmup` does it ahead)", flush=True)
    warmup.wait(helpers)
    return _train(args)


def _train(args):
    from .learners import registry
    from .utils.files import check_output_path

    # --init-model may be -o: it is read whole before training, and replaced atomically.
    inputs = [args.cache, args.reference, *(args.valid or [])]
    check_output_path(args.output, inputs)
    check_output_path(args.checkpoint, inputs, option="--checkpoint")
    request = registry.TrainRequest(
        learner=args.learner, params=_train_params(args, registry.get(args.learner)),
        cache=args.cache,
        n_estimators=args.rounds, memory_limit=args.memory_limit, verbose=args.verbose,
        quiet=args.quiet, init_model=args.init_model, valid=tuple(args.valid or ()),
        early_stopping_rounds=args.early_stopping, checkpoint=args.checkpoint,
        checkpoint_interval=args.checkpoint_interval, label=args.label,
        reference=args.reference, num_class=args.num_class)
    model = registry.train(request)
    model.save_model(args.output)
    if not args.quiet:
        msg = f"saved {args.output}: {model.summary()}"
        if getattr(model, "best_iteration", None) is not None:
            msg += f", best iteration {model.best_iteration}"
        oob = (model.attributes or {}).get("oob_score")
        if oob is not None:
            msg += f", out-of-bag score {oob:.6f}"
        print(msg)
    return 0


def cmd_predict(args):
    from .model.model import load_model
    from .model.predict import predict_to_file
    from .utils.files import check_output_path

    check_output_path(args.output, [args.model, args.data])
    model = load_model(args.model)
    n = predict_to_file(model, args.data, args.output, output_margin=args.output_margin,
                        pred_leaf=args.pred_leaf, pred_contribs=args.pred_contribs,
                        iteration_range=_iteration_range(args.iteration_range),
                        read_options=_reading_options(args))
    if not args.quiet:
        print(f"wrote {n} predictions to {args.output}")
    return 0


def cmd_evaluate(args):
    from .model.model import load_model
    from .model.predict import default_iteration_range, evaluate

    model = load_model(args.model)
    given = _iteration_range(args.iteration_range)
    rounds = default_iteration_range(model, given)
    results = evaluate(model, args.data, metrics=_csv_list(args.metric),
                       iteration_range=rounds, label=args.label, group=args.group,
                       read_options=_reading_options(args))
    if args.json:
        print(json.dumps(results))
        return 0
    if given is None and rounds is not None:
        print(f"# rounds 0..{rounds[1] - 1} of {model.n_rounds}: the best iteration "
              f"{model.best_iteration} (--iteration-range 0:0 for every round)")
    elif given is not None:
        print(f"# rounds {given[0]}..{(given[1] or model.n_rounds) - 1} of {model.n_rounds}")
    for name, value in results.items():
        print(f"{name}\t{value:.6f}")
    return 0


def cmd_demo(args):
    from .demo import run_demo

    return run_demo(workdir=args.workdir, n_rows=args.rows, rounds=args.rounds,
                    memory_limit=args.memory_limit, quiet=args.quiet)


def cmd_warmup(args):
    from .kernels import warmup

    profiles = list(warmup.PROFILES) if args.learner == "all" else [args.learner]
    if not args.quiet:
        print(f"compiling the kernels of {', '.join(profiles)} on "
              f"{args.jobs or os.cpu_count()} processes", flush=True)
    seconds = warmup.warm_up(profiles, args.jobs)
    if not args.quiet:
        print(f"done in {seconds:.1f}s; numba's cache now holds them")
    return 0


def _matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ParameterError("plots need matplotlib: pip install 'oocboost[plot]'") from None
    matplotlib.use("Agg")  # files only: no window, whatever the environment offers


def _need_data(args, what):
    if not args.data:
        raise ParameterError(f"plot {what} reads rows: pass --cache CACHE (binned with the "
                             f"model's edges) or --data FILE")
    return args.data


def cmd_plot(args):
    from .model.model import load_model
    from .utils.files import check_output_path

    check_output_path(args.output, [args.model, args.data])
    _matplotlib()
    from . import plotting
    from .plotting.report import save_figure

    model = load_model(args.model)
    if args.kind == "importance":
        ax = plotting.plot_importance(model, importance_type=args.importance_type,
                                      max_num_features=args.max_features,
                                      data=args.data if args.importance_type == "shap"
                                      else None)
    elif args.kind == "metric":
        ax = plotting.plot_metric(model, args.metric)
    elif args.kind == "tree":
        ax = plotting.plot_tree(model, args.tree_index, max_depth=args.max_depth)
    elif args.kind == "pdp":
        if not args.feature or len(args.feature) > 2:
            raise ParameterError("plot pdp needs one or two --feature NAME")
        features = args.feature if len(args.feature) == 2 else args.feature[0]
        ax = plotting.plot_partial_dependence(model, _need_data(args, "pdp"), features,
                                              kind=args.pdp_kind)
    else:
        ax = plotting.plot_contributions(model, _need_data(args, "contributions"),
                                         max_rows=args.rows,
                                         max_display=args.max_features or 20)
    save_figure(ax, args.output)
    if not args.quiet:
        print(f"wrote {args.output}")
    return 0


def cmd_report(args):
    from .model.model import load_model
    from .utils.files import check_output_path

    check_output_path(args.output, [args.model, args.cache])
    _matplotlib()
    from .plotting.report import write_report

    write_report(load_model(args.model), args.cache, args.output,
                 top_features=args.top_features, max_rows=args.rows)
    if not args.quiet:
        print(f"wrote {args.output}")
    return 0


# ----------------------------------------------------------------------------- parser
class _HelpWithDefaults(argparse.HelpFormatter):
    """Adds ``(default: X)`` to an option's help unless the help already names its
    default or there is none to name (an unset value, a flag)."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS) \
                or not action.option_strings:
            return text
        return f"{text} (default: %(default)s)"


class _DefaultsParser(argparse.ArgumentParser):
    """A subcommand's parser whose ``--help`` shows every option's default."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _HelpWithDefaults)
        super().__init__(*args, **kwargs)


def build_parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="oocboost",
        description="Out-of-core tree ensembles: build a binned cache once, train from it "
                    "with a memory limit you set.")
    parser.add_argument("--version", action="version", version=f"oocboost {__version__}")
    sub = parser.add_subparsers(dest="command", required=True,
                                parser_class=_DefaultsParser)
    _add_demo(sub)
    _add_build_cache_and_info(sub)
    _add_train(sub)
    _add_predict_and_evaluate(sub)
    _add_plot_and_report(sub)
    w = sub.add_parser("warmup", help="compile the kernels of a learner ahead of its first "
                                      "run, on every core")
    from .learners import registry

    profiles = sorted({s.warmup_profile for s in registry.specs() if s.warmup_profile})
    w.add_argument("--learner", choices=[*profiles, "all"], default="all",
                   help="which runs to prepare (default: all): " + "; ".join(
                       f"{p}: --learner " + ", ".join(s.name for s in registry.specs()
                                                      if s.warmup_profile == p)
                       for p in profiles))
    w.add_argument("--jobs", type=int, default=None,
                   help="processes compiling at once (default: one per core)")
    w.add_argument("--quiet", action="store_true", help="no progress or messages")
    w.set_defaults(func=cmd_warmup)
    return parser


def _add_demo(sub):
    d = sub.add_parser("demo", help="generate a synthetic dataset, build its cache, train "
                                    "and evaluate")
    d.add_argument("--workdir", default="demo_data", help="folder for the data, caches, model")
    d.add_argument("--rows", type=int, default=200_000,
                   help="training rows of the synthetic data (a quarter more for validation)")
    d.add_argument("--rounds", type=int, default=50,
                   help="boosting rounds at most (early stopping after 10 without a "
                        "gain)")
    d.add_argument("--memory-limit", default=None,
                   help="peak memory of the builds and the training, e.g. 512MB")
    d.add_argument("--quiet", action="store_true", help="no progress or messages")
    d.set_defaults(func=cmd_demo)


def _add_reading_options(parser):
    """How a CSV/TSV file is read: the same options for every command that reads one."""
    parser.add_argument("--delimiter", default=None,
                        help="CSV field delimiter: one character, or 'tab' (default: a tab "
                             "for .tsv/.tab, else sniffed from the first lines: comma, "
                             "tab, semicolon, pipe or space)")
    parser.add_argument("--no-header", action="store_true",
                        help="the file has no header line: columns are f0, f1, ... (or "
                             "--names), and --label/--weight/--group/--drop/--categorical "
                             "may give 0-based column positions")
    parser.add_argument("--names", default=None,
                        help="comma-separated column names (with --no-header, or to "
                             "replace the header's)")


def _reading_options(args):
    """The CSV reading options of a command's ``args`` (None: the defaults)."""
    options = {"delimiter": args.delimiter, "header": not args.no_header,
               "names": _csv_list(args.names)}
    return None if options == {"delimiter": None, "header": True, "names": None} \
        else options


def _add_build_cache_and_info(sub):
    b = sub.add_parser("build-cache", help="bin a CSV/Parquet/Arrow file into a cache")
    b.add_argument("input", help="CSV (plain or .gz), Parquet or Arrow IPC/Feather file")
    b.add_argument("-o", "--output", required=True, help="cache folder to create")
    b.add_argument("--label", help="label column; comma-separated columns for several "
                                   "targets, or the lower,upper bounds of survival:aft")
    b.add_argument("--weight", help="sample-weight column")
    b.add_argument("--group", help="query group id column, for ranking (rank:*): the rows "
                                   "of a group must be contiguous")
    b.add_argument("--categorical", default="auto",
                   help="comma-separated categorical columns, 'auto' (string columns) or "
                        "'none'")
    b.add_argument("--drop", help="comma-separated columns to leave out")
    b.add_argument("--max-bin", type=int, default=256,
                   help="codes per feature including the missing code (default 256)")
    b.add_argument("--max-categories", type=int, default=None,
                   help="categories kept per column before folding into 'other' "
                        "(default and most 65535)")
    b.add_argument("--cat-encoding", choices=("native", "ordered_ts"), default="native",
                   help="categorical columns: native categories, or CatBoost's ordered "
                        "target statistic (needs --label)")
    b.add_argument("--ts-prior", type=float, default=None,
                   help="ordered_ts: the statistic's prior (default the label mean)")
    b.add_argument("--ts-prior-weight", type=float, default=1.0,
                   help="ordered_ts: weight of the prior, in rows (1)")
    b.add_argument("--ts-permutations", type=int, default=4,
                   help="ordered_ts: random orders averaged (4, CatBoost's)")
    b.add_argument("--ts-seed", type=int, default=0, help="ordered_ts: seed of the orders")
    b.add_argument("--no-bundle", dest="enable_bundle", action="store_false",
                   help="do not bundle sparse, mutually exclusive numeric features into "
                        "shared columns (LightGBM's enable_bundle=false)")
    b.add_argument("--max-conflict-rate", type=float, default=0.0,
                   help="share of rows in which bundled features may overlap (0)")
    b.add_argument("--block-rows", type=int, default=None, help="rows per block")
    b.add_argument("--format", choices=("arrow", "hdf5"), default="arrow",
                   help="store backend (default arrow)")
    b.add_argument("--compression", default=None,
                   help="arrow: lz4 (default), zstd, none; hdf5: lzf (default), gzip, none")
    b.add_argument("--memory-limit", default=None, help="peak memory, e.g. 512MB")
    _add_reading_options(b)
    b.add_argument("--na-values", default=None,
                   help="comma-separated strings read as missing (default: '', NA, N/A, "
                        "NaN, nan, null, NULL, None, ?)")
    b.add_argument("--encoding", default="utf-8", help="text encoding of the CSV")
    b.add_argument("--on-bad-rows", choices=("error", "skip"), default="error",
                   help="ragged rows and text in numeric columns: fail, or skip and count")
    b.add_argument("--reference", default=None,
                   help="training cache whose bin edges and categories to use")
    b.add_argument("--overwrite", action="store_true",
                   help="replace the cache at -o (only a cache is ever replaced)")
    b.add_argument("--append", action="store_true",
                   help="add the rows to the existing cache -o, binned with its edges")
    b.add_argument("--shards", action="store_true",
                   help="INPUT is a folder or glob of files: one shard per file, all with "
                        "the same edges, and -o/shards.json (for oocboost.dask.train)")
    b.add_argument("--scheduler", default=None,
                   help="with --shards: build on this Dask scheduler's workers "
                        "(tcp://host:port); the files must be readable by every worker")
    b.add_argument("--quiet", action="store_true", help="no progress or messages")
    b.add_argument("--verbose", action="store_true", help="print the memory plan")
    b.set_defaults(func=cmd_build_cache)

    i = sub.add_parser("info", help="describe a cache",
                       description="Rows, features, bins, missing share, blocks and sizes "
                                   "of a cache; --verify also reads every block.")
    i.add_argument("cache", help="cache folder")
    i.add_argument("--verify", action="store_true",
                   help="read every block whole and check it (checksum, ownership, bin "
                        "codes): do it before training on a cache from elsewhere")
    i.set_defaults(func=cmd_info)


def _add_train(sub):
    from .learners import registry

    t = sub.add_parser("train", help="train a model from a cache")
    t.add_argument("cache", help="the cache (streaming trees: also a CSV/Parquet/Arrow "
                                 "file, read once in batches)")
    t.add_argument("--label", default=None,
                   help="streaming trees on a file: the label column")
    t.add_argument("--reference", default=None,
                   help="streaming trees on a file: bin with this cache's edges (else the "
                        "first batch's)")
    t.add_argument("-o", "--output", required=True, help="model file (JSON)")
    t.add_argument("--learner", default="gbtree", choices=registry.names(),
                   metavar="LEARNER",
                   help="what to train (default gbtree): " + "; ".join(
                       f"{spec.name}: {spec.summary}" for spec in sorted(
                           registry.specs(), key=lambda spec: spec.name != "gbtree")))
    t.add_argument("--objective", default=None,
                   help="XGBoost objective name, e.g. binary:logistic (default: "
                        "reg:squarederror for gbtree; other learners infer the task)")
    t.add_argument("--algorithm", default=None,
                   help="adaboost: SAMME (default), SAMME.R, gentle, logitboost, arc-x4, M1, "
                        "MH, R2")
    t.add_argument("--rounds", type=int, default=100,
                   help="boosting rounds (trees for forests and online bagging; with "
                        "--init-model, rounds or trees added)")
    t.add_argument("--learning-rate", type=float, default=None,
                   help="eta (default: the learner's, 0.3 for gbtree)")
    t.add_argument("--max-depth", type=int, default=None,
                   help="tree depth (default: the learner's, 6 for gbtree)")
    t.add_argument("--num-class", type=int, default=None,
                   help="classes of multi:* objectives (default: from the labels)")
    t.add_argument("--eval-metric", default=None,
                   help="comma-separated metrics on --valid (default: the objective's)")
    t.add_argument("--seed", type=int, default=None, help="random seed (default: 0)")
    t.add_argument("--n-threads", type=int, default=None,
                   help="threads of the kernels (default: every core)")
    t.add_argument("--valid", action="append", help="validation cache (repeatable)")
    t.add_argument("--early-stopping", type=int, default=None, metavar="N",
                   help="stop when the last --valid's last metric has not improved for N "
                        "rounds")
    t.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="any booster parameter (repeatable)")
    t.add_argument("--init-model", default=None,
                   help="continue training from this model (boosting, forests)")
    t.add_argument("--checkpoint", default=None, help="save the model here every "
                                                      "--checkpoint-interval rounds")
    t.add_argument("--checkpoint-interval", type=int, default=10,
                   help="rounds between checkpoints")
    t.add_argument("--memory-limit", default=None,
                   help="peak memory of the process, e.g. 1GB (default: none)")
    t.add_argument("--quiet", action="store_true", help="no progress or messages")
    t.add_argument("--verbose", action="store_true",
                   help="print the memory plan and where time went")
    t.set_defaults(func=cmd_train)


def _add_predict_and_evaluate(sub):
    p = sub.add_parser("predict", help="predict a cache or a CSV/Parquet file")
    p.add_argument("model", help="model file (JSON)")
    p.add_argument("data", help="cache folder, or CSV/Parquet/Arrow file")
    p.add_argument("-o", "--output", required=True, help="CSV file of predictions")
    p.add_argument("--output-margin", action="store_true",
                   help="raw scores (margin_<k> columns), before the link function")
    p.add_argument("--pred-leaf", action="store_true",
                   help="the leaf each row reaches in each tree")
    p.add_argument("--pred-contribs", action="store_true",
                   help="SHAP values of the margin: contrib_<feature> columns and bias")
    p.add_argument("--iteration-range", default=None, metavar="START:END",
                   help="rounds to use, END 0 for the last (default: all)")
    _add_reading_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress or messages")
    p.set_defaults(func=cmd_predict)

    e = sub.add_parser("evaluate", help="metrics of a model on a labelled cache or file")
    e.add_argument("model", help="model file (JSON)")
    e.add_argument("data", help="labelled cache, or CSV/Parquet/Arrow file")
    e.add_argument("--metric", default=None, help="comma-separated (default: the "
                                                  "objective's)")
    e.add_argument("--iteration-range", default=None, metavar="START:END",
                   help="rounds to use, END 0 for the last (default: up to the best "
                        "iteration of an early-stopped model, else all)")
    e.add_argument("--label", default=None,
                   help="label column of a raw file (default: the training cache's)")
    e.add_argument("--group", default=None,
                   help="query group column of a raw file, for the ranking metrics "
                        "(default: the training cache's)")
    e.add_argument("--json", action="store_true", help="print the metrics as one JSON object")
    _add_reading_options(e)
    e.set_defaults(func=cmd_evaluate)


def _add_plot_and_report(sub):
    p = sub.add_parser("plot", help="draw a chart of a model into an image file")
    p.add_argument("kind", choices=("importance", "metric", "tree", "pdp", "contributions"),
                   help="the chart")
    p.add_argument("model", help="model file (JSON)")
    p.add_argument("--cache", "--data", dest="data", default=None,
                   help="rows for pdp, contributions and shap importance: a cache binned "
                        "with the model's edges, or a CSV/Parquet file")
    p.add_argument("-o", "--output", required=True, help="image file (.png, .svg, .pdf)")
    p.add_argument("--importance-type", default="weight",
                   choices=("weight", "gain", "cover", "total_gain", "total_cover", "shap"),
                   help="importance: what a feature's importance counts (XGBoost's names)")
    p.add_argument("--max-features", type=int, default=None,
                   help="importance / contributions: show this many features")
    p.add_argument("--metric", default=None, help="metric: which one (default: the first)")
    p.add_argument("--tree-index", type=int, default=0, help="tree: which tree")
    p.add_argument("--max-depth", type=int, default=None, help="tree: levels drawn")
    p.add_argument("--feature", action="append", help="pdp: a feature (one or two)")
    p.add_argument("--pdp-kind", default="average", choices=("average", "individual", "both"),
                   help="pdp: the average, ICE lines, or both")
    p.add_argument("--rows", type=int, default=5000, help="contributions: rows explained")
    p.add_argument("--quiet", action="store_true", help="no progress or messages")
    p.set_defaults(func=cmd_plot)

    r = sub.add_parser("report", help="a self-contained HTML report of a model on a "
                                      "validation cache")
    r.add_argument("model", help="model file (JSON)")
    r.add_argument("--cache", required=True, help="validation cache (built with --reference)")
    r.add_argument("-o", "--output", required=True, help="HTML file")
    r.add_argument("--top-features", type=int, default=4,
                   help="partial dependence of this many top features (default 4)")
    r.add_argument("--rows", type=int, default=2000, help="rows in the SHAP summary")
    r.add_argument("--quiet", action="store_true", help="no progress or messages")
    r.set_defaults(func=cmd_report)


def main(argv=None):
    """Entry point of the ``oocboost`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    import warnings

    from .utils import interrupt

    def show(message, category, filename, lineno, file=None, line=None):
        # one line a warning, as the errors: the library's source line means nothing here
        print(f"oocboost {args.command}: warning: {message}", file=sys.stderr)

    warnings.showwarning = show

    try:
        with interrupt.guard():
            return _run(args, interrupt)
    finally:
        # Arrow objects freed by the interpreter's final teardown can still own reader
        # threads, which then abort the process ("terminate called without an active
        # exception", exit -6; apache/arrow#34314): free them while Arrow is whole.
        import gc

        gc.collect()


#: Commands whose ``-o`` is a file: its folder is made first (``build-cache`` makes its
#: own), so a long run never fails at its last step for want of a folder.
_FILE_OUTPUTS = ("train", "predict", "plot", "report")


def _run(args, interrupt):
    try:
        if args.command in _FILE_OUTPUTS:
            folder = os.path.dirname(os.path.abspath(args.output))
            try:
                os.makedirs(folder, exist_ok=True)
            except OSError as exc:
                raise ParameterError(f"-o {args.output}: cannot make its folder {folder}: "
                                     f"{exc.strerror or exc}") from None
        status = args.func(args) or 0
        interrupt.check()  # a Ctrl-C that a numba compile swallowed after the last check
        return status
    except OocboostError as exc:
        if os.environ.get("OOCBOOST_DEBUG"):
            raise
        print(f"oocboost {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # The reader went away (``oocboost info CACHE | head``): end quietly, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        if args.command == "build-cache" and \
                f"cache {os.path.abspath(args.output)}" in interrupt.committed():
            print(f"oocboost {args.command}: interrupted after the cache {args.output} was "
                  f"written: it is complete", file=sys.stderr)
            return 0
        print(f"oocboost {args.command}: interrupted; nothing half-written was left in "
              f"place", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
