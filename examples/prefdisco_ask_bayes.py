"""PrefDisco, simulated: ask a new user about their preferences before answering.

Builds a simulated PrefDisco world and compares answering at once with asking up to five
questions chosen by expected PrefAlign gain (ask-bayes) and by a fixed order, paired over the
same scenarios. NormAlign is 0 for the population's best answer and 100 for the oracle's.

    python examples/prefdisco_ask_bayes.py --scenarios 40
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.stats import t_interval
from online.prefdisco_run import run_world
from tdmodels.prefdisco_world import build_prefdisco_world


def main(args):
    world = build_prefdisco_world(seed=args.seed)
    out = {p: run_world(world, p, questions=5, seed=args.seed, scenarios=args.scenarios)
           for p in ("answer-now", "ask-top-weight", "ask-bayes")}
    for p, r in out.items():
        ok = np.isfinite(r["norm_align"])
        m, h = t_interval(r["norm_align"][ok])
        print(f"{p:15s} NormAlign {m:6.1f} ± {h:.1f} over {ok.sum()} scenarios; {r['asked'].mean():.2f} questions asked")
    d = out["ask-bayes"]["discovery"] - out["ask-top-weight"]["discovery"]
    m, h = t_interval(d)
    print(f"ask-bayes minus ask-top-weight, PrefAlign per scenario (paired): {m:+.4f} ± {h:.4f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scenarios", type=int, default=200)
    main(ap.parse_args())
