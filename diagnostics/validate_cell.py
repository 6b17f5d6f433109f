"""What `tutorduel validate` does for one run (world, seed, policy): each user's online belief at
session end against the NUTS reference posterior on the same clicks under the same prior.

The click log (with the priors users arrived under, the recalibration their clicks were read
with and the online beliefs) comes from the store or a deterministic replay; the reference is
``inference.user_reference.fit_users`` through ``inference.cell_fit.fit_cell`` (written as
``seed-NNNN.users.nc``); the checks are ``diagnostics.posterior_checks``. Output, beside the
row: ``seed-NNNN.validate.nc``, an InferenceData with the NUTS mixture draws as `posterior`,
draws of the online belief in group `online`, and the per-user figures in group `checks`
(with the online and the exact posterior component weights and their total variation
distance), and the reliability of each learner's click predictions in group `calibration`.
"""
from __future__ import annotations

from pathlib import Path

import arviz as az
import numpy as np
import xarray as xr

from diagnostics.calibration import calibration_table, reliability
from diagnostics.posterior_checks import (UserChecks, check_logged_users, exact_component_weights, sample_mixture,
                                          weights_distance)
from inference.cell_fit import cell_click_log, fit_cell
from inference.nuts import DEFAULT_CHAINS, DEFAULT_DRAWS, DEFAULT_WARMUP
from online.clicklog import save_click_log
from online.registry import canonical_spec
from online.replay import arrivals_limit, replay_logged
from online.store import RunStore, atomic_save


def _log_with_beliefs(world, seed, spec, store, arrivals):
    log = cell_click_log(world, seed, spec, store, arrivals)
    if log.beliefs is None:         # stored before beliefs were kept, or a policy without them
        _, log = replay_logged(world, seed, spec, arrivals_limit(world, arrivals))
        if log.beliefs is None:
            raise ValueError(f"policy {canonical_spec(spec)!r} does not record its online beliefs; "
                             "validation needs a policy that does (e.g. coduel)")
        save_click_log(log, store.clicks_path(str(world.attrs["roster"]), seed, canonical_spec(spec),
                                              arrivals_limit(world, arrivals)))
    return log


def click_calibration(log, bins: int = 10) -> xr.Dataset:
    """Reliability of every recorded learner's click predictions over the whole run, with log loss,
    Brier score and expected calibration error as attributes (``<learner>_log_loss`` ...)."""
    if not log.predictions:
        return xr.Dataset()
    y = log.outcome
    data, attrs = {}, {}
    for name, p in log.predictions.items():
        rel = reliability(p, y, bins)
        for f in ("predicted", "observed", "stderr", "count"):
            data[f"{name}_{f}"] = ("bin", getattr(rel, f))
        attrs.update({f"{name}_{k}": v for k, v in calibration_table({name: p}, y)[name].items()})
    return xr.Dataset(data, coords={"bin": 0.5 * (rel.edges[1:] + rel.edges[:-1])}, attrs=attrs)


def validate_users(world, seed: int, spec: str, store: RunStore, users: int | None = None,
                   arrivals: int | None = None, chains: int = DEFAULT_CHAINS, warmup: int = DEFAULT_WARMUP,
                   draws: int = DEFAULT_DRAWS, check_seed: int = 0) -> tuple[UserChecks, az.InferenceData, Path]:
    """Check the first `users` users (default all) of a run; returns (checks, InferenceData, path written)."""
    from inference.user_reference import user_draws

    log = _log_with_beliefs(world, seed, spec, store, arrivals)
    idata_ref, _ = fit_cell(world, seed, spec, "users", store, arrivals=arrivals, chains=chains, warmup=warmup,
                            draws=draws, users=users)
    ref = user_draws(idata_ref, seed=check_seed)                       # [chain, draw, user, dim]
    U = ref.sizes["user"]
    pooled = ref.values.reshape(-1, U, ref.sizes["dim"])
    checks = check_logged_users(log, pooled, np.arange(U), seed=check_seed)
    rng = np.random.default_rng(check_seed)
    online = np.stack([sample_mixture(rng, *(a[u] for a in log.beliefs), pooled.shape[0]) for u in range(U)], 1)
    online_w = log.beliefs.weights[:U]
    exact_w = exact_component_weights(idata_ref["units"], U, online_w.shape[1])
    tv = weights_distance(online_w, exact_w)
    dims = ("user", "dim")
    figures = xr.Dataset({"khat": ("user", checks.khat), "mean_error": (dims, checks.mean_error),
                          "sd_ratio": (dims, checks.sd_ratio), "w1": (dims, checks.w1),
                          "w1_floor": (dims, checks.w1_floor), "weights_tv": ("user", tv),
                          "online_weights": (("user", "component"), online_w),
                          "exact_weights": (("user", "component"), exact_w)},
                         coords={"user": np.arange(U), "dim": np.arange(pooled.shape[-1])},
                         attrs={**{k: (str(v) if isinstance(v, tuple) else v) for k, v in checks.summary().items()},
                                "weights_tv_median": float(np.median(tv)), "weights_tv_max": float(np.max(tv))})
    idata = az.InferenceData(posterior=ref.to_dataset(name="theta"))
    idata.add_groups({"online": xr.Dataset({"theta": (("draw", "user", "dim"), online)}), "checks": figures,
                      "calibration": click_calibration(log)})
    from inference.health import stored_health

    idata.posterior.attrs.update({"world": str(world.attrs["roster"]), "seed": int(seed),
                                  "policy": canonical_spec(spec), "users": int(U),
                                  "reference_health": stored_health(idata_ref).line()})
    path = store.fit_path(str(world.attrs["roster"]), seed, canonical_spec(spec), "validate",
                          arrivals_limit(world, arrivals))
    return checks, idata, atomic_save(path, lambda tmp: idata.to_netcdf(str(tmp)))
