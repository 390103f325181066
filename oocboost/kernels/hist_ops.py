"""Operations on whole histogram slots: zeroing, the subtraction trick, node totals, and
turning record slots into histograms (``histogram.build_histograms_columns``'s
``records``). Layout as ``kernels/histogram.py``."""
import numpy as np
from numba import njit, prange

from .simd import add4


@njit(inline="always")
def _record_lane(words, base, lane, n_stats):
    """Statistic ``lane`` of the record at ``words[base:]``: stored, the count (1), or a
    padding lane (0)."""
    if lane < n_stats - 1:
        return words[base + lane]
    return 1 if lane == n_stats - 1 else 0


@njit(cache=True)
def record_words(n_stats, n_columns, code_itemsize, word_itemsize):
    """Words of one row record: its statistics but the count, then its codes. A word is
    one histogram entry (``word_itemsize`` bytes: 8 for float64, 4 for int32 sums)."""
    return (n_stats - 1) + (n_columns * code_itemsize + word_itemsize - 1) // word_itemsize


@njit(parallel=True, cache=True, nogil=True)
def records_to_histograms(hist, slot_words, slot_codes, record_slots, record_count,
                          was_clean, n_stats):
    """Turn record slots into histograms, in place: each slot's records are summed, in the
    order they were appended, into the slot's own memory.

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width) float64 or int32,
        C-contiguous                                                             # IN/OUT
    slot_words, slot_codes : views of ``hist`` as (n_slots, words) of its dtype and as
        (n_slots, ...) of the codes' dtype                                       # IN
    record_slots : ndarray (n,) int64, the record slots                          # IN
    record_count : ndarray (n,) int64, records appended to each                  # IN
    was_clean : ndarray (n,) bool, the slot was all zero before its records      # IN
    n_stats : int, statistics per row (the last one, the count, is 1 per record)
    """
    n_columns = hist.shape[1]
    n_bins = hist.shape[2]
    width = hist.shape[3]
    words = record_words(n_stats, n_columns, slot_codes.itemsize, slot_words.itemsize)
    per_word = slot_words.itemsize // slot_codes.itemsize
    code_offset = (n_stats - 1) * per_word
    code_stride = words * per_word
    vector = width == 4 and n_stats <= 4
    for r in prange(record_slots.shape[0]):
        s = record_slots[r]
        n = record_count[r]
        used = n * words
        copy = slot_words[s, :used].copy()
        codes = slot_codes[s, :used * per_word].copy()
        # records sit at the start of the slot: zero what they used, or all of a slot
        # that held a histogram before
        end = used if was_clean[r] else slot_words.shape[1]
        slot_words[s, :end] = 0
        base_slot = np.int64(s) * n_columns
        for k in range(n):
            base = k * words
            cbase = k * code_stride + code_offset
            if vector:
                s0 = _record_lane(copy, base, 0, n_stats)
                s1 = _record_lane(copy, base, 1, n_stats)
                s2 = _record_lane(copy, base, 2, n_stats)
                s3 = _record_lane(copy, base, 3, n_stats)
                for q in range(n_columns):
                    b = np.int64(codes[cbase + q])
                    add4(hist, ((base_slot + q) * n_bins + b) * 4, s0, s1, s2, s3)
            else:
                for q in range(n_columns):
                    b = codes[cbase + q]
                    for m in range(n_stats - 1):
                        hist[s, q, b, m] += copy[base + m]
                    hist[s, q, b, n_stats - 1] += 1


@njit(parallel=True, cache=True)
def zero_slots(hist, slots):
    """``hist[slot] = 0`` for each slot.

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width) float64   # IN/OUT
    slots : ndarray (n,) int64                                     # IN
    """
    for j in prange(slots.shape[0]):
        hist[slots[j]] = 0


@njit(parallel=True, cache=True, nogil=True)
def subtract_histograms(hist, parent_slots, built_slots, sibling_slots):
    """``hist[sibling] = hist[parent] - hist[built]`` for each triple (the subtraction trick).

    Parallel over (triple, column), so a level with one subtraction still uses every
    thread (serial, it took 1.2 ms of a 55 ms boosting round on 1M x 28).

    Parameters
    ----------
    hist : ndarray (n_slots, n_columns, max_bin, width) float64 or int32   # IN/OUT
    parent_slots, built_slots, sibling_slots : ndarray (n,) int32          # IN
    """
    n_columns = hist.shape[1]
    n_bins = hist.shape[2]
    width = hist.shape[3]
    for task in prange(parent_slots.shape[0] * n_columns):
        j = task // n_columns
        q = task - j * n_columns
        parent = hist[parent_slots[j], q]
        built = hist[built_slots[j], q]
        sibling = hist[sibling_slots[j], q]
        for b in range(n_bins):
            for m in range(width):
                sibling[b, m] = parent[b, m] - built[b, m]


@njit(cache=True)
def node_sums_from_histograms(hist, slots, out, first_column=0, n_columns=1):
    """Totals of each slot's node: the sum over all bins of one feature, the one whose
    histogram is columns ``first_column .. first_column + n_columns - 1`` (the grower
    picks its narrowest feature: a wide one spans many columns).

    Every row falls in exactly one bin of every feature (missing rows in the missing bin),
    so any feature's histogram sums to the node totals.

    Parameters
    ----------
    hist : ndarray (n_slots, n_features, max_bin, width) float64    # IN
    slots : ndarray (n,) int32                                      # IN
    out : ndarray (n, n_stats) float64                              # OUT, n_stats <= width
    first_column, n_columns : int, the summed feature's columns
    """
    n_bins = hist.shape[2]
    n_stats = out.shape[1]
    for j in range(slots.shape[0]):
        for k in range(n_stats):
            total = 0.0
            for c in range(first_column, first_column + n_columns):
                for b in range(n_bins):
                    total += hist[slots[j], c, b, k]
            out[j, k] = total
