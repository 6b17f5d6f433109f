"""Fit the BTL click model to the clicks of one run with NUTS and look at it with ArviZ.

Replays the no-transfer learner on the dev roster, takes the click log (what each user was shown
and clicked), fits every user's theta under the learner's own prior N(0, 4 I), checks the sampler's
health and plots one user's posterior.

    python examples/fit_click_model.py --arrivals 20 --users 4
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import arviz as az

from inference.health import fit_health
from inference.nuts import configure_jax
from inference.user_reference import fit_users, user_draws
from online.replay import replay_logged
from tdmodels.atomic_file import atomic_save
from tdmodels.priors import isotropic_prior
from tdmodels.simulator import build_roster


def main(args):
    world = build_roster("dev")
    row, log = replay_logged(world, seed=args.seed, spec="no-transfer", arrivals=args.arrivals)
    print(f"no-transfer on dev, {row['arrivals']} arrivals: score {row['score']:.1f}")
    z, y = log.design(slice(0, args.users))                    # z [users, 24, 7]: phi_first - phi_second; y: clicks
    idata = fit_users(z, y, isotropic_prior(z.shape[-1], 4.0), seed=args.seed, chains=args.chains,
                      warmup=args.warmup, draws=args.draws)
    print("health:", fit_health(idata, ["theta"]).line())
    theta = user_draws(idata)                                  # [chain, draw, user, dim]
    print(az.summary(theta.isel(user=0).to_dataset(name="theta_user_0"), kind="stats", round_to=2))
    axes = az.plot_posterior(theta.isel(user=0).to_dataset(name="theta_user_0"))
    figure = axes.ravel()[0].figure
    atomic_save(args.out, lambda tmp: figure.savefig(tmp, dpi=80))   # refuses a device, a folder or a pipe
    print(f"wrote {args.out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--arrivals", type=int, default=40)
    ap.add_argument("--users", type=int, default=8)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=500)
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--out", default="click_model_posterior.png")
    args = ap.parse_args()
    configure_jax(args.chains)
    main(args)
