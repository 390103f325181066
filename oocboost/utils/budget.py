"""The arithmetic every memory plan shares: the safety margin, the baseline (this
process's RSS plus the compiled kernels it has still to load), refusals that name the
smallest limit that works, and argument checks.

Refusal: when even the minimum configuration does not fit, :class:`MemoryLimitError`
says so and gives the smallest limit (a whole number of MiB) for which the same formulas
plan successfully.
"""
import sys

from ..errors import ParameterError
from .rss import current_rss, release_arrow_memory
from .sizes import MiB, format_size, parse_size

DEFAULT_PREFETCH = 2
MIN_MARGIN_BYTES = 32 * MiB
MARGIN_FRACTION = 0.10
#: Added to the smallest limit a refusal suggests (see ``_smallest_limit``).
BASELINE_SLACK_BYTES = 8 * MiB


def safety_margin(limit):
    return max(limit // 10, MIN_MARGIN_BYTES)


def usable_bytes(limit, baseline):
    """Bytes the limit leaves after the baseline and the safety margin."""
    return limit - safety_margin(limit) - baseline


def smallest_limit(need_above_baseline, baseline):
    """Smallest whole number of MiB whose usable part is at least ``need``."""
    need = need_above_baseline + baseline
    guess = max(need + MIN_MARGIN_BYTES, -(-need * 10 // 9))
    limit = -(-guess // MiB) * MiB
    while usable_bytes(limit, baseline) < need_above_baseline:
        limit += MiB
    # The baseline is this process's RSS now, which grows by a few MiB as it goes on
    # (imports, numba's caches): a limit suggested now must still work when retried.
    return limit + BASELINE_SLACK_BYTES


def check_int(name, value, low, high=None):
    if isinstance(value, bool) or not isinstance(value, int) and not (
        hasattr(value, "dtype") and getattr(value.dtype, "kind", "") in "iu"
    ):
        raise ParameterError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        rng = f">= {low}" if high is None else f"between {low} and {high}"
        raise ParameterError(f"{name} must be {rng}, got {value}")
    return value


def check_limit(memory_limit):
    limit = parse_size(memory_limit)
    if limit is not None and limit <= 0:
        raise ParameterError(
            f"memory_limit must be positive (e.g. '512M'), got {memory_limit!r}"
        )
    return limit


#: RSS that numba adds when this process loads its first compiled kernel (LLVM, the
#: codegen and the parallel runtime), and what each entry point's own kernels add on top
#: (measured with numba 0.68, Linux x86-64, kernels loaded from numba's on-disk cache: a
#: fresh process that trains a tiny model grows by about 89 MiB; one that has binned first
#: grows by about 9 MiB more when it trains). It stays resident for the rest of the process.
NUMBA_RUNTIME_BYTES = 80 * MiB
KERNEL_BYTES = {"train": 16 * MiB, "build": 16 * MiB}
#: Kernel modules each entry point always calls into: any compiled dispatcher there means
#: its kernels are loaded in this process.
_KERNEL_MODULES = {
    "train": ("oocboost.kernels.histogram",),
    "build": ("oocboost.kernels.binning",),
}


def _kernels_loaded(module_names):
    """True when a numba dispatcher of one of these (imported) modules has been compiled."""
    for name in module_names:
        module = sys.modules.get(name)
        for obj in vars(module).values() if module is not None else ():
            if hasattr(obj, "py_func") and getattr(obj, "signatures", None):
                return True
    return False


def pending_kernel_bytes(kind):
    """RSS in bytes that loading ``kind``'s compiled kernels will still add to this process.

    ``kind`` is ``"train"`` or ``"build"``. 0 once they are loaded; the numba runtime is
    counted until any of oocboost's kernels is loaded. Part of the measured baseline of
    :func:`plan_train` and :func:`plan_build` (the RSS *before* the work does not have the
    kernels yet, the peak during it does). Kernels loaded from numba's on-disk cache are
    assumed; compiling them (first run after a change) needs some 60 MiB more, for a while.
    """
    if kind in _LOADED:
        return 0
    pending = 0
    # (a process holds thousands of modules: scanned until the kernels are in, once)
    kernel_modules = [m for m in sys.modules if m.startswith("oocboost.kernels.")]
    if not _kernels_loaded(kernel_modules):
        pending += NUMBA_RUNTIME_BYTES
    if not _kernels_loaded(_KERNEL_MODULES[kind]):
        pending += KERNEL_BYTES[kind]
    if pending == 0:
        _LOADED.add(kind)  # loaded kernels stay loaded for the rest of the process
    return pending


#: Entry points whose kernels this process has loaded.
_LOADED = set()


def process_baseline(baseline_bytes, kind):
    """``baseline_bytes``, or the current RSS plus the kernels ``kind`` has still to load.

    The current RSS is read after :func:`release_arrow_memory`.
    """
    if baseline_bytes is None:
        release_arrow_memory()
        return current_rss() + pending_kernel_bytes(kind)
    return check_int("baseline_bytes", baseline_bytes, 0)


def plan_line(label, n_bytes, detail=""):
    detail = f"  ({detail})" if detail else ""
    return f"  {label:<34}{format_size(n_bytes):>12}{detail}"


#: A run given no ``memory_limit`` plans within its RSS now plus this share of the memory
#: available (:func:`available_bytes`): what it may take without pushing the machine, or
#: its container, into swap or the OOM killer.
DEFAULT_LIMIT_SHARE = 0.8
CGROUP_ROOT = "/sys/fs/cgroup"


def available_bytes(cgroup_root: str = CGROUP_ROOT) -> int:
    """Memory this process may still take, bytes: the machine's available memory
    (``psutil``: free plus reclaimable caches), or less when its cgroup (v2
    ``memory.max`` less ``memory.current``, or v1's ``memory.limit_in_bytes`` less
    ``memory.usage_in_bytes``) caps it, as in a container."""
    import psutil

    available = int(psutil.virtual_memory().available)
    for limit_name, usage_name in (("memory.max", "memory.current"),
                                   ("memory/memory.limit_in_bytes",
                                    "memory/memory.usage_in_bytes")):
        limit = _cgroup_number(cgroup_root, limit_name)
        usage = _cgroup_number(cgroup_root, usage_name)
        if limit is not None and usage is not None:
            available = min(available, max(limit - usage, 0))
    return available


def _cgroup_number(root, name):
    """An integer cgroup file, or None (absent, unreadable, "max", or a v1 "no limit"
    value beyond any machine's memory)."""
    import os

    try:
        with open(os.path.join(root, name)) as f:
            text = f.read(64).strip()
    except OSError:
        return None
    if not text.isdigit():
        return None
    value = int(text)
    return value if value < 1 << 60 else None
