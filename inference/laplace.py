"""Laplace approximations for the Bayesian logistic (BTL) click model, in float64.

Click model: P(first wins) = sigmoid(theta . z), z = phi_first - phi_second.

`laplace_update` is the online step shared by every learner: given a Gaussian belief
N(m, S) and one click (z, y), it returns the Laplace approximation of
N(theta; m, S) * Bernoulli(y; sigmoid(theta . z)). The posterior mode lies on the line
m + S z c, so it reduces to a scalar Newton problem in eta = z . theta, and the new
covariance is a rank-one (Sherman-Morrison) downdate. Pure functions of arrays.

`laplace_fit` is the batch version (mode and Hessian of prior x all clicks), the
reference the online step approximates when clicks arrive one at a time.
"""
from __future__ import annotations

import math

import numpy as np

from inference.constants import NEWTON_ITERS, NEWTON_RTOL
from inference.kernels._scalar import click_mode as kernel_click_mode
from inference.kernels._scalar import click_modes
from inference.kernels.laplace import laplace_units
from inference.kernels.linalg import spd_factors
from tdmodels.errors import InputError


def sigmoid(x):
    """The logistic function, 1 / (1 + exp(-x)), elementwise (tanh form: no overflow)."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def click_mode(a, s, y, iters: int = NEWTON_ITERS, rtol: float = NEWTON_RTOL):
    """Mode of N(eta; a, s) x Bernoulli(y; sigmoid(eta)), elementwise over arrays a, s (s >= 0).

    g(eta) = y - sigmoid(eta) - (eta - a)/s is strictly decreasing with its root in
    [a - s, a] (y = 0) or [a, a + s] (y = 1). Safeguarded Newton: a Newton step is taken
    when it stays inside the bracket and at most halves the previous step, else bisection
    (plain Newton two-cycles on flat logistic tails); stops when the Newton step is below
    rtol (1 + |eta|), checked before the bracket test so a converged step on the
    bracket's edge still ends the loop; raises RuntimeError if `iters` steps do not get there.
    One implementation, compiled (``inference.kernels.click_mode``), for scalars and arrays alike.
    """
    y = _click(y, "click_mode")
    if np.ndim(a) == 0 and np.ndim(s) == 0:
        if not (math.isfinite(a) and math.isfinite(s) and s >= 0):
            raise InputError(f"click_mode: the prior mean a={a!r} must be finite and its variance s={s!r} finite, >= 0")
        return kernel_click_mode(float(a), float(s), y, rtol, -1.0, int(iters))
    a, s = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(s, dtype=float))
    if not (np.isfinite(a).all() and np.isfinite(s).all() and (s >= 0).all()):
        raise InputError("click_mode: every prior mean a must be finite and every variance s finite and >= 0")
    return click_modes(np.ascontiguousarray(a).ravel(), np.ascontiguousarray(s).ravel(), y, rtol,
                       int(iters)).reshape(a.shape)


def _click(y, where: str) -> int:
    """A click as 0 or 1 (1: the first shown won), or one InputError: 0.5, 2, True-like strings are not clicks."""
    if y.__class__ is int and (y == 0 or y == 1):        # the common case, cheaply (a bool's class is bool)
        return y
    if isinstance(y, (bool, np.bool_, str, bytes)) or np.ndim(y) != 0 or y not in (0, 1):
        raise InputError(f"{where}: a click y is 0 or 1, got {y!r}")
    return int(y)


def laplace_update(mean: np.ndarray, cov: np.ndarray, z: np.ndarray, y: float,
                   iters: int = NEWTON_ITERS) -> tuple[np.ndarray, np.ndarray, float]:
    """One click into a Gaussian belief.

    mean [d], cov [d, d], z [d] feature difference, y in {0, 1} (1: first shown won).
    Returns (new mean [d], new cov [d, d], log of the plug-in predictive probability of y,
    sigmoid(z . mean), before the update).
    """
    y = _click(y, "laplace_update")
    d = getattr(mean, "shape", None)
    if d is None or len(d) != 1 or getattr(z, "shape", None) != d or getattr(cov, "shape", None) != d * 2:
        raise InputError(f"laplace_update: mean {np.shape(mean)}, cov {np.shape(cov)} and z {np.shape(z)} must be "
                         f"arrays [d], [d, d] and [d]")
    Sz = cov @ z
    s = float(z @ Sz)                     # prior variance of eta
    a = float(z @ mean)                   # prior mean of eta
    if not (math.isfinite(a) and math.isfinite(s)) or (s < 0.0 and s < -1e-12 * (1.0 + float(np.abs(Sz).max()))):
        raise InputError(f"laplace_update: z . mean = {a!r} and z' cov z = {s!r} must be finite, the second >= 0 "
                         f"(a covariance is positive semi-definite)")
    p0 = sigmoid(a)
    logpred = np.log(p0 if y else 1.0 - p0)
    eta = float(kernel_click_mode(a, max(s, 0.0), y, NEWTON_RTOL, -1.0, int(iters)))    # click_mode, checked above
    p = sigmoid(eta)
    w = p * (1.0 - p)
    new_mean = mean + Sz * ((eta - a) / s if s > 0.0 else 0.0)
    new_cov = cov - np.outer(Sz, Sz) * (w / (1.0 + w * s))
    return new_mean, new_cov, float(logpred)


def laplace_fit(prior_mean: np.ndarray, prior_cov: np.ndarray, Z: np.ndarray, y: np.ndarray,
                iters: int = 50, tol: float = 1e-12) -> tuple[np.ndarray, np.ndarray]:
    """Batch Laplace: mode and inverse Hessian of N(prior) x prod_t Bernoulli(y_t; sigmoid(theta . z_t)).

    Z [n, d], y [n]. Returns (mode [d], cov [d, d]); `laplace_fit_batch` on one unit.
    """
    mode, cov, _ = laplace_fit_batch(np.asarray(prior_mean, float)[None], np.asarray(prior_cov, float)[None],
                                     np.asarray(Z, float)[None], np.asarray(y)[None], iters, tol)
    return mode[0], cov[0]


def log_sigmoid(x):
    """log sigmoid(x), elementwise and stable for large |x|."""
    return -np.logaddexp(0.0, -x)


def laplace_fit_batch(prior_means: np.ndarray, prior_covs: np.ndarray, Z: np.ndarray, y: np.ndarray,
                      iters: int = 50, tol: float = 1e-10, init: np.ndarray | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`laplace_fit` for B independent units at once, plus the Laplace log evidence of each.

    prior_means [B, d], prior_covs [B, d, d], Z [B, S, d], y [B, S]. Returns (modes [B, d],
    covs [B, d, d], log_evidence [B]) with log p(y | unit) ~= log p(y | mode) + log N(mode;
    prior) + d/2 log 2 pi + 1/2 log det cov. Newton with backtracking until a step is under `tol`
    (the compiled ``inference.kernels.laplace_units``); raises RuntimeError naming the units that did
    not converge. `init` [B, d] warm-starts Newton (default: the prior means).
    """
    prior_means = np.ascontiguousarray(prior_means, dtype=float)
    prior_covs = np.ascontiguousarray(prior_covs, dtype=float)
    if np.asarray(y).dtype.kind not in "biuf":
        raise InputError(f"batch Laplace: clicks y must be numbers 0 or 1, got dtype {np.asarray(y).dtype}")
    Z, y = np.ascontiguousarray(Z, dtype=float), np.ascontiguousarray(y, dtype=float)
    start = prior_means if init is None else np.asarray(init, dtype=float)
    if Z.ndim != 3 or prior_means.ndim != 2:
        raise InputError(f"batch Laplace: Z must be [B, S, d] and prior_means [B, d], got {Z.shape} and {prior_means.shape}")
    B, S, d = Z.shape
    for name, a, shape in (("prior_means", prior_means, (B, d)), ("prior_covs", prior_covs, (B, d, d)),
                           ("y", y, (B, S)), ("init", start, (B, d))):
        if a.shape != shape:
            raise InputError(f"batch Laplace: {name} has shape {a.shape}, expected {shape} for Z {Z.shape}")
        if not np.isfinite(a).all():
            raise InputError(f"batch Laplace: {name} has non-finite entries")
    if not np.isfinite(Z).all():
        raise InputError("batch Laplace: Z has non-finite entries")
    if not ((y == 0.0) | (y == 1.0)).all():
        raise InputError(f"batch Laplace: clicks y must be 0 or 1, got {np.unique(y[(y != 0.0) & (y != 1.0)])[:5]}")
    precs, logdets = spd_factors(prior_covs)
    if not (np.isfinite(precs).all() and np.isfinite(logdets).all()):
        raise InputError("batch Laplace: a prior covariance is not symmetric positive definite")
    units = np.arange(B)
    modes, covs, log_ev, ok = laplace_units(Z, y, units, units, prior_means, precs, logdets,
                                            np.array(start, dtype=float), iters, tol)
    if not ok.all():
        raise RuntimeError(f"batch Laplace: Newton did not converge for unit(s) {np.flatnonzero(~ok)[:10].tolist()}")
    return modes, covs, log_ev
