"""sklearn/validation.py: the feature-name warnings scikit-learn gives when the data to
predict names its columns and the training data did not (or the reverse), with its
words, checked against scikit-learn's own estimator on the same data."""
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeRegressor as SkTree

import oocboost


def _frame(n=200):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["age", "income", "score"])
    return frame, frame["age"].to_numpy() * 2


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)
            and "feature names" in str(w.message)]


@pytest.mark.parametrize("make", [
    lambda: oocboost.GradientBoostingRegressor(n_estimators=2, max_depth=2),
    lambda: oocboost.DecisionTreeRegressor(max_depth=2),
])
def test_the_feature_name_warnings_are_scikit_learns(make):
    frame, y = _frame()
    ours = make().fit(frame, y)
    theirs = SkTree(max_depth=2).fit(frame, y)
    for X in (frame.to_numpy(), frame):
        expected = [m.replace("DecisionTreeRegressor", type(ours).__name__)
                    for m in _warnings(lambda: theirs.predict(X))]
        assert _warnings(lambda: ours.predict(X)) == expected
    assert _warnings(lambda: ours.predict(frame.to_numpy()))     # the check did warn
    unnamed = make().fit(frame.to_numpy(), y)
    theirs = SkTree(max_depth=2).fit(frame.to_numpy(), y)
    # columns named as an array's features are read by name (others are refused:
    # oocboost matches a DataFrame's columns by name, scikit-learn by position)
    renamed = frame.set_axis(["f0", "f1", "f2"], axis=1)
    expected = [m.replace("DecisionTreeRegressor", type(unnamed).__name__)
                for m in _warnings(lambda: theirs.predict(renamed))]
    assert expected and _warnings(lambda: unnamed.predict(renamed)) == expected
    assert _warnings(lambda: unnamed.predict(frame.to_numpy())) == []
