"""Golden figures: every built-in policy's rows on dev, seeds 0-3, as they were when the learner
interface was refactored (issue 16). A refactor must leave them identical, field by field.
CODuel's lookahead rows (coduel, no-recalibration, no-gate) were rewritten once, for the bank fix
(the bank had held 8 questions, not the world's 16; with bank_size=8 the new code reproduced the
old rows exactly).

    python -m tests.online.golden           # print the figures of this code
    python -m tests.online.golden --write   # store them as the golden file (only after checking why they moved)
"""
from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

SPECS = ("random", "no-transfer", "coduel", "coduel-no-population", "coduel-no-recalibration", "coduel-greedy",
         "coduel-no-gate", "rucb", "pooled", 'pooled[rule="thompson"]', "colstim", "coldb", "coldb-lr", "meta-ts",
         "hierts")
SEEDS = (0, 1, 2, 3)
FIELDS = ("regret", "floor", "random", "excess", "score", "per_user", "per_round", "arrivals", "rounds")
PATH = Path(__file__).with_name("data") / "dev_golden.json"


def figures(row: dict) -> dict:
    """The score, and a digest of every figure of a row (exact floats)."""
    blob = json.dumps({k: row[k] for k in FIELDS}, sort_keys=True).encode()
    return {"score": row["score"], "digest": hashlib.sha256(blob).hexdigest()}


def compute(world) -> dict:
    from online.replay import replay

    return {spec: {str(seed): figures(replay(world, seed, spec)) for seed in SEEDS} for spec in SPECS}


if __name__ == "__main__":
    from tdmodels.simulator import build_roster

    out = compute(build_roster("dev"))
    text = json.dumps(out, indent=1, sort_keys=True)
    if "--write" in sys.argv:
        PATH.write_text(text + "\n")
    print(text)
