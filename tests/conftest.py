"""Suite-wide settings."""
import os

# No automatic warm-up processes in tests (kernels/warmup.py): they would race the
# suite's own workers for the cores. tests/kernels/test_warmup.py turns it on itself.
os.environ.setdefault("OOCBOOST_WARMUP", "0")
