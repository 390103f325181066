"""Growing a cache with new rows: ``build-cache new.csv -o train.oocb --append``.

The new rows are binned with the cache's own edges and categories (a category the cache
has not seen takes the unseen code, as in any build with a reference), into blocks of
the cache's ``block_rows`` written beside it (the old last block, when short, is
rewritten with the first new rows: every block but the last stays full); the new block
files are moved into the cache under names its manifest does not use yet, and the
manifest, extended with them, replaces the old one in one ``os.replace``. Until that rename the
old manifest,
which lists only the old blocks, is the cache: an append killed at any moment leaves
the previous cache valid and usable (at worst with unlisted block files, which the
next append overwrites).

Numeric values outside the range the cache's edges were sketched on fall in the first
or last bin; they are counted per feature (``n_out_of_range``) and ``info`` reports
them, a sign that the edges no longer describe the data and a rebuild would bin it
better.

Supported: Arrow caches without bundled features, query groups or base margins (an HDF5
cache keeps its blocks in one file, a bundled one would need the new rows' bundles
checked).
"""
import hashlib
import json
import os
import secrets
import shutil

import numpy as np

from ..errors import CacheError, ParameterError
from ..utils.files import check_output_path
from ..utils.log import get_logger, say
from .label_stats import LabelStats

logger = get_logger(__name__)


def _check_appendable(cache):
    if cache.backend != "arrow":
        raise ParameterError(f"cache {cache.path}: --append takes Arrow caches (this one is "
                             f"{cache.backend}); rebuild it with --format arrow")
    if cache.bundles is not None:
        raise ParameterError(f"cache {cache.path} bundles sparse features; --append takes "
                             f"unbundled caches (rebuild it with --no-bundle)")
    if cache.has_group:
        raise ParameterError(f"cache {cache.path} has query groups; --append does not "
                             f"extend them (rebuild the cache with every group)")
    if cache.base_margin_columns is not None:
        raise ParameterError(f"cache {cache.path} has base margins; --append does not "
                             f"extend them (rebuild the cache with every row)")


def _merged_stats(a, b):
    if a is None or b is None:
        return a if b is None else b
    if isinstance(a, list):
        return [_merged_stats(x, y) for x, y in zip(a, b)]
    merged = LabelStats.from_dict(a)
    merged.merge(LabelStats.from_dict(b))
    return merged.to_dict()


def _merged_features(old, new):
    """Old feature summaries with the new rows' counts added (and ranges widened)."""
    out = []
    for a, b in zip(old, new):
        entry = dict(a)
        for key in ("n_missing", "n_inf", "n_out_of_range"):
            if a.get(key) is not None or b.get(key) is not None:
                entry[key] = int(a.get(key) or 0) + int(b.get(key) or 0)
        out.append(entry)
    return out


STORE_FIELDS = ("backend", "compression", "n_features", "codes_dtype", "has_label",
                "has_weight", "label_columns", "n_columns", "codes_layout", "max_bin")


def append_to_cache(data, cache_path, *, label=None, weight=None, quiet=False, **options):
    """Append the rows of ``data`` to the cache at ``cache_path`` (module docstring).

    Parameters
    ----------
    data : file path, table or array
        The new rows, with the cache's feature columns (and its label and weight
        columns, by the same names unless ``label`` / ``weight`` say otherwise).
    cache_path : str
    label, weight : str or None
        Columns of the new data; default the cache's.
    quiet : bool
    **options
        Passed to :func:`~oocboost.cache.build.build_cache` (``drop``, ``delimiter``,
        ``na_values``, ``encoding``, ``on_bad_rows``, ``memory_limit``, ...).

    Returns
    -------
    Cache
        The grown cache.
    """
    from .build import build_cache
    from .store import Cache
    from .store.manifest import write_manifest

    check_output_path(cache_path, [data])
    cache = Cache(cache_path)
    _check_appendable(cache)
    m = cache.manifest
    for key in ("max_bin", "block_rows", "backend", "compression", "reference",
                "overwrite", "cat_encoding", "enable_sparse", "sparse_threshold"):
        if key in options:
            raise ParameterError(f"--append keeps the cache's {key}; do not give it")
    tmp = os.path.join(cache.path, f".append-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        build_cache(data, tmp, label=label if label is not None else m.get("label"),
                    weight=weight if weight is not None else m.get("weight"),
                    reference=cache, block_rows=cache.block_rows,
                    compression=m.get("compression"), quiet=True, **options)
        new = Cache(tmp)
        different = [k for k in STORE_FIELDS if new.manifest.get(k) != m.get(k)]
        if different:
            raise CacheError(f"{getattr(data, 'name', data)}: its rows would be stored "
                             f"differently from cache {cache.path}'s ({different}); check "
                             f"its label and weight columns")
        first, blocks, replaced, sparse = _reblock(cache, new, os.path.join(tmp, "staging"))
        grown = dict(m)
        if sparse is not None:
            grown["sparse"] = sparse
        grown.update(
            n_rows=cache.n_rows + new.n_rows, blocks=m["blocks"][:first] + blocks,
            features=_merged_features(m.get("features") or [], new.manifest["features"]),
            label_stats=_merged_stats(m.get("label_stats"), new.manifest.get("label_stats")),
            weight_stats=_merged_stats(m.get("weight_stats"),
                                       new.manifest.get("weight_stats")),
            appends=list(m.get("appends") or []) + [{
                "source": new.manifest["source"], "n_rows": new.n_rows,
                "row_start": cache.n_rows, "previous_fingerprint": m["fingerprint"]}])
        grown["fingerprint"] = {"sha256": hashlib.sha256(json.dumps(
            [m["fingerprint"], new.manifest["fingerprint"]], sort_keys=True).encode()
        ).hexdigest()}
        write_manifest(cache.path, grown)
        if replaced is not None:
            os.remove(replaced)       # the old short last block, now unlisted
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    grown_cache = Cache(cache.path)
    if not quiet:
        out_of_range = sum(f.get("n_out_of_range") or 0
                           for f in new.manifest["features"])
        say(logger, f"appended {new.n_rows} rows to {cache.path} ({grown_cache.n_rows} rows, "
                    f"{grown_cache.n_blocks} blocks; {out_of_range} values outside the edges' "
                    f"range)")
    return grown_cache


def _rows(cache, first_index):
    """``(codes, label, weight)`` of the blocks from ``first_index`` on, in order."""
    for i in range(first_index, cache.n_blocks):
        b = cache.read_block(i)
        yield np.asarray(b.codes), b.label, b.weight


def _reblock(cache, new, staging):
    """Blocks of ``cache.block_rows`` rows holding the old last block's rows when it is
    short, then the new rows; written to ``staging``, then moved into the cache under
    names its manifest does not list. A cache with sparse columns stores the new blocks
    by its own implied codes and threshold. Returns ``(first block index, entries, old
    file to remove once the manifest lists the new blocks or None, the manifest's
    updated ``sparse`` field or None)``."""
    from ..kernels.codes import SparseCodes
    from .store.arrow_backend import ArrowBlockWriter
    from .store.manifest import encode_counts

    block_rows = cache.block_rows
    last = cache.manifest["blocks"][-1]
    short = last["n_rows"] < block_rows
    first = cache.n_blocks - 1 if short else cache.n_blocks
    writer = ArrowBlockWriter(staging, cache.compression, cache.n_columns, cache.codes_dtype,
                              cache.has_label, cache.has_weight, cache.n_label_columns,
                              cache_id=cache.manifest.get("cache_id"))
    sources = [_rows(cache, first)] if short else []
    sources.append(_rows(new, 0))
    pending, entries, index = [], [], first
    row_start = first * block_rows
    sparse = cache.sparse_summary()
    if sparse is not None:
        counts = {"blocks": sparse["blocks"].copy(),
                  "entries": sparse["entries_per_column"].copy()}
        if short:   # its rows are rewritten: its sparse columns are counted anew
            old = cache.read_block(first).stored_codes
            counts["blocks"][old.columns] -= 1
            counts["entries"][old.columns] -= np.diff(old.ptr)

    def emit(parts, n):
        nonlocal index, row_start
        codes, label, weight = joined(parts)
        if sparse is not None:
            codes = SparseCodes.from_array(codes, cache.sparse_implied, sparse["threshold"])
        entry = writer.write_block(index, row_start, codes, label, weight)
        if sparse is not None:
            columns = codes.columns if isinstance(codes, SparseCodes) else []
            entry.update(n_sparse=len(columns),
                         nnz=codes.nnz if isinstance(codes, SparseCodes) else 0)
            if len(columns):
                counts["blocks"][columns] += 1
                counts["entries"][columns] += np.diff(codes.ptr)
        name = f"blocks/block-{index:06d}-{secrets.token_hex(4)}.arrow"
        os.replace(os.path.join(staging, entry["file"]), os.path.join(cache.path, name))
        entries.append({**entry, "file": name})
        index += 1
        row_start += n

    def joined(parts):
        return tuple(None if parts[0][j] is None
                     else np.concatenate([p[j] for p in parts], axis=1 if j == 0 else 0)
                     for j in range(3))

    for rows in sources:
        for part in rows:
            pending.append(part)
            n = sum(p[0].shape[1] for p in pending)
            if n < block_rows:
                continue
            codes, label, weight = joined(pending)
            pending = []
            lo = 0
            while n - lo >= block_rows:
                hi = lo + block_rows
                emit([(codes[:, lo:hi], None if label is None else label[lo:hi],
                       None if weight is None else weight[lo:hi])], block_rows)
                lo = hi
            if lo < n:
                pending = [(codes[:, lo:], None if label is None else label[lo:],
                            None if weight is None else weight[lo:])]
    n = sum(p[0].shape[1] for p in pending)
    if n:
        emit(pending, n)
    field = None if sparse is None else {
        **cache.manifest["sparse"], "blocks": encode_counts(counts["blocks"]),
        "entries": encode_counts(counts["entries"])}
    return (first, entries, (os.path.join(cache.path, last["file"]) if short else None),
            field)
