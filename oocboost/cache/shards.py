"""Sharded caches: one cache per part of the data, every part binned with the same edges.

A distributed build (``oocboost.dask.build_cache``) runs here in three steps, each on
plain data (no Dask in this layer):

1. :func:`sketch_part` on each part (where it lives): pass 1 of a build, the quantile
   sketches and category counts of the part's columns, returned to be merged;
2. :func:`merge_sketches` pairwise (a tree), then :func:`edges_from_sketches`: the bin
   mapper of the whole data. The sketches are mergeable: a merged sketch's rank error
   is at most the sum of its parts' (``QuantileSketch.merge``), which the shard set's
   manifest records per feature;
3. :func:`build_shard` on each part: pass 2 with those edges (``build_cache`` with an
   :class:`EdgesReference`), so every shard's codes mean the same values.

:class:`ShardSet` is the manifest of the shards (``shards.json``): paths, rows, the
worker that wrote each, fingerprints, the merged label statistics and the edges.

Example::

    parts = [df.iloc[:500], df.iloc[500:]]
    sketches = [sketch_part(p, label="y") for p in parts]
    edges = edges_from_sketches(functools.reduce(merge_sketches, sketches))
    shards = [build_shard(p, f"set/shard-{i}.oocb", edges, label="y")
              for i, p in enumerate(parts)]
    ShardSet.create("set", shards, edges)
"""
import json
import os

from ..errors import CacheError, ParameterError
from ..utils.files import write_text_atomic
from ..utils.jsonio import read_json
from .binning import BinMapper
from .build import _open_planned, build_cache
from .first_pass import FirstPass
from .label_stats import LabelStats
from .store.reader import Cache
from .summary import label_stats_dict
from .target_stats import fit_with_target_stats

SHARDS_FILE = "shards.json"
SHARDS_FORMAT = "oocboost-shards"
SHARDS_VERSION = 1
DEFAULT_MAX_BIN = 256


def _source_options(label, weight, categorical, drop):
    return dict(label=label, weight=weight, group=None, drop=drop, categorical=categorical,
                delimiter=",", na_values=None, encoding="utf-8", on_bad_rows="error")


def sketch_part(data, *, label=None, weight=None, categorical="auto", drop=(),
                max_bin=DEFAULT_MAX_BIN, max_categories=None, memory_limit=None):
    """Pass 1 over one part (anything ``build_cache`` reads): a mergeable summary with
    ``names``, ``kinds`` and the pass-1 state (sketches, category counts, missing
    counts, rows). Sketch sizes follow ``memory_limit`` as in a build."""
    source, plan = _open_planned(data, memory_limit, max_bin, None, None,
                                 _source_options(label, weight, categorical, drop),
                                 max_categories=max_categories)
    pass1 = FirstPass(source, max_bin, max_categories,
                   sketch_bytes=plan.sketch_bytes_per_column)
    for batch in source.batches():
        pass1.update(batch)
    return {"names": list(source.feature_names), "kinds": list(source.feature_kinds),
            "max_bin": int(max_bin), "max_categories": max_categories, "pass1": pass1}


def merge_sketches(a, b):
    """The summary of two parts' data (``a`` is updated and returned)."""
    if a["names"] != b["names"] or a["kinds"] != b["kinds"]:
        raise CacheError(f"parts with other columns or types cannot share bin edges: "
                         f"{list(zip(a['names'], a['kinds']))} vs "
                         f"{list(zip(b['names'], b['kinds']))}")
    pa, pb = a["pass1"], b["pass1"]
    for name, sketch in pa.numeric.items():
        sketch.merge(pb.numeric[name])
    for name, counter in pa.categorical.items():
        counter.merge(pb.categorical[name])
    for counts in ("n_missing", "n_inf"):
        for name, n in getattr(pb, counts).items():
            getattr(pa, counts)[name] += n
    pa.label_stats = _merge_label_stats(pa.label_stats, pb.label_stats)
    pa.weight_stats.merge(pb.weight_stats)
    pa.n_rows += pb.n_rows
    return a


def _merge_label_stats(a, b):
    if isinstance(a, list):
        for x, y in zip(a, b):
            x.merge(y)
        return a
    a.merge(b)
    return a


class EdgesReference:
    """Bin edges to build a cache with (``build_cache(..., reference=...)``) that no
    cache holds yet: the merged edges of a sharded build.

    Parameters
    ----------
    bin_mapper : BinMapper
    features : list of dict
        Per feature ``name``, ``type`` and, numeric, the sketched ``min`` / ``max``
        (values outside are counted as out of range, as against a reference cache).
    path : str
        Where the edges come from (the shard set's folder), for messages and manifests.
    """

    def __init__(self, bin_mapper, features, path):
        self.bin_mapper = bin_mapper
        self.feature_names = [f["name"] for f in features]
        self.manifest = {"features": features}
        self.max_bin = int(bin_mapper.max_bin)
        self.path = os.path.abspath(os.fspath(path))


def edges_from_sketches(summary, path="."):
    """The :class:`EdgesReference` of a merged summary (:func:`merge_sketches`)."""
    pass1 = summary["pass1"]
    mapper = fit_with_target_stats(BinMapper, summary["names"], summary["kinds"], pass1,
                                   max_bin=summary["max_bin"],
                                   max_categories=summary["max_categories"])
    features = []
    for name, kind in zip(summary["names"], summary["kinds"]):
        entry = {"name": name, "type": kind}
        sketch = pass1.numeric.get(name)
        if sketch is not None and sketch.total_weight > 0:
            entry.update(min=float(sketch.min), max=float(sketch.max),
                         rank_error_bound=float(sketch.rank_error_bound))
        features.append(entry)
    return EdgesReference(mapper, features, path)


def build_shard(data, output, edges, *, label=None, weight=None, categorical="auto",
                drop=(), memory_limit=None, block_rows=None, quiet=True):
    """Pass 2 of one part: a cache at ``output`` binned with ``edges``
    (:class:`EdgesReference`), written to a temporary folder and renamed."""
    return build_cache(data, output, label=label, weight=weight, categorical=categorical,
                       drop=drop, reference=edges, memory_limit=memory_limit,
                       block_rows=block_rows, overwrite=True, quiet=quiet)


#: File kinds a folder of shards is read from.
SOURCE_SUFFIXES = (".csv", ".csv.gz", ".parquet", ".pq", ".arrow", ".feather", ".ipc")


def source_files(spec):
    """The files of ``spec``: a folder (its CSV/Parquet/Arrow files), a glob pattern, or
    a list of paths; sorted, so a shard set's order does not depend on the listing."""
    import glob

    if isinstance(spec, (list, tuple)):
        files = [os.fspath(f) for f in spec]
    elif os.path.isdir(spec):
        files = [os.path.join(spec, n) for n in os.listdir(spec)
                 if n.lower().endswith(SOURCE_SUFFIXES)]
    else:
        files = glob.glob(os.fspath(spec))
    files = sorted(files)
    if not files:
        raise ParameterError(f"{spec}: no CSV, Parquet or Arrow files to shard (a folder "
                             f"of them, a glob pattern, or a list)")
    missing = [f for f in files if not os.path.isfile(f)]
    if missing:
        raise ParameterError(f"not files: {missing}")
    return files


def build_shards(files, folder, *, label=None, weight=None, categorical="auto", drop=(),
                 max_bin=DEFAULT_MAX_BIN, max_categories=None, memory_limit=None,
                 quiet=True):
    """One shard per file of ``files`` (:func:`source_files`) at ``folder/shard-K.oocb``,
    all binned with the files' merged sketches, and ``folder/shards.json``: the sharded
    build on this machine (``oocboost.dask.build_cache`` runs the same steps on workers).

    Example::

        shards = build_shards("data/*.parquet", "train-shards", label="y")
    """
    files = source_files(files)
    options = dict(label=label, weight=weight, categorical=categorical, drop=drop)
    summary = None
    for f in files:
        part = sketch_part(f, max_bin=max_bin, max_categories=max_categories,
                           memory_limit=memory_limit, **options)
        summary = part if summary is None else merge_sketches(summary, part)
    edges = edges_from_sketches(summary, folder)
    caches = [build_shard(f, os.path.join(folder, f"shard-{k}.oocb"), edges,
                          memory_limit=memory_limit, quiet=quiet, **options)
              for k, f in enumerate(files)]
    return ShardSet.create(folder, caches, edges, partitions=[[k] for k in range(len(files))])


class ShardSet:
    """The shards of a sharded cache and what they share (``folder/shards.json``).

    Attributes
    ----------
    folder : str
    shards : list of dict
        ``path`` (absolute), ``n_rows``, ``worker`` (the address that wrote it, or
        None), ``partitions`` (the source partitions in it, in order, or None),
        ``fingerprint``. The set's rows are the shards' in this order.
    n_rows : int
        Rows of all shards.
    label_stats : dict or list or None
        The shards' label statistics merged (a manifest's ``label_stats`` entry).
    bin_mapper : BinMapper
    features : list of dict
    """

    def __init__(self, folder, shards, n_rows, label_stats, bin_mapper, features):
        self.folder = os.path.abspath(os.fspath(folder))
        self.shards = shards
        self.n_rows = n_rows
        self.label_stats = label_stats
        self.bin_mapper = bin_mapper
        self.features = features

    @property
    def paths(self):
        return [s["path"] for s in self.shards]

    @property
    def path(self):
        """The set's folder (as a cache's ``path``, for messages)."""
        return self.folder

    @property
    def manifest(self):
        """What a cache's manifest says of all the rows: ``n_rows`` and the merged
        ``label_stats`` (read by ``cache_classes`` and task inference)."""
        return {"n_rows": self.n_rows, "label_stats": self.label_stats}

    @property
    def edges(self):
        """The set's edges as a ``reference=`` for ``build_cache`` (evaluation data)."""
        return EdgesReference(self.bin_mapper, self.features, self.folder)

    @classmethod
    def create(cls, folder, shard_caches, edges, workers=None, partitions=None):
        """Write ``folder/shards.json`` for the built ``shard_caches`` (Cache objects or
        paths) and return the set; ``workers``: the address that wrote each,
        ``partitions``: the source partitions in each, in order. Refuses shards binned
        with other edges."""
        caches = [c if isinstance(c, Cache) else Cache(c) for c in shard_caches]
        if not caches:
            raise ParameterError("a shard set needs at least one shard")
        for c in caches:
            if c.bin_mapper != edges.bin_mapper:
                raise CacheError(f"shard {c.path} was binned with other edges than the "
                                 f"shard set {folder}")
        workers = list(workers) if workers is not None else [None] * len(caches)
        partitions = list(partitions) if partitions is not None else [None] * len(caches)
        shards = [{"path": c.path, "n_rows": int(c.n_rows), "worker": w,
                   "partitions": None if parts is None else [int(i) for i in parts],
                   "fingerprint": c.manifest.get("fingerprint", {}).get("sha256")}
                  for c, w, parts in zip(caches, workers, partitions)]
        label_stats = _merged_label_stats(caches)
        out = cls(folder, shards, sum(s["n_rows"] for s in shards), label_stats,
                  edges.bin_mapper, edges.manifest["features"])
        out.save()
        return out

    def save(self):
        os.makedirs(self.folder, exist_ok=True)
        doc = {"format": SHARDS_FORMAT, "version": SHARDS_VERSION, "n_rows": self.n_rows,
               "shards": self.shards, "label_stats": self.label_stats,
               "features": self.features, "bin_mapper": self.bin_mapper.to_dict()}
        write_text_atomic(os.path.join(self.folder, SHARDS_FILE), json.dumps(doc, indent=1))

    @classmethod
    def load(cls, folder):
        """Read ``folder/shards.json``; every field is checked, and every shard must
        exist with its recorded rows and fingerprint."""
        path = os.path.join(os.fspath(folder), SHARDS_FILE)
        doc = read_json(path, max_bytes=1 << 30, error=CacheError, what="shard set")
        _check_doc(doc, path)
        for s in doc["shards"]:
            c = Cache(s["path"])
            fp = c.manifest.get("fingerprint", {}).get("sha256")
            if c.n_rows != s["n_rows"] or fp != s["fingerprint"]:
                raise CacheError(f"{path}: shard {s['path']} changed since the set was "
                                 f"written ({c.n_rows} rows, fingerprint {fp}; the set "
                                 f"says {s['n_rows']}, {s['fingerprint']})")
        return cls(folder, doc["shards"], doc["n_rows"], doc["label_stats"],
                   BinMapper.from_dict(doc["bin_mapper"]), doc["features"])


def _check_doc(doc, path):
    expected = {"format", "version", "n_rows", "shards", "label_stats", "features",
                "bin_mapper"}
    if not isinstance(doc, dict) or set(doc) != expected:
        raise CacheError(f"{path}: expected the fields {sorted(expected)}, got "
                         f"{sorted(doc) if isinstance(doc, dict) else type(doc).__name__}")
    if doc["format"] != SHARDS_FORMAT or doc["version"] != SHARDS_VERSION:
        raise CacheError(f"{path}: format {doc['format']!r} version {doc['version']!r}, "
                         f"expected {SHARDS_FORMAT!r} {SHARDS_VERSION}")
    shards = doc["shards"]
    if not isinstance(shards, list) or not shards:
        raise CacheError(f"{path}: 'shards' must be a non-empty list")
    for s in shards:
        if not isinstance(s, dict) or set(s) != {"path", "n_rows", "worker", "partitions",
                                                 "fingerprint"}:
            raise CacheError(f"{path}: each shard needs path, n_rows, worker, partitions, "
                             f"fingerprint; got {s!r}")
        parts = s["partitions"]
        if parts is not None and not (isinstance(parts, list)
                                      and all(isinstance(i, int) for i in parts)):
            raise CacheError(f"{path}: shard {s['path']!r} has partitions={parts!r}")
        if not isinstance(s["n_rows"], int) or s["n_rows"] <= 0:
            raise CacheError(f"{path}: shard {s['path']!r} has n_rows={s['n_rows']!r}")
    if doc["n_rows"] != sum(s["n_rows"] for s in shards):
        raise CacheError(f"{path}: n_rows={doc['n_rows']!r} is not the sum of the shards' "
                         f"rows")
    if not isinstance(doc["features"], list):
        raise CacheError(f"{path}: 'features' must be a list")


def _merged_label_stats(caches):
    """The shards' ``label_stats`` merged, in a manifest's format."""
    entries = [c.manifest.get("label_stats") for c in caches]
    if any(e is None for e in entries):
        return None
    if isinstance(entries[0], list):
        merged = [LabelStats.from_dict(s) for s in entries[0]]
        for e in entries[1:]:
            for m, s in zip(merged, e):
                m.merge(LabelStats.from_dict(s))
    else:
        merged = LabelStats.from_dict(entries[0])
        for e in entries[1:]:
            merged.merge(LabelStats.from_dict(e))
    return label_stats_dict(merged)
