"""Exact per-user posteriors of a whole run under a Gaussian-mixture prior, a chunk of units at a time.

Users are independent given the prior, and under a mixture prior each user's posterior
is the mixture of the component-conditional posteriors,

    p(theta_u | y_u) = sum_k r_uk p(theta_u | y_u, k),   r_uk ∝ w_uk p(y_u | k).

A joint NUTS over every user under the mixture mixes badly (each posterior is
multimodal and one step size serves all users), so the reference conditions on the
component instead: every kept (user, component) pair is a *unit* with a unimodal
posterior, and r_uk comes from an importance-sampling estimate of p(y_u | k)
(``inference.evidence``, PSIS k-hat checked).

- Each unit is sampled as theta = m + L xi with (m, L L^T) its batch-Laplace posterior,
  an exact affine change of variables (``inference.unit_model``).
- Components whose Laplace posterior weight for a user is below `prune` (default 1e-3)
  are not sampled for that user; each user's pruned Laplace mass is recorded.
- Every unit has chains of its own, with its own step size, mass matrix and trees
  (``inference.unit_nuts``), sampled a chunk of whole users at a time: the chunk's draws are
  mixed into each user's posterior draws (float32) and summarised (mean, covariance, health)
  before the next chunk, so the sampler's memory is one chunk's and time grows with the units.
  (``inference.joint_reference`` keeps the former reference, one NUTS over all units.)

The InferenceData holds ``posterior.theta[chain, draw, user, dim]``, the group ``units``
(per unit: prior weight, Laplace and importance log evidence, k-hat, posterior weight, the
mean and covariance of its draws and its own diagnostics), the clicks in ``observed_data``
and the designs and prior in ``constant_data``.
"""
from __future__ import annotations

import logging
import time
import warnings

import arviz as az
import numpy as np
import xarray as xr
from scipy.special import logsumexp

from typing import NamedTuple

from inference.evidence import MAX_KHAT, importance_log_evidence
from inference.health import check_health, record_health
from inference.laplace import laplace_fit_batch
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP, check_sampler_settings
from inference.unit_model import WhitenedUnits, whiten_units
from inference.unit_nuts import (RETRY_TREE_DEPTH, UnitHealth, lane_keys, overall_health, replace_units,
                                 sample_units, unit_health)
from tdmodels.priors import MixturePrior, validate_prior
from tdmodels.errors import InputError, check_flag
from tdmodels.run_inputs import checked_count

DEFAULT_PRUNE = 1e-3
DEFAULT_CHUNK = 64          # units sampled together: a chunk's draws are what memory holds of the sampler
INTEGER_FIGURES = ("rhat_over", "divergences", "saturated", "tree_depth")
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


class UnitPlan(NamedTuple):
    """The units a reference samples: (user, component) pairs kept after pruning, with their batch Laplace fits."""
    user: np.ndarray            # [n] sorted
    component: np.ndarray       # [n]
    mode: np.ndarray            # [n, d] Laplace mode
    scale_tril: np.ndarray      # [n, d, d] Cholesky factor of the Laplace covariance
    log_evidence: np.ndarray    # [n] Laplace log evidence
    weight: np.ndarray          # [n] Laplace posterior weight of the component for the user
    pruned_mass: np.ndarray     # [U] the user's Laplace weight left out


def plan_units(z, y, prior: MixturePrior, prune: float = DEFAULT_PRUNE, users_at_once: int = 256) -> UnitPlan:
    """Batch Laplace inside every (user, component) of a per-user prior (weights [U, K]), `users_at_once` users
    at a time; a pair is kept when its Laplace weight is at least `prune` or the user's largest."""
    w, m, C = prior
    U, K = w.shape
    parts = []
    for lo in range(0, U, users_at_once):
        b = slice(lo, min(U, lo + users_at_once))
        n = b.stop - lo
        flat = lambda a: a[b].reshape((n * K,) + a.shape[2:])  # noqa: E731
        mode, cov, lap_ev = laplace_fit_batch(flat(m), flat(C), np.repeat(z[b], K, 0), np.repeat(y[b], K, 0))
        with np.errstate(divide="ignore"):
            logw = np.log(w[b]) + lap_ev.reshape(n, K)
        r = np.exp(logw - logsumexp(logw, axis=1, keepdims=True))
        keep = ((r >= prune) | (r == r.max(1, keepdims=True))) & (w[b] > 0)
        uu, kk = np.nonzero(keep)
        none = np.setdiff1d(np.arange(n), uu)
        if len(none):
            raise InputError(f"user {lo + int(none[0])}: no component of its prior has a finite Laplace evidence "
                             f"({len(none)} such user(s)); its clicks or prior hold values the model cannot take")
        sel = uu * K + kk
        parts.append((uu + lo, kk, mode[sel], np.linalg.cholesky(cov[sel]), lap_ev[sel], r[uu, kk],
                      np.where(keep, 0.0, r).sum(1)))
    return UnitPlan(*(np.concatenate(a) for a in zip(*parts)))


def user_chunks(unit_user: np.ndarray, chunk: int) -> list[slice]:
    """Consecutive slices of the units (sorted by user) holding whole users, at most `chunk` units each
    unless one user alone has more."""
    starts = np.flatnonzero(np.r_[True, unit_user[1:] != unit_user[:-1]])
    bounds = np.r_[starts, len(unit_user)]
    out, lo = [], 0
    for i in range(1, len(bounds)):
        if bounds[i] - lo > chunk and bounds[i - 1] > lo:
            out.append(slice(lo, int(bounds[i - 1])))
            lo = int(bounds[i - 1])
    if lo < len(unit_user):
        out.append(slice(lo, len(unit_user)))
    return out


def _sample_chunk(plan: UnitPlan, sl: slice, z, y, prior: MixturePrior, seed: int, chains: int, warmup: int,
                  draws: int):
    """One chunk's units: NUTS (a failing unit again, deeper and longer), draws of theta [chain, draw, n, d]."""
    uu, kk = plan.user[sl], plan.component[sl]
    units = whiten_units(z[uu], prior.means[uu, kk], prior.covs[uu, kk], plan.mode[sl], plan.scale_tril[sl])
    sample = sample_units(units, y[uu], lane_keys(seed, uu, kk, chains), warmup, draws)
    health = unit_health(sample)
    again = np.flatnonzero(health.failing(chains))
    if len(again):
        retry = sample_units(WhitenedUnits(*(a[again] for a in units)), y[uu[again]],
                             lane_keys(seed, uu[again], kk[again], chains, attempt=1), 2 * warmup, draws,
                             depth=RETRY_TREE_DEPTH, thin=2)
        sample = replace_units(sample, retry, again)
        health = UnitHealth(*(np.asarray(a, float).copy() for a in health))
        for a, b in zip(health, unit_health(retry)):
            a[again] = b
    theta = units.loc + np.einsum("ude,cmue->cmud", units.scale_tril, sample.xi)
    return theta, sample, health, again


def _component_weights(theta, plan: UnitPlan, sl: slice, prior: MixturePrior, z, y, is_draws: int, seed: int,
                       per_unit: dict) -> np.ndarray:
    """A chunk's units' posterior weights within their users, from importance-sampled evidence (Laplace's with one
    component, where the weight is 1 whatever the evidence); the evidence, k-hat and weights go into `per_unit`."""
    uu, kk = plan.user[sl], plan.component[sl]
    if prior.weights.shape[1] > 1:
        flat = theta.reshape(-1, theta.shape[2], theta.shape[3])
        log_ev, khat = importance_log_evidence(np.moveaxis(flat, 0, 1), prior.means[uu, kk], prior.covs[uu, kk],
                                               z[uu], y[uu], n=is_draws, seed=seed, unit_seeds=np.stack([uu, kk], 1))
    else:
        log_ev, khat = plan.log_evidence[sl], np.zeros(len(uu))
    lw = np.log(prior.weights[uu, kk]) + log_ev
    post_w = np.empty(len(uu))
    for u in np.unique(uu):
        j = uu == u
        post_w[j] = np.exp(lw[j] - logsumexp(lw[j]))
    per_unit["log_evidence"][sl], per_unit["khat"][sl], per_unit["posterior_weight"][sl] = log_ev, khat, post_w
    return post_w


def _mix_users(theta, plan: UnitPlan, sl: slice, post_w: np.ndarray, seed: int, out: np.ndarray) -> None:
    """Each user's mixture draws into out[:, :, user]: every (chain, draw) slot takes one of the user's units,
    chosen by stratified sampling of the posterior weights."""
    C, M = theta.shape[:2]
    users = plan.user[sl]
    flat = theta.reshape(C * M, theta.shape[2], theta.shape[3])
    for u in np.unique(users):
        idx = np.flatnonzero(users == u)
        if len(idx) == 1:
            out[:, :, u] = theta[:, :, idx[0]]
            continue
        rng = np.random.default_rng([seed, int(u)])
        strata = (rng.permutation(C * M) + rng.random(C * M)) / (C * M)
        pick = idx[np.minimum(np.searchsorted(np.cumsum(post_w[idx]), strata), len(idx) - 1)]
        out[:, :, u] = flat[np.arange(C * M), pick].reshape(C, M, -1)


def fit_users(z, y, prior: MixturePrior, seed: int = 0, chains: int = DEFAULT_CHAINS,
              warmup: int = DEFAULT_WARMUP, draws: int = DEFAULT_DRAWS, prune: float = DEFAULT_PRUNE,
              is_draws: int = 4000, strict: bool = False, chunk: int = DEFAULT_CHUNK,
              progress=None) -> az.InferenceData:
    """NUTS reference posteriors of every user's theta under `prior` (shared or per user).

    Parameters
    ----------
    z, y : arrays [U, S, d], [U, S]
        Each user's design rows and clicks.
    prior : MixturePrior
        One prior for all (weights [K]) or one per user (weights [U, K]).
    seed, chains, warmup, draws
        Every (user, component) unit gets `chains` chains of its own (``inference.unit_nuts``).
    prune, is_draws
        Components under this Laplace weight are not sampled; importance draws per unit for its evidence.
    strict
        Raise FitHealthError instead of warning when the run misses a health threshold.
    chunk
        Units sampled together (a user's units are never split; memory holds one chunk's draws).
    progress : callable(units_done, units_total), optional
        Called after each chunk.

    Returns
    -------
    InferenceData
        ``posterior.theta[chain, draw, user, dim]`` (float32 draws of each user's mixture posterior), group
        ``units`` (per unit: user, component, prior, Laplace and posterior weights, log evidence, k-hat, mean
        and covariance of its draws, R-hat, ESS, divergences, E-BFMI, tree-depth cap, step sizes),
        ``observed_data.y``, ``constant_data`` (designs and prior); the run's health in sample_stats attrs.
    """
    z, y = check_design(z, y)
    strict = check_flag("strict", strict)            # here, not after the sampling
    check_sampler_settings(seed, chains, warmup, draws)
    checked_count(chunk, "chunk (units sampled together)", 1, 1 << 20)
    if progress is not None and not callable(progress):
        raise InputError(f"progress must be a callable (units done, units in all) or None; got {progress!r}")
    U, S, d = z.shape
    prior = per_user_prior(prior, U, d)
    w, K = prior.weights, prior.weights.shape[1]
    plan = plan_units(z, y, prior, prune)
    n = len(plan.user)
    chunks = user_chunks(plan.user, chunk)
    log.info("per-user reference: %d users x %d components -> %d units in %d chunks", U, K, n, len(chunks))
    out = np.empty((chains, draws, U, d), np.float32)
    per_unit = {k: np.empty(n) for k in ("log_evidence", "khat", "posterior_weight", *UnitHealth._fields,
                                         "saturated", "mean_steps", "tree_depth")}
    means, covs, steps = np.empty((n, d)), np.empty((n, d, d)), np.empty((n, chains))
    t0 = time.perf_counter()
    for sl in chunks:
        theta, sample, health, _ = _sample_chunk(plan, sl, z, y, prior, seed, chains, warmup, draws)
        post_w = _component_weights(theta, plan, sl, prior, z, y, is_draws, seed, per_unit)
        _mix_users(theta, plan, sl, post_w, seed, out)
        flat = theta.reshape(-1, theta.shape[2], d)
        means[sl] = flat.mean(0)
        dev = flat - means[sl]
        covs[sl] = np.einsum("sui,suj->uij", dev, dev) / (len(flat) - 1)
        steps[sl] = sample.step_size
        for k, v in (("saturated", sample.saturated), ("mean_steps", sample.mean_steps),
                     ("tree_depth", sample.tree_depth), *health._asdict().items()):
            per_unit[k][sl] = v
        if progress is not None:
            progress(sl.stop, n)
    log.info("per-unit NUTS over %d units: %.1f s", n, time.perf_counter() - t0)
    unit_figures = UnitHealth(*(per_unit[k] for k in UnitHealth._fields))
    health = check_health(overall_health(unit_figures, chains, draws, d), f"per-user NUTS reference ({n} units)",
                          strict)
    if K > 1 and np.any(per_unit["khat"] > MAX_KHAT):
        warnings.warn(f"importance evidence unreliable for {int(np.sum(per_unit['khat'] > MAX_KHAT))} unit(s) "
                      f"(max k-hat {per_unit['khat'].max():.2f} > {MAX_KHAT})", ImportanceWarning, stacklevel=2)
    return _reference_data(out, plan, per_unit, means, covs, steps, prior, z, y, health,
                           {"prune": prune, "is_draws": is_draws, "chunk": chunk})


def _reference_data(draws, plan: UnitPlan, per_unit: dict, means, covs, step_size, prior: MixturePrior, z, y,
                    health, attrs: dict) -> az.InferenceData:
    """The InferenceData `fit_users` returns (its layout is described there)."""
    U, d = draws.shape[2], draws.shape[3]
    uu, kk = plan.user, plan.component
    units = xr.Dataset(
        {"unit_user": ("unit", uu), "unit_component": ("unit", kk), "prior_weight": ("unit", prior.weights[uu, kk]),
         "log_evidence_laplace": ("unit", plan.log_evidence), "laplace_weight": ("unit", plan.weight),
         "pruned_mass": ("user", plan.pruned_mass), "unit_mean": (("unit", "dim"), means),
         "unit_cov": (("unit", "dim", "dim2"), covs), "step_size": (("unit", "chain"), step_size),
         **{k: ("unit", v.astype(int) if k in INTEGER_FIGURES else v) for k, v in per_unit.items()}},
        attrs={**attrs, "method": "component-conditional NUTS, each unit adapted alone + importance evidence"})
    post = xr.Dataset({"theta": (("chain", "draw", "user", "dim"), draws)},
                      coords={"chain": np.arange(draws.shape[0]), "draw": np.arange(draws.shape[1])},
                      attrs={"draws": "each user's mixture posterior (float32)"})
    stats = xr.Dataset({"step_size": (("chain", "unit"), step_size.T)})
    data = {"posterior": post, "sample_stats": stats, "observed_data": xr.Dataset({"y": (("user", "round"), y)}),
            "constant_data": xr.Dataset({"z": (("user", "round", "dim"), z),
                                         "prior_weights": (("user", "component"), prior.weights),
                                         "prior_means": (("user", "component", "dim"), prior.means),
                                         "prior_covs": (("user", "component", "dim", "dim2"), prior.covs)}),
            "units": units}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "units" is a group outside the ArviZ schema
        idata = az.InferenceData(**data)
    record_health(idata, health)
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
