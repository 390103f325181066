"""The text of ``oocboost info``: what a cache holds, feature by feature."""
import os

import numpy as np

from ..utils.sizes import format_size
from .store import Cache


def describe_cache(path):
    """Text of ``oocboost info``: rows, features, bins, missing share, blocks, sizes.
    ``path``: a cache folder, or an open :class:`Cache` (its manifest is not read
    again)."""

    cache = path if isinstance(path, Cache) else Cache(path)
    m = cache.manifest
    lines = [f"cache {os.path.abspath(cache.path)}",
             f"  rows {cache.n_rows}, features {cache.n_features}, max_bin {cache.max_bin}, "
             f"codes {cache.codes_dtype}",
             f"  label {m.get('label')!r}, weight {m.get('weight')!r}"
             + ("" if not m.get("groups") else
                f", query groups {m['groups']['n_groups']} (column "
                f"{m['groups']['column']!r})")
             + ("" if cache.base_margin_columns is None else
                f", base margin {', '.join(cache.base_margin_columns)} (8 bytes a row "
                f"and output)"),
             f"  blocks {cache.n_blocks} x {cache.block_rows} rows, backend {cache.backend} "
             f"({m.get('compression')})",
             f"  size on disk {format_size(cache.nbytes_stored)}, uncompressed codes "
             f"{format_size(cache.nbytes_raw)} (ratio "
             f"{cache.nbytes_stored / max(cache.nbytes_raw, 1):.2f})"]
    src = m.get("source") or {}
    if src:
        text = ""
        if "delimiter" in src:   # a text file (caches built before this say nothing)
            text = f", delimiter {src['delimiter']!r}" + (
                "" if src.get("header", True) else ", no header line")
        lines.append(f"  source {src.get('name')}{text}, bad rows skipped "
                     f"{src.get('n_bad_rows', 0)}")
        bad_values = src.get("n_bad_values") or {}
        if bad_values:
            lines.append("  values that were not numbers, read as missing: " + ", ".join(
                f"{name} {count:,}" for name, count in bad_values.items()))
    if m.get("reference"):
        lines.append(f"  binned with the edges of {m['reference']}")
    for entry in m.get("appends") or []:
        lines.append(f"  appended {entry['n_rows']} rows from row {entry['row_start']}: "
                     f"{(entry.get('source') or {}).get('name')}")
    bundle_of = {}
    if cache.bundles is not None:
        entry = m["bundles"]
        lines.append(f"  {cache.n_features} features stored in {cache.n_columns} columns: "
                     f"{len(entry['bundles'])} bundle{'s' * (len(entry['bundles']) != 1)} "
                     f"of sparse features")
        for i, (members, conflicts) in enumerate(zip(entry["bundles"], entry["conflicts"])):
            names = [b["feature"] for b in members]
            bundle_of.update(dict.fromkeys(names, i))
            lines.append(f"    bundle {i}: {len(names)} features ({names[0]} .. "
                         f"{names[-1]}), {conflicts} rows in conflict")
    sparse_note = _sparse_columns(cache, lines)
    lines.append(f"  {'feature':<24} {'type':<12} {'bins':>5} {'missing':>8}  notes")
    for feat in m.get("features", []):
        n_missing = feat.get("n_missing")
        share = "" if n_missing is None else f"{100.0 * n_missing / max(cache.n_rows, 1):.1f}%"
        notes = []
        if feat.get("type") in ("categorical", "ordered_ts"):
            n_kept = feat.get("n_categories")
            notes.append(f"{n_kept} categories")
            if feat.get("has_other"):
                seen = feat.get("n_distinct_seen")
                notes.append("rare folded into 'other'" + (
                    "" if seen is None or n_kept is None
                    else f" ({seen - n_kept} of {seen} seen)"))
            if feat.get("type") == "ordered_ts":
                notes.append("ordered target statistic")
            elif cache.max_bin and feat.get("n_bins", 0) > cache.max_bin - 1:
                notes.append(f"two-byte codes, {-(-feat['n_bins'] // cache.max_bin)} "
                             f"histogram columns")
        else:
            notes += _numeric_notes(feat, m.get("reference"))
            if feat["name"] in bundle_of:
                notes.append(f"bundle {bundle_of[feat['name']]}")
            if feat["name"] in sparse_note:
                notes.append(sparse_note[feat["name"]])
        lines.append(f"  {feat['name']:<24} {feat['type']:<12} {feat.get('n_bins', ''):>5} "
                     f"{share:>8}  {', '.join(notes)}")
    return "\n".join(lines)


def _numeric_notes(feat, reference):
    """Notes of a numeric feature's summary: constant, infinite values, range, values
    outside the edges' range."""
    notes = []
    if feat.get("n_bins", 0) <= 1:
        notes.append("constant or all missing")
    if feat.get("n_inf"):
        notes.append(f"{feat['n_inf']} infinite")
    if "min" in feat:
        notes.append(f"range [{feat['min']}, {feat['max']}]")
    if feat.get("n_out_of_range"):
        where = "outside the reference's range" if reference else "appended outside it"
        notes.append(f"{feat['n_out_of_range']} values {where} (binned into the first or "
                     f"last bin)")
    return notes


def _sparse_columns(cache, lines):
    """Append the line of the sparse columns to ``lines``; returns the note of each
    feature whose stored column is sparse in some block (name -> text)."""
    sparse = cache.sparse_summary()
    if sparse is None:
        return {}
    entry_bytes = 4 + cache.codes_dtype.itemsize   # its row and its code
    columns = np.flatnonzero(sparse["blocks"])
    lines.append(
        f"  sparse columns (threshold {sparse['threshold']:g}): {len(columns)} of "
        f"{cache.n_columns} stored columns sparse in some block, "
        f"{sparse['column_blocks']:,} (column, block) pairs, {sparse['entries']:,} "
        f"entries ({format_size(sparse['entries'] * entry_bytes)} uncompressed, "
        f"{entry_bytes} bytes an entry)")
    column_of = (np.arange(cache.n_features) if cache.bundles is None
                 else cache.bundles.column_of_feature)
    notes = {}
    for f, name in enumerate(cache.feature_names or ()):
        c = int(column_of[f])
        if sparse["blocks"][c]:
            n = int(sparse["entries_per_column"][c])
            notes[name] = (f"sparse in {int(sparse['blocks'][c])}/{cache.n_blocks} blocks, "
                           f"{n:,} entries ({format_size(n * entry_bytes)})")
    return notes
