"""This process's resident set size (RSS): now, at its peak, and the allocator's
cache that inflates it."""
import sys


def current_rss():
    """Resident set size of this process now, in bytes (psutil)."""
    import psutil

    return int(psutil.Process().memory_info().rss)


def peak_rss():
    """Peak resident set size of this process so far, in bytes.

    ``getrusage(RUSAGE_SELF).ru_maxrss`` (kB on Linux, bytes on macOS); falls back to the
    current RSS where ``resource`` is missing.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return current_rss()
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


def maxrss_bytes(maxrss):
    return int(maxrss if sys.platform == "darwin" else maxrss * 1024)


def release_arrow_memory():
    """Return the free memory pyarrow's allocator keeps cached to the OS.

    mimalloc and jemalloc keep freed blocks for reuse: after a CSV probe of a few 1 MiB
    blocks, about 50 MiB that no array uses any more stay resident. Measured as part of a
    baseline, that memory would be counted twice (once as baseline, once again when the
    same reader allocates it during the work).
    """
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        try:
            pa.default_memory_pool().release_unused()
        except Exception:  # pragma: no cover - an old pyarrow or an exotic pool
            pass
