"""Numerical settings shared by the NumPy code and the compiled kernels: one source for each.

This module imports nothing from the project, so every module of ``inference`` (and
``inference.kernels``) can import from it without an import cycle.
"""

# The one-click Newton (``inference.laplace.click_mode`` and its compiled twin).
NEWTON_ITERS = 100
NEWTON_RTOL = 1e-12

# CODuel's population belief (``inference.population``).
EM_ITERS = 1
REFRESH = 8
EXACT_MIN = 1e-3
COV_RIDGE = 1e-2             # added to every learned component's covariance (keeps it away from a collapse)
RESP_FLOOR = 1e-12           # responsibilities below this are set to 0 and the unit's covariance is not stored
MIN_SUPPORT = 0.5

# The change-point view of the population (``inference.change_point``): the sessions it looks back over, and the
# widths (variance per coordinate, logits^2) a new type's users may have about its mean (sd 0.32, 0.63, 1.26).
CHANGE_WINDOW = 50
CHANGE_WIDTHS = (0.1, 0.4, 1.6)
CHANGE_MIN_SESSIONS = 2      # users who must agree before the recent ones count as a new type
CHANGE_MIN_GAINS = 10        # completed sessions whose gains make the population's reference before a drop is read

# The lookahead pair rule (``online.lookahead_reference`` and ``inference.kernels.belief``).
PRUNE_NATS = 20.0            # components under exp(-20) of the heaviest are left out
LOOKAHEAD_RTOL = 1e-6        # only means after a hypothetical click are needed

# The population model's exact sampler: the users' proposals' defensive part, its share and scale.
WIDE_SHARE = 0.1
WIDE_SCALE = 3.0

# The competitors' ridge logistic estimate (``inference.estimators.ridge_logistic``, CoLSTIM, COLDB): Newton stops
# at a step under this in every coordinate, or after this many steps.
RIDGE_LOGISTIC_TOL = 1e-8
RIDGE_LOGISTIC_ITERS = 25

# The kernels' Newton solvers' backtracking (``inference.kernels.line_search``): a step is halved while
# the objective rises by more than this relative amount, down to this step length.
BACKTRACK_RTOL = 1e-10
BACKTRACK_MIN_STEP = 1e-10

# The online beliefs (``inference.online_beliefs``), coded in the kernels by their index here.
BELIEFS = ("laplace", "adf", "laplace-is", "ep", "ep-corrected")
SESSION_BELIEFS = ("laplace-is", "ep", "ep-corrected")   # the beliefs that reread the session's clicks and its prior
EP_BELIEFS = ("ep", "ep-corrected")     # the beliefs that keep expectation propagation's sites in the learner's state
EP_PASSES = 2                # expectation propagation's passes over the session's clicks (the first is ADF)
EP_NODES = 10                # adaptive Gauss-Hermite nodes for one EP site's tilted moments (GH_NODES: ADF's)
EP_HERMITE_ORDER = 4         # the tilted distributions' Hermite moments EP's pairwise correction reads (orders 1..)
EP_MIN_WEIGHT = 1e-2         # components lighter than this before a click take the ADF step (no refit)
GH_NODES = 24                # adaptive Gauss-Hermite nodes for one click's tilted moments (assumed-density filtering)
IS_DRAWS = 256               # draws per component of the importance-corrected Laplace belief (antithetic pairs)
IS_SCALE = 1.2               # the proposal: the Laplace step's Gaussian widened by this factor in sd
IS_SEED = 20261203           # the fixed base draws' seed: the belief is a deterministic function of the clicks
IS_MIN_WEIGHT = 1e-3          # components lighter than this before a click keep the Laplace step (no draws)
KHAT_TRUST = 0.7             # PSIS k-hat above which importance weights are not trusted (Laplace kept)
