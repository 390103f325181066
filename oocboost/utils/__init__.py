"""Process-wide helpers every layer may use: sizes, this process's RSS, peak-RSS
measurement of a subprocess (tests, bench, tools), thread limits and progress bars.
Imports nothing of oocboost but ``errors`` and ``common``."""
