"""The leaderboard use case: every policy over the evaluation rosters through the run store, then
the markdown table, the learning curves and the HTML page."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np

from diagnostics.leaderboard_report import (PUBLISHED_ROSTERS, SEEDS, default_policies, display_name, fidelity_table,
                                            findings, leaderboard_policies, published, write_page, BEYOND_MARK,
                                            UNTUNED_MARK)
from diagnostics.references import fixed_pair_scores, hindsight_pair
from diagnostics.learning_curves import learning_curve, per_user_excess, plot_learning_curves
from diagnostics.paper_agreement import published_column
from diagnostics.published_curves import CURVES_FILE, load_curves, our_plateau
from diagnostics.recovery_curves import blocks_after_a_change, write_recovery_figure
from diagnostics.robustness import (BASELINE, MARGIN, MIN_WORLDS, family_robustness, format_family_robustness,
                                   format_world_differences, robustness)
from diagnostics.segments import block_report, segment_report
from diagnostics.stats import leaderboard
from online.registry import canonical_spec
from online.store import RunStore
from online.sweep import run_sweep
from tdmodels.atomic_file import atomic_save, check_output_path
from tdmodels.errors import InputError, check_flag
from tdmodels.rosters import open_world, world_file, world_name, worlds_dir as worlds_dir_path
from tdmodels.sample_roster import resample_name, resample_of
from tdmodels.simulator import ROSTERS
from tdmodels.stress_knobs import STRESS_PRESETS, knobs_record, segment_starts
from tdmodels.stress_worlds import stress_knobs_of

STRESS_SEEDS = 16
BLOCK_SEEDS = 32             # a world whose population changes: its per-block floors are read over this many seeds
WORLD_SEEDS = MIN_WORLDS     # fresh worlds of each stress world's knobs the robustness rule is read over
FRESH_WORLD_SEED = 10        # the first of their generator seeds (the change point's tuning used world seeds 0-9)
REAL_SESSION_ROSTERS = tuple(resample_name(r) for r in (0, 1))
REAL_SESSION_SEEDS = 16
from tutorduel.store_commands import announce_compile, report_sweep_notes, shown_rows
from tutorduel.arg_types import distinct_names


def leaderboard_rosters(named: list[str] | None, allow_test: bool, worlds_dir=None) -> list[str]:
    """The rosters to run: the named ones (held-out ones need `allow_test`), else the published ones and, where
    the real sample is imported, the real-session rosters (``tdmodels.sample_roster``), held-out ones left out
    with a note unless `allow_test`. A roster named twice is an InputError."""
    allow_test = check_flag("allow_test", allow_test)
    if named is not None:
        named = distinct_names(named, "rosters")
    rosters = named or list(PUBLISHED_ROSTERS)
    if not named:
        if world_file("sample", worlds_dir).exists():
            rosters += list(REAL_SESSION_ROSTERS)
        else:
            print("note: the real sample is not imported (tutorduel worlds import-sample PATH), so the real-session "
                  "rosters are left out")
    held = [r for r in rosters if (r in ROSTERS and ROSTERS[r].held_out) or resample_of(r) is not None]
    if held and not allow_test:
        if named:
            raise InputError(f"held-out roster(s) {', '.join(held)} need --allow-test (evaluation only; never tune on them)")
        print(f"note: held-out rosters {', '.join(held)} left out (pass --allow-test to evaluate on them)")
        rosters = [r for r in rosters if r not in held]
    return rosters


def run_leaderboard(store: RunStore, out, rosters: list[str] | None = None, seeds: list[int] | None = None,
                    specs: list[str] | None = None, allow_test: bool = False, worlds_dir=None,
                    stress: str | list[str] | None = None, world_seeds: int = WORLD_SEEDS, **sweep_options) -> int:
    """Run (or resume) every policy (`specs`, default ``default_policies``: the paper's and those beyond it) over
    the rosters, write out/leaderboard.md, out/leaderboard.html and a curve plot per roster, and print the table,
    the paper's findings and each policy beyond the paper's against CODuel, paired, per roster. With `stress` ("presets": the stress presets
    of ``tdmodels.stress_worlds``; or a list of worlds), also over those worlds, `STRESS_SEEDS` seeds each unless
    `seeds` (`BLOCK_SEEDS` where the population changes, for the per-block floors), in a section of their own with
    per-segment figures and the robustness rule (``diagnostics.robustness``), read for the policies beyond the
    paper's over `world_seeds` fresh worlds of each stress world's knobs (``fresh_worlds``). Returns 1 if a cell
    failed, else 0."""
    check_world_seeds(world_seeds)
    rosters = leaderboard_rosters(rosters, allow_test, worlds_dir)
    published_curves = imported_curves(worlds_dir)
    stress = stress_worlds(stress, allow_test, worlds_dir)
    specs = list(dict.fromkeys(canonical_spec(s) for s in (specs or default_policies())))
    paper = {canonical_spec(s) for s in leaderboard_policies().values()}
    judged = [s for s in specs if s not in paper and not display_name(s).endswith(UNTUNED_MARK)]
    families = {name: fresh_worlds(name, world_seeds, worlds_dir) for name in stress} if judged else {}
    out = Path(out)
    check_output_path(out / "leaderboard.md")
    out.mkdir(parents=True, exist_ok=True)
    lines_by_roster, figures, curves, codes = {}, {}, {}, {}
    tally = {"failed": 0, "computed": 0, "stored": 0, "spent": {}}
    started = time.perf_counter()
    rows_by_world, worlds, plateaus = {}, {}, {}
    announce_compile()

    def run_world(name: str, seed_list: list[int], specs: list[str] = specs, plot: bool = True) -> list[dict]:
        res = run_sweep([name], seed_list, specs, store, allow_test=allow_test, worlds_dir=worlds_dir,
                        **sweep_options)
        tally["failed"] += len(res.failed)
        tally["computed"] += len(res.done)
        tally["stored"] += len(res.cached)
        fresh = {(c.seed, c.policy) for c in res.done}
        print(f"{name}: {len(res.done)} cells computed, {len(res.cached)} already stored, {len(res.failed)} failed")
        report_sweep_notes(res)
        world = worlds[name] = open_world(name, allow_test=allow_test, directory=worlds_dir)
        rows = [r for r in shown_rows(store, world, name, specs=specs) if int(r["seed"]) in set(seed_list)]
        codes.update({r["policy"]: r["code"]["digest"] for r in rows})
        for r in rows:
            if (int(r["seed"]), r["policy"]) in fresh:
                tally["spent"][r["policy"]] = tally["spent"].get(r["policy"], 0.0) + float(r["wall_s"])
        if rows and plot:
            rows_by_world[name] = rows
            by = {}
            for r in rows:
                by.setdefault(r["policy"], []).append(r)
            figures[name] = out / f"curves-{world_name(name)}.png"
            curves[name] = {k: learning_curve(v) for k, v in by.items()}
            plateaus[name] = {display_name(k): our_plateau(np.stack([per_user_excess(r) for r in v]))
                              for k, v in by.items()}
            published = published_curves.get(published_column(name), {})
            plot_learning_curves(curves[name], f"{name}: excess regret per user", figures[name],
                                 published={k: published[display_name(k)] for k in by if display_name(k) in published})
        return rows

    for roster in rosters:
        rows = run_world(roster, seeds or list(range(SEEDS.get(roster, REAL_SESSION_SEEDS if resample_of(roster) is not None
                                                              else 32))))
        if rows:
            lines_by_roster[roster] = leaderboard(rows, worlds[roster])
    stress_md = beyond_paper_section({r: rows_by_world[r] for r in lines_by_roster if r in rows_by_world}, judged)
    if stress:
        stress_lines, fresh_rows, family_of = run_stress(run_world, stress, families, seeds, judged, worlds_dir)
        stress_md += stress_section(stress_lines, {w: rows_by_world[w] for w in stress_lines}, worlds,
                                   {w: rows_by_world[w] for w in lines_by_roster
                                    if not int(worlds[w].attrs["held_out"])}, fresh_rows, family_of, judged, out)
    write_reports(out, lines_by_roster, stress_md, codes, figures, curves, plateaus, published_curves,
                  tuning_lines(worlds, specs) + dev_pair_lines(worlds, rows_by_world, list(lines_by_roster)))
    print(time_summary(time.perf_counter() - started, tally["computed"], tally["stored"], tally["failed"],
                       tally["spent"], where_it_ran(sweep_options)))
    return 1 if tally["failed"] else 0


def check_world_seeds(world_seeds) -> None:
    """Refuse a count of fresh worlds per stress world that is not an integer in [MIN_WORLDS, 64]."""
    if isinstance(world_seeds, bool) or not isinstance(world_seeds, int) or not MIN_WORLDS <= world_seeds <= 64:
        raise InputError(f"world seeds {world_seeds!r}: the fresh worlds of each stress world the robustness rule is "
                         f"read over, an integer in [{MIN_WORLDS}, 64]")


def run_stress(run_world, stress: list[str], families: dict[str, list[str]], seeds, judged: list[str], worlds_dir):
    """Each stress world at `STRESS_SEEDS` seeds (`BLOCK_SEEDS` where its population changes) unless `seeds`, then
    its fresh worlds (`families`) for CODuel and the `judged` policies only. Returns (leaderboard lines by stress
    world, rows by fresh world, the stress world's name by fresh world)."""
    stress_lines, fresh_rows, family_of = {}, {}, {}
    for name in stress:
        changes = len(segment_starts(stress_knobs_of(open_world(name, directory=worlds_dir)))) > 1
        rows = run_world(name, seeds or list(range(BLOCK_SEEDS if changes else STRESS_SEEDS)))
        if rows:
            stress_lines[name] = leaderboard(rows, open_world(name, directory=worlds_dir))
        for fresh in families.get(name, []):
            family_of[fresh] = world_name(name)
            fresh_rows[fresh] = run_world(fresh, seeds or list(range(STRESS_SEEDS)), [BASELINE, *judged], plot=False)
    return stress_lines, fresh_rows, family_of


def where_it_ran(sweep_options: dict) -> str:
    """The workers of a sweep, in words, for the time line."""
    if sweep_options.get("scheduler"):
        return f"the Dask scheduler {sweep_options['scheduler']}"
    if sweep_options.get("dask_workers"):
        return f"a local Dask cluster of {sweep_options['dask_workers']} workers, {os.cpu_count()} cores"
    return f"{sweep_options.get('jobs') or 1} worker process(es), {os.cpu_count()} cores"


def stress_worlds(stress, allow_test: bool, worlds_dir) -> list[str]:
    """The stress worlds to run ("presets": every preset), each opened first, so that a bad name fails before
    any cell runs; a held-out world, or one without the knobs it was built with (whose fresh worlds could not be
    built), is refused."""
    if not stress:
        return []
    names = list(STRESS_PRESETS) if stress == "presets" else list(dict.fromkeys(stress))
    for name in names:
        world = open_world(name, allow_test=allow_test, directory=worlds_dir)
        if int(world.attrs["held_out"]):
            raise InputError(f"--stress {name!r}: a held-out world; the robustness rule judges on worlds that are not "
                             f"held out")
        if stress_knobs_of(world) is None:
            raise InputError(f"--stress {name!r}: not a stress world (it records no stress_knobs), so no fresh world "
                             f"of its knobs can be built for the robustness rule; build one with tutorduel worlds "
                             f"stress")
    return names


def fresh_worlds(name: str, count: int, worlds_dir=None) -> list[str]:
    """`count` worlds of stress world `name`'s knobs at generator seeds from `FRESH_WORLD_SEED` on (its own seed
    skipped), built into the worlds folder as NAME-seedK unless there already (an existing file of other content
    is refused): the family the robustness rule is read over."""
    from tdmodels.stress_worlds import build_stress_world
    from tdmodels.world import load_world, save_world, world_digest

    world = open_world(name, directory=worlds_dir)
    knobs, own = stress_knobs_of(world), int(world.attrs.get("seed", 0))
    seeds = [k for k in range(FRESH_WORLD_SEED, FRESH_WORLD_SEED + count + 1) if k != own][:count]
    out = []
    for k in seeds:
        fresh = f"{world_name(name)}-seed{k}"
        ds = build_stress_world(knobs, k, fresh, str(world.attrs.get("description", "")))
        target = world_file(fresh, worlds_dir)
        if target.exists() and world_digest(load_world(target)) != world_digest(ds):
            raise InputError(f"world file {target} exists with other content than {name!r}'s knobs at seed {k}; "
                             f"move it away (the robustness rule's fresh worlds are built there)")
        if not target.exists():
            save_world(ds, target)
        out.append(fresh)
    return out


def tuning_lines(worlds: dict, specs: list[str]) -> list[str]:
    """Findings on the tuned settings the run used (``diagnostics.tuned_settings``): which specs, chosen when and on
    what, and a warning where the tuning's world is run here under another digest (the simulator changed since)."""
    from diagnostics.tuned_settings import read_tuned_settings
    from tdmodels.world import world_digest

    runs = {canonical_spec(s) for s in leaderboard_policies().values()}
    tuned = {n: e for n, e in read_tuned_settings().items()
             if canonical_spec(e["spec"]) in specs and canonical_spec(e["spec"]) in runs}   # CODuel's is reported only
    if not tuned:
        return []
    out = ["the competitors run at the settings chosen on dev (diagnostics/tuned_settings.json): "
           + "; ".join(f"{e['spec']} ({e['date']}, {len(e['evaluations'])} evaluations on {len(e['seeds'])} seeds)"
                       for e in tuned.values())]
    for name, e in tuned.items():
        here = worlds.get(e["world"])
        if here is not None and world_digest(here) != e["world_digest"]:
            out.append(f"warning: {name} was tuned on {e['world']} digest {e['world_digest']}; this {e['world']} is "
                       f"{world_digest(here)} (tune it again on this world)")
    return out


def dev_pair_lines(worlds: dict, rows_by_world: dict, rosters: list[str]) -> list[str]:
    """Findings on one reading of the published "best fixed pair" row (5 / 17 / 22 / 44 / 41), which on the three
    held-out-student rosters is far below what one pair in hindsight reaches there: dev's hindsight pair (over
    the dev seeds run) scored on each roster, over that roster's seeds. Empty without dev among the rosters."""
    if "dev" not in rosters:
        return []
    seeds_of = {r: sorted({int(x["seed"]) for x in rows_by_world[r]}) for r in rosters}
    pair = hindsight_pair(worlds["dev"], seeds_of["dev"])
    names = "+".join(str(worlds["dev"]["persona"].values[k]) for k in pair)
    out = []
    for r in rosters:
        pub = published("best fixed pair (everyone, hindsight)", r)
        if pub is None:
            continue
        score = float(np.mean(fixed_pair_scores(worlds[r], pair, seeds_of[r])))
        out.append(f"{r}: dev's hindsight pair ({names}) shown to everyone scores {score:.1f} (the published 'best "
                   f"fixed pair' row: {pub:.0f}; read as dev's pair applied to every roster)")
    return out


def imported_curves(worlds_dir=None) -> dict:
    """The published learning curves imported into the worlds folder (``tutorduel worlds import-curves``), {}
    with a note where none are."""
    path = worlds_dir_path(worlds_dir) / CURVES_FILE
    if not path.exists():
        print("note: the published learning curves are not imported (tutorduel worlds import-curves PATH), so the "
              "curves and plateaus are not set beside the paper's")
        return {}
    return load_curves(path)


def write_reports(out: Path, lines_by_roster: dict, stress_md: list[str], codes: dict, figures: dict,
                  curves: dict, plateaus: dict | None = None, published_curves: dict | None = None,
                  more_findings: list[str] | None = None) -> None:
    """Write out/leaderboard.md and out/leaderboard.html and print the table, the findings and the stress
    section; with `plateaus` and `published_curves`, the findings set each plateau beside the published one and
    the page's curves show the published ones too."""
    table = fidelity_table(lines_by_roster)
    found = findings(lines_by_roster, plateaus, published_curves) + list(more_findings or [])
    md = ["# TutorDuel leaderboard", "", "Score, mean ± s.e. over seeds [seeds] (published score in brackets); "
          "reference rows in italics.", "", table, "", "## Findings of the paper on this simulator", ""]
    md += [f"- {x}" for x in found]
    md += stress_md
    md += ["", "## Code", "", "Each policy's rows ran on this code identity (`online.code_identity`): "
           + ", ".join(f"{p} {c}" for p, c in sorted(codes.items())) + "."]
    atomic_save(out / "leaderboard.md", lambda tmp: tmp.write_text("\n".join(md) + "\n"))
    shown = {r: {**by, **{f"published: {m}": c for m, c in (published_curves or {}).get(published_column(r), {}).items()}}
             for r, by in curves.items()}
    page = write_page(out / "leaderboard.html", table, found, figures, shown, extra_md=stress_md)
    print()
    print(table)
    print()
    for x in found:
        print(f"- {x}")
    if stress_md:
        print("\n".join(stress_md))
    print(f"\nwrote {out / 'leaderboard.md'}, {page} and {len(figures)} curve plot(s)")


def stress_section(lines_by_world: dict, rows_by_world: dict, worlds: dict, roster_rows: dict,
                   fresh_rows: dict | None = None, family_of: dict | None = None, judged=(), out=None) -> list[str]:
    """The leaderboard's stress section as markdown lines: the stress worlds' table, each segmented world's
    per-segment table against no-transfer and its per-block tables against no-transfer and CODuel
    (``diagnostics.segments.block_report``), and the robustness rule against CODuel for the `judged` policies,
    over each stress world's fresh worlds (`fresh_rows`, {world: rows}, `family_of` naming each one's stress
    world) pooled, and over each roster in `roster_rows` (the non-held-out ones run). With `out` (a folder), each
    segmented world's recovery figure (``diagnostics.recovery_curves``) is written there and shown."""
    if not lines_by_world:
        return []
    md = ["", "## Stress worlds", "", "Generated worlds nobody tuned a policy on (`tutorduel worlds stress`); score, "
          "mean ± s.e. over seeds [seeds].", "", fidelity_table(lines_by_world)]
    for name, rows in rows_by_world.items():
        report = segment_report(rows, worlds[name], "no-transfer")
        if report is not None:
            md += ["", f"### {name}: per segment ({len(report[0])} switches)", "", report[1]]
            for base in ("no-transfer", "coduel"):
                blocks = block_report(rows, worlds[name], base)
                if blocks:
                    md += ["", f"Per block, against {base}:", "", blocks]
            if out is not None:
                md += recovery_figure(rows, worlds[name], name, Path(out))
    md += ["", "### The robustness rule", "", f"A policy beyond the paper's is a default only if the paired 95% "
           f"interval of its score minus CODuel's has its lower end above {MARGIN:g} on every roster that is not held "
           f"out, and over the fresh worlds of each stress world's knobs (at least {MIN_WORLDS}, generator seeds the "
           f"tuning never used), all their (world, seed) pairs pooled into one comparison: a policy that is CODuel's "
           f"equal on a preset fails on some single world of it by noise alone.", ""]
    if not judged:
        return md + ["No policy beyond the paper's was run (`--policies`), so none is judged."]
    verdicts = family_robustness({**roster_rows, **(fresh_rows or {})}, family_of or {}, judged, BASELINE)
    return md + [format_family_robustness({display_name(k): v for k, v in verdicts.items()}, BASELINE)]


def recovery_figure(rows: list[dict], world, name: str, out: Path) -> list[str]:
    """Markdown lines with the recovery figure of one segmented world (``write_recovery_figure``); nothing where
    none of its policies ran."""
    written = write_recovery_figure(rows, world, name, out)
    if written is None:
        return []
    path, blocks = written
    return ["", f"{name}: the score at each arrival of a block, over {blocks_after_a_change(blocks)} taken "
                f"together, mean over seeds with its 95% band:", "", f"![{name}: recovery after a change]({path.name})"]


def beyond_paper_section(rows_by_roster: dict, judged) -> list[str]:
    """Markdown lines: each policy beyond the paper's (`judged`) against CODuel on every roster run, held-out ones
    included (evaluation only), paired over their common seeds; nothing where none was run."""
    if not judged or not rows_by_roster:
        return []
    by_world = robustness(rows_by_roster, BASELINE)
    verdicts = {display_name(spec): by_world.get(spec, []) for spec in judged if spec not in (BASELINE, "random")}
    if not verdicts:
        return []
    return ["", "## Beyond the paper, against CODuel", "",
            f"Each policy beyond the paper's, its score minus CODuel's on the same seeds: the mean and its paired 95% "
            f"t interval. Where a lower end is at or below {MARGIN:g} on a roster that is not held out, the policy "
            f"fails the robustness rule.", "", format_world_differences(verdicts, BASELINE)]


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
