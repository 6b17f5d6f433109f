"""The one backtracking line search of the kernels' Newton solvers.

A solver states its problem as a NamedTuple (its data, and the work arrays its objective fills at the
point evaluated) and registers how to evaluate it, ``@overload(objective)`` in its own module; then
``backtrack`` halves the Newton step until the objective does not rise beyond rounding. The dispatch
on the problem's type happens when a kernel is compiled, so the loop is written once and compiled
into each solver:

    LogisticPosterior      one user's negative log posterior, N(m, P^-1) x the clicks' likelihood
                           (``inference.kernels.laplace``)
    RidgeLogistic          the same with its gradient and Hessian filled in the same pass, for the
                           competitors' ridge logistic estimate (``inference.kernels.ridge_logistic``)
    RecalibrationLoss      the recalibration map's penalised negative log likelihood
                           (``inference.kernels.recalibration``)
    ComponentLocation      minus the log density of a component's location given its members'
                           deviations (``inference.kernels.gibbs_moves``)
"""
from __future__ import annotations

from numba import njit

from inference.constants import BACKTRACK_MIN_STEP, BACKTRACK_RTOL


def objective(problem, x):
    """The value a Newton solver minimises at x (compiled code only; see the module docstring)."""
    raise NotImplementedError("objective is compiled into the kernels' Newton solvers")


@njit    # not cached itself: each solver's cached code holds its own compiled copy, so an edit to a
def backtrack(problem, x, step, f, trial):    # solver's objective, in the solver's file, reaches its search
    """x + t step for t = 1, 1/2, 1/4, ... until the objective there does not exceed f by more than
    rounding (Newton alone can cycle on flat logistic tails), or t reaches its floor. Writes the point
    to `trial`; returns (the objective there, t)."""
    t = 1.0
    while True:
        for i in range(x.shape[0]):
            trial[i] = x[i] + t * step[i]
        f_new = objective(problem, trial)
        if f_new > f + BACKTRACK_RTOL * (1.0 + abs(f)) and t > BACKTRACK_MIN_STEP:
            t *= 0.5
        else:
            return f_new, t
