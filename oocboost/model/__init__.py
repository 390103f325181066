"""What a trained model is and how it predicts: tree arrays, the ``Model`` and its
validated JSON format, objectives (link functions, default metrics and the gradients
learners fit), metrics, prediction over arrays, caches and files, importances."""
