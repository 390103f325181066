"""The one way learners read a cache: blocks in order, with the wait for each timed."""
import time

from ..utils import interrupt


def timed_blocks(cache, plan, account, prefetch=None, block_indices=None):
    """Blocks of ``cache`` in order (prefetched as ``plan`` says), reporting each one.

    Parameters
    ----------
    cache : Cache
    plan : TrainPlan
        ``prefetch`` depth and ``resident_bytes`` (decompressed blocks kept across passes).
    account : callable ``(wait_seconds, code_bytes) -> None``
        Told, for every block, how long the consumer waited for it (I/O and
        decompression that prefetch did not hide) and how many bytes of codes it holds.
    prefetch : int or None
        Overrides ``plan.prefetch``.
    block_indices : iterable of int or None
        The blocks to read, in that order (None: all).

    Yields
    ------
    Block
    """
    it = cache.iter_blocks(prefetch=plan.prefetch if prefetch is None else prefetch,
                           resident_bytes=getattr(plan, "resident_bytes", 0),
                           block_indices=block_indices)
    while True:
        t0 = time.perf_counter()
        try:
            block = next(it)
        except StopIteration:
            return
        account(time.perf_counter() - t0, block.stored_codes.nbytes)
        interrupt.check()
        yield block
