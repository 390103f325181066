"""``python -m oocboost``: the same command line as ``oocboost``."""
import sys

from .cli import main

sys.exit(main())
