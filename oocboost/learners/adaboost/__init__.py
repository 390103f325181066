"""AdaBoost (SAMME, SAMME.R, AdaBoost.R2) on the shared grower."""
