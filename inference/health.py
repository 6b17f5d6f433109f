"""Sampler health of a NUTS fit, checked against reference-posterior thresholds.

Thresholds (posteriordb practice): rank-normalised split R-hat <= 1.01 for every checked parameter,
no divergent transitions, E-BFMI >= 0.2 in every chain, and bulk and tail ESS reported (warned below
100 per chain); R-hat and both ESS come from ``inference.convergence``. `check_health` warns or
raises; a fit that misses a threshold is never passed off as healthy.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple

import arviz as az
import numpy as np

from inference.convergence import rhat_and_bulk_ess, tail_ess
from tdmodels.errors import check_flag

MAX_RHAT = 1.01
MIN_BFMI = 0.2
MIN_ESS_PER_CHAIN = 100


class FitHealthError(RuntimeError):
    """A NUTS fit that misses a health threshold, when health is enforced."""


class FitHealthWarning(UserWarning):
    """A NUTS fit that misses a health threshold."""


class Health(NamedTuple):
    """An MCMC fit's diagnostics against the thresholds (R-hat, bulk and tail ESS, divergences, E-BFMI); `ok` and `problems` say whether it may serve as a reference."""
    n_params: int            # scalar parameters checked
    max_rhat: float
    n_rhat_over: int         # parameters with R-hat above MAX_RHAT
    min_ess_bulk: float
    min_ess_tail: float
    divergences: int
    min_bfmi: float
    chains: int
    draws: int

    @property
    def problems(self) -> list[str]:
        out = []
        if self.chains < 2:
            out.append(f"{self.chains} chain: R-hat needs at least 2 chains, so convergence is unchecked")
        elif self.n_params == 0:
            out.append("no parameter has a finite R-hat, so convergence is unchecked")
        if not np.isnan(self.max_rhat) and not self.max_rhat <= MAX_RHAT:     # an infinite one too
            out.append(f"R-hat {self.max_rhat:.3f} > {MAX_RHAT} ({self.n_rhat_over} of {self.n_params} parameters)")
        if self.divergences:
            out.append(f"{self.divergences} divergent transition(s)")
        if np.isfinite(self.min_bfmi) and self.min_bfmi < MIN_BFMI:    # NaN: no energy (not an HMC fit)
            out.append(f"E-BFMI {self.min_bfmi:.2f} < {MIN_BFMI}")
        floor = MIN_ESS_PER_CHAIN * self.chains
        if not min(self.min_ess_bulk, self.min_ess_tail) >= floor:
            out.append(f"ESS bulk {self.min_ess_bulk:.0f} / tail {self.min_ess_tail:.0f} < {floor}")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        head = (f"{self.chains} chains x {self.draws} draws, {self.n_params} parameters: max R-hat "
                f"{self.max_rhat:.4f}, min ESS bulk {self.min_ess_bulk:.0f} / tail {self.min_ess_tail:.0f}, "
                f"{self.divergences} divergences, min E-BFMI {self.min_bfmi:.2f}")
        return head + (" -- OK" if self.ok else " -- PROBLEMS: " + "; ".join(self.problems))


def fit_health(idata: az.InferenceData, var_names: list[str] | None = None) -> Health:
    """Health of the posterior variables `var_names` (default: all) of a NUTS fit."""
    post = idata.posterior if var_names is None else idata.posterior[var_names]
    values = [v.transpose("chain", "draw", ...).values for v in post.data_vars.values()]
    draws = np.concatenate([v.reshape(v.shape[:2] + (-1,)) for v in values], axis=-1)
    rhat, ess_b = rhat_and_bulk_ess(draws)
    ess_t = tail_ess(draws)
    # constant parameters (e.g. fixed entries) have no R-hat (NaN), nor has one chain; chains stuck at
    # different constants have an infinite one, which counts (and fails). A parameter with a NaN or infinite
    # draw fails too (it had been taken for a constant one, not counted, and the fit called healthy).
    broken = ~np.isfinite(draws).all(axis=(0, 1))
    rhat, ess_b, ess_t = np.where(broken, np.inf, rhat), np.where(broken, 0.0, ess_b), np.where(broken, 0.0, ess_t)
    counted = ~np.isnan(rhat)
    stats = idata.sample_stats
    div = int(stats["diverging"].sum()) if "diverging" in stats else 0
    bfmi = float(np.min(az.bfmi(idata))) if "energy" in stats else float("nan")
    return Health(n_params=int(counted.sum()), max_rhat=float(rhat[counted].max()) if counted.any() else float("nan"),
                  n_rhat_over=int(np.sum(rhat[counted] > MAX_RHAT)),
                  min_ess_bulk=float(np.min(ess_b[counted], initial=np.inf)),
                  min_ess_tail=float(np.min(ess_t[counted], initial=np.inf)),
                  divergences=div, min_bfmi=bfmi, chains=int(post.sizes["chain"]), draws=int(post.sizes["draw"]))


def check_health(health: Health, what: str = "NUTS fit", strict: bool = False) -> Health:
    """Warn (or raise FitHealthError when strict) naming every missed threshold."""
    strict = check_flag("strict", strict)
    if not health.ok:
        msg = f"{what}: " + "; ".join(health.problems)
        if strict:
            raise FitHealthError(msg)
        warnings.warn(msg, FitHealthWarning, stacklevel=2)
    return health


def record_health(idata: az.InferenceData, health: Health, label: str = "") -> None:
    """Store the health figures in sample_stats attrs so they travel with the netCDF."""
    prefix = f"health_{label}_" if label else "health_"
    for k, v in health._asdict().items():
        idata.sample_stats.attrs[prefix + k] = v
    idata.sample_stats.attrs[prefix + "ok"] = int(health.ok)


def stored_health(idata: az.InferenceData, label: str = "") -> Health:
    """The Health that `record_health` stored in a fit's sample_stats attrs (e.g. read back from netCDF)."""
    prefix = f"health_{label}_" if label else "health_"
    attrs = idata.sample_stats.attrs
    return Health(**{k: type_(attrs[prefix + k]) for k, type_ in zip(Health._fields, (int, float, int, float, float,
                                                                                      int, float, int, int))})
