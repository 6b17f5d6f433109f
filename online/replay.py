"""One run = (world, seed, policy spec): the policy plays every arrival of the schedule.

Clicks come from common random numbers: click = u[arrival, round] < P[student, question,
first, second]. A run returns a row (a JSON-ready dict) with the summed regret, floor,
random expectation, excess and score, per-user and per-round curves, wall time, and the
versions and settings that produced it; `replay_logged` also returns the click log.
"""
from __future__ import annotations

import numbers

import platform
import time
from importlib import metadata
from typing import Callable, NamedTuple

import numpy as np
import xarray as xr

from online.clicklog import ClickLog, make_click_log
from online.code_identity import policy_code
from online.learner import Context, Learner
from online.protocol import PolicyOutputError, check_pair
from online.records import Recorder
from online.registry import make_learner, policy_spec, resolve
from online.schedule import make_schedule, session_utilities
from online.store import ROW_SCHEMA, CellKey
from online.verify import RowCheckError, ScoreUndefinedError, encode_played, score_played
from tdmodels.run_inputs import check_run_memory, checked_arrivals, checked_seed, checked_world
from tdmodels.world import session_length, world_digest

POLICY_STREAM = 0x5EED


def versions() -> dict:
    """Versions of Python and the numerical packages, recorded in every row."""
    out = {"python": platform.python_version()}
    for pkg in ("tutorduel", "numpy", "scipy", "xarray", "jax", "numpyro"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            pass
    return out


def policy_context(world: xr.Dataset, n_arrivals: int) -> Context:
    """The context a learner's `init` receives: K, d, S, beta, b and N."""
    return Context(world.sizes["persona"], world.sizes["feature"], session_length(world), float(world.attrs["beta"]),
                   int(world.attrs["bank_size"]), n_arrivals)


def arrivals_limit(world: xr.Dataset, arrivals: int | None) -> int | None:
    """Normalise a truncation: None for a full run, else the number of arrivals kept (>= 1); ValueError
    for anything but None or a positive integer."""
    arrivals = checked_arrivals(arrivals)
    if arrivals is None or arrivals >= int(world.attrs["arrivals"]):
        return None
    return arrivals


def run_key(world: xr.Dataset, seed: int, spec: str, arrivals: int | None = None) -> CellKey:
    """The store identity of a run: world digest, seed, canonical spec, the policy's code digest, truncation."""
    ps = policy_spec(spec)
    return CellKey(world_digest(world), int(seed), ps.canonical, policy_code(resolve(ps.target)).digest,
                   arrivals_limit(world, arrivals))


def _jsonable(value):
    """A setting as JSON can hold it (finite numbers, strings, lists, dicts), else its repr."""
    import json

    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return repr(value)


def replay(world: xr.Dataset, seed: int, spec: str, arrivals: int | None = None) -> dict:
    """Run one policy on one (world, seed), optionally on the first `arrivals` only; return the run row.

    Raises PolicySpecError for a bad spec and PolicyOutputError for an invalid pair.
    """
    return _play(world, seed, spec, arrivals, keep_log=False)[0]


def replay_logged(world: xr.Dataset, seed: int, spec: str, arrivals: int | None = None) -> tuple[dict, ClickLog]:
    """As `replay`, and also return the run's click log."""
    return _play(world, seed, spec, arrivals, keep_log=True)


class RunSetup(NamedTuple):
    """What a run needs before its first round."""
    arrivals: int | None     # the arrivals limit as given (None: all)
    spec: object             # online.registry.PolicySpec
    learner: Learner
    sched: object            # online.schedule.Schedule
    feats: np.ndarray        # [Q, K, d] read-only
    probs: np.ndarray        # [students, Q, K, K]
    U: np.ndarray            # [N, S, K]
    ctx: Context
    rng: np.random.Generator


def prepare_run(world: xr.Dataset, seed: int, spec: str, arrivals: int | None) -> RunSetup:
    """Schedule, utilities, read-only features, the learner and its random stream for one run. The world, the
    seed and the truncation are checked first (``tdmodels.run_inputs``), as the command line checks them."""
    world, seed = checked_world(world), checked_seed(seed)
    arrivals = arrivals_limit(world, arrivals)
    check_run_memory(world, arrivals or int(world.attrs["arrivals"]))
    ps = policy_spec(spec)
    learner = make_learner(ps.canonical)
    sched = make_schedule(world, seed, arrivals)
    feats = world["features"].values.copy()
    feats.flags.writeable = False
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), POLICY_STREAM]))
    return RunSetup(arrivals, ps, learner, sched, feats, world["probs"].values, session_utilities(world, sched),
                    policy_context(world, sched.question.shape[0]), rng)


class Played(NamedTuple):
    """What the replay loop records: [N, S] arrays."""
    pairs: np.ndarray        # [N, S, 2] shown pairs (0, 0 on asked rounds)
    clicks: np.ndarray       # [N, S] int8, 1 if the first won (0 on asked rounds)
    asked: np.ndarray        # [N, S] the persona asked about, -1 where a pair was shown
    answers: np.ndarray      # [N, S] the stated answers, NaN where none
    wall_s: float            # the loop's wall time (the policy's methods and the click draws)


def play(run: RunSetup, answer: Callable[[int, int], float] | None = None,
         observe: Callable[[str, int, int, object], None] | None = None) -> Played:
    """The replay loop, the one every mode runs: each arrival's session, round by round.

    Parameters
    ----------
    run : RunSetup
        From `prepare_run`.
    answer : callable, optional
        answer(arrival, k) -> the stated answer about persona k. Given, a learner that asks
        (``Learner.ask``) is asked each round first, and a persona index it returns spends the round on
        the question (``Learner.answer``) instead of a pair (the combined mode). Without it, `ask` is
        never called.
    observe : callable, optional
        observe(kind, arrival, round, info) for every info the learner returns: kind is the function's
        name ("start_session", "select", "update", "ask", "answer", "end_session"), round -1 outside
        the rounds. The loop keeps no info itself.
    """
    learner, sched, feats, probs, spec = run.learner, run.sched, run.feats, run.probs, run.spec.canonical
    N, S = sched.question.shape
    K = feats.shape[-2]
    pairs = np.zeros((N, S, 2), dtype=np.int64)
    clicks = np.zeros((N, S), dtype=np.int8)
    asked = np.full((N, S), -1, dtype=np.int64)
    answers = np.full((N, S), np.nan)
    asks = answer is not None and learner.ask is not None
    seen = observe if observe is not None else _ignore
    rng = run.rng
    t0 = time.perf_counter()
    state = learner.init(run.ctx)
    a = t = -1
    try:
        for a in range(N):
            s, t = sched.student[a], -1
            state, info = _pair_of(learner.start_session(state, rng), "start_session", spec, a, -1)
            seen("start_session", a, -1, info)
            for t in range(S):
                q = sched.question[a, t]
                Phi = feats[q]
                if asks:
                    k, info = _pair_of(learner.ask(state, Phi, rng), "ask", spec, a, t)
                    seen("ask", a, t, info)
                    if k is not None:
                        if type(k) not in (int, np.int64) or not 0 <= k < K:
                            raise PolicyOutputError(f"policy {spec!r} at arrival {a}, round {t}: ask returned {k!r}, "
                                                    f"expected None or a persona index in 0..{K - 1}")
                        value = float(answer(a, int(k)))
                        state, info = _pair_of(learner.answer(state, Phi, int(k), value), "answer", spec, a, t)
                        seen("answer", a, t, info)
                        asked[a, t], answers[a, t] = k, value
                        continue
                out, info = _pair_of(learner.select(state, Phi, rng), "select", spec, a, t)
                seen("select", a, t, info)
                i, j = check_pair(out, K, spec, a, t)
                y = int(sched.uniform[a, t] < probs[s, q, i, j])
                state, info = _pair_of(learner.update(state, Phi, (i, j), y), "update", spec, a, t)
                seen("update", a, t, info)
                pairs[a, t] = i, j
                clicks[a, t] = y
            t = -1
            state, info = _pair_of(learner.end_session(state), "end_session", spec, a, -1)
            seen("end_session", a, -1, info)
    except (Exception, SystemExit) as exc:
        if not isinstance(exc, PolicyOutputError):     # those name the place already
            exc.add_note(f"raised while policy {spec!r} played arrival {a}" + (f", round {t}" if t >= 0 else ""))
        raise
    return Played(pairs, clicks, asked, answers, time.perf_counter() - t0)


def _ignore(kind, arrival, round_, info):
    pass


def _pair_of(out, fn: str, spec: str, arrival: int, round_: int):
    """A learner function's (state or pair, info), or one PolicyOutputError naming what it returned."""
    where = f"arrival {arrival}" + (f", round {round_}" if round_ >= 0 else "")
    if type(out) is tuple and len(out) == 2:
        if fn == "select" and all(isinstance(v, (numbers.Integral, np.integer)) and not isinstance(v, (bool, np.bool_))
                                  for v in out):
            raise PolicyOutputError(f"policy {spec!r} at {where}: select returned {repr(out)[:80]}, a bare pair; a "
                                    f"learner's select returns (pair, info), e.g. (({out[0]}, {out[1]!r}), None)")
        return out
    first = "the pair" if fn == "select" else "k or None" if fn == "ask" else "the state"
    raise PolicyOutputError(f"policy {spec!r} at {where}: {fn} returned {repr(out)[:80]}, expected ({first}, info)")


def _play(world: xr.Dataset, seed: int, spec: str, arrivals: int | None, keep_log: bool) -> tuple[dict, ClickLog | None]:
    run = prepare_run(world, seed, spec, arrivals)
    arrivals, ps, sched = run.arrivals, run.spec, run.sched
    spec, target, settings = ps.canonical, ps.target, ps.settings
    recorder = Recorder(run.learner.records, spec, run.ctx.K, run.ctx.d) if keep_log else None
    played = play(run, observe=recorder)
    pairs, clicks, wall = played.pairs, played.clicks, played.wall_s
    N, S = sched.question.shape

    try:
        fig = score_played(world, seed, arrivals, pairs, clicks, sched)
    except ScoreUndefinedError:
        raise
    except RowCheckError as exc:
        raise PolicyOutputError(f"run of {spec!r} seed {seed}: {exc}") from None
    code = policy_code(resolve(target))
    row = {
        "schema": ROW_SCHEMA, "kind": "policy",
        "world": str(world.attrs["roster"]), "world_digest": world_digest(world),
        "seed": int(seed), "policy": spec, "target": target,
        "settings": {k: _jsonable(v) for k, v in settings.items()},
        "arrivals": N, "arrivals_limit": arrivals, "rounds": S, **fig,
        "played": encode_played(pairs, clicks, world.sizes["persona"]),
        "wall_s": wall, "versions": versions(), "code": {"digest": code.digest, "modules": list(code.modules)},
    }
    if not keep_log:
        return row, None
    log = make_click_log(world["features"].values, sched.student, sched.question, pairs, clicks,
                         {"world": row["world"], "world_digest": row["world_digest"], "seed": int(seed),
                          "policy": spec, "code": code.digest, "arrivals_limit": arrivals})
    return row, log._replace(**recorder.fields(N, S))
