"""The leaderboard use case: every policy over the evaluation rosters through the run store, then
the markdown table, the learning curves and the HTML page."""
from __future__ import annotations

import os
import time
from pathlib import Path

from diagnostics.leaderboard_report import POLICIES, PUBLISHED_ROSTERS, SEEDS, fidelity_table, findings, write_page
from diagnostics.learning_curves import learning_curve, plot_learning_curves
from diagnostics.stats import leaderboard
from online.registry import canonical_spec
from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.atomic_file import atomic_save, check_output_path
from tdmodels.errors import InputError
from tdmodels.rosters import open_world
from tdmodels.simulator import ROSTERS
from tutorduel.store_commands import report_sweep_notes, shown_rows


def leaderboard_rosters(named: list[str] | None, allow_test: bool) -> list[str]:
    """The rosters to run: the named ones (held-out ones need `allow_test`), else the published ones,
    held-out ones left out with a note unless `allow_test`."""
    rosters = named or list(PUBLISHED_ROSTERS)
    held = [r for r in rosters if r in ROSTERS and ROSTERS[r].held_out]
    if held and not allow_test:
        if named:
            raise InputError(f"held-out roster(s) {', '.join(held)} need --allow-test (evaluation only; never tune on them)")
        print(f"note: held-out rosters {', '.join(held)} left out (pass --allow-test to evaluate on them)")
        rosters = [r for r in rosters if r not in held]
    return rosters


def run_leaderboard(store: RunStore, out, rosters: list[str] | None = None, seeds: list[int] | None = None,
                    specs: list[str] | None = None, allow_test: bool = False, worlds_dir=None, **sweep_options) -> int:
    """Run (or resume) every policy over the rosters, write out/leaderboard.md, out/leaderboard.html and a curve
    plot per roster, and print the table and the paper's findings. Returns 1 if a cell failed, else 0."""
    rosters = leaderboard_rosters(rosters, allow_test)
    specs = [canonical_spec(s) for s in (specs or POLICIES.values())]
    out = Path(out)
    check_output_path(out / "leaderboard.md")
    out.mkdir(parents=True, exist_ok=True)
    lines_by_roster, figures, curves, failed, codes = {}, {}, {}, 0, {}
    started, computed, stored, spent = time.perf_counter(), 0, 0, {}
    for roster in rosters:
        roster_seeds = seeds or list(range(SEEDS.get(roster, 32)))
        res = run_sweep([roster], roster_seeds, specs, store, allow_test=allow_test, worlds_dir=worlds_dir,
                        **sweep_options)
        failed += len(res.failed)
        computed, stored = computed + len(res.done), stored + len(res.cached)
        fresh = {(c.seed, c.policy) for c in res.done}
        print(f"{roster}: {len(res.done)} cells computed, {len(res.cached)} already stored, {len(res.failed)} failed")
        report_sweep_notes(res)
        world = open_world(roster, allow_test=allow_test, directory=worlds_dir)
        rows = [r for r in shown_rows(store, world, roster, specs=specs) if int(r["seed"]) in set(roster_seeds)]
        codes.update({r["policy"]: r["code"]["digest"] for r in rows})
        for r in rows:
            if (int(r["seed"]), r["policy"]) in fresh:
                spent[r["policy"]] = spent.get(r["policy"], 0.0) + float(r["wall_s"])
        if not rows:
            continue
        lines_by_roster[roster] = leaderboard(rows, world)
        by = {}
        for r in rows:
            by.setdefault(r["policy"], []).append(r)
        figures[roster] = out / f"curves-{roster}.png"
        curves[roster] = {k: learning_curve(v) for k, v in by.items()}
        plot_learning_curves(curves[roster], f"{roster}: excess regret per user", figures[roster])
    table = fidelity_table(lines_by_roster)
    found = findings(lines_by_roster)
    md = ["# TutorDuel leaderboard", "", "Score, mean ± s.e. over seeds [seeds] (published score in brackets); "
          "reference rows in italics.", "", table, "", "## Findings of the paper on this simulator", ""]
    md += [f"- {x}" for x in found]
    md += ["", "## Code", "", "Each policy's rows ran on this code identity (`online.code_identity`): "
           + ", ".join(f"{p} {c}" for p, c in sorted(codes.items())) + "."]
    atomic_save(out / "leaderboard.md", lambda tmp: tmp.write_text("\n".join(md) + "\n"))
    page = write_page(out / "leaderboard.html", table, found, figures, curves)
    print()
    print(table)
    print()
    for x in found:
        print(f"- {x}")
    print(f"\nwrote {out / 'leaderboard.md'}, {page} and {len(figures)} curve plot(s)")
    if sweep_options.get("scheduler"):
        where = f"the Dask scheduler {sweep_options['scheduler']}"
    elif sweep_options.get("dask_workers"):
        where = f"a local Dask cluster of {sweep_options['dask_workers']} workers, {os.cpu_count()} cores"
    else:
        where = f"{sweep_options.get('jobs') or 1} worker process(es), {os.cpu_count()} cores"
    print(time_summary(time.perf_counter() - started, computed, stored, failed, spent, where))
    return 1 if failed else 0


def time_summary(wall: float, computed: int, stored: int, failed: int, spent: dict, where: str) -> str:
    """The leaderboard's closing line on time: its wall time, and each policy's replay time summed over the
    cells computed in this run (the policy's own functions and the click draws, from the rows), largest
    first."""
    head = (f"time: {wall:.0f} s wall for {computed + stored + failed} cells ({computed} computed, {stored} already "
            f"stored, {failed} failed; {where})")
    if not spent:
        return head
    total = sum(spent.values())
    parts = ", ".join(f"{p} {t:.0f} s ({100 * t / total:.0f}%)" for p, t in sorted(spent.items(), key=lambda x: -x[1]))
    return f"{head}; replay time of the computed cells, {total:.0f} s in all: {parts}"
