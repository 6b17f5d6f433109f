"""Direct questions inside a TutorDuel session (the combined mode): instead of showing a pair,
the policy asks the student how much they like one persona's style, and the answer enters the
same Gaussian-mixture belief over theta as the clicks do.

The answer to the question about persona k is modelled as a = c_k . theta + N(0, noise_var),
c_k = e_k - (1/K) sum_p e_p on the persona coordinates (0 on the rater coordinate): the
student's liking of persona k relative to the average persona, in the logit units of the click
model (utilities are only defined up to a shift common to all personas). A linear-Gaussian
observation updates each mixture component exactly (Kalman) and reweights the components by
its marginal likelihood, so the belief stays exact given the prior mixture.
"""
from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from inference.mixture_belief import MixtureBelief

GH_NODES, GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(8)
GH_WEIGHTS = GH_WEIGHTS / GH_WEIGHTS.sum()


def persona_contrast(K: int, d: int, k: int) -> np.ndarray:
    """c_k [d]: persona k's indicator minus the mean indicator; zero beyond the K persona coordinates."""
    c = np.zeros(d)
    c[:K] = -1.0 / K
    c[k] += 1.0
    return c


def observe_linear(belief: MixtureBelief, c: np.ndarray, answer: float, noise_var: float) -> MixtureBelief:
    """The belief after observing answer = c . theta + N(0, noise_var) (exact for a Gaussian mixture)."""
    Sc = belief.covs @ c                                   # [C, d]
    s = Sc @ c + noise_var                                 # [C] predictive variance of the answer
    r = answer - belief.means @ c                          # [C]
    with np.errstate(invalid="ignore"):
        log_w = belief.log_w - 0.5 * (np.log(2 * np.pi * s) + r * r / s)
    log_w = np.where(np.isfinite(belief.log_w), log_w, -np.inf)
    return MixtureBelief(log_w - logsumexp(log_w), belief.means + Sc * (r / s)[:, None],
                         belief.covs - np.einsum("ci,cj->cij", Sc, Sc) / s[:, None, None])


def question_gains(belief: MixtureBelief, P: np.ndarray, noise_var: float) -> np.ndarray:
    """Expected gain [K] in the best belief-mean utility on this question from asking about each
    persona: E_a[max_i E[u_i | a]] - max_i E_a[E[u_i | a]], u = P theta (P [K, d] the question's
    features as the learner reads them), the answer at 8 Gauss-Hermite nodes of each component's
    predictive. Both terms use the same nodes, so gains are >= 0."""
    K, d = P.shape
    w = np.exp(belief.log_w)
    live = w > 0
    w, means, covs = w[live], belief.means[live], belief.covs[live]
    gains = np.empty(K)
    for k in range(K):
        c = persona_contrast(K, d, k)
        Sc = covs @ c
        s = Sc @ c + noise_var                                         # [C]
        mc = means @ c                                                 # [C]
        a = mc[:, None] + np.sqrt(s)[:, None] * GH_NODES               # [C, n] answer nodes
        wt = (w[:, None] * GH_WEIGHTS).ravel()                         # their probabilities
        a = a.ravel()
        # posterior component weights and means at every node
        logp = -0.5 * (np.log(s)[None] + (a[:, None] - mc[None]) ** 2 / s[None])   # [M, C]
        post = np.exp(logp - logsumexp(logp + np.log(w)[None], axis=1, keepdims=True)) * w[None]
        m_after = means[None] + Sc[None] * ((a[:, None] - mc[None]) / s[None])[..., None]   # [M, C, d]
        u = np.einsum("mc,mcd,kd->mk", post, m_after, P)              # [M, K]
        gains[k] = wt @ u.max(1) - (wt @ u).max()
    return gains


def pair_cost(belief: MixtureBelief, P: np.ndarray) -> float:
    """Plug-in regret of a uniformly random pair against the greedy pick under the belief-mean
    utilities: mean over pairs i < j of max_k u_k - max(u_i, u_j). The price of a round spent asking."""
    u = P @ (np.exp(belief.log_w) @ belief.means)
    iu, ju = np.triu_indices(len(u), 1)
    return float(u.max() - np.maximum(u[iu], u[ju]).mean())
