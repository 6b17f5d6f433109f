"""Check an approximate posterior (a Gaussian mixture, e.g. the online Laplace belief) against
draws from the exact posterior (e.g. NUTS), one user at a time.

Figures, all per coordinate in units of the exact posterior sd unless stated:

- standardised mean error (E_q - E_p) / sd_p, and the sd ratio sd_q / sd_p (the mixture's
  moments are exact, the reference's are Monte Carlo estimates);
- marginal 1-Wasserstein distance between draws of q and of p, beside its noise floor: the
  same distance between two halves of the reference draws (a distance is only meaningful
  against what two samples of the same posterior give);
- PSIS k-hat of log p - log q over draws of q (q as the importance proposal; needs the
  exact log posterior up to a constant): < 0.5 good, 0.5-0.7 usable, > 0.7 unreliable.
  k-hat is itself a Monte Carlo estimate (its sd between independent 4,000-draw samples is
  about 0.1 on CODuel's beliefs), so it is computed on `khat_replicates` independent samples
  of q; `khat` is their mean, and the share of users over 0.7 is reported per replicate (as a
  range) beside the share flagged in some replicates and not in others.

Flags (`PosteriorCheck.problems`): k-hat > 0.7, |mean error| > 0.3 sd, sd ratio outside
[0.75, 1.33]. The tolerances follow NOTES-inference.md (on a 7-dim logistic example a good
Laplace gave mean errors 0.02-0.26 sd, sd ratios 0.94-1.00, k-hat about 0.53).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import arviz as az
import numpy as np
from scipy.special import logsumexp
from scipy.stats import wasserstein_distance
from tdmodels.errors import InputError
from tdmodels.priors import MixturePrior, validate_prior

KHAT_MAX = 0.7
KHAT_REPLICATES = 4
BLOCK = 50                   # arrivals per block in `UserChecks.by_block`
MEAN_ERROR_MAX = 0.3
SD_RATIO_RANGE = (0.75, 1.33)


class PosteriorCheck(NamedTuple):
    """One user's online posterior q against the exact reference p, per coordinate and as a whole (PSIS k-hat)."""
    mean_error: np.ndarray   # [d] (E_q - E_p) / sd_p
    sd_ratio: np.ndarray     # [d] sd_q / sd_p
    w1: np.ndarray           # [d] W1(q, p) / sd_p, with as many draws of q as in half the reference
    w1_floor: np.ndarray     # [d] W1 between the two halves of the reference draws / sd_p
    khat: float              # PSIS k-hat of log p - log q under q, the mean over the replicates
    khat_replicates: np.ndarray  # [R] k-hat on R independent samples of q

    @property
    def problems(self) -> list[str]:
        out = []
        if not self.khat <= KHAT_MAX:
            out.append(f"k-hat {self.khat:.2f} > {KHAT_MAX}")
        worst = float(np.max(np.abs(self.mean_error)))
        if worst > MEAN_ERROR_MAX:
            out.append(f"mean error {worst:.2f} sd > {MEAN_ERROR_MAX}")
        lo, hi = SD_RATIO_RANGE
        bad = self.sd_ratio[(self.sd_ratio < lo) | (self.sd_ratio > hi)]
        if len(bad):
            out.append(f"sd ratio {bad[np.argmax(np.abs(np.log(bad)))]:.2f} outside [{lo}, {hi}]")
        return out


def mixture_moments(weights, means, covs) -> tuple[np.ndarray, np.ndarray]:
    """Mean [d] and marginal sd [d] of the Gaussian mixture (weights [C], means [C, d], covs [C, d, d])."""
    w = np.asarray(weights, dtype=float) / np.sum(weights)
    mean = w @ means
    var = w @ np.einsum("cii->ci", covs) + w @ (means - mean) ** 2
    return mean, np.sqrt(var)


def mixture_logpdf(theta, weights, means, covs) -> np.ndarray:
    """log q(theta) for theta [..., d]; components with zero weight are skipped."""
    keep = np.asarray(weights) > 0
    w, m, S = np.asarray(weights)[keep], np.asarray(means)[keep], np.asarray(covs)[keep]
    L = np.linalg.cholesky(S)                                           # [C, d, d]
    dev = np.asarray(theta)[..., None, :] - m                           # [..., C, d]
    sol = np.einsum("cij,...cj->...ci", np.linalg.inv(L), dev)         # L^-1 (theta - m), no [..., C, d, d] copy
    d = m.shape[-1]
    logdet = 2 * np.log(np.diagonal(L, axis1=-2, axis2=-1)).sum(-1)
    comp = -0.5 * (np.sum(sol ** 2, -1) + logdet + d * np.log(2 * np.pi))
    return logsumexp(np.log(w / w.sum()) + comp, axis=-1)


def sample_mixture(rng: np.random.Generator, weights, means, covs, n: int) -> np.ndarray:
    """n draws [n, d] of the Gaussian mixture."""
    w = np.asarray(weights, dtype=float)
    k = rng.choice(len(w), size=n, p=w / w.sum())
    L = np.linalg.cholesky(np.asarray(covs)[k])
    return np.asarray(means)[k] + np.einsum("nij,nj->ni", L, rng.standard_normal((n, means.shape[-1])))


def psis_khat(log_ratios: np.ndarray) -> float:
    """Pareto k-hat of importance log ratios [S] (ArviZ's PSIS; the ratios as they are). A ratio of -inf (a
    draw the target gives no mass) is a weight of zero; NaN or +inf is an InputError, never a k-hat."""
    lr = np.asarray(log_ratios)
    if lr.dtype.kind not in "iuf" or lr.ndim != 1 or lr.size < 5:
        raise InputError(f"psis_khat: log ratios must be a 1-D array of at least 5 numbers, got "
                         f"{lr.dtype} {lr.shape}")
    lr = lr.astype(float)
    bad = np.isnan(lr) | (lr == np.inf)
    if bad.any() or not np.isfinite(lr).any():
        where = np.flatnonzero(bad)
        raise InputError(f"psis_khat: {int(bad.sum())} of {lr.size} log ratios are NaN or +inf (first at index "
                         f"{int(where[0])})" if bad.any() else f"psis_khat: all {lr.size} log ratios are -inf")
    _, khat = az.psislw(lr.astype(float))
    return float(khat)


MIN_REFERENCE_DRAWS = 4       # two halves of at least two draws each


def _checked_mixture(weights, means, covs, d: int):
    """The mixture as float arrays, or InputError naming what is wrong: its shapes, or what
    ``tdmodels.priors.validate_prior`` refuses in the components with weight (a slot of weight 0 may hold
    anything finite)."""
    try:
        w, m, S = (np.asarray(a, dtype=float) for a in (weights, means, covs))
    except (TypeError, ValueError):
        raise InputError("mixture: weights, means and covs must be arrays of numbers") from None
    if w.ndim != 1 or m.shape != (w.size, d) or S.shape != (w.size, d, d):
        raise InputError(f"mixture of shapes weights {w.shape}, means {m.shape}, covs {S.shape}: need [C], [C, {d}], "
                         f"[C, {d}, {d}] for reference draws of dimension {d}")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(S))):
        raise InputError("mixture has non-finite entries")
    used = w != 0                        # negative weights stay in: the sum check names them
    validate_prior(MixturePrior(w[used], m[used], S[used]), d)
    return w, m, S


def _target_at(log_target: Callable[[np.ndarray], np.ndarray], q: np.ndarray) -> np.ndarray:
    """log_target(q) [n], or InputError where it is not n numbers, none NaN or +inf (-inf: no mass there)."""
    try:
        out = np.asarray(log_target(q), dtype=float)
    except (TypeError, ValueError):
        raise InputError("log_target: its value is not an array of numbers") from None
    if out.shape != (len(q),):
        raise InputError(f"log_target: returned shape {out.shape} for {len(q)} draws; need [{len(q)}]")
    bad = np.isnan(out) | (out == np.inf)
    if bad.any():
        raise InputError(f"log_target: NaN or +inf at {int(bad.sum())} of {len(q)} draws of the mixture (first: "
                         f"{np.array2string(q[np.flatnonzero(bad)[0]], precision=3)})")
    return out


def check_posterior(reference: np.ndarray, weights, means, covs, log_target: Callable[[np.ndarray], np.ndarray],
                    rng: np.random.Generator, n_proposal: int = 4000,
                    khat_replicates: int = KHAT_REPLICATES) -> PosteriorCheck:
    """Compare the mixture q = (weights, means, covs) with reference draws [S, d] of the exact posterior.

    `log_target(theta [n, d]) -> [n]` is the exact log posterior up to a constant (for k-hat, on
    `khat_replicates` independent samples of `n_proposal` draws of q).
    """
    for name, v, lo in (("khat_replicates", khat_replicates, 1), ("n_proposal", n_proposal, MIN_REFERENCE_DRAWS)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise InputError(f"{name} must be an integer of at least {lo}, got {v!r}")
    try:
        ref = np.asarray(reference, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"reference draws: not an array of numbers ({type(reference).__name__})") from None
    if ref.ndim != 2 or ref.shape[0] < MIN_REFERENCE_DRAWS or ref.shape[1] < 1:
        raise InputError(f"reference draws of shape {ref.shape}: need [S, d] with S >= {MIN_REFERENCE_DRAWS} draws "
                         "(halves of at least two draws are compared with each other)")
    if not np.all(np.isfinite(ref)):
        raise InputError("reference draws have non-finite entries")
    weights, means, covs = _checked_mixture(weights, means, covs, ref.shape[1])
    sd_p = ref.std(0, ddof=1)
    if np.any(sd_p <= 0):
        raise InputError(f"reference draws are constant in dimension(s) {np.flatnonzero(sd_p <= 0).tolist()}: "
                         "nothing to scale the errors by")
    mean_q, sd_q = mixture_moments(weights, means, covs)
    half = len(ref) // 2
    a, b = ref[:half], ref[half:2 * half]
    q = sample_mixture(rng, weights, means, covs, max(n_proposal, half))
    w1 = np.array([wasserstein_distance(q[:half, i], b[:, i]) for i in range(ref.shape[1])]) / sd_p
    floor = np.array([wasserstein_distance(a[:, i], b[:, i]) for i in range(ref.shape[1])]) / sd_p
    khats = [psis_khat(_target_at(log_target, q) - mixture_logpdf(q, weights, means, covs))]
    for _ in range(khat_replicates - 1):
        q = sample_mixture(rng, weights, means, covs, n_proposal)
        khats.append(psis_khat(_target_at(log_target, q) - mixture_logpdf(q, weights, means, covs)))
    khats = np.array(khats)
    return PosteriorCheck((mean_q - ref.mean(0)) / sd_p, sd_q / sd_p, w1, floor, float(khats.mean()), khats)


def btl_log_posterior(z: np.ndarray, y: np.ndarray, weights, means, covs) -> Callable[[np.ndarray], np.ndarray]:
    """The exact log posterior (up to a constant) of one user's theta under the BTL click model:
    clicks y [S] on designs z [S, d], prior the Gaussian mixture (weights, means, covs)."""
    z, y = np.asarray(z, dtype=float), np.asarray(y, dtype=float)

    def log_target(theta):
        eta = theta @ z.T                                                  # [n, S]
        loglik = np.sum(y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta), -1)
        return loglik + mixture_logpdf(theta, weights, means, covs)

    return log_target


class UserChecks(NamedTuple):
    """`check_posterior` for every user of a run: arrays over users [U] or [U, d]."""
    users: np.ndarray
    mean_error: np.ndarray
    sd_ratio: np.ndarray
    w1: np.ndarray
    w1_floor: np.ndarray
    khat: np.ndarray             # [U] mean over the replicates
    khat_replicates: np.ndarray  # [U, R]

    def summary(self) -> dict:
        """Headline figures over the users; k-hat's Monte Carlo spread beside it."""
        k, rep = self.khat, self.khat_replicates
        share = (rep > KHAT_MAX).mean(0)                                     # [R] share of users flagged
        flagged = rep > KHAT_MAX
        return {"users": int(len(self.users)), "khat_median": float(np.median(k)), "khat_max": float(np.max(k)),
                "khat_replicates": int(rep.shape[1]),
                "khat_mc_sd_median": float(np.median(rep.std(1, ddof=1))) if rep.shape[1] > 1 else float("nan"),
                "share_khat_over_0.7": float(share.mean()),
                "share_khat_over_0.7_range": (float(share.min()), float(share.max())),
                "share_flagged_in_some_replicates_only": float(np.mean(flagged.any(1) & ~flagged.all(1))),
                "mean_abs_error_sd": float(np.mean(np.abs(self.mean_error))),
                "max_abs_error_sd": float(np.max(np.abs(self.mean_error))),
                "sd_ratio_median": float(np.median(self.sd_ratio)),
                "sd_ratio_range": (float(np.min(self.sd_ratio)), float(np.max(self.sd_ratio))),
                "w1_over_floor_median": float(np.median(self.w1 / self.w1_floor))}

    def by_block(self, block: int = BLOCK) -> list[dict]:
        """`summary` for users grouped by arrival, [0, block), [block, 2 block), ...: early users (a prior
        learned from few sessions) and late ones are not comparable, nor is a --users 40 check with a
        whole run."""
        out = []
        for lo in range(0, int(self.users.max()) + 1, block):
            sel = (self.users >= lo) & (self.users < lo + block)
            if sel.any():
                part = UserChecks(*(np.asarray(a)[sel] for a in self))
                out.append({"arrivals": (lo, lo + block - 1), **part.summary()})
        return out


def check_logged_users(log, reference_draws: np.ndarray, users=None, seed: int = 0,
                       n_proposal: int = 4000) -> UserChecks:
    """Each user's online belief at session end (``log.beliefs``) against reference draws of the
    exact posterior under the prior the user arrived under (``log.priors``), on the design the
    learner used (``log.recalibrated_design``). reference_draws [S, U, d] (all chains pooled),
    aligned with `users` (default: the first U arrivals)."""
    if log.beliefs is None or log.priors is None:
        raise InputError("check_logged_users: the click log records no online beliefs or arrival priors "
                         "(replay a policy that keeps them, e.g. coduel, with --keep-clicks)")
    ref = np.asarray(reference_draws, dtype=float)
    if ref.ndim != 3:
        raise InputError(f"check_logged_users: reference draws must be [draw, user, dim]; got shape {ref.shape}")
    users = np.arange(ref.shape[1]) if users is None else np.asarray(users)
    if users.ndim != 1 or users.dtype.kind not in "iu" or len(users) != ref.shape[1] or \
            (len(users) and (users.min() < 0 or users.max() >= log.n_users)):
        raise InputError(f"check_logged_users: users must be arrival indices in [0, {log.n_users}), one per column of "
                         f"the reference draws; got {users!r} for draws of shape {ref.shape}")
    if not np.isfinite(ref).all():
        raise InputError("check_logged_users: the reference draws have non-finite values")
    z, y = log.recalibrated_design(users)
    rng = np.random.default_rng(seed)
    out = []
    for b, u in enumerate(users):
        pw, pm, pc = (a[u] for a in log.priors)
        target = btl_log_posterior(z[b], y[b], pw, pm, pc)
        out.append(check_posterior(ref[:, b], *(a[u] for a in log.beliefs), target, rng, n_proposal))
    return UserChecks(users, *(np.array([getattr(c, f) for c in out]) for f in PosteriorCheck._fields))


def exact_component_weights(units, n_users: int, n_components: int) -> np.ndarray:
    """[U, C] posterior component probabilities of the NUTS reference (its `units` group:
    importance-sampled evidence x prior weight, per (user, component); pruned pairs are 0)."""
    out = np.zeros((n_users, n_components))
    uu, kk = units["unit_user"].values, units["unit_component"].values
    keep = uu < n_users
    out[uu[keep], kk[keep]] = units["posterior_weight"].values[keep]
    return out


def weights_distance(online: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Total variation distance [U] between the online and the exact component weights [U, C] (the online ones
    normalised). InputError where the shapes differ or a weight is negative, NaN or infinite, or a user's
    weights sum to zero (a NaN or a distance over 1 had been reported as a verdict)."""
    try:
        online, exact = np.asarray(online, dtype=float), np.asarray(exact, dtype=float)
    except (TypeError, ValueError):
        raise InputError("weights_distance: weights must be arrays of numbers") from None
    if online.ndim != 2 or online.shape != exact.shape:
        raise InputError(f"weights_distance: online {online.shape} and exact {exact.shape} weights must both be "
                         f"[users, components]")
    for name, w in (("online", online), ("exact", exact)):
        if not np.all(np.isfinite(w)) or np.any(w < 0) or np.any(w.sum(-1) <= 0):
            raise InputError(f"weights_distance: the {name} weights must be finite, non-negative and of positive "
                             f"sum for every user")
    p = online / online.sum(-1, keepdims=True)
    return 0.5 * np.abs(p - exact).sum(-1)


def beliefs_at_round(log, users, t: int, belief: str = "laplace"):
    """Each user's online belief after their first t clicks, recomputed from the log: the prior they
    arrived under, folded one click at a time through `belief` (``inference.online_beliefs.fold_session``;
    the learners' default, the Laplace step) on the design the learner used. At t = S this is the
    session-end belief the log records. Returns (weights [U, C], means, covs)."""
    from inference.online_beliefs import fold_session
    from tdmodels.priors import MixturePrior

    users = np.asarray(users)
    z, y = log.recalibrated_design(users)
    out = [fold_session(MixturePrior(*(a[u] for a in log.priors)), z[b], y[b], belief, clicks=t).belief
           for b, u in enumerate(users)]
    return tuple(np.array([o[k] for o in out]) for k in range(3))
