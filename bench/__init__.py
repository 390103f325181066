"""Benchmarks of oocboost against XGBoost, LightGBM and scikit-learn.

Run ``python -m bench --help``. Every measured figure comes from its own subprocess
(:mod:`bench.jobs`) so that each has its own peak RSS; :mod:`bench.run` prepares the data,
runs the jobs and writes ``bench/out/results-<suite>.json``; :mod:`bench.report` turns
those into ``bench/RESULTS.md`` and PNG plots.
"""
