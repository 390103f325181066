"""The package's lazy exports (oocboost/__init__.py): ``import oocboost`` loads neither
numba, pyarrow nor any learner; a name loads what it needs on first use; ``__all__``
and ``dir()`` list every estimator of every registered learner."""
import subprocess
import sys

import oocboost
from oocboost.learners import registry


def test_import_loads_no_engine_and_no_learner():
    code = ("import sys, oocboost\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('numba', 'pyarrow')\n"
            "         or m.startswith(('oocboost.learners.', 'oocboost.kernels'))]\n"
            "print(heavy)\n"
            "oocboost.build_cache\n"
            "print('oocboost.cache.build' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"


def test_all_and_dir_list_every_estimator_and_error():
    names = set(oocboost.__all__)
    for spec in registry.specs():
        assert set(spec.estimators) <= names
    assert {"build_cache", "train", "Model", "ParameterError", "OocboostError"} <= names
    assert names <= set(dir(oocboost))
    namespace = {}
    exec("from oocboost import *", namespace)
    assert namespace["GradientBoostingClassifier"] is oocboost.GradientBoostingClassifier
