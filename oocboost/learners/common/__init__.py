"""The toolkit every learner shares (no learner imports another learner):

- :mod:`.data`: open the training cache, its classes and task, the label pass, the empty
  model;
- :mod:`.validate`: integer, number, count-or-fraction and seed parameters;
- :mod:`.cart_config`: scikit-learn-style CART settings (criterion, sampling, stopping
  rules) resolved into a :class:`~.cart_config.ForestConfig`, for every learner that grows
  CART trees (forests, AdaBoost's weak trees, decision streams);
- :mod:`.cart_policy`: the CART split policy for several trees grown in one pass;
- :mod:`.tree_features`: the features each tree of an ensemble grows on.
"""
