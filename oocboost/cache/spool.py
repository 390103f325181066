"""The spool of a build: parsed batches of a file or stream written once to a local
Arrow IPC file next to the output (``.oocb-spool-<pid>-*``), read back by pass 2, so text
is parsed once. Removed on success, error or Ctrl-C, and by the next build when a killed
one left it."""
import os
import re
import shutil
import tempfile

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from .ingest.arrow_numpy import float64_numpy
from .ingest.source import ROLES, Batch

_SPOOL_PREFIX = ".oocb-spool-"
_SPOOL_RE = re.compile(re.escape(_SPOOL_PREFIX) + r"(\d+)-")


def clean_stale_spools(directory):
    """Remove spool folders left in ``directory`` by builds whose process is gone."""
    import psutil

    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        m = _SPOOL_RE.match(name)
        if m and int(m.group(1)) != os.getpid() and not psutil.pid_exists(int(m.group(1))):
            shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _float64(values):
    """A NumPy column as an Arrow float64 array over the same memory (NaN stays NaN).
    Not ``pa.array``: its first call imports pandas when installed (0.3-0.5 s that the
    first batch of every build waited for)."""
    if not isinstance(values, np.ndarray):
        return pa.array(values, type=pa.float64())
    values = np.ascontiguousarray(values, dtype=np.float64)
    return pa.Array.from_buffers(pa.float64(), len(values), [None, pa.py_buffer(values)])


class Spool:
    """Parsed batches written once to a local Arrow IPC file, read back in pass 2.

    Read with ordinary file reads, not a memory map: mapped pages would count in the
    process's resident memory and the build's peak RSS would grow with the file.
    """

    def __init__(self, directory):
        clean_stale_spools(directory)
        # The pid in the name lets a later build remove the spool of a killed one.
        self.dir = tempfile.mkdtemp(prefix=f"{_SPOOL_PREFIX}{os.getpid()}-", dir=directory)
        self.path = os.path.join(self.dir, "spool.arrow")
        self._writer = None
        self._sink = None
        self.n_batches = 0

    def write(self, batch):
        names, arrays = [], []
        for name, values in batch.numeric.items():
            names.append("n:" + name)
            arrays.append(_float64(values))
        for name, values in batch.categorical.items():
            names.append("c:" + name)
            arrays.append(values)
        for role in ROLES:
            values = getattr(batch, role)
            if values is None:
                continue
            # a label of k columns is spooled as columns label, label#1, ...
            columns = values.T if values.ndim == 2 else [values]
            for j, column in enumerate(columns):
                names.append(role if j == 0 else f"{role}#{j}")
                arrays.append(_float64(column))
        rb = pa.RecordBatch.from_arrays(arrays, names=names)
        if self._writer is None:
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = ipc.new_file(self._sink, rb.schema)
        self._writer.write_batch(rb)
        self.n_batches += 1

    def close_writer(self):
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
            self._writer = None

    def batches(self):
        if self.n_batches == 0:
            return
        with pa.OSFile(self.path, "rb") as f:
            reader = ipc.open_file(f)
            row_start = 0
            for i in range(reader.num_record_batches):
                rb = reader.get_batch(i)
                numeric, categorical, roles = {}, {}, {}
                for name, col in zip(rb.schema.names, rb.columns):
                    if name.startswith("n:"):
                        numeric[name[2:]] = float64_numpy(col)
                    elif name.startswith("c:"):
                        categorical[name[2:]] = col
                    else:  # a role (label#1, ... for a role's further columns)
                        roles.setdefault(name.split("#")[0], []).append(float64_numpy(col))
                roles = {k: v[0] if len(v) == 1 else np.column_stack(v)
                         for k, v in roles.items()}
                yield Batch(row_start=row_start, n_rows=rb.num_rows, numeric=numeric,
                            categorical=categorical, **roles)
                row_start += rb.num_rows

    def remove(self):
        """Close and delete the spool, whatever state a failed write left it in."""
        try:
            self.close_writer()
        except OSError:
            pass  # a full disk fails the close's flush too: the file goes anyway
        finally:
            self._writer = None
            shutil.rmtree(self.dir, ignore_errors=True)


