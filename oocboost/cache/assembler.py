"""Pass 2's last step before the store: binned batches cut into blocks of ``block_rows``."""
import numpy as np

from ..common import Y_DTYPE


class BlockAssembler:
    """Cuts a stream of binned batches into blocks of exactly ``block_rows`` rows."""

    def __init__(self, writer, n_features, block_rows, dtype, has_label, has_weight,
                 n_label_columns=1, n_margin_columns=0):
        self.writer = writer
        self.block_rows = block_rows
        self.codes = np.empty((n_features, block_rows), dtype=dtype)
        shape = block_rows if n_label_columns == 1 else (block_rows, n_label_columns)
        self.label = np.empty(shape, Y_DTYPE) if has_label else None
        self.weight = np.empty(block_rows, Y_DTYPE) if has_weight else None
        self.base_margin = (np.empty((block_rows, n_margin_columns), np.float64)
                            if n_margin_columns else None)
        self.filled = 0
        self.n_blocks = 0

    def add(self, codes, label, weight, base_margin=None):
        n = codes.shape[1]
        done = 0
        while done < n:
            take = min(self.block_rows - self.filled, n - done)
            dst = slice(self.filled, self.filled + take)
            src = slice(done, done + take)
            self.codes[:, dst] = codes[:, src]
            if self.label is not None:
                self.label[dst] = label[src]
            if self.weight is not None:
                self.weight[dst] = weight[src]
            if self.base_margin is not None:
                self.base_margin[dst] = base_margin[src].reshape(take, -1)
            self.filled += take
            done += take
            if self.filled == self.block_rows:
                self.flush()

    def flush(self):
        if self.filled == 0:
            return
        k = self.filled
        self.writer.write_block(
            np.ascontiguousarray(self.codes[:, :k]),
            None if self.label is None else self.label[:k].copy(),
            None if self.weight is None else self.weight[:k].copy(),
            None if self.base_margin is None else self.base_margin[:k].copy())
        self.filled = 0
        self.n_blocks += 1
