"""Approximate Bayesian computation by sequential Monte Carlo (population Monte Carlo ABC).

For a simulator whose likelihood cannot be written down (the TutorDuel world generator) and a few
summary statistics of the data: a population of parameter particles is moved through a decreasing
sequence of tolerances eps_1 > eps_2 > ... (Beaumont, Cornuet, Marin & Robert 2009; the tolerance
schedule adaptive, each eps the `quantile` of the previous population's distances, as in Del Moral,
Doucet & Jasra 2012):

- generation 0: `particles` draws from the prior, all kept;
- generation t: a particle drawn by weight from generation t-1 is moved by a Gaussian kernel with
  twice the weighted covariance of that population (Beaumont et al.'s optimal scale), redrawn if it
  leaves the prior's support, simulated, and kept if its distance to the data is at most eps_t, until
  `particles` are kept; weights w_i ∝ prior(theta_i) / sum_j w_j K(theta_i | theta_j).

The prior is a box of independent uniforms (`bounds`, optionally on the log scale per parameter);
the distance is Euclidean on statistics divided by `scales`. It stops after `generations`, or when a
generation's acceptance rate falls below `min_acceptance` (the tolerance then buys little); a generation that cannot keep `particles` within
`particles / min_acceptance` proposals is recorded (its tolerance and rate) and the previous population returned. The
simulations of a generation run in batches through `map_fn` (e.g. a process pool's map).
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np


MAX_KERNEL_DRAWS = 10_000    # per particle and generation: kernel draws before a generation gives up


class ABCResult(NamedTuple):
    """The final population and how it was reached."""
    particles: np.ndarray     # [N, p] on the natural scale
    weights: np.ndarray       # [N], summing to 1
    distances: np.ndarray     # [N]
    statistics: np.ndarray    # [N, m] each particle's simulated statistics
    tolerances: np.ndarray    # [T] eps of every generation after the first (inf for generation 0)
    acceptance: np.ndarray    # [T] acceptance rate of every generation
    simulations: int          # simulator calls in all

    def ess(self) -> float:
        """Kish's effective sample size of the weights."""
        return float(1.0 / np.sum(self.weights ** 2))

    def interval(self, level: float = 0.9) -> np.ndarray:
        """[p, 2] weighted equal-tailed intervals of every parameter."""
        out = []
        for k in range(self.particles.shape[1]):
            order = np.argsort(self.particles[:, k])
            cdf = np.cumsum(self.weights[order])
            lo = self.particles[order, k][np.searchsorted(cdf, (1 - level) / 2)]
            hi = self.particles[order, k][min(np.searchsorted(cdf, (1 + level) / 2), len(cdf) - 1)]
            out.append((lo, hi))
        return np.array(out)


def abc_smc(simulate: Callable[[np.ndarray], np.ndarray], observed: np.ndarray, bounds: Sequence[tuple[float, float]],
            scales: np.ndarray, particles: int = 200, generations: int = 6, quantile: float = 0.5,
            min_acceptance: float = 0.02, log_scale: Sequence[bool] | None = None, seed: int = 0,
            map_fn: Callable | None = None, batch: int | None = None) -> ABCResult:
    """Sample the ABC posterior of a simulator's parameters.

    Parameters
    ----------
    simulate : callable
        simulate(theta [p], seed int) -> statistics [m]; must be deterministic in its seed.
    observed : array [m]
        The data's statistics.
    bounds : sequence of (low, high)
        The uniform prior's box (low > 0 where log_scale).
    scales : array [m]
        Each statistic's scale in the distance (e.g. the half-width of its target interval).
    particles, generations : int
        Population size; at most this many generations after the prior's.
    quantile : float in (0, 1)
        The next tolerance is this quantile of the current population's distances.
    min_acceptance : float
        Stop when a generation keeps fewer than this share of its proposals.
    log_scale : sequence of bool, optional
        Per parameter: uniform on the log scale (kernel moves on that scale too).
    seed : int
    map_fn : callable, optional
        map_fn(fn, list of (theta, seed)) -> list of statistics; default the builtin map.
    batch : int, optional
        Proposals simulated per map_fn call (default: `particles`).

    Returns
    -------
    ABCResult
    """
    observed, scales = np.asarray(observed, float), np.asarray(scales, float)
    lo, hi = (np.array(b, float) for b in zip(*bounds))
    p = len(lo)
    log = np.zeros(p, bool) if log_scale is None else np.asarray(log_scale, bool)
    if not (np.all(np.isfinite(observed)) and np.all(scales > 0) and np.all(hi > lo) and np.all(lo[log] > 0)):
        raise ValueError("abc_smc: observed statistics must be finite, scales > 0, bounds low < high (low > 0 on a log scale)")
    if not (0 < quantile < 1) or particles < 2:
        raise ValueError(f"abc_smc: quantile in (0, 1) and particles >= 2 required, got {quantile}, {particles}")
    rng = np.random.default_rng(seed)
    run = map_fn or (lambda fn, xs: list(map(fn, xs)))
    batch = int(batch or particles)
    ulo, uhi = np.where(log, np.log(np.where(log, lo, 1.0)), lo), np.where(log, np.log(np.where(log, hi, 1.0)), hi)
    natural = lambda u: np.where(log, np.exp(np.where(log, u, 0.0)), u)
    calls = [0]

    def simulate_many(us):
        seeds = rng.integers(2 ** 63, size=len(us))
        stats = np.array(run(_Call(simulate), [(natural(u), int(s)) for u, s in zip(us, seeds)]), float)
        calls[0] += len(us)
        d = np.sqrt(np.sum(((stats - observed) / scales) ** 2, axis=1))
        return stats, np.where(np.all(np.isfinite(stats), axis=1), d, np.inf)

    u = ulo + (uhi - ulo) * rng.random((particles, p))
    stats, dist = simulate_many(u)
    if not np.isfinite(dist).any():
        raise ValueError(f"abc_smc: all {particles} simulations from the prior gave non-finite statistics")
    w = np.full(particles, 1.0 / particles)
    tolerances, acceptance = [np.inf], [1.0]
    for _ in range(generations):
        eps = float(np.quantile(dist[np.isfinite(dist)], quantile))
        cov = 2.0 * np.atleast_2d(np.cov(u.T, aweights=w)) + 1e-12 * np.eye(p)
        L = np.linalg.cholesky(cov)
        prec = np.linalg.inv(cov)
        kept_u, kept_s, kept_d, proposed, drawn = [], [], [], 0, 0
        while len(kept_u) < particles:
            pick = rng.choice(particles, size=batch, p=w)
            cand = u[pick] + rng.standard_normal((batch, p)) @ L.T
            inside = np.all((cand >= ulo) & (cand <= uhi), axis=1)
            cand = cand[inside]
            drawn += batch
            if drawn >= MAX_KERNEL_DRAWS * particles and len(kept_u) < particles:
                break                        # the kernel keeps leaving the prior's box: stop, do not spin
            if len(cand) == 0:
                continue
            s_new, d_new = simulate_many(cand)
            proposed += len(cand)
            ok = d_new <= eps
            kept_u += list(cand[ok]); kept_s += list(s_new[ok]); kept_d += list(d_new[ok])
            if proposed >= particles / min_acceptance and len(kept_u) < particles:
                break
        rate = len(kept_u) / max(proposed, 1)
        if len(kept_u) < particles:          # the tolerance is out of reach at this budget: keep the last population
            acceptance.append(rate)
            tolerances.append(eps)
            break
        new_u = np.array(kept_u[:particles])
        diff = new_u[:, None, :] - u[None, :, :]
        kern = np.exp(-0.5 * np.einsum("ijk,kl,ijl->ij", diff, prec, diff))
        new_w = 1.0 / (kern @ w)
        u, stats, dist, w = new_u, np.array(kept_s[:particles]), np.array(kept_d[:particles]), new_w / new_w.sum()
        tolerances.append(eps)
        acceptance.append(rate)
        if rate < min_acceptance:
            break
    return ABCResult(natural(u), w, dist, stats, np.array(tolerances), np.array(acceptance), calls[0])


class _Call:
    """simulate(theta, seed) as a one-argument callable that pickles (for a process pool's map)."""

    def __init__(self, simulate):
        self.simulate = simulate

    def __call__(self, item):
        theta, seed = item
        return np.asarray(self.simulate(theta, seed), float)


__all__ = ["abc_smc", "ABCResult"]
