"""Decision streams (Ignatov and Ignatov 2017)."""
