"""A cache holds only regular files inside its own folder.

The manifest already keeps block names inside ``blocks/``; these checks keep the files
themselves honest before a byte is read: no symbolic link (a block or ``blocks/`` linked
to a folder outside would be read from, and an ``--append`` would write and delete
there), no FIFO (a read would block forever), no device (``/dev/zero`` would never end),
and the size the manifest states. The cache folder itself may be a link: that is the
user's own choice of where it lives.
"""
import os
import stat

from ...errors import CacheError

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0))


def _kind(mode):
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_regular(folder, rel, *, nbytes=None, what=None):
    """``os.stat_result`` of ``folder/rel``, after checking that neither it nor a folder
    between it and ``folder`` is a link, that it is a regular file and, with ``nbytes``,
    of that size. Raises :class:`CacheError` naming the file."""
    what = what or rel
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        sub = os.path.join(folder, *parts[:depth])
        try:
            mode = os.lstat(sub).st_mode
        except OSError:
            raise CacheError(f"cache {folder}: {what} is missing") from None
        if not stat.S_ISDIR(mode):
            raise CacheError(f"cache {folder}: {'/'.join(parts[:depth])}/ is "
                             f"{_kind(mode)}; a cache holds only its own folders and "
                             f"regular files")
    try:
        info = os.lstat(os.path.join(folder, rel))
    except OSError:
        raise CacheError(f"cache {folder}: {what} is missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise CacheError(f"cache {folder}: {what} is {_kind(info.st_mode)}; a cache holds "
                         f"only regular files")
    if nbytes is not None and info.st_size != nbytes:
        raise CacheError(f"cache {folder}: {what} has {info.st_size} bytes, expected "
                         f"{nbytes} (truncated or replaced)")
    return info


def open_regular(folder, rel, *, what=None):
    """``(binary file, os.stat_result)`` of ``folder/rel`` opened without following a
    link or waiting on a FIFO, checked to be a regular file (the checks of
    :func:`check_regular` on the opened file, so a swap after the check is caught)."""
    check_regular(folder, rel, what=what)
    try:
        fd = os.open(os.path.join(folder, rel), _OPEN_FLAGS)
    except OSError as exc:
        raise CacheError(f"cache {folder}: cannot open {what or rel}: "
                         f"{exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise CacheError(f"cache {folder}: {what or rel} is {_kind(info.st_mode)}; a cache "
                         f"holds only regular files")
    return os.fdopen(fd, "rb"), info
