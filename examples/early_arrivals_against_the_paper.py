"""Our policies on the reference's own first sessions, against its published curves.

The real sample (``tutorduel worlds import-sample``) is 48 consecutive arrivals of the reference's
held-out-profile roster, replayed with their recorded questions, utilities and click probabilities. A
centred 25-arrival mean at arrivals 13-36 depends on those 48 arrivals alone, so where the sample is
the roster's first 48, each policy's published curve there (``tutorduel worlds import-curves``) and
ours on the sample measure the same thing: the same students, questions and judge, for every policy
the same history, and only the implementation (and the rater feature, absent from the sample) differs.

    tutorduel worlds import-sample tutorduel-site-sample.json
    tutorduel worlds import-curves tutorduel-site-curves.json
    python examples/early_arrivals_against_the_paper.py --seeds 64
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.learning_curves import moving_mean, per_user_excess
from diagnostics.published_curves import CURVES_FILE, load_curves
from online.replay import replay
from tdmodels.rosters import open_world, worlds_dir

POLICIES = {"no-transfer": "no-transfer", "colstim": "colstim", "rucb": "rucb", "pooled": 'pooled[rule="thompson"]',
            "coldb": "coldb", "coldb-lr": "coldb-lr", "meta-ts": "meta-ts", "hierts": "hierts", "coduel": "coduel"}
WINDOW = 25


def main(args):
    sample = open_world("sample", directory=args.worlds)
    curves = load_curves(worlds_dir(args.worlds) / CURVES_FILE)["test_profiles"]
    n = sample.sizes["arrival"]
    centres = slice(WINDOW // 2, n - WINDOW // 2)                # arrivals 13-36 (0-based 12-35) of 48
    print(f"excess regret per user, mean of the centred {WINDOW}-arrival means at arrivals {centres.start + 1}-"
          f"{centres.stop} of the {n} real arrivals, {args.seeds} seeds; the published curve's over the same arrivals")
    for name in args.policies.split(","):
        rows = [replay(sample, seed, POLICIES[name]) for seed in range(args.seeds)]
        ex = np.stack([per_user_excess(r) for r in rows])
        ours = moving_mean(ex.mean(0), WINDOW)                    # one point per centre
        per_seed = np.stack([moving_mean(x, WINDOW).mean() for x in ex])
        se = per_seed.std(ddof=1) / np.sqrt(len(per_seed)) if len(per_seed) > 1 else float("nan")
        pub = float(np.mean(curves[name].mean[centres])) if name in curves else float("nan")
        print(f"  {name:12s} ours {ours.mean():.3f} ± {se:.3f}   published {pub:.3f}   ours - published "
              f"{ours.mean() - pub:+.3f}   (score on the 48: {np.mean([r['score'] for r in rows]):.1f})")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=64)
    p.add_argument("--policies", default=",".join(POLICIES), help=f"comma-separated, of {', '.join(POLICIES)}")
    p.add_argument("--worlds", default=None, help="the worlds folder the sample and curves were imported into")
    main(p.parse_args())
