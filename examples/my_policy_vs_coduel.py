"""Write your own policy and replay it against CODuel, with paired statistics over seeds.

A policy is a class with five methods (online.protocol.Policy gives no-op defaults). This one is
per-user Thompson sampling under an isotropic Gaussian prior with one-click Laplace updates. All
policies see the same arrivals, questions and uniform draws on a seed (common random numbers), so
differences are paired seed by seed.

    python examples/my_policy_vs_coduel.py --seeds 4 --arrivals 60
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.stats import paired_gain, t_interval
from inference.laplace import laplace_update
from online.protocol import Policy
from online.replay import replay
from tdmodels.simulator import build_roster


class ThompsonPerUser(Policy):
    """Draws theta from each user's Laplace posterior and shows the top two personas."""

    name = "thompson-per-user"

    def __init__(self, prior_var: float = 4.0):
        self.prior_var = prior_var

    def start_student(self):
        self.mean, self.cov = np.zeros(self.d), self.prior_var * np.eye(self.d)

    def select(self, Phi):
        theta = self.rng.multivariate_normal(self.mean, self.cov, method="cholesky")  # same draws on every machine
        order = np.argsort(-(Phi @ theta))
        self.z = Phi[order[0]] - Phi[order[1]]
        return int(order[0]), int(order[1])

    def update(self, outcome):
        self.mean, self.cov, _ = laplace_update(self.mean, self.cov, self.z, outcome)


def main(args):
    world = build_roster("dev")
    specs = {"mine": f"{__name__}:ThompsonPerUser", "coduel": "coduel", "no-transfer": "no-transfer"}
    rows = {k: [replay(world, s, spec, arrivals=args.arrivals) for s in range(args.seeds)] for k, spec in specs.items()}
    for k, rs in rows.items():
        m, h = t_interval([r["score"] for r in rs])
        print(f"{k:12s} score {m:5.1f} ± {h:.1f} (95%, {len(rs)} seeds)")
    for other in ("coduel", "no-transfer"):
        g = paired_gain([r["excess"] for r in rows["mine"]], [r["excess"] for r in rows[other]])
        print(f"mine against {other}: excess regret {-100 * g['gain']:+.1f}% [{-100 * g['hi']:+.1f}, {-100 * g['lo']:+.1f}]")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--arrivals", type=int, default=None, help="default: the whole run (300)")
    main(ap.parse_args())
