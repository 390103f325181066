"""MARS terms: products of hinge functions on the cache's bin edges (the bins'
representative values, ``model.mars.representatives``, stand for the raw values)."""
from ...model.mars import flat_terms


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
        return flat_terms(self.hinges)

    def to_list(self):
        return [[list(h) for h in term] for term in self.hinges]
