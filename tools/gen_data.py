"""``python -m tools.gen_data``: the synthetic data generator's command line.

The generator lives in the package (``oocboost.datasets``) so that ``oocboost demo``
works from an installed package; see its docstring for the columns and determinism.
"""
import sys

from oocboost.datasets import (  # noqa: F401
    FORMATS,
    TASKS,
    GeneratedData,
    generate,
    generate_arrays,
    iter_chunks,
    main,
)

if __name__ == "__main__":
    sys.exit(main())
