"""SBC of the population model's exact sampler, with its ECDF-difference figure.

    python scripts/population_sbc.py [--sims 100] [--users 30] [--out sbc]

The same simulations as the slow test (tests/inference/test_calibration.py), printed: per checked
quantity (the first users' theta, the clicks' log likelihood, the population density at two fixed
points, the largest weight, the occupied components, whether users 0 and 1 share a component) the
chi-square p-value of its ranks, the Bonferroni-combined p-value, and the share of fits that passed
their own label-invariant diagnostics (each fit runs until they pass, or 2 minutes).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.nuts import configure_jax  # noqa: E402

configure_jax()
import warnings  # noqa: E402

import numpy as np  # noqa: E402

from diagnostics.sbc_plots import plot_sbc_ecdf  # noqa: E402
from inference.health import FitHealthWarning  # noqa: E402
from inference.sbc import rank_uniformity, run_population_sbc  # noqa: E402
from online.process_pool import map_in_workers  # noqa: E402
from tdmodels.simulator import build_roster  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=100)
    ap.add_argument("--users", type=int, default=30)
    ap.add_argument("--seed", type=int, default=21)
    ap.add_argument("--out", default="sbc")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(exist_ok=True)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitHealthWarning)
        res = run_population_sbc(build_roster("dev")["features"].values, n_sims=a.sims, users=a.users, rounds=24,
                                 L=99, seed=a.seed, chains=2, warmup=300, draws=1000, max_seconds=120.0,
                                 map_chains=lambda fn, items: map_in_workers(fn, items, 2))
    p, combined = rank_uniformity(res.ranks, res.L)
    print(f"population SBC: {a.sims} data sets of {a.users} users, {time.perf_counter() - t:.0f} s; fits healthy "
          f"{100 * res.healthy.mean():.0f}% (sweeps per chain: median {np.median(res.sweeps):.0f}, max "
          f"{res.sweeps.max()})")
    for name, pv in zip(res.names, p):
        print(f"  {name:22s} rank chi-square p {pv:.3f}")
    print(f"  Bonferroni-combined p {combined:.3f}")
    plot_sbc_ecdf(res, out / "sbc-population.png")
    print(f"figure {out / 'sbc-population.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
