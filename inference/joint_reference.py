"""The former per-user reference: every unit in one NUTS run, one step size and one tree depth for all.

Kept to compare the per-unit reference (``inference.user_reference.fit_users``) with it on runs where both
are healthy, and for what it costs (``benchmarks``). Every unit shares the sampler's adaptation, so the
hardest unit sets the pace of all, and memory holds every unit's draws at once.
"""
from __future__ import annotations

import logging
import time
import warnings

import arviz as az
import numpy as np
import xarray as xr
from scipy.special import logsumexp

from inference.evidence import MAX_KHAT, importance_log_evidence
from inference.health import check_health, fit_health, record_health
from inference.laplace import laplace_fit_batch
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP, check_sampler_settings, run_nuts
from inference.unit_model import whiten_units, whitened_units
from inference.user_reference import DEFAULT_PRUNE, ImportanceWarning, check_design, per_user_prior
from tdmodels.errors import check_flag
from tdmodels.priors import MixturePrior

log = logging.getLogger(__name__)


def fit_users_joint(z, y, prior: MixturePrior, seed: int = 0, chains: int = DEFAULT_CHAINS,
              warmup: int = DEFAULT_WARMUP, draws: int = DEFAULT_DRAWS, prune: float = DEFAULT_PRUNE,
              is_draws: int = 4000, strict: bool = False) -> az.InferenceData:
    """The former reference: one NUTS over every (user, component) unit of `prior` (shared or per user).

    z [U, S, d], y [U, S]. Health (R-hat, divergences, E-BFMI, ESS) is checked and stored
    in sample_stats attrs; a miss warns (FitHealthWarning) or, with strict, raises.
    """
    z, y = check_design(z, y)
    strict = check_flag("strict", strict)            # here, not after the sampling
    check_sampler_settings(seed, chains, warmup, draws)
    U, S, d = z.shape
    w, m, C = per_user_prior(prior, U, d)
    K = w.shape[1]
    # Laplace inside every (user, component): preconditioner, pruning, and a comparison figure.
    flat = lambda a: a.reshape((U * K,) + a.shape[2:])  # noqa: E731
    zz, yy = np.repeat(z, K, 0), np.repeat(y, K, 0)
    mode, cov, lap_ev = laplace_fit_batch(flat(m), flat(C), zz, yy)
    logw = np.log(np.maximum(w, 1e-300)) + lap_ev.reshape(U, K)
    r_lap = np.exp(logw - logsumexp(logw, axis=1, keepdims=True))
    keep = (r_lap >= prune) | (r_lap == r_lap.max(1, keepdims=True))
    keep &= w > 0
    pruned_mass = np.where(keep, 0.0, r_lap).sum(1)
    uu, kk = np.nonzero(keep)
    sel = uu * K + kk
    log.info("per-user reference: %d users x %d components -> %d units after pruning at %g", U, K, len(sel), prune)
    t0 = time.perf_counter()
    units = whiten_units(zz[sel], flat(m)[sel], flat(C)[sel], mode[sel], np.linalg.cholesky(cov[sel]))
    idata = run_nuts(whitened_units, units, y=yy[sel], seed=seed, chains=chains, warmup=warmup, draws=draws,
                     dims={"theta": ["unit", "dim"]}, drop=("xi",))
    log.info("NUTS over %d units: %.1f s", len(sel), time.perf_counter() - t0)
    idata.posterior = idata.posterior.assign_coords(unit_user=("unit", uu), unit_component=("unit", kk))
    health = check_health(fit_health(idata, ["theta"]), f"per-user NUTS reference ({len(sel)} units)", strict)
    record_health(idata, health)

    # Exact component weights: importance-sampled evidence per unit.
    th = idata.posterior["theta"].values                            # [chain, draw, unit, d]
    unit_draws = np.moveaxis(th.reshape(-1, len(sel), d), 0, 1)     # [unit, M, d]
    if K > 1:
        log_ev, khat = importance_log_evidence(unit_draws, flat(m)[sel], flat(C)[sel], zz[sel], yy[sel],
                                               n=is_draws, seed=seed)
    else:   # one component: its weight is 1 whatever the evidence; use Laplace's figure
        log_ev, khat = lap_ev[sel], np.zeros(len(sel))
    lw = np.log(w[uu, kk]) + log_ev
    post_w = np.empty(len(sel))
    for u in range(U):
        i = uu == u
        post_w[i] = np.exp(lw[i] - logsumexp(lw[i]))
    if K > 1 and np.any(khat > MAX_KHAT):
        warnings.warn(f"importance evidence unreliable for {int(np.sum(khat > MAX_KHAT))} unit(s) "
                      f"(max k-hat {khat.max():.2f} > {MAX_KHAT})", ImportanceWarning, stacklevel=2)
    units = xr.Dataset(
        {"unit_user": ("unit", uu), "unit_component": ("unit", kk), "prior_weight": ("unit", w[uu, kk]),
         "log_evidence": ("unit", log_ev), "log_evidence_laplace": ("unit", lap_ev[sel]), "khat": ("unit", khat),
         "posterior_weight": ("unit", post_w), "laplace_weight": ("unit", r_lap[uu, kk]),
         "pruned_mass": ("user", pruned_mass)},
        attrs={"prune": prune, "is_draws": is_draws, "method": "component-conditional NUTS + importance evidence"})
    data = {"posterior": idata.posterior, "sample_stats": idata.sample_stats,
            "observed_data": xr.Dataset({"y": (("user", "round"), y)}),
            "constant_data": xr.Dataset({"z": (("user", "round", "dim"), z),
                                         "prior_weights": (("user", "component"), w),
                                         "prior_means": (("user", "component", "dim"), m),
                                         "prior_covs": (("user", "component", "dim", "dim2"), C)}),
            "units": units}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "units" is a group outside the ArviZ schema
        idata = az.InferenceData(**data)
    return idata
