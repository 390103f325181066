"""The ``oocboost`` command line.

Every error oocboost raises on purpose (``OocboostError``) ends the command with a
one-line message naming the file, row, column or parameter, and a non-zero exit code:
2 bad input or parameters, 3 cache problems, 4 model problems, 5 memory limit, 130 when
interrupted. No traceback is printed unless ``OOCBOOST_DEBUG=1``.
"""
import json
import os
import sys

from .cli_parser import build_parser
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


_DEFAULT_READING = {"delimiter": None, "header": True, "names": None, "input_format": "auto",
                    "zero_based": "auto", "absent_as_missing": False, "na_values": None,
                    "encoding": "utf-8"}


def _reading_options(args):
    """How a command's ``args`` say a text file is read (None: the defaults)."""
    options = {"delimiter": args.delimiter, "header": not args.no_header,
               "names": _csv_list(args.names), "input_format": args.input_format,
               "zero_based": {"true": True, "false": False}.get(args.zero_based, "auto"),
               "absent_as_missing": args.absent_as_missing,
               "na_values": (_csv_list(args.na_values) if args.na_values is not None
                             else None),
               "encoding": args.encoding}
    return None if options == _DEFAULT_READING else options


def _margin_columns(args):
    """``--base-margin A[,B...]``: one column, or a list of one per output."""
    if args.base_margin is None:
        return None
    columns = _csv_list(args.base_margin)
    return columns[0] if len(columns) == 1 else columns


def _with_margin_columns(args):
    """The reading options with ``--base-margin``'s columns (None: all defaults)."""
    columns = _margin_columns(args)
    options = _reading_options(args)
    if columns is None:
        return options
    return {**(options or {}), "base_margin": columns}


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
    label = args.label
    if label is not None and "," in label:  # several targets, or an interval's bounds
        label = _csv_list(label)
    cache = build_cache(args.input, args.output, label=label, weight=args.weight,
                group=args.group, base_margin=_margin_columns(args),
                categorical=categorical, drop=_csv_list(args.drop) or (),
                max_bin=args.max_bin, max_categories=args.max_categories,
                block_rows=args.block_rows, backend=args.format,
                compression=args.compression, memory_limit=args.memory_limit,
                on_bad_rows=args.on_bad_rows,
                reference=args.reference, **(_reading_options(args) or {}),
                overwrite=args.overwrite, quiet=args.quiet, verbose=args.verbose,
                cat_encoding=args.cat_encoding, ts_prior=args.ts_prior,
                ts_prior_weight=args.ts_prior_weight, ts_permutations=args.ts_permutations,
                ts_seed=args.ts_seed, ts_per_class=args.ts_per_class,
                ts_combinations=args.ts_combinations, enable_bundle=args.enable_bundle,
                max_conflict_rate=args.max_conflict_rate, enable_sparse=args.enable_sparse,
                sparse_threshold=args.sparse_threshold,
                split_points=None if args.split_points is None
                else _load_model(args.split_points))
    if not args.quiet:
        print(describe_cache(cache))
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
             "--cat-encoding": args.cat_encoding != "native",
             "--ts-per-class": args.ts_per_class,
             "--ts-combinations": args.ts_combinations != 1,
             "--no-sparse": not args.enable_sparse,
             "--sparse-threshold": args.sparse_threshold != 0.8}
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

        cache = Cache(args.cache)
        n_rows = cache.verify()
        extra = [what for what, present in (("query groups", cache.has_group),
                                            ("base margins",
                                             cache.base_margin_columns is not None))
                 if present]
        print(f"  verified: every block read whole ({n_rows} rows): files, checksums, "
              f"block ownership and bin codes{''.join(', ' + w for w in extra)} are as "
              f"the manifest says")
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
                        read_options=_with_margin_columns(args),
                        quantiles=_quantiles(args.quantiles),
                        progress=False if args.quiet else None)
    if not args.quiet:
        print(f"wrote {n} predictions to {args.output}")
    return 0


def _quantiles(text):
    """``--quantiles 0.05,0.5,0.95`` as floats (None when not given)."""
    if text is None:
        return None
    try:
        return [float(v) for v in _csv_list(text)]
    except ValueError:
        raise ParameterError(f"--quantiles must be numbers in [0, 1] separated by commas, "
                             f"got {text!r}") from None


def cmd_evaluate(args):
    from .model.model import load_model
    from .model.predict import default_iteration_range, evaluate

    model = load_model(args.model)
    given = _iteration_range(args.iteration_range)
    rounds = default_iteration_range(model, given)
    results = evaluate(model, args.data, metrics=_csv_list(args.metric),
                       iteration_range=rounds, label=args.label, group=args.group,
                       read_options=_with_margin_columns(args))
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
    if args.jobs is not None and args.jobs < 1:
        raise ParameterError(f"--jobs must be at least 1, got {args.jobs}")
    if args.cache_dir is not None:
        _check_cache_dir(args.cache_dir)
    if not args.quiet:
        print(f"compiling the kernels of {', '.join(profiles)} on "
              f"{args.jobs or os.cpu_count()} processes", flush=True)
    seconds = warmup.warm_up(profiles, args.jobs, cache_dir=args.cache_dir)
    if not args.quiet:
        if args.cache_dir is None:
            print(f"done in {seconds:.1f}s; numba's cache now holds them")
        else:
            print(f"done in {seconds:.1f}s; {args.cache_dir} holds them: set "
                  f"NUMBA_CACHE_DIR={os.path.abspath(args.cache_dir)} where they run")
    return 0


def _load_model(path):
    # imported when used: the model module brings the export adapters with it
    from .model.model import load_model

    return load_model(path)


def _check_cache_dir(folder):
    """A folder the warm-up can write (made here when missing), or a ParameterError."""
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise ParameterError(f"--cache-dir {folder} is a file; expected a folder")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"--cache-dir {folder}: cannot make the folder "
                             f"({exc.strerror})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ParameterError(f"--cache-dir {folder} is not writable here")


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


def cmd_export(args):
    from .model.formats import FORMATS
    from .model.model import load_model
    from .utils.files import check_output_path

    check_output_path(args.output, [args.model])
    fmt = load_model(args.model).export(args.output, format=args.format)
    if not args.quiet:
        print(f"wrote {args.output} ({FORMATS[fmt][1]})")
    return 0


def main(argv=None):
    """Entry point of the ``oocboost`` console script."""
    given = sys.argv[1:] if argv is None else list(argv)
    # the subcommand is the first word that is not an option (the top level has only
    # --help and --version): the parser then lists the learners only where it needs them
    command = next((str(a) for a in given if not str(a).startswith("-")), None)
    args = build_parser(command).parse_args(given)
    import warnings

    from .utils import interrupt

    def show(message, category, filename, lineno, file=None, line=None):
        # one line a warning, as the errors: the library's source line means nothing here
        print(f"oocboost {args.command}: warning: {message}", file=sys.stderr)

    warnings.showwarning = show
    import gc

    # The collection at the end is for the command's own objects: those that existed
    # before it (the imports' ~230,000) are set aside, or a full collection of them
    # would cost 0.1-0.2 s a command, more in a long-lived process calling main().
    thaw = gc.get_freeze_count() == 0
    if thaw:
        gc.freeze()
    try:
        with interrupt.guard():
            return _run(args, interrupt)
    finally:
        # Arrow objects freed by the interpreter's final teardown can still own reader
        # threads, which then abort the process ("terminate called without an active
        # exception", exit -6; apache/arrow#34314): free them while Arrow is whole.
        gc.collect()
        if thaw:
            gc.unfreeze()


_COMMANDS = {"build-cache": cmd_build_cache, "info": cmd_info, "train": cmd_train,
             "predict": cmd_predict, "evaluate": cmd_evaluate, "demo": cmd_demo,
             "warmup": cmd_warmup, "plot": cmd_plot, "report": cmd_report,
             "export": cmd_export}

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
        status = _COMMANDS[args.command](args) or 0
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
