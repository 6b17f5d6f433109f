"""The use cases over a run store: replay a sweep and show its tables, show a world's tables,
export the rows that verify, verify every row. Each prints its report; the command line only
parses arguments and calls these."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from diagnostics.learning_curves import final_quarter_table, learning_curve, plot_learning_curves
from diagnostics.profile_breakdown import MAX_PROFILES, format_profile_table, profile_count, profile_table
from diagnostics.recovery_curves import write_recovery_figure
from diagnostics.segments import block_report, segment_report
from diagnostics.stats import format_table, leaderboard, paired_gain, t_interval
from online.registry import canonical_spec, policy_spec
from online.replay import arrivals_limit
from online.store import CellKey, RunStore
from online.sweep import SweepInterrupted, run_sweep
from online.verify import BAD_LOG, audit_in_fresh_process
from tdmodels.atomic_file import check_output_path
from tdmodels.errors import InputError, check_flag
from tdmodels.rosters import is_path, open_world, world_file, world_name
from tdmodels.world import WorldFormatError, world_digest
from tutorduel.reference_cache import cached_reference_table
from tutorduel.store_view import (non_canonical, apply_verdicts, current_code, moved_aside, stored_rows,
                                  verified_rows)


def announce_compile() -> None:
    """Say on stderr, before a run, that its kernels compile first (``inference.kernel_cache.compile_note``)."""
    from inference.kernel_cache import compile_note

    note = compile_note()
    if note:
        print(note, file=sys.stderr, flush=True)


def replay_and_report(store: RunStore, worlds: list[str], seeds: list[int], specs: list[str], *, allow_test=False,
                      worlds_dir=None, arrivals=None, **sweep_options) -> int:
    """Run the sweep of worlds x seeds x policies through the store, then print the tables of what it touched.
    Returns the exit status: 0, 1 if a cell failed, 130 if interrupted (what finished is stored)."""
    announce_compile()
    try:
        res = run_sweep(worlds, seeds, specs, store, allow_test=allow_test, arrivals=arrivals, worlds_dir=worlds_dir,
                        **sweep_options)
    except SweepInterrupted as stop:
        r = stop.result
        print(f"\ninterrupted: {len(r.done)} cells computed and stored, {len(r.cached)} already stored, "
              f"{len(r.failed)} failed, {len(r.interrupted)} not finished (rerun to resume; store: {store.root})",
              file=sys.stderr)
        return 130
    print(f"{len(res.done)} cells computed, {len(res.cached)} already stored, {len(res.failed)} failed (store: {store.root})")
    report_sweep_notes(res)
    shown = {}
    for w in worlds:
        print_world_tables(store, w, allow_test, worlds_dir, arrivals=arrivals, specs=specs, shown=shown,
                           world=res.worlds.get(w))
    if res.failed:
        print("\nfailed cells (not stored; rerun to retry):", file=sys.stderr)
        for cell, msg in res.failed:
            print(f"  {cell}: {msg.splitlines()[0]}", file=sys.stderr)
        return 1
    return 0


def report_sweep_notes(res) -> None:
    """Warnings about damaged rows moved aside and rows of other code versions kept."""
    for msg, moved in res.corrupt:
        print(f"warning: {msg}; moved aside to {moved} and recomputed", file=sys.stderr)
    if res.superseded:
        cell, paths = res.superseded[0]
        print(f"note: {len(res.superseded)} cell(s) have rows from other code versions of their policy (e.g. {cell}: "
              f"{paths[0]}); kept where they are, not counted, and recomputed on the current code", file=sys.stderr)


def shown_rows(store, world, name, arrivals=None, any_code=False, specs=None, named=()) -> list[dict]:
    """The rows to show for one world version and truncation (of `specs` only, if given), printing a warning
    for each kind left out. The plug-ins in `specs` and `named` are the only ones imported."""
    trusted = frozenset(policy_spec(s).target for s in [*(specs or ()), *named])
    view = stored_rows(store, world, name, arrivals, any_code, trusted=trusted)
    for note in view.notes:
        print(f"warning: {note}", file=sys.stderr)
    if specs is not None:
        keep = {canonical_spec(s) for s in [*specs, *named]}     # --against's policy is shown beside --policies
        return [r for r in view.rows if r["policy"].split(" (code ")[0] in keep]
    return view.rows


def stress_family(world) -> str | None:
    """The family a stress world belongs to, by the knobs it was built with (never its name): the preset whose
    knobs they are, else the knobs themselves; None for a world that is not a stress world."""
    from tdmodels.stress_knobs import STRESS_PRESETS, knobs_record
    from tdmodels.stress_worlds import stress_knobs_of

    knobs = stress_knobs_of(world)
    if knobs is None:
        return None
    for preset, (k, _) in STRESS_PRESETS.items():
        if knobs_record(k) == knobs_record(knobs):
            return preset
    return "knobs " + ", ".join(f"{k}={v}" for k, v in knobs_record(knobs).items())


def print_family_robustness(store, world_args: list[str], allow_test, worlds_dir, against=None, arrivals=None,
                            any_code=False, specs=None) -> None:
    """Where several of the worlds named are stress worlds of one family (the same knobs), the robustness rule
    (``diagnostics.robustness.family_robustness``) against `against` (default CODuel) for every policy beyond the
    paper's stored on them: all their (world, seed) pairs pooled, each world's beside. Prints nothing otherwise."""
    allow_test, any_code = check_flag("allow_test", allow_test), check_flag("any_code", any_code)
    from diagnostics.leaderboard_report import leaderboard_policies
    from diagnostics.robustness import BASELINE, family_robustness, format_family_robustness

    from tdmodels.stress_knobs import STRESS_PRESETS

    family_of, rows_by_world, shown_as = {}, {}, {}
    for arg in dict.fromkeys(world_args):
        world = open_world(arg, allow_test=allow_test, directory=worlds_dir)
        family = stress_family(world)
        if family is not None and not int(world.attrs["held_out"]):
            family_of[world_name(arg)] = shown_as.setdefault(family, family if family in STRESS_PRESETS
                                                              else world_name(arg))     # else: its first world
            rows_by_world[world_name(arg)] = shown_rows(store, world, world_name(arg), arrivals, any_code, specs)
    if len(family_of) == len(set(family_of.values())):
        return                                          # no family of two worlds or more among those named
    baseline = canonical_spec(against.partition(" (code ")[0]) if against else BASELINE
    paper = {canonical_spec(x) for x in leaderboard_policies().values()}
    judged = sorted({r["policy"] for rows in rows_by_world.values() for r in rows} - paper - {baseline})
    print(f"\nthe robustness rule against {baseline} over each stress family (the worlds of one knobs, all pairs "
          f"pooled):")
    if not judged:
        print(f"no policy beyond the paper's is stored on these worlds")
        return
    print(format_family_robustness(family_robustness(rows_by_world, family_of, judged, baseline), baseline))


def print_world_tables(store, world_arg, allow_test, worlds_dir, against=None, arrivals=None, curves=None,
                       any_code=False, specs=None, shown=None, by_profile=False, world=None) -> None:
    """Print the tables of one world; `shown` (digest -> name) skips a world already printed under another
    name or spelling, so its rows are read (and any damaged one reported) once; `by_profile` adds the
    scores per student profile. `world`: the Dataset `world_arg` names, where the caller has it open (the
    sweep that just ran on it)."""
    allow_test, any_code, by_profile = (check_flag(n, v) for n, v in (("allow_test", allow_test),
                                                                      ("any_code", any_code), ("by_profile", by_profile)))
    if world is None:
        world = open_world(world_arg, allow_test=allow_test, directory=worlds_dir)
    _existing(store)
    name, limit = world_name(world_arg), arrivals_limit(world, arrivals)
    if shown is not None:
        digest = world_digest(world)
        if digest in shown:
            print(f"\n{name}: the same world as {shown[digest]} (content digest {digest}); shown once")
            return
        shown[digest] = name
    rows = shown_rows(store, world, name, arrivals, any_code, specs,
                      named=[against.partition(" (code ")[0]] if against else [])
    cut = f", first {limit} arrivals" if limit is not None else ""
    if not rows:
        others = sorted({r["arrivals_limit"] or 0 for r in store.scan(world_digest(world))[0]} - {limit or 0})
        hint = ("; rows of other truncations are stored: "
                + ", ".join("full runs" if n == 0 else f"--arrivals {n}" for n in others[:5])) if others else ""
        print(f"no stored runs for world {name!r}{cut} in {store.root}{hint}")
        return
    print()
    title = f"{name} ({rows[0]['arrivals']} arrivals{cut}; world {world_digest(world)})"
    print(format_table(leaderboard(rows, world, limit, cached_reference_table), title=title))
    if against:
        against = _print_paired(rows, against, name)
    _print_final_quarter(rows, against)
    _print_segments(rows, world, against)
    if by_profile:
        _print_profiles(rows, world, against)
    if curves:
        by = _by_policy(rows)
        path = check_output_path(Path(curves) / f"curves-{name}.png")
        plot_learning_curves({k: learning_curve(v) for k, v in by.items()}, f"{name}: excess regret per user", path)
        print(f"\nlearning curves: {path}")
        recovery = write_recovery_figure(rows, world, name, path.parent)
        if recovery is not None:
            print(f"recovery after a change: {recovery[0]}")
    failed = store.failures(world_digest(world))
    if failed:
        print(f"\n{len(failed)} failed cell(s) recorded for {name}:")
        for f in failed:
            print(f"  seed {f['seed']} {f['policy']} (code {f.get('code')}): {f['error'].splitlines()[0]}")


def _print_segments(rows, world, against=None) -> None:
    """Where the world's population changes over the run (its segments), the scores after each switch apart."""
    report = segment_report(rows, world, against)
    if report is not None:
        starts, table = report
        print(f"\nper segment ({len(starts)} switches, at arrivals {', '.join(map(str, starts))}), score:")
        print(table)
        for base in dict.fromkeys(x for x in (against, "no-transfer", "coduel") if x):
            blocks = block_report(rows, world, base)
            if blocks:
                print(f"\nper block, against {base}:\n")
                print(blocks)


def _print_profiles(rows, world, against=None) -> None:
    """Each policy's score over each student profile's arrivals (``diagnostics.profile_breakdown``)."""
    n = profile_count(world)
    if n > MAX_PROFILES:
        print(f"\nper student profile: the world has {n:,} profiles, more than {MAX_PROFILES}; not tabulated")
        return
    by = {}
    for r in rows:
        by.setdefault(r["policy"], {})[r["seed"]] = r
    print("\nper student profile (the score over each profile's arrivals, mean ± s.e. over seeds):")
    print(format_profile_table(profile_table(by, world, against)))


def _by_policy(rows) -> dict[str, list[dict]]:
    by = {}
    for r in rows:
        by.setdefault(r["policy"], []).append(r)
    return by


def _print_paired(rows, against: str, name: str) -> str:
    """Print each policy's paired gain and score difference against `against`; returns its table key."""
    by, score = {}, {}
    for r in rows:
        by.setdefault(r["policy"], {})[r["seed"]] = r["excess"]
        score.setdefault(r["policy"], {})[r["seed"]] = r["score"]
    against = against_key(against, by, name)
    print(f"\npaired excess-regret reduction and score difference against {against} (95% intervals, common seeds):")
    for spec, d in sorted(by.items()):
        if spec == against:
            continue
        common = sorted(set(d) & set(by[against]))
        if not common:
            continue
        m, h = t_interval([score[spec][s] - score[against][s] for s in common])
        if np.mean([by[against][s] for s in common]) > 0:
            g = paired_gain([d[s] for s in common], [by[against][s] for s in common])
            gain = f"{100 * g['gain']:+.1f}% [{100 * g['lo']:+.1f}, {100 * g['hi']:+.1f}]"
        else:
            gain = f"undefined ({against} has no excess regret)"
        print(f"  {spec}: {gain}, score {m:+.2f} [{m - h:+.2f}, {m + h:+.2f}] over {len(common)} seeds")
    return against


def against_key(against: str, by: dict, name: str) -> str:
    """The line of the table that --against names: its canonical spec, or with --any-code the one code version
    stored (a spec may also name a version as 'SPEC (code DIGEST)', as the table shows it)."""
    base, sep, code = against.partition(" (code ")
    key = canonical_spec(base) + (sep + code if sep else "")
    if key in by:
        return key
    versions = sorted(p for p in by if p.startswith(key + " (code "))
    if len(versions) == 1:
        return versions[0]
    if versions:
        raise InputError(f"--against {key!r}: rows of {len(versions)} code versions ({', '.join(versions)}); "
                         f"name one, e.g. --against {versions[0]!r}")
    raise InputError(f"--against {key!r}: no stored rows of that policy for {name}")


def _print_final_quarter(rows, against=None) -> None:
    if len(rows[0]["per_user"]["regret"]) < 4:
        return                           # a run of under 4 arrivals has no final quarter
    print(f"\nfinal quarter (last {len(rows[0]['per_user']['regret']) // 4} arrivals), summed excess regret:")
    for ln in final_quarter_table(_by_policy(rows), against):
        m, se = ln["final_quarter"]
        g = ln.get("gain")
        extra = (f"; against {against} {100 * g['gain']:+.1f}% [{100 * g['lo']:+.1f}, {100 * g['hi']:+.1f}]"
                 if g else "")
        print(f"  {ln['name']}: {m:.1f}" + (f" ± {se:.1f}" if np.isfinite(se) else "") + f" over {ln['n']} seeds{extra}")


def store_worlds(store, worlds_dir) -> dict:
    """digest -> world file, for every world the store recorded a run under whose file (by that name, in the
    worlds folder) is there; nothing is built."""
    out = {}
    for digest in store.world_digests():
        for name in sorted(store.world_names(digest)):
            if is_path(name):         # a name in the store never becomes a path (a sweep records names only)
                continue
            try:
                f = world_file(name, worlds_dir)
            except WorldFormatError:
                continue
            if f.is_file():
                out[digest] = str(f)
                break
    return out


def worlds_to_check(store, world_arg, allow_test, worlds_dir) -> tuple[dict, list[str] | None]:
    """(digest -> world, the digests to read: None for all) from --world, else the worlds the store names."""
    if not world_arg:
        return store_worlds(store, worlds_dir), None
    from tutorduel.arg_types import distinct_names

    worlds = {}
    for w in distinct_names([w.strip() for w in world_arg.split(",")], f"world list {world_arg[:80]!r}"):
        ds = open_world(w, allow_test=allow_test, directory=worlds_dir)
        worlds[world_digest(ds)] = ds
    return worlds, list(worlds)


def _scan(store, digests) -> tuple[list[dict], list[str]]:
    rows, problems = [], []
    for d in digests or [None]:
        r, p = store.scan(d)
        rows, problems = rows + r, problems + p
    return rows, problems


def export_verified(store: RunStore, path, world_arg=None, allow_test=False, worlds_dir=None) -> int:
    """Write the scalar fields of the stored rows that verify (of the named worlds, or all) to .csv or .parquet;
    rows of held-out worlds only with `allow_test`. Each row's world is named from its digest (the name given
    in `world_arg`, else the world file it was found in), never from the row's own label."""
    allow_test = check_flag("allow_test", allow_test)
    check_output_path(path)                       # before any row is verified
    _existing(store)
    worlds, digests = worlds_to_check(store, world_arg, allow_test, worlds_dir)
    if world_arg:
        names = {world_digest(open_world(w.strip(), allow_test=allow_test, directory=worlds_dir)): world_name(w.strip())
                 for w in world_arg.split(",")}
    else:
        names = {d: Path(f).stem for d, f in worlds.items()}
    held = set() if allow_test else {d for d, w in worlds.items() if _held_out(w)}
    if held:
        print(f"note: rows of {len(held)} held-out world(s) left out (--allow-test to export them)", file=sys.stderr)
    rows, problems = _scan(store, digests)
    rows = [r for r in rows if r["world_digest"] not in held]
    rows, lines = verified_rows(store, rows, worlds)
    for line in problems + lines:
        print(f"warning: {line} (not exported)", file=sys.stderr)
    p = store.export(path, rows=[{**r, "world": names.get(r["world_digest"], r["world_digest"])} for r in rows])
    print(f"wrote {p} ({len(rows)} verified rows)")
    return 0


def _existing(store: RunStore) -> None:
    """One InputError when the store's folder is not there (a mistyped --store reads as an empty store)."""
    if not store.root.is_dir():
        raise InputError(f"run store {store.root}: no such folder (tutorduel replay makes one)")


def _held_out(world) -> bool:
    """Whether a world (a Dataset or a world file) is marked held out; its file's attributes only are read."""
    import xarray as xr

    if isinstance(world, xr.Dataset):
        return bool(int(world.attrs.get("held_out", 0)))
    from tdmodels.world import WorldFormatError

    if not Path(world).is_file():              # a FIFO or a device named like a world file is never opened
        raise WorldFormatError(f"world file {world}: not a regular file")
    try:
        with xr.open_dataset(world, engine="h5netcdf") as ds:
            return bool(int(ds.attrs.get("held_out", 0)))
    except (OSError, ValueError, TypeError) as exc:
        raise WorldFormatError(f"world file {world}: cannot be read ({type(exc).__name__}: {exc})") from None


def verify_store(store: RunStore, world_arg=None, policies=None, allow_test=False, worlds_dir=None,
                 replay: bool = False, jobs: int = 1, replay_timeout: float | None = None) -> int:
    """Recompute every stored row from its world, its seed and what it played, in a fresh process; print one
    line per row that does not verify (moved aside) or cannot be checked. With `replay`, also run each
    verified row's policy again on this code (``online.replay_check``) and move aside every row whose pairs
    are not that policy's (and every click log whose records the replay does not reproduce); a replay that
    runs past `replay_timeout` seconds is stopped and named. Returns 1 if any row failed, else 0."""
    allow_test, replay = (check_flag(n, v) for n, v in (("allow_test", allow_test), ("replay", replay)))
    _existing(store)
    worlds, digests = worlds_to_check(store, world_arg, allow_test, worlds_dir)
    specs = {canonical_spec(s) for s in policies} if policies else None
    rows, problems = _scan(store, digests)
    rows = [r for r in rows if specs is None or r["policy"] in specs]
    paths = [store.path(CellKey.of_row(r)) for r in rows]
    verdicts = audit_in_fresh_process(store.root, worlds, paths)
    logs = sum(1 for _, verdict, _ in verdicts if verdict == BAD_LOG)
    good, lines = apply_verdicts(store, verdicts)
    trusted = frozenset(policy_spec(s).target for s in policies or ())
    for r, p in zip(rows, paths):
        named = non_canonical(r["policy"]) if p in good and current_code([r], trusted) is not None else None
        if named is not None:
            good.discard(p)
            lines.append(f"run row {p}: stored under {r['policy']!r}, {named}; {moved_aside(store, p)}")
    for line in problems + lines:
        print(line)
    bad = len(problems) + len(lines)
    print(f"{len(good)} of {len(rows) + len(problems)} row(s) verified" +
          (f"; {bad - logs} did not" if bad - logs else "") +
          (f"; {logs} click log(s) beside them did not (moved aside)" if logs else ""), file=sys.stderr)
    if replay:
        bad += _replay_rows(store, [(r, p) for r, p in zip(rows, paths) if p in good], worlds, trusted, jobs,
                            replay_timeout)
    return 1 if bad else 0


def _replay_rows(store, rows_paths, worlds: dict, trusted: frozenset, jobs: int, timeout: float | None = None) -> int:
    """Replay the verified rows of the current code whose policy may be imported, each in a worker process
    stopped after `timeout` seconds; move aside (and name) every row that does not replay to its own pairs,
    or whose click log the replay does not reproduce. Returns their number, with the replays that failed
    or were stopped."""
    from online.process_pool import each_in_workers
    from online.replay_check import replay_task

    items, skipped, codes = [], {}, {}
    for row, path in rows_paths:
        key = (row["policy"], row["code"]["digest"])
        if row["policy"] not in codes:
            codes[row["policy"]] = current_code([row], trusted)
        now = codes[row["policy"]]
        if now is None:
            skipped[key] = "a plug-in is imported only when named with --policies"
        elif now != row["code"]["digest"]:
            skipped[key] = f"ran on code {row['code']['digest']}, this installation's is {now}"
        else:
            items.append((str(path), worlds[row["world_digest"]], row))
    for (policy, code), why in sorted(skipped.items()):
        n = sum(1 for r, _ in rows_paths if (r["policy"], r["code"]["digest"]) == (policy, code))
        print(f"not replayed: {n} row(s) of {policy} (code {code}): {why}", file=sys.stderr)
    results = [outcome if status == "ok" else (path, ("error", outcome))
               for (path, _, _), (status, outcome) in zip(items, each_in_workers(replay_task, items, jobs, timeout))]
    failed = [(p, *found) for p, found in results if found and found[0] != "skip"]
    for p, found in results:
        if found and found[0] == "skip":
            print(f"not replayed: {p}: {found[1]}", file=sys.stderr)
    for p, kind, why in failed:
        if kind == "error":
            print(f"run row {p}: could not be replayed: {why}; kept in place")
        elif kind == "log":
            print(f"run row {p}: its click log does not replay: {why}; the log was "
                  f"{moved_aside(store, Path(p).with_suffix('.clicks.nc'))}")
        else:
            print(f"run row {p}: does not replay: {why}; {moved_aside(store, Path(p))}")
    replayed = len(items) - sum(1 for _, found in results if found and found[0] == "skip")
    print(f"{replayed - len(failed)} of {replayed} replayed row(s) are their policy's run"
          + (f"; {len(failed)} are not" if failed else ""), file=sys.stderr)
    return len(failed)
