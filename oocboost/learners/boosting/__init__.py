"""Gradient boosting: the rounds on the shared grower, XGBoost-style ``train`` with its
callbacks and parameters."""
