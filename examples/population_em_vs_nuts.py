"""The population prior's EM fit against the NUTS posterior of the hierarchical population model.

Replays a learner on dev, keeps its clicks, fits the Gaussian-mixture population prior to the first
arrivals by EM (``inference.mixture_em``) and by NUTS on the DP-style model
(``tdmodels.population_model``), and compares them on what does not depend on component labels:
the density of a new user's theta, the log predictive density of held-out users' clicks, and
co-clustering of the training users beside the truth (the same student behind two arrivals).
The NUTS fit is a reference only if its health line says so; a failing one is reported, not used.

    python examples/population_em_vs_nuts.py --arrivals 60 --holdout 10
"""
import argparse

import numpy as np

from diagnostics.population_fit_checks import compare_population_fits
from inference.health import stored_health
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
                           draws=args.draws, n_learned=args.components)
    health, li = stored_health(idata), stored_label_invariant(idata)
    print(f"population NUTS on {len(train)} users: {health.line()}")
    print("\n".join(li.lines()))
    points = population_test_points(z[test], y[test])                   # the held-out users' broad-prior modes
    cmp = compare_population_fits(idata, em, z[test], y[test], points, students=log.student[train], seed=args.seed)
    for k, v in cmp.summary().items():
        print(f"  {k}: {v:.3f}" if isinstance(v, float) else f"  {k}: {v}")
    if not (health.ok and li.ok):
        print("the NUTS fit failed its health checks: the figures above compare EM with a sampler that has "
              "not converged, not with the exact posterior")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", default="no-transfer")
    ap.add_argument("--arrivals", type=int, default=60)
    ap.add_argument("--holdout", type=int, default=10)
    ap.add_argument("--components", type=int, default=4, help="learned components of the population model")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    args = ap.parse_args()
    configure_jax(args.chains)
    main(args)
