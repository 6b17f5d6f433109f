"""Coverage of the simulator calibration on synthetic data from the simulator itself.

    python scripts/calibration_coverage.py [calibration/posterior.nc] [--truths 20] [--draws 300]

Takes `--truths` of the calibration's design simulations as known truths, fits the emulator (as
``tutorduel worlds calibrate`` does) once on the other design simulations, and for each truth takes its
simulated figures plus noise at the data's sds as the observed data and samples the posterior (one wave). Prints
how often each parameter's 90% interval covers its true value (expected 90%: the emulator's error is in the
likelihood, so an over-confident emulator shows here as low coverage).
"""
from __future__ import annotations

import argparse

import numpy as np


def main():
    from inference.nuts import configure_jax

    configure_jax()
    import arviz as az

    from inference.emulator_calibration import fit_emulator, posterior_matrix, sample_posterior

    ap = argparse.ArgumentParser()
    ap.add_argument("path", nargs="?", default="calibration/posterior.nc")
    ap.add_argument("--truths", type=int, default=20)
    ap.add_argument("--draws", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--emulator", choices=["gp", "quadratic"], default="gp")
    a = ap.parse_args()
    idata = az.from_netcdf(a.path)
    sims, c = idata.simulations, idata.constant_data
    design = sims["wave"].values == 0
    th, Y = sims["theta"].values[design], sims["statistics"].values[design]
    names = [str(n) for n in c["parameter"].values]
    lo, hi, sds = c["prior_lo"].values, c["prior_hi"].values, c["sd"].values
    rng = np.random.default_rng(a.seed)
    truths = rng.choice(len(th), size=a.truths, replace=False)
    hits = np.zeros(len(names))
    widths = np.zeros(len(names))
    rest = np.ones(len(th), bool)
    rest[truths] = False
    em = fit_emulator(th[rest], Y[rest], lo, hi, kind=a.emulator)
    for i, t in enumerate(truths):
        obs = Y[t] + sds * rng.standard_normal(len(sds))
        post = posterior_matrix(sample_posterior(em, names, obs, sds, chains=2, draws=a.draws, warmup=a.draws,
                                                 seed=a.seed + i), names)
        q05, q95 = np.quantile(post, [0.05, 0.95], axis=0)
        hits += (q05 <= th[t]) & (th[t] <= q95)
        widths += (q95 - q05) / (hi - lo)
        print(f"truth {i + 1}/{a.truths}: covered {int(((q05 <= th[t]) & (th[t] <= q95)).sum())} of {len(names)}",
              flush=True)
    print(f"\n90% intervals covering the truth, of {a.truths} synthetic data sets (design simulations as truths):")
    for n, h, w in zip(names, hits, widths / a.truths):
        print(f"  {n:28s} {int(h):3d}   mean width {w:.2f} of the prior's")
    print(f"  all parameters: {hits.sum() / (a.truths * len(names)):.2f} (expected 0.90)")


if __name__ == "__main__":
    main()
