"""The ``oocboost`` command line's arguments: one subcommand parser per command, every
option's help showing its default (``cli.py`` runs the commands)."""
import argparse

from .errors import ParameterError


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


class _ListParams(argparse.Action):
    """``train --list-params LEARNER``: the learner's ParamSpec, then exit."""

    def __call__(self, parser, namespace, values, option_string=None):
        from .learners import registry

        try:
            spec = registry.get(values)
        except ParameterError as exc:
            parser.error(str(exc))
        print(spec.params.describe() if spec.params is not None
              else f"--learner {spec.name} declares no parameters")
        parser.exit()


def build_parser(command=None):
    """The CLI's parser. ``command``: the subcommand about to run, when known; the
    options that list the learners (``train --learner``, ``warmup --learner``) are then
    built in full only for it. Listing them imports every learner's registration (and
    numba): 0.45 of the 0.66 s the parser took, paid by every command."""
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
    _add_train(sub, full=command in (None, "train"))
    _add_predict_and_evaluate(sub)
    _add_plot_and_report(sub)
    _add_export(sub, full=command in (None, "export"))
    w = sub.add_parser("warmup", help="compile the kernels of a learner ahead of its first "
                                      "run, on every core")
    if command in (None, "warmup"):
        from .learners import registry

        profiles = sorted({s.warmup_profile for s in registry.specs() if s.warmup_profile})
        w.add_argument("--learner", choices=[*profiles, "all"], default="all",
                       help="which runs to prepare (default: all): " + "; ".join(
                           f"{p}: --learner " + ", ".join(s.name for s in registry.specs()
                                                          if s.warmup_profile == p)
                           for p in profiles))
    else:
        w.add_argument("--learner", default="all")
    w.add_argument("--jobs", type=int, default=None,
                   help="processes compiling at once (default: one per core)")
    w.add_argument("--cache-dir", metavar="DIR", default=None,
                   help="fill this folder instead of numba's default cache: processes "
                        "that set NUMBA_CACHE_DIR=DIR then load the kernels instead of "
                        "compiling them (a container image, a volume copied to Dask "
                        "workers; writable by them, same oocboost, numba and CPU kind)")
    w.add_argument("--quiet", action="store_true", help="no progress or messages")
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


def _add_base_margin(parser, what):
    parser.add_argument("--base-margin", "--init-score", dest="base_margin", default=None,
                        metavar="COLUMN[,COLUMN...]",
                        help="each row's offset (XGBoost's base_margin, LightGBM's "
                             "init_score), one column per model output: " + what)


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
    parser.add_argument("--input-format", choices=("auto", "csv", "svmlight"),
                        default="auto",
                        help="a text file's format: auto reads .svm/.libsvm/.svmlight files "
                             "and files of 'label [qid:Q] index:value ...' lines as "
                             "svmlight/LibSVM, other text as CSV")
    parser.add_argument("--zero-based", choices=("auto", "true", "false"), default="auto",
                        help="svmlight: feature indices start at 0 or 1 (auto: 0 when some "
                             "index is 0, as scikit-learn's load_svmlight_file)")
    parser.add_argument("--absent-as-missing", action="store_true",
                        help="svmlight: an absent entry is a missing value (XGBoost's "
                             "reading) instead of 0.0 (LibSVM's)")
    parser.add_argument("--na-values", default=None,
                        help="comma-separated strings read as missing (default: '', NA, "
                             "N/A, NaN, nan, null, NULL, None, ?)")
    parser.add_argument("--encoding", default="utf-8", help="text encoding of the CSV")


def _add_layout_options(parser):
    """How build-cache stores sparse numeric columns: bundled (EFB) and sparse."""
    parser.add_argument("--no-bundle", dest="enable_bundle", action="store_false",
                        help="do not bundle sparse, mutually exclusive numeric features into "
                             "shared columns (LightGBM's enable_bundle=false)")
    parser.add_argument("--max-conflict-rate", type=float, default=0.0,
                        help="share of rows in which bundled features may overlap (0)")
    parser.add_argument("--no-sparse", dest="enable_sparse", action="store_false",
                        help="store every column dense (LightGBM's is_enable_sparse=false); "
                             "by default a block keeps a numeric column that is mostly 0.0 "
                             "(missing with --absent-as-missing) by its other rows alone")
    parser.add_argument("--sparse-threshold", type=float, default=0.8,
                        help="share of a block's rows at 0.0 from which a column is stored "
                             "sparse (0.8, LightGBM's sparse_threshold)")


def _add_build_cache_and_info(sub):
    b = sub.add_parser("build-cache", help="bin a CSV/Parquet/Arrow file into a cache")
    b.add_argument("input", help="CSV (plain or .gz), Parquet or Arrow IPC/Feather file")
    b.add_argument("-o", "--output", required=True, help="cache folder to create")
    b.add_argument("--label", help="label column; comma-separated columns for several "
                                   "targets, or the lower,upper bounds of survival:aft")
    b.add_argument("--weight", help="sample-weight column")
    b.add_argument("--group", help="query group id column, for ranking (rank:*): the rows "
                                   "of a group must be contiguous")
    _add_base_margin(b, "boosting starts each row from it and predicting on the cache "
                        "adds it (default: FILE.init when it exists)")
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
    b.add_argument("--ts-per-class", action="store_true",
                   help="ordered_ts of a class label: one statistic per class (multiclass; "
                        "features NAME[y=K] follow the columns)")
    b.add_argument("--ts-combinations", type=int, choices=(1, 2), default=1,
                   help="ordered_ts: 2 also encodes every pair of categorical columns "
                        "(features A+B follow the columns)")
    _add_layout_options(b)
    b.add_argument("--block-rows", type=int, default=None, help="rows per block")
    b.add_argument("--format", choices=("arrow", "hdf5"), default="arrow",
                   help="store backend (default arrow)")
    b.add_argument("--compression", default=None,
                   help="arrow: lz4 (default), zstd, none; hdf5: lzf (default), gzip, none")
    b.add_argument("--memory-limit", default=None, help="peak memory, e.g. 512MB")
    _add_reading_options(b)
    b.add_argument("--on-bad-rows", choices=("error", "skip"), default="error",
                   help="ragged rows and text in numeric columns: fail, or skip and count")
    b.add_argument("--reference", default=None,
                   help="training cache whose bin edges and categories to use")
    b.add_argument("--split-points", default=None, metavar="MODEL",
                   help="a model (an XGBoost or LightGBM one too) whose split thresholds "
                        "the bin edges must include, so it predicts from and continues "
                        "training on the cache exactly")
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

    i = sub.add_parser("info", help="describe a cache",
                       description="Rows, features, bins, missing share, blocks and sizes "
                                   "of a cache; --verify also reads every block.")
    i.add_argument("cache", help="cache folder")
    i.add_argument("--verify", action="store_true",
                   help="read every block whole and check it (checksum, ownership, bin "
                        "codes): do it before training on a cache from elsewhere")


def _add_train(sub, full=True):
    t = sub.add_parser("train", help="train a model from a cache")
    t.add_argument("cache", help="the cache (streaming trees: also a CSV/Parquet/Arrow "
                                 "file, read once in batches)")
    t.add_argument("--label", default=None,
                   help="streaming trees on a file: the label column")
    t.add_argument("--reference", default=None,
                   help="streaming trees on a file: bin with this cache's edges (else the "
                        "first batch's)")
    t.add_argument("-o", "--output", required=True, help="model file (JSON)")
    if full:
        from .learners import registry

        t.add_argument("--learner", default="gbtree", choices=registry.names(),
                       metavar="LEARNER",
                       help="what to train (default gbtree): " + "; ".join(
                           f"{spec.name}: {spec.summary}" for spec in sorted(
                               registry.specs(), key=lambda spec: spec.name != "gbtree")))
    else:
        t.add_argument("--learner", default="gbtree", metavar="LEARNER")
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
                   help="any parameter of the learner (repeatable; --list-params lists them)")
    t.add_argument("--list-params", action=_ListParams, metavar="LEARNER",
                   help="print a learner's parameters (names, aliases, defaults, ranges) "
                        "and exit")
    t.add_argument("--init-model", default=None,
                   help="continue training from this model (boosting, forests)")
    t.add_argument("--checkpoint", default=None, help="save the model here every "
                                                      "--checkpoint-interval rounds")
    t.add_argument("--checkpoint-interval", type=int, default=10,
                   help="rounds between checkpoints")
    t.add_argument("--memory-limit", default=None,
                   help="peak memory of the process, e.g. 1GB (default: what the plan "
                        "needs while it fits the RSS plus 80%% of the memory available, "
                        "the machine's or its cgroup's; else planned within that)")
    t.add_argument("--quiet", action="store_true", help="no progress or messages")
    t.add_argument("--verbose", action="store_true",
                   help="print the memory plan and where time went")


def _add_predict_and_evaluate(sub):
    p = sub.add_parser("predict", help="predict a cache or a CSV/Parquet file")
    p.add_argument("model", help="model file (JSON)")
    p.add_argument("data", help="cache folder, or CSV/Parquet/Arrow file")
    p.add_argument("-o", "--output", required=True, help="CSV file of predictions")
    p.add_argument("--output-margin", action="store_true",
                   help="raw scores (margin_<k> columns), before the link function")
    p.add_argument("--pred-leaf", action="store_true",
                   help="the leaf each row reaches in each tree")
    p.add_argument("--quantiles", default=None, metavar="Q[,Q...]",
                   help="a quantile regression forest's conditional quantiles of the label "
                        "(quantile_<q> columns): a forest trained with "
                        "quantile_samples_leaf")
    p.add_argument("--pred-contribs", action="store_true",
                   help="SHAP values of the margin: contrib_<feature> columns and bias")
    p.add_argument("--iteration-range", default=None, metavar="START:END",
                   help="rounds to use, END 0 for the last (default: all)")
    _add_base_margin(p, "added in place of the model's constant base margin (default: the "
                        "columns the model was trained with, when the file has them; a "
                        "cache's own)")
    _add_reading_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress or messages")

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
    _add_base_margin(e, "as for predict")
    _add_reading_options(e)


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

    r = sub.add_parser("report", help="a self-contained HTML report of a model on a "
                                      "validation cache")
    r.add_argument("model", help="model file (JSON)")
    r.add_argument("--cache", required=True, help="validation cache (built with --reference)")
    r.add_argument("-o", "--output", required=True, help="HTML file")
    r.add_argument("--top-features", type=int, default=4,
                   help="partial dependence of this many top features (default 4)")
    r.add_argument("--rows", type=int, default=2000, help="rows in the SHAP summary")
    r.add_argument("--quiet", action="store_true", help="no progress or messages")




def _add_export(sub, full=True):
    if not full:  # another command runs: no need to import the adapters for the help
        sub.add_parser("export", help="write a model in a format other tools serve")
        return
    from .model.formats import FORMATS

    x = sub.add_parser("export", help="write a model in a format other tools serve: "
                                      + ", ".join(FORMATS))
    x.add_argument("model", help="model file (JSON)")
    x.add_argument("-o", "--output", required=True,
                   help="the exported file (its extension names the format: "
                        + ", ".join(f"{e} {n}" for n, (es, _) in FORMATS.items()
                                    for e in es) + ")")
    x.add_argument("--format", default=None, choices=tuple(FORMATS),
                   help="the format, when the extension does not say it")
    x.add_argument("--quiet", action="store_true", help="no messages")
