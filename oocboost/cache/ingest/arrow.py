"""Arrow IPC files and streams (Feather v2) read batch by batch from a memory map."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc

from ...errors import InputError
from .source import ArrowBatchSource, file_fingerprint, slice_batches


class ArrowIpcSource(ArrowBatchSource):
    """An Arrow IPC file (magic ``ARROW1``, Feather v2) or stream.

    The file is memory-mapped, so uncompressed batches are zero-copy; each stored batch is
    sliced into pieces of at most ``batch_rows`` rows.
    """

    def __init__(self, path, *, stream=False, label=None, weight=None, drop=(),
                 categorical="auto", batch_rows=65536, group=None,
                 base_margin=None, on_bad_rows="error", numeric_text=None):
        super().__init__()
        self.name = path
        self._stream = stream
        self._batch_rows = batch_rows
        with self._open() as reader:
            schema = reader.schema
        self._init_schema(schema, label=label, weight=weight, drop=drop,
                          categorical=categorical, group=group,
                          base_margin=base_margin, first_batch=self._first_batch,
                          on_bad_rows=on_bad_rows, numeric_text=numeric_text)

    def _first_batch(self):
        with self._open() as reader:
            return next(iter(self._stored_batches(reader)), None)

    def _open(self):
        try:
            source = pa.memory_map(self.name, "r")
            if self._stream:
                return ipc.open_stream(source)
            return ipc.open_file(source)
        except (pa.ArrowException, OSError) as e:
            kind = "stream" if self._stream else "file"
            raise InputError(f"{self.name}: cannot read as an Arrow IPC {kind} / Feather v2 "
                             f"file ({e})") from None

    def _stored_batches(self, reader):
        if self._stream:
            yield from reader
        else:
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

    def _record_batches(self):
        with self._open() as reader:
            try:
                for rb in self._stored_batches(reader):
                    rb = rb.select(self._columns)
                    yield from slice_batches(rb, self._batch_rows)
            except (pa.ArrowException, OSError) as e:
                raise InputError(f"{self.name}: Arrow file is corrupt or truncated "
                                 f"({e})") from None

    def fingerprint(self):
        return file_fingerprint(self.name)
