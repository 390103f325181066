"""Putting a finished cache folder in place, and what may be replaced.

A build writes ``<path>.oocb.tmp-<pid>-<rnd>`` and then installs it at ``path``. After a
kill at any instant ``path`` holds the old cache or the new one, never nothing:

* nothing (or an empty folder) at ``path``: one ``rename``, atomic;
* a cache at ``path``, Linux: ``renameat2(RENAME_EXCHANGE)`` swaps the two folders in one
  step, then the old one (now under the temporary name) is deleted;
* elsewhere, or a file system without the exchange: ``path`` is renamed to
  ``<path>.oocb.old-<pid>-<rnd>``, the new folder to ``path``, then the old one deleted.
  A kill between the two renames leaves the old cache under the ``.old`` name;
  :func:`recover` renames it back the next time the cache is opened or built.

Folders left by killed builds (``.tmp`` always, ``.old`` once ``path`` exists again) are
deleted by the next build into the same path, once their process is gone.

``--overwrite`` replaces only what a build made: a folder that is an oocboost cache, an
unfinished one (only the store's own file names inside), or an empty folder. A file, a
symbolic link or any other folder is refused, overwrite or not (:func:`check_target`).
"""
import ctypes
import errno
import logging
import os
import re
import secrets
import shutil

import psutil

from ...errors import CacheError
from .manifest import GROUPS_FILE, MANIFEST_NAME, looks_like_cache
from .margins import BASE_MARGIN_FILE

log = logging.getLogger(__name__)

TMP_TAG = ".oocb.tmp-"
OLD_TAG = ".oocb.old-"
#: Names a cache folder may hold (the backends', the manifest's temporary, an append's
#: staging folder); a folder holding only these is the store's own.
_STORE_NAMES = frozenset({MANIFEST_NAME, GROUPS_FILE, BASE_MARGIN_FILE, "blocks",
                          "data.h5"})
_STORE_PREFIXES = (f".{MANIFEST_NAME}.tmp-", ".append-")
_BLOCK_FILE = re.compile(r"block-\d{6}(-[0-9a-f]+)?\.arrow$")  # appends add -<hex>
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _crash_point(step):
    """Called between the steps of an install; the tests replace it to kill the process
    there (a fault-injection seam: it does nothing in a real run)."""


def _load_renameat2():
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                   ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


_renameat2 = _load_renameat2()


def exchange(a, b):
    """Swap the paths ``a`` and ``b`` atomically. Returns False when the platform or the
    file system cannot (the caller then uses two renames)."""
    if _renameat2 is None:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(err, os.strerror(err), b)


def remove_tree(path):
    """Delete a folder (never following a link) or a file; absent is fine."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.remove(path)
        except OSError:
            pass


def _siblings(path):
    """``(name, kind, pid)`` of the temporaries next to ``path`` (kind "tmp" or "old")."""
    parent, name = os.path.split(path)
    pattern = re.compile(re.escape(name) + r"\.oocb\.(tmp|old)-(\d+)-[0-9a-f]+$")
    try:
        entries = os.listdir(parent or ".")
    except OSError:
        return []
    out = []
    for entry in entries:
        m = pattern.match(entry)
        if m:
            out.append((os.path.join(parent, entry), m.group(1), int(m.group(2))))
    return out


def _gone(pid):
    return pid != os.getpid() and not psutil.pid_exists(pid)


def recover(path):
    """Put back the old cache that a replace killed between its two renames left aside.

    Does nothing while something is at ``path`` or while the replacing process lives.
    Returns True when a cache was put back.
    """
    if os.path.lexists(path):
        return False
    olds = [(os.path.getmtime(p), p) for p, kind, pid in _siblings(path)
            if kind == "old" and _gone(pid) and looks_like_cache(p)]
    if not olds:
        return False
    aside = max(olds)[1]
    try:
        os.rename(aside, path)
    except OSError:
        return False  # another process got there first
    log.warning("cache %s: put back the cache that an interrupted replace left at %s",
                path, aside)
    return True


def clean_stale(path):
    """Delete temporaries next to ``path`` left by builds whose process is gone (after
    :func:`recover` has had the chance to put an old cache back)."""
    recover(path)
    for sibling, _, pid in _siblings(path):
        if _gone(pid):
            remove_tree(sibling)


def _foreign_entries(path):
    """Entries of the folder ``path`` that no build of ours writes (at most 3)."""
    foreign = []
    for entry in sorted(os.listdir(path)):
        full = os.path.join(path, entry)
        if entry.startswith(_STORE_PREFIXES):
            continue
        if entry == "blocks" and os.path.isdir(full) and not os.path.islink(full):
            odd = [f for f in os.listdir(full) if not _BLOCK_FILE.match(f)]
            if not odd:
                continue
            foreign.append(f"blocks/{odd[0]}")
        elif entry not in _STORE_NAMES or os.path.islink(full):
            foreign.append(entry + ("/" if os.path.isdir(full) else ""))
        if len(foreign) == 3:
            break
    return foreign


def check_target(path, overwrite):
    """Raise unless ``path`` may receive a cache. Returns True when a folder is there.

    ``overwrite`` allows replacing a cache; nothing else is ever replaced.
    """
    if not os.path.lexists(path):
        return False
    if os.path.islink(path):
        what = "a symbolic link"
    elif not os.path.isdir(path):
        what = "a file" if os.path.isfile(path) else "something that is not a folder"
    elif not os.listdir(path):
        return True  # an empty folder holds nothing to lose
    else:
        foreign = _foreign_entries(path)
        if not foreign or looks_like_cache(path):
            if not overwrite:
                raise CacheError(f"cache {path} already exists; pass overwrite=True "
                                 f"(--overwrite) to replace it")
            if foreign:
                raise CacheError(f"cache {path} also holds {', '.join(foreign)}, which no "
                                 f"oocboost build wrote; --overwrite replaces only a "
                                 f"cache's own files: move them out first")
            return True
        what = f"a folder that is not an oocboost cache (it holds {', '.join(foreign)})"
    raise CacheError(f"cannot build a cache at {path}: it is {what}; "
                     f"{'--overwrite replaces only an oocboost cache: ' if overwrite else ''}"
                     f"choose another path")


def install(tmp, path, overwrite):
    """Move the finished cache folder ``tmp`` to ``path`` (module docstring)."""
    replace = check_target(path, overwrite)
    _crash_point("checked")
    if not replace or not os.listdir(path):
        os.rename(tmp, path)  # rename(2) replaces an empty folder in the same step
        _crash_point("renamed")
        return
    if exchange(tmp, path):
        _crash_point("exchanged")
        remove_tree(tmp)  # the old cache, now under the temporary name
        _crash_point("removed")
        return
    aside = f"{path}{OLD_TAG}{os.getpid()}-{secrets.token_hex(4)}"
    os.rename(path, aside)
    _crash_point("moved-aside")
    try:
        os.rename(tmp, path)
    except BaseException:
        os.rename(aside, path)
        raise
    _crash_point("renamed")
    remove_tree(aside)
    _crash_point("removed")
