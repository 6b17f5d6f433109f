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
(``inference.abc_smc``, since removed: git show 7d0e5ff:inference/abc_smc.py) had not narrowed the tolerance after a thousand of them; the statistics move
smoothly with the parameters (the simulator's random numbers are fixed by its seed), which is what an
emulator needs.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from tdmodels.errors import InputError


class Emulator(NamedTuple):
    """An emulator of m statistics over d parameters (coordinates scaled to [-1, 1] on the box): a
    polynomial mean (quadratic, or linear under a Gaussian process) plus, for kind "gp", the posterior mean
    of a Gaussian process on its residuals (squared-exponential kernel, one length scale per parameter
    and statistic, a nugget for the simulator's jitter), all on standardised statistics."""
    lo: np.ndarray          # [d]
    hi: np.ndarray          # [d]
    coef: np.ndarray        # [p, m], p = 1 + d (linear) or 1 + d + d (d + 1) / 2 (quadratic)
    error_sd: np.ndarray    # [m] cross-validated (quadratic: k-fold; gp: leave-one-out) root mean square error
    y_mean: np.ndarray      # [m]
    y_sd: np.ndarray        # [m]
    gp_x: np.ndarray = np.zeros((0, 0))        # [n, d] scaled training inputs (none: no GP)
    gp_alpha: np.ndarray = np.zeros((0, 0))    # [m, n] K^-1 residuals
    gp_inv_ls2: np.ndarray = np.zeros((0, 0))  # [m, d] 1 / length scale^2
    gp_signal2: np.ndarray = np.zeros(0)       # [m] signal variance


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


def min_simulations(kind: str, d: int, folds: int = 5) -> int:
    """The fewest simulations an emulator of `kind` over `d` parameters can be fitted to."""
    if kind == "gp":
        return 3 * (d + 1)
    return 1 + d + d * (d + 1) // 2 + folds


def linear_features(z, xp=np):
    """[n, 1 + d]: 1 and z."""
    return xp.concatenate([xp.ones(z.shape[:-1] + (1,)), z], axis=-1)


def fit_emulator(thetas, Y, lo, hi, ridge: float = 1e-4, folds: int = 5, seed: int = 0,
                 kind: str = "quadratic", max_points: int = 1200) -> Emulator:
    """Fit an emulator to simulations thetas [n, d] -> Y [n, m] (finite), with its cross-validated error.

    kind "quadratic": ridge least squares on quadratic features, k-fold error. kind "gp": a linear mean and a
    Gaussian process on its residuals, hyperparameters by maximum marginal likelihood (L-BFGS on JAX
    gradients), leave-one-out error (closed form); at most `max_points` simulations (the first ones).
    Raises ValueError when there are too few simulations or any statistic is not finite.
    """
    if kind == "gp":
        return _fit_gp(thetas, Y, lo, hi, max_points)
    if kind != "quadratic":
        raise InputError(f"emulator kind must be 'quadratic' or 'gp', got {kind!r}")
    thetas, Y = np.asarray(thetas, float), np.asarray(Y, float)
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    if thetas.ndim != 2 or Y.ndim != 2 or len(thetas) != len(Y):
        raise InputError(f"thetas [n, d] and Y [n, m] must have the same n, got {thetas.shape} and {Y.shape}")
    if not (np.isfinite(thetas).all() and np.isfinite(Y).all()):
        raise InputError("every simulated statistic and parameter must be finite to fit an emulator")
    F = quadratic_features(_scale(thetas, lo, hi))
    if len(F) < min_simulations("quadratic", thetas.shape[1], folds):
        raise InputError(f"an emulator of {thetas.shape[1]} parameters needs at least "
                         f"{min_simulations('quadratic', thetas.shape[1], folds)} simulations, got {len(F)}")
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


def _checked(thetas, Y, lo, hi):
    thetas, Y = np.asarray(thetas, float), np.asarray(Y, float)
    if thetas.ndim != 2 or Y.ndim != 2 or len(thetas) != len(Y):
        raise InputError(f"thetas [n, d] and Y [n, m] must have the same n, got {thetas.shape} and {Y.shape}")
    if not (np.isfinite(thetas).all() and np.isfinite(Y).all()):
        raise InputError("every simulated statistic and parameter must be finite to fit an emulator")
    return thetas, Y, np.asarray(lo, float), np.asarray(hi, float)


def _fit_gp(thetas, Y, lo, hi, max_points):
    import jax
    import jax.numpy as jnp
    from scipy.optimize import minimize

    thetas, Y, lo, hi = _checked(thetas, Y, lo, hi)
    thetas, Y = thetas[:max_points], Y[:max_points]
    n, d = thetas.shape
    if n < min_simulations("gp", d):
        raise InputError(f"a Gaussian-process emulator of {d} parameters needs at least {min_simulations('gp', d)} simulations, "
                         f"got {n}")
    y_mean, y_sd = Y.mean(0), Y.std(0)
    y_sd = np.where(y_sd > 0, y_sd, 1.0)
    Ys = (Y - y_mean) / y_sd
    z = _scale(thetas, lo, hi)
    F = linear_features(z)
    coef = _ridge(F, Ys, 1e-6)
    R = Ys - F @ coef                                                  # [n, m] residuals of the linear mean
    D2 = (z[:, None, :] - z[None, :, :]) ** 2                          # [n, n, d]

    def nll(log_p, r, D2):
        inv_ls2 = jnp.exp(-2.0 * log_p[:d])
        s2, nug = jnp.exp(2.0 * log_p[d]), jnp.exp(2.0 * log_p[d + 1])
        K = s2 * jnp.exp(-0.5 * D2 @ inv_ls2) + (nug + 1e-8) * jnp.eye(n)
        L = jnp.linalg.cholesky(K)
        a = jax.scipy.linalg.cho_solve((L, True), r)
        return 0.5 * r @ a + jnp.sum(jnp.log(jnp.diag(L)))

    value_grad = jax.jit(jax.value_and_grad(nll))
    D2j = jnp.asarray(D2)
    bounds = [(np.log(0.05), np.log(20.0))] * d + [(np.log(1e-3), np.log(10.0)), (np.log(1e-4), np.log(2.0))]
    m = Ys.shape[1]
    inv_ls2, signal2, alpha, loo = np.empty((m, d)), np.empty(m), np.empty((m, n)), np.empty((n, m))
    for j in range(m):
        r = jnp.asarray(R[:, j])
        x0 = np.r_[np.zeros(d), np.log(max(R[:, j].std(), 1e-3)), np.log(max(0.1 * R[:, j].std(), 1e-2))]
        fun = lambda p: tuple(np.asarray(v, float) for v in value_grad(jnp.asarray(p), r, D2j))
        best = minimize(fun, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 200})
        p = best.x
        inv_ls2[j] = np.exp(-2.0 * p[:d])
        signal2[j] = np.exp(2.0 * p[d])
        K = signal2[j] * np.exp(-0.5 * D2 @ inv_ls2[j]) + (np.exp(2.0 * p[d + 1]) + 1e-8) * np.eye(n)
        Kinv = np.linalg.inv(K)
        alpha[j] = Kinv @ R[:, j]
        loo[:, j] = alpha[j] / np.diag(Kinv)                           # leave-one-out residuals, closed form
    error_sd = np.sqrt(np.mean(loo ** 2, axis=0)) * y_sd
    return Emulator(lo, hi, coef, error_sd, y_mean, y_sd, z, alpha, inv_ls2, signal2)


def predict(em: Emulator, theta, xp=np):
    """The emulator's statistics [..., m] at theta [..., d] (xp: numpy or jax.numpy)."""
    z = _scale(theta, em.lo, em.hi, xp)
    if em.gp_x.size:
        mean = linear_features(z, xp) @ em.coef
        d2 = (z[..., None, :] - em.gp_x) ** 2                          # [..., n, d]
        k = xp.exp(-0.5 * d2 @ em.gp_inv_ls2.T) * em.gp_signal2         # [..., n, m]
        mean = mean + xp.sum(k * em.gp_alpha.T, axis=-2)
    else:
        mean = quadratic_features(z, xp) @ em.coef
    return mean * em.y_sd + em.y_mean


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
              log: Callable = lambda msg: None, checkpoint: Callable = lambda thetas, Y, wave: None,
              emulator: str = "gp") -> Calibration:
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
        em = fit_emulator(thetas[inside], Y[inside], lo, hi, seed=seed, kind=emulator)
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


__all__ = ["Emulator", "min_simulations", "quadratic_features", "fit_emulator", "predict", "calibration_model", "sample_posterior", "starting_points",
           "posterior_matrix", "region", "local_simulations", "Calibration", "calibrate"]
