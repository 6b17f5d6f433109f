"""Bayesian calibration of an expensive simulator through an emulator of its summary statistics.

A simulator maps parameters theta [d] (each with a uniform prior on a box) to statistics y [m]; the data
are observed statistics y_obs with standard deviations s [m] (their measurement or acceptance scale).
The likelihood is Gaussian, y_obs ~ N(f(theta), s^2 + e^2), where f is a quadratic emulator of the
simulator fitted by ridge least squares to simulations and e [m] its cross-validated error (so the
emulator's own misfit widens the posterior instead of being read as data). The posterior is sampled by
NUTS (``calibration_model`` is a plain NumPyro model with named sites, one per parameter, and ``obs=``).

Waves: the first emulator is fitted on a space-filling design over the whole box; each further wave
simulates at draws of the current posterior and refits the emulator on the simulations inside the
posterior's region (its bounding box widened by half), where a quadratic is accurate. The simulations at
the last posterior's draws are its posterior predictive check with the simulator itself.

Why an emulator rather than ABC: one simulation of the five rosters costs seconds, and the ABC-SMC
of ``inference.abc_smc`` had not narrowed the tolerance after a thousand of them; the statistics move
smoothly with the parameters (the simulator's random numbers are fixed by its seed), which is what an
emulator needs.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np


class Emulator(NamedTuple):
    """A quadratic emulator of m statistics over d parameters (coordinates scaled to [-1, 1] on the box)."""
    lo: np.ndarray          # [d]
    hi: np.ndarray          # [d]
    coef: np.ndarray        # [p, m], p = 1 + d + d (d + 1) / 2
    error_sd: np.ndarray    # [m] cross-validated root mean square error
    y_mean: np.ndarray      # [m]
    y_sd: np.ndarray        # [m]


def quadratic_features(z, xp=np):
    """[n, 1 + d + d (d + 1) / 2]: 1, z, and the products z_i z_j (i <= j) of z [n, d]."""
    d = z.shape[-1]
    i, j = np.triu_indices(d)
    return xp.concatenate([xp.ones(z.shape[:-1] + (1,)), z, z[..., i] * z[..., j]], axis=-1)


def _scale(theta, lo, hi, xp=np):
    return 2.0 * (theta - lo) / (hi - lo) - 1.0


def _ridge(F, Y, ridge):
    A = F.T @ F + ridge * len(F) * np.diag(np.r_[0.0, np.ones(F.shape[1] - 1)])
    return np.linalg.solve(A, F.T @ Y)


def fit_emulator(thetas, Y, lo, hi, ridge: float = 1e-4, folds: int = 5, seed: int = 0) -> Emulator:
    """Fit the quadratic emulator to simulations thetas [n, d] -> Y [n, m] (finite), with its k-fold error.

    Raises ValueError when there are fewer simulations than coefficients or any statistic is not finite.
    """
    thetas, Y = np.asarray(thetas, float), np.asarray(Y, float)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if thetas.ndim != 2 or Y.ndim != 2 or len(thetas) != len(Y):
        raise ValueError(f"thetas [n, d] and Y [n, m] must have the same n, got {thetas.shape} and {Y.shape}")
    if not (np.isfinite(thetas).all() and np.isfinite(Y).all()):
        raise ValueError("every simulated statistic and parameter must be finite to fit an emulator")
    F = quadratic_features(_scale(thetas, lo, hi))
    if len(F) < F.shape[1] + folds:
        raise ValueError(f"an emulator of {thetas.shape[1]} parameters needs more than {F.shape[1] + folds} "
                         f"simulations, got {len(F)}")
    y_mean, y_sd = Y.mean(0), Y.std(0)
    y_sd = np.where(y_sd > 0, y_sd, 1.0)
    Ys = (Y - y_mean) / y_sd
    fold = np.random.default_rng(seed).permutation(len(F)) % folds
    resid = np.empty_like(Ys)
    for k in range(folds):
        tr, te = fold != k, fold == k
        resid[te] = Ys[te] - F[te] @ _ridge(F[tr], Ys[tr], ridge)
    error_sd = np.sqrt(np.mean(resid ** 2, axis=0)) * y_sd
    return Emulator(lo, hi, _ridge(F, Ys, ridge), error_sd, y_mean, y_sd)


def predict(em: Emulator, theta, xp=np):
    """The emulator's statistics [..., m] at theta [..., d] (xp: numpy or jax.numpy)."""
    F = quadratic_features(_scale(theta, em.lo, em.hi, xp), xp)
    return (F @ em.coef) * em.y_sd + em.y_mean


def calibration_model(em: Emulator, names, sds, observed=None):
    """NumPyro model: each parameter ~ Uniform(lo, hi) (site named by `names`), the statistics
    ~ Normal(emulator(theta), sqrt(sds^2 + emulator error^2)), observed at `observed` [m]."""
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist

    theta = jnp.stack([numpyro.sample(n, dist.Uniform(float(a), float(b))) for n, a, b in zip(names, em.lo, em.hi)])
    mu = predict(em, theta, jnp)
    scale = jnp.sqrt(jnp.asarray(sds) ** 2 + jnp.asarray(em.error_sd) ** 2)
    numpyro.sample("statistics", dist.Normal(mu, scale).to_event(1), obs=observed)


def sample_posterior(em: Emulator, names, observed, sds, chains: int = 4, draws: int = 1000, warmup: int = 1000,
                     seed: int = 0):
    """NUTS on ``calibration_model``; returns an ArviZ InferenceData (chains run one after another)."""
    import arviz as az
    import jax
    from numpyro.infer import MCMC, NUTS

    start = starting_points(em, observed, sds, chains, seed)
    u = (start - em.lo) / (em.hi - em.lo)
    init = {n: np.log(u[:, i]) - np.log1p(-u[:, i]) for i, n in enumerate(names)}   # unconstrained (logit)
    if chains == 1:
        init = {n: v[0] for n, v in init.items()}
    mcmc = MCMC(NUTS(calibration_model, dense_mass=True), num_warmup=warmup, num_samples=draws, num_chains=chains,
                chain_method="sequential", progress_bar=False)
    mcmc.run(jax.random.PRNGKey(seed), em, tuple(names), np.asarray(sds, float), observed=np.asarray(observed, float),
             init_params=init)
    return az.from_numpyro(mcmc)


def starting_points(em: Emulator, observed, sds, chains: int, seed: int = 0, candidates: int = 20000) -> np.ndarray:
    """[chains, d] where the chains start: the best of `candidates` uniform draws by the emulated likelihood,
    one from each of `chains` equal slices of the draws (spread out, each already near a mode; a chain
    started at random can settle where the uniform's logit transform makes the density flat)."""
    rng = np.random.default_rng(seed)
    th = em.lo + rng.uniform(size=(candidates, len(em.lo))) * (em.hi - em.lo)
    th = np.clip(th, em.lo + 1e-6 * (em.hi - em.lo), em.hi - 1e-6 * (em.hi - em.lo))
    scale2 = np.asarray(sds, float) ** 2 + em.error_sd ** 2
    chi2 = np.sum((predict(em, th) - np.asarray(observed, float)) ** 2 / scale2, axis=1)
    return np.stack([th[part[np.argmin(chi2[part])]] for part in np.array_split(np.arange(candidates), chains)])


def posterior_matrix(idata, names) -> np.ndarray:
    """[chains * draws, d] the posterior draws in `names` order."""
    post = idata.posterior
    return np.stack([post[n].values.reshape(-1) for n in names], axis=1)


def region(draws: np.ndarray, lo, hi, widen: float = 0.5):
    """The draws' bounding box widened by `widen` of its width on each side, within the prior's box."""
    a, b = draws.min(0), draws.max(0)
    w = b - a
    return np.maximum(lo, a - widen * w), np.minimum(hi, b + widen * w)


def local_simulations(thetas, Y, box, lo, hi, per_coefficient: int = 2) -> np.ndarray:
    """[n] bool: the finite simulations inside `box` (lo, hi), topped up with the nearest others (scaled
    distance to the box) to `per_coefficient` times the emulator's coefficients where the box holds fewer."""
    finite = np.isfinite(Y).all(1) & np.isfinite(thetas).all(1)
    width = np.asarray(hi, float) - np.asarray(lo, float)
    gap = (np.maximum(box[0] - thetas, 0) + np.maximum(thetas - box[1], 0)) / width
    dist = np.where(finite, np.sqrt(np.sum(gap ** 2, axis=1)), np.inf)
    d = thetas.shape[1]
    need = min(int(finite.sum()), per_coefficient * (1 + d + d * (d + 1) // 2))
    keep = dist == 0
    if keep.sum() < need:
        keep = np.zeros(len(thetas), bool)
        keep[np.argsort(dist, kind="stable")[:need]] = True
    return keep


class Calibration(NamedTuple):
    """What ``calibrate`` found: the last posterior, its emulator and every simulation made."""
    idata: object                 # ArviZ InferenceData of the last wave
    emulator: Emulator
    thetas: np.ndarray            # [n, d] every simulation's parameters
    statistics: np.ndarray        # [n, m]
    wave: np.ndarray              # [n] 0 = design, k = at wave k's posterior draws (the last: the predictive check)
    emulators: list               # each wave's emulator


def calibrate(simulate: Callable, names, lo, hi, observed, sds, design_thetas, waves: int = 2,
              wave_size: int = 100, chains: int = 4, draws: int = 1000, seed: int = 0, design_statistics=None,
              log: Callable = lambda msg: None, checkpoint: Callable = lambda thetas, Y, wave: None) -> Calibration:
    """Emulator-based calibration in waves (module docstring).

    simulate: thetas [n, d] -> statistics [n, m]. design_thetas [n0, d]: the first wave's design
    (design_statistics: its simulations when already made; `checkpoint(thetas, Y, wave)` is called after every
    batch of simulations, to keep them). After the last wave, `wave_size` draws of the
    posterior are simulated: the posterior predictive check.
    """
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    thetas = np.asarray(design_thetas, float)
    Y = np.asarray(design_statistics, float) if design_statistics is not None else np.asarray(simulate(thetas))
    wave = np.zeros(len(thetas), int)
    rng = np.random.default_rng(seed)
    box = (lo, hi)
    emulators = []
    checkpoint(thetas, Y, wave)
    for k in range(1, waves + 1):
        inside = local_simulations(thetas, Y, box, lo, hi)
        em = fit_emulator(thetas[inside], Y[inside], lo, hi, seed=seed)
        emulators.append(em)
        idata = sample_posterior(em, names, observed, sds, chains=chains, draws=draws, warmup=draws, seed=seed + k)
        post = posterior_matrix(idata, names)
        log(f"wave {k}: emulator on {inside.sum()} simulations, error / sd median "
            f"{np.median(em.error_sd / np.asarray(sds)):.2f}")
        new = post[rng.choice(len(post), size=wave_size, replace=False)]
        Ynew = np.asarray(simulate(new))
        thetas, Y, wave = np.vstack([thetas, new]), np.vstack([Y, Ynew]), np.r_[wave, np.full(len(new), k)]
        checkpoint(thetas, Y, wave)
        box = region(post, lo, hi)
    return Calibration(idata, em, thetas, Y, wave, emulators)


__all__ = ["Emulator", "quadratic_features", "fit_emulator", "predict", "calibration_model", "sample_posterior", "starting_points",
           "posterior_matrix", "region", "local_simulations", "Calibration", "calibrate"]
