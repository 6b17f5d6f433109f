"""SBC and interval coverage of the per-user NUTS references, with ECDF-difference figures.

    python scripts/sbc_report.py [--sims 200] [--out sbc]

The same simulations as the slow tests (tests/inference/test_calibration.py), printed.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.nuts import configure_jax  # noqa: E402

configure_jax()
import numpy as np  # noqa: E402

from diagnostics.sbc_plots import plot_sbc_ecdf  # noqa: E402
from inference.sbc import CHECK_MIXTURE, coverage, rank_uniformity, run_sbc  # noqa: E402
from tdmodels.priors import isotropic_prior  # noqa: E402
from tdmodels.simulator import build_roster  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--out", default="sbc")
    a = ap.parse_args(argv)
    out = Path(a.out)
    out.mkdir(exist_ok=True)
    F = build_roster("dev")["features"].values
    for name, prior, seed in [("isotropic", isotropic_prior(7), 11), ("mixture", CHECK_MIXTURE, 12)]:
        t = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = run_sbc(prior, F, n_sims=a.sims, rounds=24, L=99, seed=seed, chains=4, warmup=500, draws=500)
        p, combined = rank_uniformity(res.ranks, res.L)
        cov = coverage(res.theta, res.draws, 0.9)
        print(f"{name}: {a.sims} users, {time.perf_counter() - t:.0f} s, health ok {res.health_ok}")
        print(f"  90% coverage per coordinate: {np.array2string(cov, precision=3)}, mean {cov.mean():.3f}")
        print(f"  rank chi-square p per coordinate: {np.array2string(p, precision=3)}; Bonferroni {combined:.3f}")
        for w in caught:
            print(f"  warning: {w.message}")
        plot_sbc_ecdf(res, out / f"sbc-{name}.png")
    print(f"figures in {out}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
