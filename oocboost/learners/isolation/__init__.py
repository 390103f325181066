"""Isolation forests (Liu, Ting and Zhou 2008), scikit-learn's ``IsolationForest``: the
rows of each tree are gathered in one pass over the cache and the trees grown from them on
the shared grower (``train.py``)."""
