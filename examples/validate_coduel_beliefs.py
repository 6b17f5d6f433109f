"""Check CODuel's online beliefs against exact NUTS posteriors, user by user.

CODuel keeps, for every user, a Laplace mixture over its population prior's components. Here the
belief each user ended the session with is compared with a NUTS reference on the same clicks under
the same prior (the one the user arrived under): standardised mean error, sd ratio and PSIS k-hat
(k-hat < 0.7: the online belief is usable as an importance-sampling proposal for the exact one).

    python examples/validate_coduel_beliefs.py --arrivals 30 --users 20
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.posterior_checks import check_logged_users
from inference.nuts import configure_jax
from inference.user_reference import fit_users, user_draws
from online.replay import replay_logged
from tdmodels.priors import MixturePrior
from tdmodels.simulator import build_roster


def main(args):
    world = build_roster("dev")
    row, log = replay_logged(world, seed=args.seed, spec="coduel", arrivals=args.arrivals)
    users = np.arange(args.arrivals - args.users, args.arrivals)      # the last arrivals: a learned prior
    z, y = log.recalibrated_design(users)                             # the design the learner used
    prior = MixturePrior(*(a[users] for a in log.priors))             # one prior per user: as it arrived
    idata = fit_users(z, y, prior, seed=args.seed, chains=args.chains, warmup=args.warmup, draws=args.draws)
    ref = user_draws(idata).values                                    # [chain, draw, user, dim]
    checks = check_logged_users(log, ref.reshape(-1, *ref.shape[2:]), users)
    print(f"coduel on dev, {row['arrivals']} arrivals (score {row['score']:.1f}); users {users[0]}-{users[-1]}")
    print(" user  k-hat  max|mean error| (sd)  sd ratio range")
    for u, k, e, s in zip(checks.users, checks.khat, np.abs(checks.mean_error).max(1), checks.sd_ratio):
        print(f"{u:5d}  {k:5.2f}  {e:8.3f}            {s.min():.2f}-{s.max():.2f}")
    sm = checks.summary()
    lo, hi = sm["share_khat_over_0.7_range"]
    print(f"k-hat (mean of {sm['khat_replicates']} proposal samples, Monte Carlo sd median {sm['khat_mc_sd_median']:.3f}) "
          f"over 0.7: {sm['share_khat_over_0.7']:.0%} of {len(users)} users ({lo:.0%}-{hi:.0%} over the samples)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arrivals", type=int, default=60)
    ap.add_argument("--users", type=int, default=20)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    args = ap.parse_args()
    configure_jax(args.chains)
    main(args)
