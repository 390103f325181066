"""Exclusive feature bundling (EFB): which sparse features share a stored column.

LightGBM's idea: features that are rarely off their default value in the same row (one-hot
blocks, sparse counts) can be stored as one column whose code says which feature is off
its default and at which bin (``kernels/bundles.py`` has the layout). Training builds
histograms over the stored columns, which are fewer, and expands them to per-feature
histograms before the split search, so the model is the one trained without bundling,
up to the rows where two features of a bundle conflict.

Bundles are decided after pass 1 of a build, from which features are non-zero in its
first :data:`SAMPLE_ROWS` rows (one bit per row and feature), with LightGBM's greedy
order (most non-zero rows first, each into the first bundle it conflicts with in at most
``max_conflict_rate`` of the sampled rows). Only numeric features without missing values
are bundled; pass 2 counts the conflicts over every row and the manifest keeps them.
"""
import numpy as np

from ..errors import CacheError, ParameterError
from ..kernels.binning import map_to_bins
from ..kernels.bundles import decode_bundles, encode_bundles

#: Rows whose non-zero pattern decides the bundles (LightGBM samples 200,000 rows for its
#: bins and bundles; 100,000 rows of bits cost 12.5 KB a feature).
SAMPLE_ROWS = 100_000
#: Bundles a feature is tried against, most recent first (LightGBM bounds its search
#: too: bundling is quadratic in the features otherwise).
MAX_BUNDLES_SEARCHED = 128


#: ``(enable_bundle, max_conflict_rate)`` by default, LightGBM's.
BUNDLE_DEFAULTS = (True, 0.0)


def check_bundle_params(enable_bundle, max_conflict_rate):
    """Validated ``(enable_bundle, max_conflict_rate)``; raises ParameterError naming the
    parameter."""
    if not isinstance(enable_bundle, (bool, np.bool_)):
        raise ParameterError(f"enable_bundle must be True or False, got {enable_bundle!r}")
    ok = (isinstance(max_conflict_rate, (int, float, np.floating, np.integer))
          and not isinstance(max_conflict_rate, bool) and 0.0 <= max_conflict_rate < 1.0)
    if not ok:
        raise ParameterError(
            f"max_conflict_rate must be a number in [0, 1), got {max_conflict_rate!r}")
    return bool(enable_bundle), float(max_conflict_rate)


class NonzeroSample:
    """Which numeric features are non-zero (or missing) in the first rows of pass 1.

    Parameters
    ----------
    names : list of str
        The numeric features.
    n_rows : int
        Rows kept (:data:`SAMPLE_ROWS`; fewer under a tight memory plan, see
        :meth:`rows_for`), one bit each a feature.
    """

    @staticmethod
    def rows_for(sketch_bytes):
        """Rows to keep when a numeric column's pass-1 sketch budget is ``sketch_bytes``:
        its bits take at most 1/16 of it, within the build plan's safety margin (10%),
        so that the sketch keeps its whole budget and bundling does not change the
        edges."""
        return SAMPLE_ROWS if sketch_bytes is None else max(
            1, min(SAMPLE_ROWS, int(sketch_bytes) * 8 // 16))

    def __init__(self, names, n_rows=SAMPLE_ROWS):
        self.names = list(names)
        self.capacity = int(n_rows)
        self.bits = np.zeros((len(self.names), (self.capacity + 63) // 64 * 8), np.uint8)
        self.n_rows = 0

    def update(self, numeric, n_rows):
        """Add a batch's numeric columns (name -> float64 array of ``n_rows``, NaN
        missing)."""
        take = min(self.capacity - self.n_rows, int(n_rows))
        if take <= 0 or not self.names:
            return
        start = self.n_rows
        # every column at once: a packbits call per column was 0.5 s of a
        # 5,000-column build's pass 1
        nonzero = np.empty((len(self.names), take), bool)
        for j, name in enumerate(self.names):
            np.not_equal(numeric[name][:take], 0, out=nonzero[j])   # NaN: non-zero
        k = start % 8
        if k:   # the bits of the byte that row ``start`` falls in, before it
            before = np.unpackbits(self.bits[:, start // 8: start // 8 + 1], axis=1,
                                   bitorder="little")[:, :k].astype(bool)
            nonzero = np.concatenate([before, nonzero], axis=1)
        packed = np.packbits(nonzero, axis=1, bitorder="little")
        self.bits[:, start // 8: start // 8 + packed.shape[1]] = packed
        self.n_rows += take

    def counts(self):
        """Non-zero rows per feature, int64."""
        return np.bitwise_count(self.bits).sum(axis=1, dtype=np.int64)


def find_bundles(mapper, sample, n_missing, max_conflict_rate=0.0):
    """Bundles of the mapper's features (a :class:`FeatureBundles`), or None when no two
    features bundle.

    Parameters
    ----------
    mapper : BinMapper
    sample : NonzeroSample
    n_missing : dict name -> int
        Missing values per feature over all rows (a feature with any is not bundled).
    max_conflict_rate : float
        Share of the sampled rows in which a bundle's features may overlap.
    """
    names = mapper.feature_names
    index = {name: f for f, name in enumerate(names)}
    max_code = mapper.missing_bin - 1      # codes 1 .. max_code hold bins
    candidates = []
    for j, name in enumerate(sample.names):
        f = index[name]
        n_bins = int(mapper.n_value_bins[f])
        if (mapper.feature_types[f] == "numeric" and n_missing.get(name, 0) == 0
                and 2 <= n_bins and n_bins - 1 <= max_code):
            candidates.append((j, f))
    if len(candidates) < 2 or sample.n_rows == 0:
        return None
    counts = sample.counts()
    allowed = int(max_conflict_rate * sample.n_rows)
    candidates = _not_alone(candidates, counts, sample.n_rows, allowed)
    if len(candidates) < 2:
        return None
    order = sorted(candidates, key=lambda jf: (-counts[jf[0]], jf[1]))
    members = _greedy_bundles(order, counts, sample, mapper.n_value_bins, max_code,
                              allowed)
    bundles = [sorted(m) for m in members if len(m) > 1]
    if not bundles:
        return None
    zero = np.zeros(1, np.float64)
    default = {}
    for f in (f for m in bundles for f in m):
        code = np.empty(1, mapper.codes_dtype)
        map_to_bins(zero, mapper.bin_edges[f], mapper.missing_bin, code)
        default[f] = int(code[0])
    return FeatureBundles(mapper.n_value_bins, mapper.max_bin,
                          [[(f, default[f]) for f in m] for m in bundles])


def _not_alone(candidates, counts, n_rows, allowed):
    """The candidates ``(sample row, feature)`` that may share a bundle: a feature
    non-zero in ``c_j`` sampled rows overlaps another in at least ``c_j + c_k - n_rows``
    of them, so one that overlaps even the sparsest other feature in more than
    ``allowed`` rows stays alone (dense columns: a 5,000-column dense build then skips
    bundling, 0.9 s). Leaving such features out also keeps them from taking a place
    among the bundles a later feature searches."""
    c = counts[[j for j, _ in candidates]]
    order = np.argsort(c, kind="stable")
    sparsest_other = np.where(np.arange(len(c)) == order[0], c[order[1]], c[order[0]])
    keep = c + sparsest_other - n_rows <= allowed
    return [jf for jf, k in zip(candidates, keep) if k]


def _greedy_bundles(order, counts, sample, n_value_bins, max_code, allowed):
    """LightGBM's greedy bundling: each feature of ``order`` (pairs (sample row,
    feature)) joins the first of the last :data:`MAX_BUNDLES_SEARCHED` bundles it
    conflicts with in at most ``allowed`` sampled rows in all and whose codes it fits
    in, else starts one. Returns each bundle's features.

    Linear in the features: the bundles' row masks are kept in one array grown by
    doubling (appending a row per bundle copied them all: 28 s of a 5,000-column
    build), and a feature non-zero in more sampled rows than the others leave free
    (``n_rows + allowed - nonzero rows of the bundle``) is not tested against it."""
    words = sample.bits.view(np.uint64)
    masks = np.zeros((min(len(order), 64), words.shape[1]), np.uint64)
    nonzero = np.zeros(len(masks), np.int64)      # rows of the bundle's mask
    used_codes = np.zeros(len(masks), np.int64)
    conflicts = np.zeros(len(masks), np.int64)
    members = []
    for j, f in order:
        need = int(n_value_bins[f]) - 1
        n_bundles = len(members)
        first = max(0, n_bundles - MAX_BUNDLES_SEARCHED)
        chosen = -1
        # the overlap is at least nonzero + counts[j] - n_rows (pigeonhole)
        near = first + np.flatnonzero(
            (nonzero[first:n_bundles] + counts[j] - sample.n_rows
             <= allowed - conflicts[first:n_bundles])
            & (used_codes[first:n_bundles] + need <= max_code))
        if len(near):
            overlap = np.bitwise_count(masks[near] & words[j]).sum(axis=1, dtype=np.int64)
            hit = np.flatnonzero(conflicts[near] + overlap <= allowed)
            if len(hit):
                chosen = int(near[hit[0]])
                conflicts[chosen] += int(overlap[hit[0]])
        if chosen < 0:
            if n_bundles == len(masks):
                masks, nonzero, used_codes, conflicts = (
                    np.concatenate([a, np.zeros_like(a)])
                    for a in (masks, nonzero, used_codes, conflicts))
            members.append([])
            chosen = n_bundles
        members[chosen].append(f)
        used_codes[chosen] += need
        masks[chosen] |= words[j]
        nonzero[chosen] = int(np.bitwise_count(masks[chosen]).sum(dtype=np.int64))
    return members


class FeatureBundles:
    """The stored columns of a cache whose sparse features are bundled.

    Parameters
    ----------
    n_value_bins : ndarray (n_features,) int
    max_bin : int
    bundles : list of list of (feature, default_bin)
        Each bundle's features (at least two, numeric, each in one bundle at most) with
        the bin they are at in most rows.

    Attributes
    ----------
    n_features, n_columns : int
    col_ptr, col_members : ndarray int64
        Stored column ``s`` holds features ``col_members[col_ptr[s]:col_ptr[s + 1]]``;
        columns follow the order of their first feature.
    column_of_feature : ndarray (n_features,) int64
    default_bin, offset : ndarray (n_features,) int64
        -1 / 0 for features that are not bundled (``kernels/bundles.py``).
    code_feature, code_bin : ndarray (n_columns, 1 + most codes a bundle uses) int64
    bundles : list of list of (int, int)
    conflicts : ndarray (n_columns,) int64
        Rows of the cache in which a bundle's features overlapped (counted by
        :meth:`encode`).
    """

    def __init__(self, n_value_bins, max_bin, bundles):
        n_value_bins = np.asarray(n_value_bins, np.int64)
        self.n_features = n = len(n_value_bins)
        self.max_bin = int(max_bin)
        self.bundles = [[(int(f), int(d)) for f, d in b] for b in bundles]
        self.default_bin = np.full(n, -1, np.int64)
        self.offset = np.zeros(n, np.int64)
        group_of = np.arange(n, dtype=np.int64)
        for b in self.bundles:
            used = 0
            for f, d in b:
                self.default_bin[f] = d
                self.offset[f] = used
                used += int(n_value_bins[f]) - 1
                group_of[f] = b[0][0]
        firsts = np.unique(group_of)
        self.n_columns = len(firsts)
        col = np.searchsorted(firsts, group_of)
        self.column_of_feature = col.astype(np.int64)
        order = np.argsort(col, kind="stable")
        self.col_members = order.astype(np.int64)
        self.col_ptr = np.zeros(self.n_columns + 1, np.int64)
        np.cumsum(np.bincount(col, minlength=self.n_columns), out=self.col_ptr[1:])
        # codes 0 .. the most a bundle uses (not max_bin: a cache of 65,536 bins would
        # make these tables large)
        width = 1 + max([sum(int(n_value_bins[f]) - 1 for f, _ in b) for b in self.bundles],
                        default=0)
        self.code_feature = np.full((self.n_columns, width), -1, np.int64)
        self.code_bin = np.zeros((self.n_columns, width), np.int64)
        for b in self.bundles:
            s = col[b[0][0]]
            for f, d in b:
                bins = np.delete(np.arange(int(n_value_bins[f])), d)
                codes = self.offset[f] + 1 + np.arange(len(bins))
                self.code_feature[s, codes] = f
                self.code_bin[s, codes] = bins
        self.conflicts = np.zeros(self.n_columns, np.int64)

    @property
    def column_value_bins(self):
        """Value codes of each stored column: a bundle's codes, a feature's own else
        (the bundle's are below ``max_bin``: one histogram column each)."""
        out = np.zeros(self.n_columns, np.int64)
        for s in range(self.n_columns):
            codes = np.flatnonzero(self.code_feature[s] >= 0)
            out[s] = codes[-1] + 1 if len(codes) else 0
        return out

    def stored_value_bins(self, n_value_bins):
        """``n_value_bins`` of the stored columns (for their histogram column starts)."""
        n_value_bins = np.asarray(n_value_bins, np.int64)
        single = self.col_ptr[1:] - self.col_ptr[:-1] == 1
        return np.where(single, n_value_bins[self.col_members[self.col_ptr[:-1]]],
                        self.column_value_bins)

    def encode(self, codes):
        """Stored columns (n_columns, n_rows) of feature codes (n_features, n_rows);
        adds the rows whose bundled features overlapped to :attr:`conflicts`."""
        out = np.empty((self.n_columns, codes.shape[1]), codes.dtype)
        encode_bundles(codes, self.col_ptr, self.col_members, self.default_bin,
                       self.offset, out, self.conflicts)
        return out

    def decode(self, stored):
        """Feature codes (n_features, n_rows) of stored columns."""
        out = np.empty((self.n_features, stored.shape[1]), stored.dtype)
        decode_bundles(stored, self.col_ptr, self.col_members, self.default_bin,
                       self.code_feature, self.code_bin, out)
        return out

    def feature_bin_of_code(self, feature):
        """Per code of ``feature``'s stored column, the feature's bin (its default where
        the code is another feature's), int64 (``code_bin.shape[1]``,)."""
        s = self.column_of_feature[feature]
        return np.where(self.code_feature[s] == feature, self.code_bin[s],
                        self.default_bin[feature])

    def to_dict(self, names):
        """The manifest entry: ``{"bundles": [[{"feature", "default_bin"}...]...],
        "conflicts": [int per bundle]}``."""
        return {"bundles": [[{"feature": names[f], "default_bin": d} for f, d in b]
                            for b in self.bundles],
                "conflicts": [int(self.conflicts[self.column_of_feature[b[0][0]]])
                              for b in self.bundles]}

    @classmethod
    def from_dict(cls, entry, mapper, where):
        """Read and check a manifest entry against the cache's bin mapper; ``where``
        names the cache in errors. Raises CacheError."""
        def bad(msg):
            return CacheError(f"{where}: manifest 'bundles': {msg}")

        if not isinstance(entry, dict) or set(entry) != {"bundles", "conflicts"}:
            raise bad("expected {bundles, conflicts}")
        bundles, conflicts = entry["bundles"], entry["conflicts"]
        if not isinstance(bundles, list) or not isinstance(conflicts, list) \
                or len(conflicts) != len(bundles):
            raise bad("expected a list of bundles and one conflict count each")
        index = {name: f for f, name in enumerate(mapper.feature_names)}
        seen, out = set(), []
        for b in bundles:
            if not isinstance(b, list) or len(b) < 2:
                raise bad(f"a bundle holds at least two features, got {b!r}")
            members, used = [], 0
            for m in b:
                if not isinstance(m, dict) or set(m) != {"feature", "default_bin"}:
                    raise bad(f"expected {{feature, default_bin}}, got {m!r}")
                f, d = index.get(m["feature"]), m["default_bin"]
                if f is None or f in seen or mapper.feature_types[f] != "numeric":
                    raise bad(f"feature {m['feature']!r} is not a numeric feature of the "
                              "cache, or is in two bundles")
                n_bins = int(mapper.n_value_bins[f])
                if isinstance(d, bool) or not isinstance(d, int) or not 0 <= d < n_bins:
                    raise bad(f"feature {m['feature']!r}: default_bin {d!r} is not one of "
                              f"its {n_bins} bins")
                seen.add(f)
                used += n_bins - 1
                members.append((f, d))
            if used > mapper.missing_bin - 1:
                raise bad(f"bundle of {[m['feature'] for m in b]} needs {used} codes; "
                          f"max_bin={mapper.max_bin} leaves {mapper.missing_bin - 1}")
            out.append(members)
        for c in conflicts:
            if isinstance(c, bool) or not isinstance(c, int) or c < 0:
                raise bad(f"conflict counts are non-negative integers, got {c!r}")
        bundled = cls(mapper.n_value_bins, mapper.max_bin, out)
        for b, c in zip(out, conflicts):
            bundled.conflicts[bundled.column_of_feature[b[0][0]]] = c
        return bundled
