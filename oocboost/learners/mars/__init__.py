"""MARS (Friedman 1991), trained out of core."""
