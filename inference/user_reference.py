"""Exact per-user posteriors of a whole run under a Gaussian-mixture prior, in one NUTS call.

Users are independent given the prior, and under a mixture prior each user's posterior
is the mixture of the component-conditional posteriors,

    p(theta_u | y_u) = sum_k r_uk p(theta_u | y_u, k),   r_uk ∝ w_uk p(y_u | k).

A joint NUTS over every user under the mixture mixes badly (each posterior is
multimodal and one step size serves all users), so the reference conditions on the
component instead: every kept (user, component) pair is a *unit* with a unimodal
posterior, all units are sampled in one NUTS run, and r_uk comes from an importance-
sampling estimate of p(y_u | k) (``inference.evidence``, PSIS k-hat checked).

Two choices keep this fast without changing what is sampled:
- each unit is sampled as theta = m + L xi with (m, L L^T) its batch-Laplace posterior,
  an exact affine change of variables, precomputed once (``inference.unit_model``);
- components whose Laplace posterior weight for a user is below `prune` (default 1e-3)
  are not sampled for that user; the largest pruned Laplace mass is recorded.

The InferenceData holds ``posterior.theta[chain, draw, unit, dim]`` with coordinates
``unit_user`` and ``unit_component``, the group ``units`` (prior weight, Laplace and
importance log evidence, k-hat, posterior weight per unit), the clicks in
``observed_data`` and the designs and prior in ``constant_data``. `user_draws` turns it
into draws of each user's mixture posterior.
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
from tdmodels.priors import MixturePrior, validate_prior
from tdmodels.errors import InputError

DEFAULT_PRUNE = 1e-3
log = logging.getLogger(__name__)


class ImportanceWarning(UserWarning):
    """An importance-sampling evidence with PSIS k-hat above 0.7."""


def check_design(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validate clicks: z [U, S, d] finite, y [U, S] in {0, 1}."""
    z, y = np.asarray(z, dtype=float), np.asarray(y)
    if z.ndim != 3 or y.shape != z.shape[:2]:
        raise InputError(f"design z must be [users, rounds, dim] and y [users, rounds]; got {z.shape} and {y.shape}")
    if 0 in z.shape:
        raise InputError(f"design z {z.shape}: at least one user, one round and one dimension")
    bad = ~np.isfinite(z).all(-1)
    if bad.any():
        u, t = np.argwhere(bad)[0]
        raise InputError(f"design z has non-finite features ({int(bad.sum())} rows; first at user {u}, round {t})")
    if not np.isin(y, (0, 1)).all():
        raise InputError("clicks y must be 0 or 1")
    return z, y.astype(np.int64)


def per_user_prior(prior: MixturePrior, n_users: int, d: int) -> MixturePrior:
    """Broadcast a shared prior (weights [C]) to one per user (weights [U, C])."""
    prior = validate_prior(prior, d)
    w, m, S = prior
    if w.ndim == 1:
        w, m, S = (np.broadcast_to(a, (n_users,) + a.shape) for a in (w, m, S))
    if w.shape[0] != n_users:
        raise InputError(f"per-user prior has {w.shape[0]} users, the clicks have {n_users}")
    return MixturePrior(np.asarray(w), np.asarray(m), np.asarray(S))


def fit_users(z, y, prior: MixturePrior, seed: int = 0, chains: int = DEFAULT_CHAINS,
              warmup: int = DEFAULT_WARMUP, draws: int = DEFAULT_DRAWS, prune: float = DEFAULT_PRUNE,
              is_draws: int = 4000, strict: bool = False) -> az.InferenceData:
    """NUTS reference posteriors of every user's theta under `prior` (shared or per user).

    z [U, S, d], y [U, S]. Health (R-hat, divergences, E-BFMI, ESS) is checked and stored
    in sample_stats attrs; a miss warns (FitHealthWarning) or, with strict, raises.
    """
    z, y = check_design(z, y)
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
            "constant_data": xr.Dataset({"z": (("user", "round", "dim"), z), "prior_weights": (("user", "component"), w),
                                         "prior_means": (("user", "component", "dim"), m),
                                         "prior_covs": (("user", "component", "dim", "dim2"), C)}),
            "units": units}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "units" is a group outside the ArviZ schema
        idata = az.InferenceData(**data)
    return idata


def user_draws(idata: az.InferenceData, seed: int = 0) -> xr.DataArray:
    """Draws theta[chain, draw, user, dim] of every user's mixture posterior.

    For each user, the draws of its units are mixed by posterior weight: each (chain,
    draw) slot takes the unit chosen by stratified sampling of the weights. A compact reference
    (`compact_reference`) holds these draws already: they are returned as stored (`seed` unused).
    """
    th = idata.posterior["theta"]
    if "user" in th.dims:
        return th.astype(float).transpose("chain", "draw", "user", "dim").rename("theta")
    units = idata["units"]
    n_ch, n_dr = th.sizes["chain"], th.sizes["draw"]
    uu, pw = units["unit_user"].values, units["posterior_weight"].values
    U = int(units.sizes["user"])
    rng = np.random.default_rng(seed)
    out = np.empty((n_ch, n_dr, U, th.sizes["dim"]))
    vals = th.values
    flat = vals.reshape(n_ch * n_dr, vals.shape[2], vals.shape[3])
    for u in range(U):
        idx = np.flatnonzero(uu == u)
        if len(idx) == 1:
            out[:, :, u] = vals[:, :, idx[0]]
            continue
        M = n_ch * n_dr
        strata = (rng.permutation(M) + rng.random(M)) / M
        pick = idx[np.minimum(np.searchsorted(np.cumsum(pw[idx]), strata), len(idx) - 1)]
        out[:, :, u] = flat[np.arange(M), pick].reshape(n_ch, n_dr, -1)
    return xr.DataArray(out, dims=("chain", "draw", "user", "dim"), name="theta")


def compact_reference(idata: az.InferenceData, seed: int = 0) -> az.InferenceData:
    """The reference as stored: each user's mixture draws (`user_draws`) in float32 instead of every unit's
    draws in float64, each unit's posterior mean and covariance added to the `units` group.

    What the checks read is kept whole: every draw of each user's posterior (means, sds and W1 against
    them; float32 rounds a draw by about 6e-8 of its size), the designs, clicks and prior (the exact
    log posterior for k-hat), the component weights and the health figures. What goes is the draws of
    each user's component-conditional posteriors, about 7 units a user under a learned prior, so the
    file shrinks by about 2 x (units per user); their means and covariances stay.
    """
    th = idata.posterior["theta"]
    if "user" in th.dims:
        return idata
    draws = user_draws(idata, seed).astype(np.float32)
    flat = th.values.reshape(-1, th.sizes["unit"], th.sizes["dim"])
    means = flat.mean(0)
    dev = flat - means
    covs = np.einsum("sui,suj->uij", dev, dev) / (len(flat) - 1)
    post = xr.Dataset({"theta": draws}, coords={"chain": th.chain, "draw": th.draw},
                      attrs={**idata.posterior.attrs, "draws": "each user's mixture posterior (float32)", "seed": seed})
    units = idata["units"].assign(unit_mean=(("unit", "dim"), means), unit_cov=(("unit", "dim", "dim2"), covs))
    groups = {g: idata[g] for g in idata.groups() if g not in ("posterior", "units")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "units" is a group outside the ArviZ schema
        return az.InferenceData(posterior=post, units=units, **groups)


def importance_moments(z_u, y_u, prior: MixturePrior, draws: int = 400_000, df: float = 5.0, inflate: float = 1.5,
                       seed: int = 0, chunk: int = 50_000) -> tuple[np.ndarray, np.ndarray, float]:
    """A user's posterior mean and sd by self-normalised importance sampling: an independent check of
    the NUTS reference that shares none of its machinery.

    The proposal is a mixture over the prior's components of multivariate t's (`df` degrees of
    freedom) at each component's Laplace mode with the Laplace covariance times inflate^2, weighted
    by the Laplace posterior weights, with the prior itself as a 10% defensive part (bounded weights).

    Parameters
    ----------
    z_u, y_u : arrays [S, d], [S]
        One user's design rows and clicks.
    prior : MixturePrior
        The user's prior (one mixture, weights [C]).
    draws, df, inflate, seed, chunk
        Proposal draws (processed `chunk` at a time); the t's shape and spread; the generator's seed.

    Returns
    -------
    (mean [d], sd [d], ess)
        The self-normalised estimates and the Kish effective sample size of the weights.
    """
    from scipy import stats

    w, m, S = validate_prior(prior)
    z_u, y_u = np.asarray(z_u, float), np.asarray(y_u, float)
    C, d = m.shape
    modes, covs, log_ev = laplace_fit_batch(m, S, np.broadcast_to(z_u, (C,) + z_u.shape).copy(),
                                            np.broadcast_to(y_u, (C,) + y_u.shape).copy())
    with np.errstate(divide="ignore"):
        lw = np.log(w) + log_ev
    post_w = np.exp(lw - logsumexp(lw))
    parts = [stats.multivariate_t(modes[k], inflate ** 2 * covs[k], df=df) for k in range(C)]
    prior_parts = [stats.multivariate_normal(m[k], S[k]) for k in range(C)]
    mix = np.concatenate([0.9 * post_w, 0.1 * w])
    rng = np.random.default_rng(seed)
    log_w_all, x_all = [], []
    for start in range(0, draws, chunk):
        n = min(chunk, draws - start)
        which = rng.choice(2 * C, size=n, p=mix / mix.sum())
        x = np.empty((n, d))
        for j in range(2 * C):
            idx = np.flatnonzero(which == j)
            if len(idx):
                dist_j = parts[j] if j < C else prior_parts[j - C]
                x[idx] = dist_j.rvs(size=len(idx), random_state=rng).reshape(len(idx), d)
        log_q = logsumexp(np.stack([np.log(mix[j]) + (parts[j] if j < C else prior_parts[j - C]).logpdf(x)
                                    for j in range(2 * C) if mix[j] > 0]), axis=0)
        log_prior = logsumexp(np.stack([np.log(w[k]) + prior_parts[k].logpdf(x) for k in range(C) if w[k] > 0]),
                              axis=0)
        eta = x @ z_u.T
        log_lik = (y_u * -np.logaddexp(0.0, -eta) + (1 - y_u) * -np.logaddexp(0.0, eta)).sum(-1)
        log_w_all.append(log_prior + log_lik - log_q)
        x_all.append(x)
    lw_, x_ = np.concatenate(log_w_all), np.concatenate(x_all)
    wt = np.exp(lw_ - lw_.max())
    wt /= wt.sum()
    mean = wt @ x_
    sd = np.sqrt(wt @ (x_ - mean) ** 2)
    return mean, sd, float(1.0 / np.sum(wt ** 2))
