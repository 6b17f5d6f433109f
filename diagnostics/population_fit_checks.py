"""Fits of the population prior against the exact reference posterior of the hierarchical model.

The reference is a converged posterior of ``tdmodels.population_model.population`` on the same
users' clicks (``inference.population_gibbs``; a NUTS fit is read the same way). Component labels
are not comparable between fits, so everything is compared on label-invariant quantities:

- the density of a new user's theta at test points: for the reference the posterior predictive
  density, the mean over draws s of sum_k w_sk N(x; mu_sk, Sigma_sk); for EM or an online prior
  its mixture;
- the log predictive density of held-out users' clicks, log p(y_u | fit), importance-sampled by
  defensive importance sampling (``diagnostics.population_checks.log_predictive``); for the
  reference under the predictive mixture of `thin` draws;
- co-clustering of training users: P(u and v in the same component). Reference: the mean over
  draws of sum_k r_uk(s) r_vk(s), r_uk(s) ∝ w_sk N(theta_us; mu_sk, Sigma_sk); EM: sum_k r_uk r_vk
  with its responsibilities. Both are set beside the truth of a simulated roster (the same
  student behind both arrivals);
- the number of components: occupied learned components per reference draw (its mean and 90%
  interval) against those an EM or online prior keeps;
- what a difference does to the next user: the first pair each fit would show a held-out user
  (the two personas of highest mean utility under the fit's mean theta), and what that pair gives
  up under the reference's mean utilities.
"""
from __future__ import annotations

from typing import NamedTuple

import arviz as az
import numpy as np
from scipy.special import logsumexp

from diagnostics.population_checks import log_predictive
from diagnostics.posterior_checks import mixture_logpdf
from diagnostics.stats import t_interval
from inference.population_diagnostics import component_covariances, slot_log_joint
from tdmodels.priors import DEFAULT_PRIOR_VAR, MixturePrior
from tdmodels.ties import top_two
from tdmodels.errors import InputError

REFERENCE = "reference"


class PopulationComparison(NamedTuple):
    """Label-invariant figures of population fits side by side: new-user density at test points, held-out
    log predictive densities, co-clustering, component counts and the first pair shown to held-out users."""
    test_points: np.ndarray     # [P, d]
    log_density: dict           # fit name -> [P] log density of a new user's theta at the test points
    log_pred: dict              # fit name -> [H] log p(y_u | fit), nats
    max_khat: dict              # fit name -> largest k-hat of its importance-sampled evidences
    co_clustering: dict         # fit name -> [U, U] P(same component); "truth" -> same student (0/1)
    components: dict            # fit name -> number of learned components (reference: [draws] per draw)
    first_pairs: dict           # fit name -> [H, 2] the first pair it would show each held-out user
    pair_loss: dict             # fit name -> [H] reference mean utility of the reference's pair minus of its own
    log_density_interval: np.ndarray = None   # [2, P] the reference's 5% and 95% per-draw log density

    def summary(self) -> dict:
        """Label-invariant agreement figures of each fit against the reference."""
        out = {}
        ref = self.log_density[REFERENCE]
        for name, ld in self.log_density.items():
            out[f"log_density_{name}_mean"] = float(ld.mean())
            if name != REFERENCE:
                out[f"log_density_{name}_vs_reference_mean"] = float((ld - ref).mean())
                out[f"log_density_{name}_vs_reference_mean_abs"] = float(np.abs(ld - ref).mean())
        for name, lp in self.log_pred.items():
            out[f"log_pred_{name}_mean"] = float(lp.mean())
            if name != REFERENCE:
                diff = lp - self.log_pred[REFERENCE]
                out[f"log_pred_{name}_vs_reference"] = float(diff.mean())
                out[f"log_pred_{name}_vs_reference_ci95"] = t_interval(diff)[1]
        iu = np.triu_indices(len(self.co_clustering[REFERENCE]), 1)
        truth = self.co_clustering.get("truth")
        for name, P in self.co_clustering.items():
            if name == "truth":
                continue
            p = P[iu]
            if name != REFERENCE:
                out[f"co_clustering_{name}_vs_reference_mean_abs"] = float(
                    np.abs(p - self.co_clustering[REFERENCE][iu]).mean())
            if truth is not None:
                same = truth[iu] > 0.5
                out[f"co_clustering_{name}_same_student"] = float(p[same].mean())
                out[f"co_clustering_{name}_other_student"] = float(p[~same].mean())
        for name, n in self.components.items():
            n = np.asarray(n, dtype=float)
            out[f"components_{name}"] = float(n.mean())
            if n.size > 1:
                lo, hi = np.quantile(n, [0.05, 0.95])
                out[f"components_{name}_90"] = f"{lo:.0f}-{hi:.0f}"
        for name, pairs in self.first_pairs.items():
            if name != REFERENCE:
                same = np.all(np.sort(pairs, 1) == np.sort(self.first_pairs[REFERENCE], 1), 1)
                out[f"first_pair_{name}_same_as_reference"] = float(same.mean())
                out[f"first_pair_{name}_loss"] = float(self.pair_loss[name].mean())
        return out


def _stack(post, v):
    return post[v].values.reshape((-1,) + post[v].shape[2:])


def predictive_mixture(idata: az.InferenceData, thin: int | None = None, broad_var: float = DEFAULT_PRIOR_VAR,
                       seed: int = 0) -> MixturePrior:
    """The posterior predictive of a new user's theta under a population fit, as one mixture over
    (draw, slot): weights w_sk / n_draws. `thin` keeps that many draws, evenly spread."""
    post = idata.posterior
    w, mu, cov = _stack(post, "weights"), _stack(post, "mu"), component_covariances(_stack(post, "cov_chol"))
    n, K, d = mu.shape
    keep = np.arange(n) if thin is None or thin >= n else np.linspace(0, n - 1, thin).round().astype(int)
    w, mu, cov = w[keep], mu[keep], cov[keep]
    means = np.concatenate([mu, np.zeros((len(keep), 1, d))], 1)
    covs = np.concatenate([cov, np.broadcast_to(broad_var * np.eye(d), (len(keep), 1, d, d))], 1)
    return MixturePrior((w / len(keep)).reshape(-1), means.reshape(-1, d), covs.reshape(-1, d, d))


def co_clustering(idata: az.InferenceData, thin: int = 400, broad_var: float = DEFAULT_PRIOR_VAR) -> np.ndarray:
    """P(u and v in the same slot) [U, U] under a population fit, averaged over `thin` draws."""
    post = idata.posterior
    n = _stack(post, "weights").shape[0]
    keep = np.linspace(0, n - 1, min(thin, n)).round().astype(int)
    joint = slot_log_joint(*(_stack(post, v)[keep] for v in ("weights", "mu", "cov_chol", "theta")), broad_var)
    r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))          # [S, C, U]
    return np.einsum("sku,skv->uv", r, r) / len(keep)


def occupied_components(idata: az.InferenceData) -> np.ndarray:
    """Learned components holding at least one user, per draw [draws] (from the explicit assignments of
    a Gibbs fit; else the expected count given each draw's parameters)."""
    post = idata.posterior
    K = post["mu"].shape[-2]
    if "assignment" in post:
        a = _stack(post, "assignment")
        return np.array([np.unique(x[x < K]).size for x in a], dtype=float)
    joint = slot_log_joint(*(_stack(post, v) for v in ("weights", "mu", "cov_chol", "theta")), DEFAULT_PRIOR_VAR)
    r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))[:, :K]
    return (1.0 - np.exp(np.log1p(-np.minimum(r, 1.0)).sum(-1))).sum(-1)


def mixture_mean(prior: MixturePrior) -> np.ndarray:
    """The mean [d] of a Gaussian mixture."""
    w = np.asarray(prior.weights, dtype=float)
    return (w / w.sum()) @ np.asarray(prior.means)


def first_pair(phi: np.ndarray, theta_mean: np.ndarray) -> np.ndarray:
    """The two personas [2] of highest mean utility phi [K, d] @ theta_mean, the higher first; near-equal
    utilities tie by ``tdmodels.ties`` (the lowest index wins)."""
    return np.array(top_two(phi @ theta_mean))


def compare_population_fits(idata_ref: az.InferenceData, em, z_test, y_test, test_points, online=None,
                            students=None, phi_first=None, online_components=None, thin: int = 50,
                            thin_density: int = 1000, seed: int = 0) -> PopulationComparison:
    """Compare EM (``inference.mixture_em.EMResult``), and optionally an online prior, with the reference
    posterior of the population model on the same training users.

    Parameters
    ----------
    idata_ref : InferenceData
        The reference fit of the training users (posterior weights, mu, cov_chol, theta).
    em : EMResult
        A batch EM fit of the same users.
    z_test, y_test : arrays [H, S, d], [H, S]
        Held-out users' clicks.
    test_points : array [P, d]
    online : MixturePrior or None
        E.g. the online prior at the first held-out arrival, scored beside them.
    students : array [U] or None
        The student behind each training arrival, if known (co-clustering against the truth).
    phi_first : array [H, K, d] or None
        Each held-out user's first question's features: the first pair each fit would show.
    online_components : int or None
        Learned components the online prior holds.
    """
    fits = {REFERENCE: predictive_mixture(idata_ref, thin=thin_density), "em": em.prior}
    if online is not None:
        fits["online"] = online
    log_density = {name: mixture_logpdf(test_points, *f) for name, f in fits.items()}
    means = {name: mixture_mean(f) for name, f in fits.items()}
    per_draw = reference_log_density_draws(idata_ref, test_points, thin=thin_density)
    fits[REFERENCE] = predictive_mixture(idata_ref, thin=thin)
    log_pred, khat = {}, {}
    for name, f in fits.items():
        lp, kh = log_predictive(z_test, y_test, f, seed=seed)
        log_pred[name], khat[name] = lp, float(kh.max())
    em_r = em.responsibilities
    co = {REFERENCE: co_clustering(idata_ref), "em": em_r @ em_r.T}
    if students is not None:
        s = np.asarray(students)
        co["truth"] = (s[:, None] == s[None]).astype(float)
    components = {REFERENCE: occupied_components(idata_ref),                 # EM: learned ones holding half a user
                  "em": int(np.sum(em.responsibilities[:, :-1].sum(0) >= 0.5))}
    if online_components is not None:
        components["online"] = int(online_components)
    pairs, loss = {}, {}
    if phi_first is not None:
        ref_u = np.einsum("hkd,d->hk", phi_first, means[REFERENCE])
        for name, m in means.items():
            pairs[name] = np.stack([first_pair(phi, m) for phi in phi_first])
            best = np.stack([first_pair(phi, means[REFERENCE]) for phi in phi_first])
            take = lambda p: np.take_along_axis(ref_u, p, 1).sum(1)  # noqa: E731
            loss[name] = take(best) - take(pairs[name])
    return PopulationComparison(np.asarray(test_points), log_density, log_pred, khat, co, components, pairs, loss,
                                np.quantile(per_draw, [0.05, 0.95], axis=0))


def reference_log_density_draws(idata: az.InferenceData, points, thin: int = 1000,
                                broad_var: float = DEFAULT_PRIOR_VAR) -> np.ndarray:
    """log sum_k w_sk N(x_p; mu_sk, Sigma_sk) per draw [S, P] of a population fit (`thin` draws, evenly
    spread): the posterior spread of a new user's density at each point."""
    post = idata.posterior
    n = _stack(post, "weights").shape[0]
    keep = np.linspace(0, n - 1, min(thin, n)).round().astype(int)
    joint = slot_log_joint(*(_stack(post, v)[keep] for v in ("weights", "mu", "cov_chol")), np.asarray(points, float),
                           broad_var)
    return logsumexp(joint, axis=1)


class ReferenceAgreement(NamedTuple):
    """Two samplers' posteriors of the same population model on the same clicks, compared on every
    label-invariant quantity: the difference of posterior means in units of its Monte Carlo
    standard error, sqrt(mcse_a^2 + mcse_b^2)."""
    z: dict                  # quantity -> [entries] z-scores
    max_abs_mean_diff: dict  # quantity -> largest |mean_a - mean_b|

    def lines(self, a: str = "a", b: str = "b") -> list[str]:
        out = [f"{a} against {b}, posterior means over Monte Carlo error:"]
        for name, z in self.z.items():
            out.append(f"  {name:14s} {z.size:6d} entries: max |z| {np.abs(z).max():.2f}, "
                       f"{100 * np.mean(np.abs(z) > 3):.1f}% over 3, max |difference| "
                       f"{self.max_abs_mean_diff[name]:.3g}")
        return out

    def agree(self, z_max: float = 4.5) -> bool:
        """Every entry within z_max Monte Carlo errors (4.5: a max over a few thousand normal z's
        exceeds it with probability under 1%)."""
        return all(np.abs(z).max() <= z_max for z in self.z.values())


def reference_agreement(idata_a: az.InferenceData, idata_b: az.InferenceData) -> ReferenceAgreement:
    """Compare two population fits of the same clicks (each with its "label_invariant" group, computed at
    the same test points and pairs) on theta and every label-invariant quantity."""
    zs, diffs = {}, {}
    for name in ("theta", "log_density", "co_clustering", "occupied", "log_lik"):
        das = []
        for idata in (idata_a, idata_b):
            src = idata.posterior if name == "theta" else idata["label_invariant"]
            das.append(src[name])
        if name != "theta":
            for coord in ("pair_i", "pair_j"):
                if coord in das[0].coords and not np.array_equal(das[0][coord].values, das[1][coord].values):
                    raise InputError("the two fits track different user pairs: compute them on the same users")
            if "test_points" in idata_a["label_invariant"] and not np.allclose(
                    idata_a["label_invariant"]["test_points"].values, idata_b["label_invariant"]["test_points"].values):
                raise InputError("the two fits use different test points: compute them on the same clicks")
        means = [da.mean(("chain", "draw")).values for da in das]
        mcse = [az.mcse(da.to_dataset(name="q"), method="mean")["q"].values for da in das]
        diff = np.ravel(means[0] - means[1])
        se = np.ravel(np.sqrt(mcse[0] ** 2 + mcse[1] ** 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, diff / se, np.where(diff == 0, 0.0, np.inf))
        zs[name], diffs[name] = z, float(np.abs(diff).max())
    return ReferenceAgreement(zs, diffs)
