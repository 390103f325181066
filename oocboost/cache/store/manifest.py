"""``manifest.json``: the cache's table of contents, written last and atomically.

A cache folder is valid only when its manifest parses, names our format and version, and
describes a consistent block index. Writing the manifest is the last step of a build, and
the whole folder is then renamed into place (see :mod:`oocboost.cache.store.writer`), so a
reader never sees a half-written cache.

Fields written by the store (callers add their own through ``CacheWriter.commit``)::

    format          "oocboost-cache"
    format_version  1
    backend         "arrow" | "hdf5"
    compression     "lz4" | "zstd" | "none" (arrow), "lzf" | "gzip" | "none" (hdf5)
    n_rows, n_features, block_rows
    codes_dtype     "uint8" | "uint16" (little-endian on disk)
    has_label, has_weight
    blocks          [{index, row_start, n_rows, nbytes, raw_nbytes, ...backend fields}]
    sparse          {"threshold": t, "implied", "blocks", "entries"}, only in
                    format_version 2 (sparse columns, arrow only): per stored column
                    its implied code (-1: never sparse), the blocks that store it
                    sparse and its entries in them, each the base64 of little-endian
                    int64 values; each block adds ``n_sparse`` and ``nnz`` (its sparse
                    columns and their entries)

Arrow blocks add ``file`` (relative path under ``blocks/``) and ``crc32`` (``zlib.crc32``
of the file bytes); HDF5 adds the top-level ``data_file`` and ``data_file_nbytes``.
"""
import base64
import binascii
import json
import os
import secrets

import numpy as np

from ...errors import CacheError
from ...utils.jsonio import read_json
from .margins import check_margin_entry

FORMAT = "oocboost-cache"
FORMAT_VERSION = 1
#: The version of caches with sparse columns (the ``sparse`` field); 1 is still read.
SPARSE_FORMAT_VERSION = 2
FORMAT_VERSIONS = (FORMAT_VERSION, SPARSE_FORMAT_VERSION)
MANIFEST_NAME = "manifest.json"
#: Largest manifest read (bin edges of every feature and the block index).
MAX_MANIFEST_BYTES = 1 << 30
BACKENDS = ("arrow", "hdf5")
CODES_DTYPES = ("uint8", "uint16")

#: Keys the store owns; ``commit(manifest_fields)`` may not override them.
RESERVED_KEYS = frozenset(
    {
        "format",
        "format_version",
        "backend",
        "compression",
        "n_rows",
        "n_features",
        "block_rows",
        "codes_dtype",
        "has_label",
        "has_weight",
        "blocks",
        "data_file",
        "data_file_nbytes",
        "groups",
        "base_margin",
        "label_columns",
        "n_columns",
        "codes_layout",
        "cache_id",
        "sparse",
    }
)
#: File of the query group boundaries (int64 ``.npy``), when the cache has groups.
GROUPS_FILE = "groups.npy"


def new_cache_id():
    """A random identity for a new cache, written into its manifest and every block."""
    return secrets.token_hex(16)


def _json_default(obj):
    # Callers hand in statistics computed with numpy; JSON only knows Python scalars.
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    raise TypeError(f"manifest field of type {type(obj).__name__} is not JSON-serialisable")


def dumps(manifest):
    """Serialise a manifest dict to JSON text (numpy scalars and arrays allowed): one
    top-level field a line, each value compact. (An ``indent`` makes ``json`` use its
    pure-Python encoder: 5.3 s for the 23 MB manifest of a 5,000-column cache, against
    0.3 s for its C encoder.)"""
    if not isinstance(manifest, dict):
        return json.dumps(manifest, default=_json_default)
    fields = [f"{json.dumps(str(key))}: {json.dumps(value, default=_json_default)}"
              for key, value in manifest.items()]
    return "{\n " + ",\n ".join(fields) + "\n}"


def write_manifest(folder, manifest):
    """Write ``folder/manifest.json`` atomically (temp file, fsync, ``os.replace``).

    Parameters
    ----------
    folder : str
        Cache folder (normally the writer's temporary folder).
    manifest : dict
        JSON-serialisable content.
    """
    text = dumps(manifest)
    final = os.path.join(folder, MANIFEST_NAME)
    tmp = os.path.join(folder, f".{MANIFEST_NAME}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)


def load_manifest_json(path):
    """The parsed ``path/manifest.json`` through the one guarded JSON reader
    (``utils/jsonio.py``: a regular file, bounded size and depth), else CacheError."""
    return read_json(os.path.join(path, MANIFEST_NAME), max_bytes=MAX_MANIFEST_BYTES,
                     error=CacheError, what=f"cache {path}: {MANIFEST_NAME}")


def looks_like_cache(path):
    """True when ``path`` is a folder whose manifest names our format (no deeper checks)."""
    try:
        m = load_manifest_json(path)
    except CacheError:
        return False
    return isinstance(m, dict) and m.get("format") == FORMAT


def read_manifest(path):
    """Read and validate ``path/manifest.json``.

    Parameters
    ----------
    path : str
        Cache folder.

    Returns
    -------
    manifest : dict

    Raises
    ------
    CacheError
        The folder or manifest is missing, is not JSON, names another format or a newer
        version, or its block index is inconsistent.
    """
    if not os.path.exists(path):
        raise CacheError(f"cache {path} does not exist")
    if not os.path.isdir(path):
        raise CacheError(
            f"cache {path} is not a folder (an oocboost cache is a folder with "
            f"{MANIFEST_NAME})"
        )
    if not os.path.lexists(os.path.join(path, MANIFEST_NAME)):
        raise CacheError(
            f"cache {path} has no {MANIFEST_NAME}: it is not an oocboost cache, or its build "
            f"did not finish"
        )
    manifest = load_manifest_json(path)
    validate_manifest(manifest, path)
    return manifest


def _need(manifest, key, kinds, path):
    if key not in manifest:
        raise CacheError(f"cache {path}: {MANIFEST_NAME} lacks the field {key!r}")
    value = manifest[key]
    # bool is an int subclass; a count given as true/false is corrupt, not 1/0.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise CacheError(
            f"cache {path}: {MANIFEST_NAME} field {key!r} should be "
            f"{' or '.join(k.__name__ for k in kinds)}, got {value!r}"
        )
    return value


def validate_manifest(manifest, path):
    """Check the store-owned fields of a manifest; raise :class:`CacheError` naming the
    fault."""
    if not isinstance(manifest, dict):
        raise CacheError(f"cache {path}: {MANIFEST_NAME} should hold a JSON object")
    if manifest.get("format") != FORMAT:
        raise CacheError(
            f"cache {path}: {MANIFEST_NAME} has format {manifest.get('format')!r}, expected "
            f"{FORMAT!r}"
        )
    version = manifest.get("format_version")
    if version not in FORMAT_VERSIONS or isinstance(version, bool):
        raise CacheError(
            f"cache {path}: format_version {version!r} is not supported (this oocboost reads "
            f"versions {', '.join(map(str, FORMAT_VERSIONS))}); rebuild the cache"
        )
    backend = _need(manifest, "backend", (str,), path)
    if backend not in BACKENDS:
        raise CacheError(
            f"cache {path}: unknown backend {backend!r}, expected one of {BACKENDS}"
        )
    _need(manifest, "compression", (str,), path)
    n_rows = _need(manifest, "n_rows", (int,), path)
    n_features = _need(manifest, "n_features", (int,), path)
    block_rows = _need(manifest, "block_rows", (int,), path)
    dtype = _need(manifest, "codes_dtype", (str,), path)
    _need(manifest, "has_label", (bool,), path)
    _need(manifest, "has_weight", (bool,), path)
    blocks = _need(manifest, "blocks", (list,), path)
    if dtype not in CODES_DTYPES:
        raise CacheError(f"cache {path}: codes_dtype {dtype!r} is not one of {CODES_DTYPES}")
    if n_rows < 1 or n_features < 1 or block_rows < 1:
        raise CacheError(
            f"cache {path}: n_rows={n_rows}, n_features={n_features}, block_rows={block_rows} "
            "should all be positive"
        )
    expected_blocks = -(-n_rows // block_rows)
    if len(blocks) != expected_blocks:
        raise CacheError(
            f"cache {path}: {len(blocks)} blocks listed, expected {expected_blocks} "
            f"for {n_rows} rows of {block_rows}"
        )
    for i, b in enumerate(blocks):
        _check_block_entry(b, i, min(block_rows, n_rows - i * block_rows), block_rows,
                           backend, path)
    _check_sparse(manifest, version, backend, path)
    cache_id = manifest.get("cache_id")
    if cache_id is not None and (not isinstance(cache_id, str) or len(cache_id) != 32
                                 or not all(c in "0123456789abcdef" for c in cache_id)):
        raise CacheError(f"cache {path}: cache_id {cache_id!r} should be 32 hex digits")
    _check_n_columns(manifest, n_features, path)
    _check_codes_layout(manifest.get("codes_layout"), backend, dtype, path)
    label_columns = manifest.get("label_columns", 1)
    if not isinstance(label_columns, int) or isinstance(label_columns, bool) or \
            label_columns < 1 or (label_columns > 1 and not manifest.get("has_label")):
        raise CacheError(f"cache {path}: label_columns={label_columns!r}, expected a "
                         f"positive integer (more than 1 only with a label)")
    groups = manifest.get("groups")
    if groups is not None:
        _check_groups_entry(groups, n_rows, path)
    if "base_margin" in manifest:
        check_margin_entry(manifest["base_margin"], path)
    if backend == "hdf5":
        f = _need(manifest, "data_file", (str,), path)
        if f != os.path.basename(f) or f in ("", ".", ".."):
            raise CacheError(f"cache {path}: data_file {f!r} should be a plain file name")
        _need(manifest, "data_file_nbytes", (int,), path)


def _check_block_entry(b, i, want_rows, block_rows, backend, path):
    """One entry of ``blocks``: its index, first row, rows, byte counts and, for arrow,
    its file (kept inside ``blocks/``) and checksum."""
    if not isinstance(b, dict):
        raise CacheError(f"cache {path}: block {i} entry should be a JSON object")
    for key, want in (("index", i), ("row_start", i * block_rows), ("n_rows", want_rows)):
        got = b.get(key)
        if got != want or isinstance(got, bool):
            raise CacheError(f"cache {path}: block {i} has {key}={got!r}, expected {want}")
    for key in ("nbytes", "raw_nbytes"):
        got = b.get(key)
        if not isinstance(got, int) or isinstance(got, bool) or got < 0:
            raise CacheError(
                f"cache {path}: block {i} has {key}={got!r}, expected a byte count"
            )
    if backend == "arrow":
        f = b.get("file")
        # The file name comes from disk: keep it inside blocks/ so a crafted manifest
        # cannot make us read elsewhere.
        if (
            not isinstance(f, str)
            or not f.startswith("blocks/")
            or "/" in f[len("blocks/"):]
            or "\\" in f
            or f[len("blocks/"):] in ("", ".", "..")
        ):
            raise CacheError(
                f"cache {path}: block {i} has file={f!r}, expected 'blocks/<name>'"
            )
        crc = b.get("crc32")
        if not isinstance(crc, int) or isinstance(crc, bool) or not 0 <= crc < 2**32:
            raise CacheError(
                f"cache {path}: block {i} has crc32={crc!r}, expected a 32-bit integer"
            )


def sparse_field(manifest, field="implied"):
    """Each stored column's implied code (int64; -1: never sparse) of a validated
    manifest with sparse columns (or its ``blocks`` or ``entries``), else None."""
    sparse = manifest.get("sparse")
    if sparse is None:
        return None
    raw = base64.b64decode(sparse[field].encode("ascii"), validate=True)
    return np.frombuffer(raw, dtype="<i8").astype(np.int64)


def encode_counts(values):
    """The manifest text of per-column integers (base64 of little-endian int64)."""
    return base64.b64encode(np.ascontiguousarray(values, "<i8").tobytes()).decode("ascii")


def _check_sparse(manifest, version, backend, path):
    """``sparse`` comes with format_version 2 and the arrow backend: a threshold in
    [0, 1], one implied code a stored column (-1 or a code), and in every block entry
    its sparse columns (at most the stored columns) and entries."""
    sparse = manifest.get("sparse")
    if (sparse is not None) != (version == SPARSE_FORMAT_VERSION):
        raise CacheError(f"cache {path}: format_version {version} "
                         + ("has no sparse columns" if sparse is not None else
                            "needs the sparse field"))
    if sparse is None:
        return
    if backend != "arrow":
        raise CacheError(f"cache {path}: sparse columns are an arrow layout, not {backend}")
    fields = ("implied", "blocks", "entries")
    if not isinstance(sparse, dict) or set(sparse) != {"threshold", *fields}:
        raise CacheError(f"cache {path}: sparse should be an object with threshold, "
                         f"implied, blocks and entries")
    t = sparse["threshold"]
    if not isinstance(t, (int, float)) or isinstance(t, bool) or not 0.0 <= t <= 1.0:
        raise CacheError(f"cache {path}: sparse threshold {t!r} is not in [0, 1]")
    n_columns = manifest.get("n_columns", manifest["n_features"])
    values = {}
    for field in fields:
        try:
            values[field] = sparse_field(manifest, field)
        except (AttributeError, binascii.Error, UnicodeEncodeError, ValueError):
            raise CacheError(f"cache {path}: sparse {field} {str(sparse[field])[:40]!r} is "
                             f"not base64 of int64 values") from None
        if len(values[field]) != n_columns:
            raise CacheError(f"cache {path}: sparse {field} holds {len(values[field])} "
                             f"values, expected one a stored column ({n_columns})")
    max_code = 65535 if manifest["codes_dtype"] == "uint16" else 255
    implied = values["implied"]
    if np.any((implied < -1) | (implied > max_code)):
        raise CacheError(f"cache {path}: sparse implied codes should be from -1 to "
                         f"{max_code}")
    for b in manifest["blocks"]:
        n_sparse, nnz = b.get("n_sparse"), b.get("nnz")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                   for v in (n_sparse, nnz)) or n_sparse > n_columns:
            raise CacheError(f"cache {path}: block {b['index']} has n_sparse={n_sparse!r}, "
                             f"nnz={nnz!r}, expected counts (at most {n_columns} columns)")
    blocks = manifest["blocks"]
    if (np.any(values["blocks"] < 0) or np.any(values["entries"] < 0)
            or values["blocks"].sum() != sum(b["n_sparse"] for b in blocks)
            or values["entries"].sum() != sum(b["nnz"] for b in blocks)):
        raise CacheError(f"cache {path}: the sparse columns' blocks and entries do not add "
                         f"up to the blocks' n_sparse and nnz")


def _check_codes_layout(layout, backend, dtype, path):
    """``codes_layout``: absent, or ``"byte_planes"`` for an arrow cache's two-byte codes
    (``arrow_backend.to_byte_planes``)."""
    if layout is not None and (layout != "byte_planes" or backend != "arrow"
                               or dtype != "uint16"):
        raise CacheError(f"cache {path}: codes_layout {layout!r}: only 'byte_planes', for "
                         f"the two-byte codes of an arrow cache")


def _check_n_columns(manifest, n_features, path):
    """``n_columns`` (rows of the stored codes) comes with ``bundles`` (the bundle entry
    itself is checked against the bin mapper when the cache is opened)."""
    if ("n_columns" in manifest) != ("bundles" in manifest):
        raise CacheError(f"cache {path}: n_columns and bundles come together (a cache with "
                         f"bundled features), got only one of them")
    n_columns = manifest.get("n_columns", n_features)
    if not isinstance(n_columns, int) or isinstance(n_columns, bool) \
            or not 1 <= n_columns <= n_features:
        raise CacheError(f"cache {path}: n_columns={n_columns!r}, expected 1 to "
                         f"n_features={n_features}")


def _check_groups_entry(groups, n_rows, path):
    """The ``groups`` entry: ``{"column", "n_groups", "crc32"}`` of :data:`GROUPS_FILE`."""
    if not isinstance(groups, dict) or set(groups) != {"column", "n_groups", "crc32"}:
        raise CacheError(f"cache {path}: manifest field 'groups' should be an object with "
                         f"column, n_groups and crc32, got {groups!r}")
    if not isinstance(groups["column"], str):
        raise CacheError(f"cache {path}: groups column {groups['column']!r} should be a name")
    n = groups["n_groups"]
    if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= n_rows:
        raise CacheError(f"cache {path}: groups n_groups={n!r}, expected 1 to {n_rows}")
    crc = groups["crc32"]
    if not isinstance(crc, int) or isinstance(crc, bool) or not 0 <= crc < 2**32:
        raise CacheError(f"cache {path}: groups crc32={crc!r}, expected a 32-bit integer")
