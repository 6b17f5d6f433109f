"""Compiled (numba) kernels for CODuel's hot path: one click into a mixture belief, the pair
rules, batches of Laplace fits, and the recalibration fit.

The kernels are the implementation every policy runs; nothing switches to another at run time.
The library's own functions over them (``inference.mixture_belief.update_belief``,
``inference.laplace.laplace_fit_batch``, ``inference.recalibration_fit.fit_recalibration_map``) run
them. Each is checked against a plain NumPy statement of the same computation (``inference.reference``,
``online.lookahead_reference``, closed forms in tests/inference/test_population.py): same Newton
iterations, same tolerances, same tie-breaks, agreeing to rounding (tests/inference/test_kernels.py);
the convergence kernels are checked against ArviZ (tests/inference/test_convergence.py). Kernels
allocate and return new arrays and never write to their inputs, except `surrogate_estep`, which
updates the per-session buffers of a population its caller has just copied (so the functional core
stays pure), and the convergence kernels and the population sampler's moves, which write into
arrays their callers hand them for that.

Why compiled loops and not JAX: shapes are tiny (17 components, d = 7, 6 personas), and
XLA on CPU spends more on dispatch than on the arithmetic (NOTES-inference.md: a jitted
JAX prototype of this learner was 2.5-2.7x slower than a numba one). Hand-written 7x7
Cholesky beats LAPACK calls at this size.

Components are fixed slots; `active[c]` says which hold a component. Inactive slots are
skipped everywhere (their log weight is -inf).
"""
from inference.kernels._scalar import click_mode, probit_log_predictive
from inference.kernels.belief import (coduel_pair, greedy_pair, lookahead_bank, lookahead_pair,
                                     lookahead_scores, mixture_greedy, mixture_update, recalibrated, update_both)
from inference.kernels.belief_updates import belief_update, coduel_click, coduel_click_belief
from inference.kernels.change_point import mixture_log_evidence, run_posterior, type_run_evidence
from inference.kernels.component_information import component_information
from inference.kernels.laplace import laplace_units, surrogate_estep, surrogate_units
from inference.kernels.linalg import spd_factors, spd_logdet_quad
from inference.kernels.recalibration import recalibration_newton

__all__ = ["click_mode", "probit_log_predictive",
           "belief_update", "component_information", "coduel_click", "coduel_click_belief", "coduel_pair", "greedy_pair", "lookahead_bank", "lookahead_pair", "lookahead_scores",
           "mixture_greedy", "mixture_update", "recalibrated",
           "update_both", "laplace_units", "surrogate_estep", "surrogate_units", "spd_factors", "spd_logdet_quad",
           "recalibration_newton", "mixture_log_evidence", "run_posterior", "type_run_evidence"]
