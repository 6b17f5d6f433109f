"""Tuning a policy's settings by its score on a world that is not held out (dev by default).

Every policy is tuned by one protocol, as the reference tuned every design on its development roster:

1. the space: the settings the policy declares a Search for (``online.search_space``), or those named;
2. the policy's untuned defaults, evaluated first as the reference row (not counted in the budget);
3. `budget` evaluations, each one spec run on every tuning seed through the run store: a grid where every
   searched setting is a list of choices and the grid fits the budget, else Optuna's TPE sampler, whose
   first `STARTUP` proposals are random. Each proposal depends only on the evaluations before it and its
   number (a sampler seeded afresh for every proposal), so a killed tuning resumes where it stopped and
   proposes what the uninterrupted one would have. The points known before any score (the grid, or the
   random start) run with the defaults in one sweep, the others one at a time;
4. the chosen settings: the highest mean score over the seeds, the defaults included, with the paired
   difference from the defaults and its 95% interval. The winner of many noisy evaluations is optimistic and
   the interval does not correct for that selection: an interval that reaches 0 says the search found
   nothing the seeds can tell apart from the defaults.

An evaluation is a row per seed in the run store, so nothing is computed twice and a finished tuning is
read back: the tuning's journal (``ROOT/_tuning/<world digest>/``) keeps only the points tried, in order,
and is rewritten after each finished evaluation; the scores are always read from the rows.

A held-out world is refused, with no flag to lift it: tuning on it is what the held-out lock exists for.
"""
from __future__ import annotations

import hashlib
import json
import numbers
import sys
import itertools
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from online.store import RunStore, StoreError, policy_slug, to_json
from online.time_limit import time_limit
from tdmodels.atomic_file import atomic_save
from tdmodels.errors import HeldOutError, InputError, check_flag
from tdmodels.file_read import UnreadableFileError, read_regular_text
from tdmodels.limits import MAX_ARRIVALS, MAX_SEED

if TYPE_CHECKING:
    from online.search_space import SearchSpace

TUNING_SEEDS = tuple(range(1000, 1016))   # seeds no results page reports
BUDGET = 24                  # evaluations of every policy, beside its defaults
MAX_BUDGET = 500
MAX_TUNING_CELLS = 20_000    # budget x seeds
STARTUP = 10                 # TPE's random proposals before it models the scores
PROPOSALS = 20               # proposals tried for a point not evaluated yet before a repeat is accepted
CELL_TIMEOUT_S = 600.0       # a cell of a tuning runs seconds; one past this is a policy that hangs
JOURNAL = "_tuning"
JOURNAL_BYTES = 2**22
SCHEMA = 1


class TuningError(InputError):
    """A tuning that cannot run or go on: a held-out world, a budget out of range, an evaluation that failed."""


class Evaluation(NamedTuple):
    """One spec over the tuning seeds."""
    spec: str             # canonical spec
    point: dict           # {setting: value}: the searched settings (the defaults' own values for the reference)
    scores: tuple         # per seed, in the tuning's seed order
    mean: float
    se: float
    wall_s: float         # seconds spent computing its rows now (0 where every row was stored)


class Tuning(NamedTuple):
    """A finished tuning."""
    policy: str           # the base spec (canonical)
    space: SearchSpace
    world: str
    world_digest: str
    seeds: tuple
    budget: int           # evaluations asked for
    sampler: str          # "grid" or "tpe"
    default: Evaluation   # the untuned defaults (the reference row)
    evaluations: tuple    # in the order tried
    best: Evaluation      # the highest mean, the defaults included
    gain: tuple           # best - default, paired over seeds: (mean, half-width of the 95% interval)


def check_budget(budget) -> int:
    """`budget` as an int in [1, MAX_BUDGET]; TuningError otherwise."""
    if isinstance(budget, bool) or not isinstance(budget, numbers.Integral) or not 1 <= budget <= MAX_BUDGET:
        raise TuningError(f"budget={budget!r}: give an integer number of evaluations in [1, {MAX_BUDGET}]")
    return int(budget)


def check_seeds(seeds) -> tuple[int, ...]:
    """The tuning seeds: at least two distinct integers in [0, MAX_SEED] (two for a standard error)."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise TuningError(f"seeds={seeds!r}: give a list of integers (the command line's --seeds reads 1000-1015)")
    seeds = list(itertools.islice(iter(seeds), MAX_TUNING_CELLS + 1))
    if len(seeds) > MAX_TUNING_CELLS:
        raise TuningError(f"{len(seeds):,} seeds: at most {MAX_TUNING_CELLS:,} (budget x seeds runs in all)")
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, numbers.Integral) or not 0 <= s <= MAX_SEED]
    if bad:
        raise TuningError(f"seed {bad[0]!r}: seeds are integers in [0, {MAX_SEED}]")
    if len(set(seeds)) != len(seeds) or len(seeds) < 2:
        raise TuningError(f"seeds {seeds[:8]!r}: give at least two distinct seeds (a score's standard error needs two)")
    return tuple(int(s) for s in seeds)


def held_out_digests() -> set[str]:
    """The published digests of the worlds no tuning may read: the held-out rosters of every generator, the real
    sample (the reference's held-out-profile sessions) and its real-session rosters."""
    from tdmodels.roster_digests import ROSTER_DIGESTS
    from tdmodels.simulator import ROSTERS

    return {d for rosters in ROSTER_DIGESTS.values() for name, d in rosters.items()
            if (name in ROSTERS and ROSTERS[name].held_out) or name == "sample" or name.startswith("real-sessions-")}


def tuning_world(world: str, worlds_dir=None):
    """The world to tune on, opened without the held-out key: a held-out world, the real sample, or a copy of
    one with its held-out mark removed, is a TuningError."""
    from tdmodels.rosters import open_world
    from tdmodels.world import world_digest

    refused = (f"world {world!r} is held out for evaluation: tuning never reads it, and no flag lifts this (tune "
               f"on dev or on a generated world)")
    try:
        ds = open_world(world, allow_test=False, directory=worlds_dir)
    except HeldOutError:
        raise TuningError(refused) from None
    digests = {world_digest(ds), world_digest(ds.assign_attrs(held_out=1))}    # as published, or with its mark removed
    if digests & held_out_digests():
        raise TuningError(f"world {world!r} holds the real sessions or a held-out roster (digest "
                          f"{sorted(digests & held_out_digests())[0]}): tuning never reads it, and no flag lifts this")
    return ds


def _identity(space: SearchSpace, digest: str, seeds: tuple, budget: int, arrivals, sampler_seed: int) -> dict:
    """Everything that defines a tuning, the policy's code identity included: after an edit of the policy the
    points proposed from the old code's scores are not resumed under the new code's."""
    from online.code_identity import policy_code
    from online.registry import resolve

    return {"schema": SCHEMA, "policy": space.name, "code": policy_code(resolve(space.base.target)).digest,
            "world_digest": digest, "seeds": list(seeds), "budget": budget, "arrivals": arrivals,
            "sampler_seed": sampler_seed, "space": space.describe(), "dimensions": [d.name for d in space.dimensions]}


def journal_path(store: RunStore, identity: dict) -> Path:
    """Where a tuning keeps the points it tried: named by its policy and a digest of everything that defines it."""
    key = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return store.root / JOURNAL / identity["world_digest"] / f"{policy_slug(identity['policy'])}-{key}.json"


def _point_problem(space: SearchSpace, point) -> str | None:
    if not isinstance(point, dict) or set(point) != {d.name for d in space.dimensions}:
        return "a point does not set exactly the searched settings"
    for d in space.dimensions:
        v, s = point[d.name], d.search
        if s.choices:
            if not any(type(v) is type(c) and v == c for c in s.choices):
                return f"{d.name}={v!r} is not one of {s}"
        elif isinstance(v, bool) or not isinstance(v, (int, float)) or not s.lo <= v <= s.hi \
                or (d.kind is int and not isinstance(v, int)):
            return f"{d.name}={v!r} is outside {s}"
    return None


def read_journal(path: Path, identity: dict, space: SearchSpace, store: RunStore) -> list[dict]:
    """The points a tuning tried, in order; [] for a new tuning. A journal that does not check out (not
    JSON, another tuning's, a point outside the space) is moved aside with a warning: its points' rows stay
    in the store, so starting over recomputes nothing that is still there."""
    if not path.exists() and not path.is_symlink():
        return []
    try:
        data = json.loads(read_regular_text(path, JOURNAL_BYTES))
        if not isinstance(data, dict) or data.get("identity") != identity or not isinstance(data.get("points"), list):
            raise ValueError("it is not this tuning's journal")
        problem = next((p for p in map(lambda x: _point_problem(space, x), data["points"]) if p), None)
        if problem:
            raise ValueError(problem)
        return data["points"][:identity["budget"]]
    except (ValueError, UnreadableFileError, RecursionError) as exc:
        moved = store.quarantine(path)
        print(f"warning: tuning journal {path}: {exc}; moved aside to {moved}, starting over (stored rows are "
              f"reused)", file=sys.stderr)
        return []


def _write_journal(path: Path, identity: dict, points: list[dict]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_save(path, lambda tmp: Path(tmp).write_text(to_json({"identity": identity, "points": points})))
    except OSError as exc:
        raise StoreError(f"run store {path.parent}: cannot write the tuning journal ({exc}); the rows stored so "
                         f"far are kept") from exc


def _distribution(dim):
    import optuna

    s = dim.search
    if s.choices:
        return optuna.distributions.CategoricalDistribution(list(s.choices))
    if dim.kind is int:
        return optuna.distributions.IntDistribution(int(s.lo), int(s.hi), log=s.log)
    return optuna.distributions.FloatDistribution(s.lo, s.hi, log=s.log)


def propose(space: SearchSpace, history: list[tuple[dict, float]], number: int, sampler_seed: int = 0) -> dict:
    """The `number`-th point of a TPE search, given the (point, mean score) pairs before it: a function of its
    arguments alone (the sampler is seeded from `sampler_seed` and `number`), so a resumed tuning proposes what
    an uninterrupted one would. A point already tried is proposed again only after PROPOSALS tries."""
    import optuna

    from online.search_space import rounded

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = {d.name: _distribution(d) for d in space.dimensions}
    tried = {space.spec(p) for p, _ in history}
    point = None
    for attempt in range(PROPOSALS):
        seed = (sampler_seed * 1_000_003 + number * 1_009 + attempt) % 2**32
        study = optuna.create_study(direction="maximize",
                                    sampler=optuna.samplers.TPESampler(seed=seed, n_startup_trials=STARTUP))
        for p, value in history:
            study.add_trial(optuna.trial.create_trial(params=p, distributions=dists, value=value))
        params = study.ask(dists).params
        point = {d.name: params[d.name] if d.search.choices else rounded(params[d.name], d) for d in space.dimensions}
        if space.spec(point) not in tried:
            break
    return point


def _evaluate(store: RunStore, world: str, seeds: tuple, batch: list[tuple[str, dict, str]], arrivals, worlds_dir,
              sweep_options: dict, progress: bool = False) -> list[Evaluation]:
    """Run (or read back) a batch of (spec, point, what) over the seeds in one sweep (its progress bar shown for a
    batch of several, with `progress`); TuningError naming the evaluation of the first failed cell. Each computed
    evaluation is given an equal share of the batch's time."""
    from diagnostics.stats import mean_se
    from online.registry import canonical_spec
    from online.sweep import run_sweep

    t0 = time.perf_counter()
    specs = list(dict.fromkeys(spec for spec, _, _ in batch))
    res = run_sweep([world], list(seeds), specs, store, allow_test=False, arrivals=arrivals, worlds_dir=worlds_dir,
                    progress=progress and len(specs) > 1, confirm=True, **sweep_options)
    if res.failed:
        cell, message = res.failed[0]
        spec, _, what = next(b for b in batch if canonical_spec(b[0]) == cell.policy)
        failed = sum(1 for c, _ in res.failed if c.policy == cell.policy)
        raise TuningError(f"{what} ({spec}) failed on seed {cell.seed}: {message.splitlines()[0]} ({failed} of "
                          f"{len(seeds)} seeds failed; nothing of this evaluation counts)")
    rows = {(c.policy, c.seed): store.get(c.key) for c in [*res.done, *res.cached]}
    computed = {c.policy for c in res.done}
    share = (time.perf_counter() - t0) / max(len(computed), 1)
    out = []
    for spec, point, _ in batch:
        scores = tuple(float(rows[(canonical_spec(spec), s)]["score"]) for s in seeds)
        mean, se = mean_se(scores)
        out.append(Evaluation(spec, dict(point), scores, mean, se, share if canonical_spec(spec) in computed else 0.0))
    return out


def planned_points(space: SearchSpace, points: list[dict], budget: int, sampler: str, grid: list[dict] | None,
                   sampler_seed: int = 0) -> list[dict]:
    """The points known before any score, to run in one sweep: the whole grid, or the sampler's random start
    (its first STARTUP proposals, which read no score; `points`: those the journal already holds)."""
    n = budget if sampler == "grid" else min(STARTUP, budget)
    out = list(points[:n])
    for i in range(len(out), n):
        out.append(grid[i] if sampler == "grid" else propose(space, [(p, 0.0) for p in out], i, sampler_seed))
    return out


def _paired(best: Evaluation, default: Evaluation) -> tuple[float, float]:
    import numpy as np

    from diagnostics.stats import mean_se, t_quantile

    d = np.asarray(best.scores) - np.asarray(default.scores)
    mean, se = mean_se(d)
    return mean, (t_quantile(len(d)) * se if se > 0 else 0.0)


def _progress(name: str, i: int, budget: int, ev: Evaluation, best: Evaluation, left_s: float | None) -> str:
    how = "stored" if ev.wall_s == 0 else f"{ev.wall_s:.0f} s"
    left = "" if left_s is None else f"; about {left_s / 60:.1f} min left" if left_s >= 60 else f"; about {left_s:.0f} s left"
    return (f"tune {name}: {i}/{budget} {ev.spec}: {ev.mean:.1f} ± {ev.se:.1f} ({how}); best so far {best.mean:.1f} "
            f"({best.spec}){left}")


def _checked(budget, seeds, sampler_seed, store, arrivals) -> tuple[int, tuple, RunStore, int | None]:
    budget, seeds = check_budget(budget), check_seeds(seeds)
    if arrivals is not None and (isinstance(arrivals, bool) or not isinstance(arrivals, numbers.Integral)
                                 or not 1 <= arrivals <= MAX_ARRIVALS):
        raise TuningError(f"arrivals={arrivals!r}: give None (whole runs) or an integer in [1, {MAX_ARRIVALS:,}]")
    if isinstance(sampler_seed, bool) or not isinstance(sampler_seed, numbers.Integral) or not 0 <= sampler_seed < 2**31:
        raise TuningError(f"sampler_seed={sampler_seed!r}: give an integer in [0, 2^31)")
    if budget * len(seeds) > MAX_TUNING_CELLS:
        raise TuningError(f"budget {budget} x {len(seeds)} seeds = {budget * len(seeds):,} runs; at most "
                          f"{MAX_TUNING_CELLS:,} in one tuning")
    store = store if store is not None else RunStore()
    if not isinstance(store, RunStore):
        raise TuningError(f"store {store!r}: give an online.store.RunStore")
    return budget, seeds, store, None if arrivals is None else int(arrivals)


def tune(policy: str, world: str = "dev", budget: int = BUDGET, seeds=TUNING_SEEDS, searches: dict | None = None,
         store: RunStore | None = None, worlds_dir=None, arrivals: int | None = None, sampler_seed: int = 0,
         progress: bool = True, jobs: int = 1, cell_timeout: float | None = CELL_TIMEOUT_S,
         scheduler: str | None = None, dask_workers: int | None = None, inline: bool = False) -> Tuning:
    """Choose a policy's settings by its mean score over `seeds` on `world`, which must not be held out.

    Parameters
    ----------
    policy : str
        A spec: a registered policy, alias or plug-in (``module:function``); bracketed settings stay fixed.
    world : str
        A world that is not held out (default dev); a held-out one is a TuningError, always.
    budget : int
        Evaluations beside the defaults, in [1, MAX_BUDGET] (a grid smaller than the budget is run whole, once).
    seeds : list of int
        The tuning seeds (default 1000-1015, which no results page reports); at least two.
    searches : dict, optional
        {setting: search} to search only these (``online.search_space.search_space``).
    store : RunStore, optional
        Where every evaluation's rows and the tuning's journal go (default: ``RunStore()``).
    arrivals : int, optional
        Score only each run's first `arrivals` arrivals (quick checks).
    sampler_seed : int
        The sampler's seed; another seed is another tuning.
    jobs, cell_timeout, scheduler, dask_workers, inline
        As for ``online.sweep.run_sweep``; a cell past `cell_timeout` seconds fails its evaluation (`inline`, for
        debugging, runs the cells in this process, with no time limit).

    Returns
    -------
    Tuning
    """
    from online.search_space import default_point, search_space
    from tdmodels.rosters import world_name
    from tdmodels.world import world_digest

    progress, inline = check_flag("progress", progress), check_flag("inline", inline)
    budget, seeds, store, arrivals = _checked(budget, seeds, sampler_seed, store, arrivals)
    with time_limit(cell_timeout, f"policy {policy!r}: importing it and reading its settings"):
        space = search_space(policy, searches)
    ds = tuning_world(world, worlds_dir)
    digest, name = world_digest(ds), world_name(world)
    grid = space.grid(limit=budget)
    sampler = "grid" if grid is not None else "tpe"
    budget = len(grid) if sampler == "grid" else budget
    identity = _identity(space, digest, seeds, budget, arrivals, int(sampler_seed))
    path = journal_path(store, identity)
    points = read_journal(path, identity, space, store)
    options = dict(jobs=jobs, cell_timeout=None if inline else cell_timeout, scheduler=scheduler,
                   dask_workers=dask_workers, inline=inline)
    say = (lambda text: print(text, file=sys.stderr, flush=True)) if progress else (lambda text: None)
    say(f"tune {space.name} on {name} ({len(seeds)} seeds, {budget} evaluations, {sampler}): {space.describe()}")
    known = planned_points(space, points, budget, sampler, grid, sampler_seed)
    known += points[len(known):]             # a resumed tuning's later points: every known point in one sweep
    batch = [(space.base.canonical, default_point(space), "the defaults")]
    batch += [(space.spec(p), p, f"evaluation {i + 1}") for i, p in enumerate(known)]
    default, *done = _evaluate(store, world, seeds, batch, arrivals, worlds_dir, options, progress)
    say(_progress(space.name, 0, budget, default, default, None) + " (the untuned defaults)")
    if len(known) > len(points):
        points = known
        _write_journal(path, identity, points)
    best, spent = default, [e.wall_s for e in (default, *done) if e.wall_s]
    for i in range(budget):
        if i >= len(done):
            point = propose(space, [(e.point, e.mean) for e in done], i, sampler_seed)
            [ev] = _evaluate(store, world, seeds, [(space.spec(point), point, f"evaluation {i + 1}")], arrivals,
                             worlds_dir, options)
            done.append(ev)
            points.append(point)
            _write_journal(path, identity, points)
            spent += [ev.wall_s] if ev.wall_s else []
        best = done[i] if done[i].mean > best.mean else best
        left = sum(spent) / len(spent) * (budget - len(done)) if spent else None
        say(_progress(space.name, i + 1, budget, done[i], best, left))
    return Tuning(space.name, space, name, digest, seeds, budget, sampler, default, tuple(done), best,
                  _paired(best, default))


def _score(ev: Evaluation) -> list:
    return [round(ev.mean, 4), round(ev.se, 4)]


def tuning_entry(tuning: Tuning, name: str | None = None, date: str | None = None) -> dict:
    """A finished tuning as an entry of a tuned-settings file (``diagnostics.tuned_settings``): the chosen
    spec and how it was chosen, every evaluation with its score and its paired difference from the defaults."""
    from online.code_identity import policy_code
    from online.registry import resolve

    def paired(ev):
        return [round(x, 4) for x in _paired(ev, tuning.default)]

    dims = [{"name": d.name, "log": d.search.log, "choices": list(d.search.choices),
             "lo": None if d.search.choices else d.search.lo, "hi": None if d.search.choices else d.search.hi}
            for d in tuning.space.dimensions]
    return {"spec": tuning.best.spec, "base": name or tuning.policy, "date": date or time.strftime("%Y-%m-%d"),
            "world": tuning.world, "world_digest": tuning.world_digest, "seeds": list(tuning.seeds),
            "budget": tuning.budget, "sampler": tuning.sampler, "space": tuning.space.describe(), "dimensions": dims,
            "code": policy_code(resolve(tuning.space.base.target)).digest,
            "score": _score(tuning.best), "default_score": _score(tuning.default), "gain": [round(x, 4) for x in tuning.gain],
            "default": {"spec": tuning.default.spec, "point": tuning.default.point, "score": _score(tuning.default)},
            "evaluations": [{"spec": e.spec, "point": e.point, "score": _score(e), "gain": paired(e)}
                            for e in tuning.evaluations]}


def record_tuning(tuning: Tuning, path: str | Path, name: str | None = None) -> dict:
    """Write (or replace) the tuning's entry, under `name` (default: its base spec), in the tuned-settings file
    at `path`, keeping every other entry; a file that does not check out is refused, not overwritten."""
    from diagnostics.tuned_settings import read_tuned_settings

    name = name or tuning.policy
    entries = read_tuned_settings(path)
    entries[name] = tuning_entry(tuning, name)
    text = json.dumps({"policies": dict(sorted(entries.items()))}, indent=1, allow_nan=False) + "\n"
    atomic_save(path, lambda tmp: Path(tmp).write_text(text))
    read_tuned_settings(path)          # what was written reads back
    return entries[name]


__all__ = ["tune", "tuning_entry", "record_tuning", "Tuning", "Evaluation", "TuningError", "propose", "check_budget", "check_seeds", "tuning_world",
           "journal_path", "read_journal", "TUNING_SEEDS", "BUDGET", "MAX_BUDGET", "STARTUP"]
