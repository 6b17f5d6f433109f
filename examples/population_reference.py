"""The population prior's batch EM fit against the exact posterior of the hierarchical population model.

Replays a learner on dev, keeps its clicks, fits the Gaussian-mixture population prior to the first
arrivals by EM (``inference.mixture_em``) and samples the DP-style model's posterior on the same
clicks with the collapsed Gibbs sampler (``inference.population_gibbs``), then compares them on
what does not depend on component labels: the density of a new user's theta, the log predictive
density of held-out users' clicks, co-clustering of the training users beside the truth (the same
student behind two arrivals), the number of components and the first pair each would show a
held-out user. The reference is a reference only if its label-invariant diagnostics say so.

    python examples/population_reference.py --arrivals 60 --holdout 10
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.population_fit_checks import compare_population_fits
from inference.mixture_em import fit_mixture_em
from inference.model_fits import fit_population, population_test_points, stored_label_invariant
from inference.nuts import configure_jax
from online.replay import replay_logged
from tdmodels.simulator import build_roster


def main(args):
    _, log = replay_logged(build_roster("dev"), args.seed, args.policy, arrivals=args.arrivals)
    z, y = log.design()
    train, test = np.arange(args.arrivals - args.holdout), np.arange(args.arrivals - args.holdout, args.arrivals)
    em = fit_mixture_em(z[train], y[train], seed=args.seed)
    idata = fit_population(z[train], y[train], seed=args.seed, chains=args.chains, warmup=args.warmup,
                           draws=args.draws)
    li = stored_label_invariant(idata)
    print(f"population reference on {len(train)} users ({sum(idata.sample_stats.attrs['seconds_per_chain']):.0f} s "
          "of chains):")
    print("\n".join(li.lines()))
    points = population_test_points(z[test], y[test])                   # the held-out users' broad-prior modes
    K = log.phi_first.shape[-1] - 1
    phi = np.concatenate([np.broadcast_to(np.eye(K), (len(test), K, K)), log.rater[test, 0][..., None]], -1)
    cmp = compare_population_fits(idata, em, z[test], y[test], points, students=log.student[train], phi_first=phi,
                                  seed=args.seed)
    for k, v in cmp.summary().items():
        print(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
    if not li.ok:
        print("the reference failed its label-invariant diagnostics: the figures above compare EM with a sampler "
              "that has not converged, not with the exact posterior")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="no-transfer")
    ap.add_argument("--arrivals", type=int, default=60)
    ap.add_argument("--holdout", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=5000)
    args = ap.parse_args()
    configure_jax(args.chains)
    main(args)
