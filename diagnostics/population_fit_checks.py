"""The EM mixture prior against the NUTS posterior of the hierarchical population model.

Component labels are exchangeable (and switch between NUTS chains), so the two fits are
compared only on label-invariant quantities:

- the density of a new user's theta at test points: for NUTS the posterior predictive
  density, the mean over draws s of sum_k w_sk N(x; mu_sk, Sigma_sk); for EM its mixture;
- the log predictive density of held-out users' clicks, log p(y_u | fit), importance-sampled
  by defensive importance sampling (``diagnostics.population_checks.log_predictive``); for NUTS under the predictive
  mixture of `thin` draws;
- co-clustering of training users: P(u and v in the same component). NUTS: the mean over draws
  of sum_k r_uk(s) r_vk(s), r_uk(s) ∝ w_sk N(theta_us; mu_sk, Sigma_sk); EM: sum_k r_uk r_vk
  with its responsibilities. Both are set beside the truth of a simulated roster (the same
  student behind both arrivals).
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


class PopulationComparison(NamedTuple):
    """Label-invariant figures of population fits side by side: new-user density at test points, held-out log predictive densities, co-clustering."""
    test_points: np.ndarray     # [P, d]
    log_density: dict           # fit name -> [P] log density of a new user's theta at the test points
    log_pred: dict              # fit name -> [H] log p(y_u | fit), nats
    max_khat: dict              # fit name -> largest k-hat of its importance-sampled evidences
    co_clustering: dict         # fit name -> [U, U] P(same component); "truth" -> same student (0/1)

    def summary(self) -> dict:
        """Label-invariant agreement figures of the NUTS and EM fits (and the online prior where given)."""
        out = {}
        nuts = self.log_density["nuts"]
        for name, ld in self.log_density.items():
            out[f"log_density_{name}_mean"] = float(ld.mean())
            if name != "nuts":
                out[f"log_density_{name}_vs_nuts_mean_abs"] = float(np.abs(ld - nuts).mean())
        for name, lp in self.log_pred.items():
            out[f"log_pred_{name}_mean"] = float(lp.mean())
            if name != "nuts":
                diff = lp - self.log_pred["nuts"]
                out[f"log_pred_{name}_vs_nuts"] = float(diff.mean())
                out[f"log_pred_{name}_vs_nuts_ci95"] = t_interval(diff)[1]
        iu = np.triu_indices(len(self.co_clustering["nuts"]), 1)
        truth = self.co_clustering.get("truth")
        for name, P in self.co_clustering.items():
            if name == "truth":
                continue
            p = P[iu]
            if name != "nuts":
                out[f"co_clustering_{name}_vs_nuts_mean_abs"] = float(np.abs(p - self.co_clustering["nuts"][iu]).mean())
            if truth is not None:
                same = truth[iu] > 0.5
                out[f"co_clustering_{name}_same_student"] = float(p[same].mean())
                out[f"co_clustering_{name}_other_student"] = float(p[~same].mean())
        return out


def predictive_mixture(idata: az.InferenceData, thin: int | None = None, broad_var: float = DEFAULT_PRIOR_VAR,
                       seed: int = 0) -> MixturePrior:
    """The posterior predictive of a new user's theta under a population NUTS fit, as one mixture
    over (draw, slot): weights w_sk / n_draws. `thin` keeps that many draws, evenly spread."""
    post = idata.posterior
    stack = lambda v: post[v].values.reshape((-1,) + post[v].shape[2:])  # noqa: E731
    w, mu, cov = stack("weights"), stack("mu"), component_covariances(stack("cov_chol"))
    n, K, d = mu.shape
    keep = np.arange(n) if thin is None or thin >= n else np.linspace(0, n - 1, thin).round().astype(int)
    w, mu, cov = w[keep], mu[keep], cov[keep]
    means = np.concatenate([mu, np.zeros((len(keep), 1, d))], 1)
    covs = np.concatenate([cov, np.broadcast_to(broad_var * np.eye(d), (len(keep), 1, d, d))], 1)
    return MixturePrior((w / len(keep)).reshape(-1), means.reshape(-1, d), covs.reshape(-1, d, d))


def co_clustering_nuts(idata: az.InferenceData, thin: int = 400, broad_var: float = DEFAULT_PRIOR_VAR) -> np.ndarray:
    """P(u and v in the same slot) [U, U] under a population NUTS fit, averaged over `thin` draws."""
    post = idata.posterior
    stack = lambda v: post[v].values.reshape((-1,) + post[v].shape[2:])  # noqa: E731
    n = stack("weights").shape[0]
    keep = np.linspace(0, n - 1, min(thin, n)).round().astype(int)
    joint = slot_log_joint(*(stack(v)[keep] for v in ("weights", "mu", "cov_chol", "theta")), broad_var)
    r = np.exp(joint - logsumexp(joint, axis=1, keepdims=True))          # [S, C, U]
    return np.einsum("sku,skv->uv", r, r) / len(keep)


def compare_population_fits(idata_nuts: az.InferenceData, em, z_test, y_test, test_points, online=None,
                            students=None, thin: int = 50, thin_density: int = 1000,
                            seed: int = 0) -> PopulationComparison:
    """Compare a population NUTS fit with an EM fit (``inference.mixture_em.EMResult``) of the same users.

    z_test [H, S, d], y_test [H, S]: held-out users' clicks; test_points [P, d]; online: an optional
    MixturePrior (e.g. the online prior at the first held-out arrival) scored beside them on
    density and held-out clicks; students [U]: the student behind each training arrival, if known.
    """
    fits = {"nuts": predictive_mixture(idata_nuts, thin=thin_density), "em": em.prior}
    if online is not None:
        fits["online"] = online
    log_density = {name: mixture_logpdf(test_points, *f) for name, f in fits.items()}
    fits["nuts"] = predictive_mixture(idata_nuts, thin=thin)
    log_pred, khat = {}, {}
    for name, f in fits.items():
        lp, kh = log_predictive(z_test, y_test, f, seed=seed)
        log_pred[name], khat[name] = lp, float(kh.max())
    em_r = em.responsibilities
    co = {"nuts": co_clustering_nuts(idata_nuts), "em": em_r @ em_r.T}
    if students is not None:
        s = np.asarray(students)
        co["truth"] = (s[:, None] == s[None]).astype(float)
    return PopulationComparison(np.asarray(test_points), log_density, log_pred, khat, co)


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
                    raise ValueError("the two fits track different user pairs: compute them on the same users")
            if "test_points" in idata_a["label_invariant"] and not np.allclose(
                    idata_a["label_invariant"]["test_points"].values, idata_b["label_invariant"]["test_points"].values):
                raise ValueError("the two fits use different test points: compute them on the same clicks")
        means = [da.mean(("chain", "draw")).values for da in das]
        mcse = [az.mcse(da.to_dataset(name="q"), method="mean")["q"].values for da in das]
        diff = np.ravel(means[0] - means[1])
        se = np.ravel(np.sqrt(mcse[0] ** 2 + mcse[1] ** 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(se > 0, diff / se, np.where(diff == 0, 0.0, np.inf))
        zs[name], diffs[name] = z, float(np.abs(diff).max())
    return ReferenceAgreement(zs, diffs)
