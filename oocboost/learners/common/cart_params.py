"""The declarations of the parameters CART-grown learners share (scikit-learn's names and
defaults): forests and trees, AdaBoost's weak trees, decision streams. Each learner's
``params.py`` picks those it takes into its :class:`~oocboost.utils.params.ParamSpec`."""
from ...utils.params import Param


def _count(name: str, default: int, minimum: int, doc: str) -> Param:
    return Param(name, "any", default, f"{doc}: an int >= {minimum}, or a fraction in (0, 1] "
                                       f"of the rows")


CRITERION = Param("criterion", "str", None, "impurity of a split",
                  default_doc="gini (classification), squared_error (regression); "
                              "classifiers also take gain_ratio (C4.5's)")
SPLITTER = Param("splitter", "choice", None, "best threshold, a random one, or oblique",
                 choices=("best", "random", "oblique"),
                 default_doc="best (random for extra-trees)")
MAX_DEPTH = Param("max_depth", "int", None, "depth limit (None: none)", low=1)
MIN_SAMPLES_SPLIT = _count("min_samples_split", 2, 2, "rows a node needs to split")
MIN_SAMPLES_LEAF = _count("min_samples_leaf", 1, 1, "rows a leaf keeps at least")
MIN_WEIGHT_FRACTION_LEAF = Param("min_weight_fraction_leaf", "float", 0.0,
                                 "share of the weight a leaf keeps at least", low=0.0,
                                 high=0.5)
MAX_FEATURES = Param("max_features", "any", None,
                     "features tried per node: 'sqrt', 'log2', an int, a fraction or None",
                     default_doc="sqrt (forest classifiers), 1.0 (forest regressors), every "
                                 "feature (trees)")
MAX_LEAF_NODES = Param("max_leaf_nodes", "int", None, "leaf limit (best first)", low=2)
MIN_IMPURITY_DECREASE = Param("min_impurity_decrease", "float", 0.0,
                              "smallest weighted impurity decrease of a split", low=0.0)
CLASS_WEIGHT = Param("class_weight", "any", None,
                     "None, 'balanced', 'balanced_subsample' or {class: weight}")
CCP_ALPHA = Param("ccp_alpha", "float", 0.0, "minimal cost-complexity pruning", low=0.0)
N_JOBS = Param("n_jobs", "any", None, "kernel threads (None or -1: every core)",
               aliases=("n_threads",))
PREFETCH = Param("prefetch", "int", None, "blocks read ahead (None: from the memory plan)",
                 low=0)
TASK = Param("task", "choice", None, "classification or regression",
             choices=("classification", "regression"),
             default_doc="inferred from the labels (integers with at most 32 values "
                         "classify) or the objective")
OBJECTIVE = Param("objective", "any", None, "an XGBoost objective name, read for its task "
                                            "(reg:* regression, binary:*/multi:* "
                                            "classification)")
MISSING_VALUES = Param("missing_values", "choice", "learn",
                       "learn a direction per split, or rpart's surrogate splits",
                       choices=("learn", "surrogate"))
MAX_SURROGATES = Param("max_surrogates", "int", 5, "surrogate splits kept per split", low=1)
TREES_PER_PASS = Param("trees_per_pass", "int", None,
                       "trees grown in the same reads of the data (None: from the memory "
                       "plan)", low=1)
LEAVES_PER_PASS = Param("leaves_per_pass", "int", None,
                        "leaves expanded per read with max_leaf_nodes", low=1,
                        default_doc="8 (1 for a decision tree)")
QUANTILE_SAMPLES_LEAF = Param(
    "quantile_samples_leaf", "int", None, "labels each leaf keeps for predict(X, "
    "quantiles=) (a quantile regression forest; None: none)", low=1)
MONOTONIC_CST = Param(
    "monotonic_cst", "any", None, "-1/0/+1 per feature (or a dict by name): the mean, or "
    "the probability of class 1, decreasing/free/increasing in it")
MULTIWAY = Param(
    "multiway", "bool", False, "split a categorical feature into one child per category "
    "(C4.5's and ID3's multiway splits; numeric features stay binary)")
RANDOM_STATE = Param("random_state", "any", None, "seed: None, an int, or a numpy generator",
                     aliases=("seed",), default_doc="0 on the command line, None (a fresh "
                                                    "seed) in the estimators, as "
                                                    "scikit-learn")
VERBOSE = Param("verbose", "int", 0, "0 silent, 1 progress, 2 memory plan", low=0,
                aliases=("verbosity",))
