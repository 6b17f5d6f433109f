"""Label-invariant convergence diagnostics of a population-model fit.

The population model's component labels are exchangeable, and its posterior is multimodal over
partitions of users (clusters that merge and split), not only over labellings. R-hat on users'
theta alone misses that: chains can agree on every theta while they disagree on which users
share a component. So a fit is checked, across its chains, on quantities that do not depend on
the labels, computed per draw:

- ``theta``: each user's theta (as ``inference.health`` does);
- ``log_density``: log p(x_p | draw) of the population predictive at fixed test points
  [P, d], the mixture sum_k w_k N(x_p; mu_k, Sigma_k) with the broad component included;
- ``co_clustering``: P(users i and j share a component | draw) = sum_k r_ik r_jk, with
  r_uk proportional to w_k N(theta_u; mu_k, Sigma_k) (the assignment marginalised given the
  draw; a deterministic subset of pairs when there are many);
- ``occupied``: the expected number of components holding at least one user,
  sum_k (1 - prod_u (1 - r_uk));
- ``log_lik``: the clicks' log likelihood at the draw's theta.

Each gets rank-normalised split R-hat and bulk ESS (ArviZ's figures, ``inference.convergence``); a
fit is healthy only if every one has R-hat <= 1.01 (an infinite one counts, and fails) and bulk ESS
>= 400, and it has at least two chains.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from inference.convergence import rhat_and_bulk_ess
from tdmodels.priors import DEFAULT_PRIOR_VAR

MAX_RHAT = 1.01
MIN_ESS_BULK = 400
MAX_PAIRS = 2000
QUANTITIES = ("theta", "log_density", "co_clustering", "occupied", "log_lik")


def component_covariances(cov_chol):
    """Sigma = L L^T from the components' Cholesky factors cov_chol [..., d, d]."""
    return cov_chol @ np.swapaxes(cov_chol, -1, -2)


def slot_log_joint(weights, mu, cov_chol, x, broad_var: float = DEFAULT_PRIOR_VAR) -> np.ndarray:
    """log w_k + log N(x_p; mu_k, Sigma_k) for every draw, slot (the broad one last) and point.

    Parameters
    ----------
    weights : array [S, C]
        Mixture weights of S draws, the broad component's last (C = learned + 1).
    mu : array [S, C - 1, d]
    cov_chol : array [S, C - 1, d, d]
        The learned components' means and the Cholesky factors of their covariances.
    x : array [S, P, d] or [P, d]
        Points (per draw, e.g. the draw's theta, or fixed test points).
    broad_var : float
        Variance of the broad isotropic component.

    Returns
    -------
    array [S, C, P]
    """
    S, K, d = mu.shape
    L = np.concatenate([cov_chol,
                        np.broadcast_to(np.sqrt(broad_var) * np.eye(d), (S, 1, d, d))], 1)      # [S, C, d, d]
    means = np.concatenate([mu, np.zeros((S, 1, d))], 1)
    x = np.broadcast_to(x, (S,) + np.shape(x)[-2:])
    diff = x[:, None] - means[:, :, None]                                                       # [S, C, P, d]
    sol = diff @ np.swapaxes(np.linalg.inv(L), -1, -2)                  # rows (L^-1 (x - mu))^T
    logn = (-0.5 * (sol ** 2).sum(-1) - np.log(np.abs(np.diagonal(L, axis1=-2, axis2=-1))).sum(-1)[..., None]
            - 0.5 * d * np.log(2 * np.pi))
    with np.errstate(divide="ignore"):
        return np.log(weights)[..., None] + logn


def pair_subset(n_users: int, max_pairs: int = MAX_PAIRS, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(i, j) with i < j: every pair of users when there are at most `max_pairs`, else a fixed random subset."""
    i, j = np.triu_indices(n_users, 1)
    if len(i) > max_pairs:
        keep = np.sort(np.random.default_rng(seed).choice(len(i), max_pairs, replace=False))
        i, j = i[keep], j[keep]
    return i, j


def label_invariant_draws(posterior: xr.Dataset, z: np.ndarray, y: np.ndarray, test_points: np.ndarray,
                          broad_var: float = DEFAULT_PRIOR_VAR, max_pairs: int = MAX_PAIRS, seed: int = 0,
                          chunk: int = 64) -> xr.Dataset:
    """The label-invariant quantities of every draw of a population fit.

    Parameters
    ----------
    posterior : xarray.Dataset
        Draws with dims (chain, draw, ...) of "weights" [C], "mu" [C - 1, d], "cov_chol"
        [C - 1, d, d] and "theta" [U, d] (a population fit's ``idata.posterior``).
    z : array [U, S, d]
        Click designs; y [U, S] the clicks.
    test_points : array [P, d]
        Fixed points at which the population predictive's log density is tracked.
    broad_var, max_pairs, seed
        The broad component's variance; how many user pairs to track (see `pair_subset`).

    Returns
    -------
    xarray.Dataset
        (chain, draw) by: "log_density" [point], "co_clustering" [pair] (coords pair_i, pair_j),
        "occupied", "log_lik".
    """
    nc, nd = posterior.sizes["chain"], posterior.sizes["draw"]
    flat = {v: posterior[v].values.reshape((nc * nd,) + posterior[v].shape[2:])
            for v in ("weights", "mu", "cov_chol", "theta")}
    U = flat["theta"].shape[1]
    pi, pj = pair_subset(U, max_pairs, seed)
    z, y = np.asarray(z, float), np.asarray(y, float)
    test_points = np.asarray(test_points, float)
    out = {"log_density": [], "co_clustering": [], "occupied": [], "log_lik": []}
    for s in range(0, nc * nd, chunk):
        part = {k: v[s:s + chunk] for k, v in flat.items()}
        args = (part["weights"], part["mu"], part["cov_chol"])
        out["log_density"].append(logsumexp(slot_log_joint(*args, test_points, broad_var), axis=1))
        joint = slot_log_joint(*args, part["theta"], broad_var)                        # [s, C, U]
        r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))
        out["co_clustering"].append(np.einsum("sck,sck->sk", r[:, :, pi], r[:, :, pj]))
        with np.errstate(divide="ignore"):
            empty = np.log1p(-np.minimum(r, 1.0)).sum(-1)                              # log prod_u (1 - r_uk)
        out["occupied"].append((1.0 - np.exp(empty)).sum(-1))
        eta = np.einsum("usd,nud->nus", z, part["theta"])
        out["log_lik"].append((y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta)).sum((1, 2)))
    def shape(parts):
        flat = np.concatenate(parts)
        return flat.reshape((nc, nd) + flat.shape[1:])

    return xr.Dataset({"log_density": (("chain", "draw", "point"), shape(out["log_density"])),
                       "co_clustering": (("chain", "draw", "pair"), shape(out["co_clustering"])),
                       "occupied": (("chain", "draw"), shape(out["occupied"])),
                       "log_lik": (("chain", "draw"), shape(out["log_lik"]))},
                      coords={"chain": posterior["chain"].values, "draw": posterior["draw"].values,
                              "pair_i": ("pair", pi), "pair_j": ("pair", pj)})


class QuantityHealth(NamedTuple):
    """R-hat and bulk ESS of one label-invariant quantity over its scalar entries."""
    n: int                   # entries with a finite R-hat
    max_rhat: float
    n_rhat_over: int         # entries with R-hat above MAX_RHAT
    share_rhat_over: float
    median_rhat: float
    min_ess_bulk: float


class LabelInvariantHealth(NamedTuple):
    """Convergence of a population fit on every label-invariant quantity (see the module docstring)."""
    chains: int
    draws: int
    quantities: dict         # name -> QuantityHealth

    @property
    def problems(self) -> list[str]:
        out = []
        if self.chains < 2:
            out.append(f"{self.chains} chain: R-hat needs at least 2 chains, so convergence is unchecked")
        for name, q in self.quantities.items():
            if q.n == 0:
                out.append(f"{name}: no finite R-hat")
                continue
            if not q.max_rhat <= MAX_RHAT:
                out.append(f"{name}: R-hat {q.max_rhat:.3f} > {MAX_RHAT} ({q.n_rhat_over} of {q.n})")
            if not q.min_ess_bulk >= MIN_ESS_BULK:
                out.append(f"{name}: bulk ESS {q.min_ess_bulk:.0f} < {MIN_ESS_BULK}")
        return out

    @property
    def ok(self) -> bool:
        return not self.problems

    def lines(self) -> list[str]:
        """One line per quantity, then the verdict."""
        rows = [f"  {name:14s} {q.n:6d} entries: R-hat max {q.max_rhat:.3f} median {q.median_rhat:.3f} "
                f"({100 * q.share_rhat_over:.0f}% over {MAX_RHAT}), min bulk ESS {q.min_ess_bulk:.0f}" if q.n else
                f"  {name:14s} no entry with a finite R-hat" for name, q in self.quantities.items()]
        verdict = "OK" if self.ok else "PROBLEMS: " + "; ".join(self.problems)
        return [f"label-invariant diagnostics, {self.chains} chains x {self.draws} draws:"] + rows + [f"  -- {verdict}"]

    def as_attrs(self) -> dict:
        """Flat netCDF-safe attributes (``from_attrs`` reads them back)."""
        out = {"li_chains": self.chains, "li_draws": self.draws, "li_ok": int(self.ok)}
        for name, q in self.quantities.items():
            out.update({f"li_{name}_{k}": v for k, v in q._asdict().items()})
        return out

    @classmethod
    def from_attrs(cls, attrs: dict) -> "LabelInvariantHealth":
        types = (int, float, int, float, float, float)
        qs = {name: QuantityHealth(*(t(attrs[f"li_{name}_{k}"]) for k, t in zip(QuantityHealth._fields, types)))
              for name in QUANTITIES if f"li_{name}_n" in attrs}
        return cls(int(attrs["li_chains"]), int(attrs["li_draws"]), qs)


def _quantity_health(da: xr.DataArray) -> QuantityHealth:
    x = da.transpose("chain", "draw", ...).values
    x = x.reshape(x.shape[:2] + (-1,))
    rhat, ess = rhat_and_bulk_ess(x)
    ok = ~np.isnan(rhat)       # an infinite R-hat (chains stuck at different constants) counts, and fails
    n = int(ok.sum())
    if n == 0:
        return QuantityHealth(0, float("nan"), 0, float("nan"), float("nan"), float("nan"))
    return QuantityHealth(n, float(rhat[ok].max()), int((rhat[ok] > MAX_RHAT).sum()),
                          float((rhat[ok] > MAX_RHAT).mean()), float(np.median(rhat[ok])), float(ess[ok].min()))


def label_invariant_health(draws: xr.Dataset, theta: xr.DataArray) -> LabelInvariantHealth:
    """R-hat and bulk ESS of theta [chain, draw, user, dim] and of every quantity of `label_invariant_draws`."""
    quantities = {"theta": _quantity_health(theta)}
    quantities.update({name: _quantity_health(draws[name]) for name in QUANTITIES[1:]
                       if draws[name].size})                  # one user has no pairs to co-cluster
    return LabelInvariantHealth(int(draws.sizes["chain"]), int(draws.sizes["draw"]), quantities)


__all__ = ["component_covariances", "slot_log_joint", "pair_subset", "label_invariant_draws", "QuantityHealth",
           "LabelInvariantHealth", "label_invariant_health", "MAX_RHAT", "MIN_ESS_BULK"]
