"""The per-unit NUTS reference against the former one-NUTS reference, unit by unit, on the same clicks.

Both sample the same (user, component) units of CODuel's first users on dev under the priors the users
arrived under: the former with one NUTS over all units (one step size and tree depth for all), the current
with every unit's own chains. Each unit's posterior mean is compared in Monte Carlo standard errors (the
two fits' MCSEs combined; the per-unit fit's from its worst coordinate's bulk ESS), its posterior sd as a
ratio, and each user's validation figures (mean error, sd ratio, W1 of the online belief) under either.

    python examples/per_unit_against_joint_reference.py --users 100
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse
import time
import warnings

import numpy as np

from diagnostics.posterior_checks import check_logged_users
from inference.convergence import rhat_and_bulk_ess
from inference.health import FitHealthWarning, stored_health
from inference.nuts import configure_jax
from online.replay import replay_logged
from tdmodels.priors import MixturePrior
from tdmodels.simulator import build_roster


def fits(z, y, prior, args):
    from inference.joint_reference import fit_users_joint
    from inference.user_reference import compact_reference, fit_users

    out = {}
    for name, fit in (("joint", fit_users_joint), ("per-unit", fit_users)):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)     # the health line is printed below
            idata = fit(z, y, prior, seed=args.seed, chains=args.chains, warmup=args.warmup, draws=args.draws)
        print(f"{name:9s} {time.perf_counter() - t:6.1f} s  {stored_health(idata).line()}")
        out[name] = idata if name == "per-unit" else (idata, compact_reference(idata, seed=args.seed))
    return out


def main(args):
    from inference.user_reference import user_draws

    _, log = replay_logged(build_roster("dev"), seed=args.seed, spec="coduel", arrivals=args.arrivals)
    n = args.users
    z, y = log.recalibrated_design(slice(None, n))
    f = fits(z, y, MixturePrior(*(a[:n] for a in log.priors)), args)
    (joint, joint_compact), unit = f["joint"], f["per-unit"]
    th = joint.posterior.theta.values                          # [chain, draw, unit, d]
    C, M, n_units, d = th.shape
    ess = rhat_and_bulk_ess(th.reshape(C, M, -1))[1].reshape(n_units, d)
    u = unit["units"]
    same = np.array_equal(u.unit_user.values, joint.posterior.unit_user.values)
    sd_j = th.std((0, 1), ddof=1)
    sd_u = np.sqrt(np.diagonal(u.unit_cov.values, axis1=1, axis2=2))
    mcse = np.sqrt(sd_j ** 2 / ess + sd_u ** 2 / u.ess_bulk.values[:, None])
    z_scores = np.abs(th.mean((0, 1)) - u.unit_mean.values) / mcse
    print(f"{n_units} units (the same (user, component) pairs: {same}); |mean difference| / MCSE: max "
          f"{z_scores.max():.2f}, over 3 {100 * np.mean(z_scores > 3):.1f}%, over 4 {100 * np.mean(z_scores > 4):.1f}% "
          f"of {z_scores.size} coordinates")
    ratio = sd_u / sd_j
    dw = np.abs(u.posterior_weight.values - joint["units"].posterior_weight.values).max()
    print(f"sd per-unit / joint: median {np.median(ratio):.3f} ({ratio.min():.2f}-{ratio.max():.2f}); posterior "
          f"component weights differ by at most {dw:.4f}")
    checks = {}
    for name, idata in (("joint", joint_compact), ("per-unit", unit)):
        ref = user_draws(idata, seed=args.seed).values
        checks[name] = check_logged_users(log, ref.reshape(-1, n, d), np.arange(n), seed=args.seed)
    for field in ("mean_error", "sd_ratio", "w1"):
        a, b = (np.abs(getattr(checks[k], field)) for k in ("joint", "per-unit"))
        print(f"{field:10s} median joint {np.median(a):.3f}, per-unit {np.median(b):.3f}; largest difference of a "
              f"user's figure {np.abs(a - b).max():.3f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arrivals", type=int, default=None, help="the run's arrivals (default: all 300)")
    ap.add_argument("--users", type=int, default=100, help="the first N users")
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    configure_jax(args.chains)                   # an entry point: before JAX starts
    main(args)
