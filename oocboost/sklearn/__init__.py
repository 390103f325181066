"""scikit-learn style estimators over the learners: they translate parameters and data,
and hold no training loop of their own."""
