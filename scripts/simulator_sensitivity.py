"""How each of the simulator's free parameters moves the calibration figures (finite differences).

    python scripts/simulator_sensitivity.py [--factor 1.5] [--seeds 0-1] [--jobs 2]

Builds the five published rosters (held-out ones included: world-level figures only, no policy
runs) at the defaults and with one parameter at a time multiplied by --factor (set to --offset where its
default is 0: the shared persona offsets), and prints every
figure of ``tutorduel worlds targets`` (the sample's statistics when the sample is imported) at the
defaults and its change per parameter. Guides which parameters a calibration can move.
"""
from __future__ import annotations

import argparse
from concurrent.futures import ProcessPoolExecutor

from diagnostics.calibration_targets import SAMPLE_ROSTER, sample_targets, world_targets
from diagnostics.leaderboard_report import PUBLISHED_ROSTERS
from online.sweep import parse_seeds
from tdmodels.rosters import open_world, world_file
from tdmodels.simulator import build_roster
from tdmodels.simulator_params import DEFAULT_PARAMS


def figures(args):
    params, seeds = args
    worlds = {r: build_roster(r, params=params) for r in PUBLISHED_ROSTERS}
    out = {t.figure: t.ours for t in world_targets(worlds, seeds)}
    if world_file("sample").exists():
        out.update({t.figure: t.ours for t in sample_targets(open_world("sample"), worlds[SAMPLE_ROSTER], draws=10)})
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--factor", type=float, default=1.5)
    ap.add_argument("--offset", type=float, default=0.5, help="the value tried for a parameter whose default is 0")
    ap.add_argument("--seeds", default="0-1")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    seeds = parse_seeds(a.seeds)
    names = list(DEFAULT_PARAMS._fields)
    bump = lambda n: getattr(DEFAULT_PARAMS, n) * a.factor if getattr(DEFAULT_PARAMS, n) else a.offset
    variants = [DEFAULT_PARAMS] + [DEFAULT_PARAMS._replace(**{n: bump(n)}) for n in names]
    with ProcessPoolExecutor(a.jobs) as ex:
        res = list(ex.map(figures, [(v, seeds) for v in variants]))
    base = res[0]
    short = [n.replace("template_sens_base", "sens_base").replace("label_bias_sd", "label_sd").replace("offset_", "off_")
             for n in names]
    print(f"change of each figure with one parameter x {a.factor}, or set to {a.offset} where it is 0 (defaults: sim-1)")
    print(f"{'figure':52s} {'default':>8s} " + " ".join(f"{s[:10]:>10s}" for s in short))
    for fig, v in base.items():
        print(f"{fig[:52]:52s} {v:8.3f} " + " ".join(f"{r[fig] - v:+10.3f}" for r in res[1:]))


if __name__ == "__main__":
    main()
