"""Print the two identification oracles' scores (diagnostics/identification_oracles.py) on a roster.

    python scripts/identification_oracles.py [--world dev] [--seeds 2] [--arrivals N] [--allow-test]

For each oracle and pair rule: the score per seed, the first three rounds' scores and, for the
clustering oracle, how often a returning user's heaviest component is their own student after
3 and after 24 clicks.
"""
from __future__ import annotations

import argparse

import numpy as np

from diagnostics.identification_oracles import ORACLES, RULES, oracle_replay
from tdmodels.rosters import open_world


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", default="dev")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--arrivals", type=int, default=None)
    ap.add_argument("--allow-test", action="store_true")
    a = ap.parse_args()
    world = open_world(a.world, allow_test=a.allow_test)
    for oracle in ORACLES:
        for rule in RULES:
            runs = [oracle_replay(world, seed, oracle, rule, a.arrivals) for seed in range(a.seeds)]
            line = (f"{oracle:10s} {rule:8s} score " + " ".join(f"{r.score:.1f}" for r in runs)
                    + "  rounds 1-3 " + " ".join(f"{x:.0f}" for x in np.mean([r.per_round[:3] for r in runs], 0)))
            if oracle == "clustering":
                ident = np.mean([r.identified for r in runs], 0)
                line += f"  own student heaviest after 3 clicks {ident[2]:.2f}, after {len(ident)} {ident[-1]:.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
