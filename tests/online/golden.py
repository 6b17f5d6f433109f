"""Golden figures: every built-in policy's rows on dev, seeds 0-3. Regenerated whole when sim-3 became the
default generator (issue 47: dev is another world); before that, as they were when the learner
interface was refactored (issue 16). A refactor must leave them the same, field by field: integers
exactly, floats to 1e-9 relative (the world's own floats differ in the last bits between CPUs, e.g.
numpy's vectorised exp and log on AVX-512 and AVX2; no choice a policy makes may). The figures
themselves are stored, not a digest of exact floats, which read such last-bit differences as a
change. CODuel's lookahead rows (coduel, no-recalibration, no-gate) were rewritten once, for the
bank fix (the bank had held 8 questions, not the world's 16; with bank_size=8 the new code
reproduced the old rows exactly); Meta-TS's once, when its prior draw moved from numpy's SVD factor
(whose signs depend on the LAPACK build) to the Cholesky one (issue 17's session; every other
policy's scores were equal to the old golden ones to 1e-9 on seeds 0-3). tempered-kg's rows were added
when it was (issue 18), the others left as they were (CODuel's lookahead_weight 1 reproduced them);
low-rank's likewise (issue 31). RUCB's were rewritten once, when its champion rule became Zoghi et
al.'s (issue 47: the first version kept the last champion shown).

    python -m tests.online.golden           # print the figures of this code
    python -m tests.online.golden --write   # store them as the golden file (only after checking why they moved)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

SPECS = ("random", "no-transfer", "coduel", "coduel-no-population", "coduel-no-recalibration", "coduel-greedy",
         "coduel-no-gate", "rucb", "pooled", 'pooled[rule="thompson"]', "colstim", "coldb", "coldb-lr", "meta-ts",
         "hierts", "tempered-kg", "low-rank")
SEEDS = (0, 1, 2, 3)
FIELDS = ("regret", "floor", "random", "excess", "score", "per_user", "per_round", "arrivals", "rounds")
PATH = Path(__file__).with_name("data") / "dev_golden.json"


RTOL = 1e-9


def figures(row: dict) -> dict:
    """Every figure of a row that the golden file keeps."""
    return json.loads(json.dumps({k: row[k] for k in FIELDS}))


def mismatches(got, want, path: str = "", rtol: float = RTOL) -> list[str]:
    """Where two figures differ: integers and types exactly, floats beyond rtol (relative, with the same
    absolute floor)."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return [f"{path}: keys {sorted(got) if isinstance(got, dict) else got!r} != {sorted(want)}"]
        return [m for k in want for m in mismatches(got[k], want[k], f"{path}.{k}", rtol)]
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return [f"{path}: length {len(got) if isinstance(got, list) else got!r} != {len(want)}"]
        return [m for i, (g, w) in enumerate(zip(got, want)) for m in mismatches(g, w, f"{path}[{i}]", rtol)]
    if isinstance(want, float) or isinstance(got, float):
        ok = isinstance(got, (int, float)) and abs(got - want) <= rtol * max(1.0, abs(want))
        return [] if ok else [f"{path}: {got!r} != {want!r}"]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]


def compute(world) -> dict:
    from online.replay import replay

    return {spec: {str(seed): figures(replay(world, seed, spec)) for seed in SEEDS} for spec in SPECS}


if __name__ == "__main__":
    from tdmodels.simulator import build_roster

    out = compute(build_roster("dev"))
    text = json.dumps(out, indent=1, sort_keys=True)
    if "--write" in sys.argv:
        PATH.write_text(json.dumps(out, sort_keys=True, separators=(",", ":")) + "\n")
    print(text)
