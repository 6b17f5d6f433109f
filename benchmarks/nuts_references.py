"""Time the per-user NUTS references for every user of one full run, beside batch Laplace.

    python benchmarks/nuts_references.py [--world dev] [--seed 0] [--policy no-transfer] [--prior policy|em]

Prints the NUTS wall time, the health figures, and the time of batch Laplace for the same
(user, component) units measured in the same process (the ratio is what the exact
reference costs over the approximation it checks). Target: NUTS under 600 s on a 2-core
machine, with healthy diagnostics.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.nuts import configure_jax  # noqa: E402

configure_jax()
import numpy as np  # noqa: E402

from tutorduel.cell_fit import policy_prior  # noqa: E402
from inference.health import stored_health  # noqa: E402
from inference.laplace import laplace_fit_batch  # noqa: E402
from inference.mixture_em import fit_mixture_em  # noqa: E402
from inference.user_reference import fit_users  # noqa: E402
from online.replay import replay_logged  # noqa: E402
from tdmodels.rosters import open_world  # noqa: E402

TARGET_S = 600.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--world", default="dev")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--policy", default="no-transfer")
    ap.add_argument("--prior", default="policy", choices=["policy", "em"])
    ap.add_argument("--users", type=int, help="only the first N users")
    a = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="  %(message)s")

    world = open_world(a.world)
    _, log = replay_logged(world, a.seed, a.policy)
    z, y = log.design(slice(None, a.users))
    U, S, d = z.shape
    if a.prior == "em":
        t = time.perf_counter()
        prior = fit_mixture_em(z, y, seed=a.seed).prior
        print(f"EM mixture prior ({prior.n_components} components): {time.perf_counter() - t:.1f} s")
    else:
        prior = policy_prior(a.policy, d)
    K = prior.n_components

    t = time.perf_counter()
    laplace_fit_batch(np.repeat(prior.means[None], U, 0).reshape(U * K, d),
                      np.repeat(prior.covs[None], U, 0).reshape(U * K, d, d), np.repeat(z, K, 0), np.repeat(y, K, 0))
    t_lap = time.perf_counter() - t

    t = time.perf_counter()
    idata = fit_users(z, y, prior, seed=a.seed)
    t_nuts = time.perf_counter() - t
    print(f"{a.world} seed {a.seed} {a.policy}: {U} users x {S} clicks x {d} dims, prior {a.prior} ({K} components), "
          f"{idata['units'].sizes['unit']} units")
    print(f"health: {stored_health(idata).line()}")
    print(f"NUTS reference {t_nuts:.1f} s (target {TARGET_S:.0f} s: {'met' if t_nuts < TARGET_S else 'MISSED'}); "
          f"batch Laplace {t_lap:.2f} s; ratio NUTS / Laplace {t_nuts / t_lap:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
