"""Files a command writes: never over one of its inputs, always whole.

:func:`check_output_path` refuses an output path that is, contains or is inside one of the
command's inputs (symlinks resolved), so ``build-cache data.csv -o data.csv`` or
``predict model.json data.csv -o model.json`` fail before anything is written.

:func:`atomic_output` writes a file under a temporary name in the destination's folder and
renames it over the destination once complete: a crash or a full disk leaves the old file
(or nothing) at the path, never half a file. The new file keeps the mode of the file it
replaces; a new file gets the mode the umask gives (``0o666 & ~umask``), as ``open`` would.
"""
import contextlib
import errno
import glob
import os
import secrets

from ..errors import OocboostError, OutputError, ParameterError

#: errno values of a full disk, a quota or ``ulimit -f``.
SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def _resolved(path):
    return os.path.realpath(os.path.abspath(os.fspath(path)))


def _is_uri(text):
    return "://" in text


def _expand(path):
    """The local paths an input names: itself, or the files a glob matches."""
    text = os.fspath(path)
    if _is_uri(text):
        return []
    if glob.has_magic(text) and not os.path.exists(text):
        return glob.glob(text) or [os.path.dirname(text) or "."]
    return [text]


def _within(inner, outer):
    """True when the resolved path ``inner`` is ``outer`` or below it."""
    try:
        return os.path.commonpath([inner, outer]) == outer
    except ValueError:  # different drives
        return False


def check_output_path(output, inputs, *, option="-o"):
    """Refuse an ``output`` that is, contains or is inside one of ``inputs``.

    Parameters
    ----------
    output : str or os.PathLike
        The path a command is about to write (file or folder).
    inputs : iterable of str, os.PathLike or None
        Paths the command reads while it writes (files, cache folders, globs); None and
        URIs (``s3://...``) are skipped.
    option : str
        How the output was given, for the message.

    Raises
    ------
    ParameterError
        Naming the output and the input it would destroy.
    """
    if output is None or _is_uri(os.fspath(output)):
        return
    out = _resolved(output)
    for given in inputs:
        if given is None or not isinstance(given, (str, os.PathLike)):
            continue
        for path in _expand(given):
            src = _resolved(path)
            if out == src:
                why = "is the input"
            elif _within(out, src):
                why = "is inside the input"
            elif _within(src, out):
                why = "contains the input"
            else:
                continue
            raise ParameterError(f"{option} {os.fspath(output)} {why} {os.fspath(given)}; "
                                 f"writing there would destroy it: choose another output "
                                 f"path")


def _umask():
    # /proc gives it without changing it (os.umask is process-wide, racy with threads).
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def output_mode(path):
    """Permission bits a file written at ``path`` should get: those of the file it
    replaces, else ``0o666`` less the umask."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        return 0o666 & ~_umask()


def describe_write_error(path, exc, n_bytes=None):
    """One line for an ``OSError`` met writing ``path`` (disk full, quota, permission)."""
    need = "" if n_bytes is None else f" ({n_bytes:,} bytes needed)"
    if exc.errno in SPACE_ERRNOS:
        return (
            f"cannot write {path}: no space left (disk full, quota or file size limit){need}"
        )
    return f"cannot write {path}: {exc.strerror or exc}{need}"


@contextlib.contextmanager
def atomic_output(path, suffix="", n_bytes=None):
    """Yield a temporary path next to ``path``; rename it over ``path`` on success.

    Parameters
    ----------
    path : str or os.PathLike
        The final file. Its folder must exist.
    suffix : str
        Ending of the temporary name (writers that pick a format by extension need it).
    n_bytes : int, optional
        Size of what is written, when known, for the disk-full message.

    The temporary is removed when the block raises. An ``OSError`` while writing or
    renaming becomes :class:`OutputError` naming ``path``; the file at ``path`` is then
    untouched.
    """
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}{suffix}")
    mode = output_mode(path)
    try:
        yield tmp
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as exc:
        # Only the writing's own faults: a read error of an input is the caller's to name.
        if isinstance(exc, OocboostError) or not (
                exc.errno in SPACE_ERRNOS or exc.filename in (tmp, path)):
            raise
        raise OutputError(describe_write_error(path, exc, n_bytes)) from exc
    finally:
        with contextlib.suppress(OSError):
            os.remove(tmp)


def write_text_atomic(path, text):
    """Write ``text`` (UTF-8) to ``path`` whole or not at all, flushed to disk."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all, flushed to disk."""
    with atomic_output(path, n_bytes=len(data)) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
