"""From a cache to a tree: the training memory planner, per-row state, the block-pass
driver, the grower, its growth policies and pruning. Learners feed it statistics; it
never knows which algorithm it serves."""
