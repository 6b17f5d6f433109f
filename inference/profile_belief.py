"""A new user's belief over a task's profile, K value logits then K log-weights (D = 2K): the
exact posterior predictive of the Normal-Inverse-Wishart profile model
(``tdmodels.profile_model``), updated by answers about values.

The belief is a multivariate t, ``ProfileBelief(mean [D], shape [D, D], df)``. Learning the
population from N earlier users is the conjugate update (``population_belief``). An exact
answer z_j = a is exact t conditioning:

    mean' = mean + S[:, j] (a - mean_j) / s,   S' = (df + d^2) / (df + 1) (S - S[:, j] S[j, :] / s),
    df' = df + 1,   s = S_jj,   d^2 = (a - mean_j)^2 / s.

A noisy answer (logit(answer) = z_j + N(0, tau^2)) takes the same step with s = S_jj + tau^2:
exact when the noise shares the t's scale mixture, an approximation for the model's plain
Gaussian noise (checked against NUTS in ``diagnostics.profile_checks``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import numpy as np
from scipy import stats

from tdmodels.profile_model import WEIGHT_FLOOR, ProfilePrior


class ProfileBelief(NamedTuple):
    """A multivariate Student-t belief over a PrefDisco profile (value logits, then log-weights)."""
    mean: np.ndarray    # [D] location (value logits, then log-weights)
    shape: np.ndarray   # [D, D] scale matrix of the t (covariance = shape df / (df - 2))
    df: float


def population_belief(population: np.ndarray, prior: ProfilePrior) -> ProfileBelief:
    """Posterior predictive t of a new user's profile coordinates given earlier users' [N, D]."""
    z = np.asarray(population, dtype=float)
    n, K = z.shape
    zbar = z.mean(0) if n else np.zeros(K)
    dev = z - zbar
    kn, nun = prior.kappa0 + n, prior.nu0 + n
    mun = (prior.kappa0 * prior.mu0 + n * zbar) / kn
    diff = zbar - prior.mu0
    psin = prior.psi0 + dev.T @ dev + prior.kappa0 * n / kn * np.outer(diff, diff)
    df = nun - K + 1.0
    return ProfileBelief(mun, psin * (kn + 1.0) / (kn * df), float(df))


def covariance(belief: ProfileBelief) -> np.ndarray:
    """Covariance [D, D] of the t (needs df > 2)."""
    return belief.shape * belief.df / (belief.df - 2.0)


def condition(belief: ProfileBelief, j: int, answer: float, noise_var: float = 0.0) -> ProfileBelief:
    """The belief after the answer logit `answer` on coordinate j (noise variance on the logit scale)."""
    S = belief.shape
    s = S[j, j] + noise_var
    r = answer - belief.mean[j]
    scale = (belief.df + r * r / s) / (belief.df + 1.0)
    return ProfileBelief(belief.mean + S[:, j] * r / s, scale * (S - np.outer(S[:, j], S[j]) / s), belief.df + 1.0)


@lru_cache(maxsize=4096)
def answer_nodes(df: float, n: int) -> np.ndarray:
    """n equal-weight quantile nodes [n] of the standard t(df): midpoints of n equal-probability bins
    (cached: df takes few values; do not modify the returned array)."""
    return stats.t.ppf((np.arange(n) + 0.5) / n, df)


def _pref_align(mean, scale2, cross, df, styles, nodes: int = 16):
    """Expected PrefAlign [..., R] from the belief's location [..., 2K], squared scales [..., 2K]
    and the (value logit, log-weight) cross terms cross_k = shape[k, K + k] [..., K]; styles [R, K].

    E[w_k g_k(r, v_k)] keeps the dependence of a weight on its own value: z_k at `nodes`
    quantiles of its t marginal, h_k | z_k Gaussian (regression on z_k), E[w_k | z_k] =
    max(exp(E[h_k | z_k] + var(h_k | z_k) / 2) - WEIGHT_FLOOR, 0). Taking E[w_k] E[g_k]
    instead (independence) cost 15 NormAlign points at zero questions on a tuning world. The
    sum is divided by sum_k E[w_k], since weights sum to 1."""
    K = styles.shape[-1]
    q = answer_nodes(df, nodes)                                         # [n]
    mz, mh = mean[..., :K], mean[..., K:]
    szz, shh = scale2[..., :K], scale2[..., K:]
    z = mz[..., None] + np.sqrt(szz)[..., None] * q                     # [..., K, n]
    safe = np.where(szz > 0, szz, 1.0)
    beta = np.where(szz > 0, cross / safe, 0.0)
    v_h = np.maximum(shh - np.where(szz > 0, cross ** 2 / safe, 0.0), 0.0)
    ew = np.maximum(np.exp(mh[..., None] + beta[..., None] * (z - mz[..., None]) + 0.5 * v_h[..., None])
                    - WEIGHT_FLOOR, 0.0)                                # [..., K, n]
    g = 1.0 - np.abs(styles[..., None] - (1.0 / (1.0 + np.exp(-z)))[..., None, :, :])   # [..., R, K, n]
    num = (g * ew[..., None, :, :]).mean(-1).sum(-1)                    # [..., R]
    return num / np.maximum(ew.mean(-1).sum(-1), 1e-12)[..., None]


def _cross(S: np.ndarray, K: int) -> np.ndarray:
    return S[..., np.arange(K), K + np.arange(K)]


def expected_pref_align(belief: ProfileBelief, styles: np.ndarray) -> np.ndarray:
    """Expected PrefAlign [R] of every response, sum_k E[w_k g_k(r, v_k)] / sum_k E[w_k], from a
    belief over (K value logits, K log-weights); styles [R, K]."""
    K = styles.shape[-1]
    return _pref_align(belief.mean, np.maximum(np.diag(belief.shape), 0.0), _cross(belief.shape, K), belief.df, styles)


def question_gains(belief: ProfileBelief, styles: np.ndarray, candidates, noise_var=0.0, nodes: int = 16) -> np.ndarray:
    """Expected gain [J] in the best expected PrefAlign from asking each candidate value coordinate:
    E_answer[max_r E[PA(r) | answer]] - max_r E_answer[E[PA(r) | answer]], the answer at `nodes`
    quantiles of its predictive t. Both terms average over the same nodes, so the gain is >= 0
    and exactly 0 when no answer changes the best response (taking max_r E[PA(r)] from the
    belief itself instead differs by quadrature error: -0.003 seen on a random belief).
    noise_var: scalar or [J] (the logit-scale variance each answer would carry)."""
    cand = np.asarray(candidates, dtype=int)
    if cand.size == 0:
        return np.zeros(0)
    S, m, df = belief.shape, belief.mean, belief.df
    nv = np.broadcast_to(np.asarray(noise_var, dtype=float), cand.shape)
    s = S[cand, cand] + nv                                              # [J]
    r = np.sqrt(s)[:, None] * answer_nodes(df, nodes)                   # [J, n] answer - mean_j
    scale = (df + r ** 2 / s[:, None]) / (df + 1.0)                     # [J, n]
    col = S[:, cand].T                                                  # [J, D]
    mean = m + col[:, None, :] * (r / s[:, None])[..., None]            # [J, n, D]
    scale2 = scale[..., None] * (np.diag(S) - col ** 2 / s[:, None])[:, None, :]
    K = styles.shape[-1]
    cross = scale[..., None] * (_cross(S, K) - col[:, :K] * col[:, K:] / s[:, None])[:, None, :]
    after = _pref_align(mean, np.maximum(scale2, 0.0), cross, df + 1.0, styles)     # [J, n, R]
    return after.max(-1).mean(-1) - after.mean(-2).max(-1)
