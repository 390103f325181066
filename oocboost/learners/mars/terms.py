"""MARS terms: products of hinge functions on the cache's bin edges (the bins'
representative values, ``model.mars.representatives``, stand for the raw values)."""
import numpy as np


class Terms:
    """The basis: term 0 the intercept, then products of hinges ``(feature, knot bin,
    knot value, sign)``; sign +1 is ``max(0, x - knot)``, -1 ``max(0, knot - x)``."""

    def __init__(self):
        self.hinges = [[]]

    def __len__(self):
        return len(self.hinges)

    def add(self, parent, feature, knot_bin, knot, sign):
        self.hinges.append(self.hinges[parent] + [(int(feature), int(knot_bin), float(knot),
                                                   int(sign))])
        return len(self.hinges) - 1

    def features_of(self, m):
        return {h[0] for h in self.hinges[m]}

    def degree(self, m):
        return len(self.hinges[m])

    def subset(self, keep):
        out = Terms()
        out.hinges = [self.hinges[m] for m in keep]
        return out

    def flat(self):
        """``(term_offset, hinge_feature, hinge_knot, hinge_sign)`` for the kernels."""
        counts = [len(h) for h in self.hinges]
        offset = np.zeros(len(counts) + 1, np.int64)
        np.cumsum(counts, out=offset[1:])
        every = [h for term in self.hinges for h in term]
        return (offset, np.array([h[0] for h in every], np.int64),
                np.array([h[2] for h in every], np.float64),
                np.array([h[3] for h in every], np.float64))

    def to_list(self):
        return [[list(h) for h in term] for term in self.hinges]
