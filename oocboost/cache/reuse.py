"""Whether the cache at a build's output is the one the build would write: the
fingerprint of a source and the build parameters, and the up-to-date check that reuses
such a cache or refuses a stale one (``overwrite`` replaces it)."""
import hashlib
import json
import os

from ..errors import CacheError
from ..utils.log import get_logger, say

logger = get_logger(__name__)


def fingerprint_of(source_fp, build_params):
    blob = json.dumps({"source": source_fp, "params": build_params}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def existing_fingerprint(path):
    from .store.manifest import load_manifest_json

    try:
        return load_manifest_json(path).get("fingerprint", {}).get("sha256")
    except (CacheError, AttributeError):
        return None


def reusable(output, fingerprint, overwrite, quiet):
    """The cache at ``output`` when it was built from the same source and parameters.

    Returns None when there is nothing at ``output`` or ``overwrite`` is set; raises
    :class:`CacheError` when a cache built from other data or parameters (or one that no
    longer opens) is there, so a stale cache is never used silently.
    """
    from .store import Cache

    if overwrite or not os.path.exists(output):
        return None
    existing = existing_fingerprint(output)
    if existing is None:
        return None  # not a cache: the writer's target check names what it is
    if existing == fingerprint:
        try:
            cache = Cache(output)
        except CacheError as exc:
            raise CacheError(f"{output} holds a cache of the same source and parameters "
                             f"that does not open ({exc}); pass overwrite=True "
                             f"(--overwrite) to rebuild it") from None
        if not quiet:
            say(logger, f"{output} is up to date (same source and parameters): reusing it")
        return cache
    raise CacheError(f"{output} already holds a cache built from other data or "
                     f"parameters (stale for this build); pass overwrite=True (--overwrite) "
                     f"to replace it")
