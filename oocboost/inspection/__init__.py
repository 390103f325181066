"""Looking into fitted models: trees as text, permutation importance (and, to come,
partial dependence and plots). Above the estimators: it takes them as they are."""
