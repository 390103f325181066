"""On-disk cache of binned data: a folder with ``manifest.json`` and compressed blocks.

``CacheWriter`` builds one atomically; ``Cache`` opens, checks and streams it.
Backends: Arrow IPC (default, one file per block) and HDF5 (one chunked file).
"""
from .reader import Block, Cache
from .writer import CacheWriter

__all__ = ["Block", "Cache", "CacheWriter"]
