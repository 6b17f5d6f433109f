"""One run = (world, seed, policy spec): the policy plays every arrival of the schedule.

Clicks come from common random numbers: click = u[arrival, round] < P[student, question,
first, second]. A run returns a row (a JSON-ready dict) with the summed regret, floor,
random expectation, excess and score, per-user and per-round curves, wall time, and the
versions and settings that produced it; `replay_logged` also returns the click log.
"""
from __future__ import annotations

import platform
import time
from importlib import metadata
from typing import Callable, NamedTuple

import numpy as np
import xarray as xr

from online.clicklog import ClickLog, make_click_log
from online.code_identity import policy_code
from online.protocol import PolicyOutputError, check_pair
from online.registry import make_policy, policy_spec, resolve
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


def policy_context(world: xr.Dataset, n_arrivals: int) -> dict:
    """The context a policy's `reset` receives: K, d, S, beta, b and N."""
    K = world.sizes["persona"]
    return {"K": K, "d": world.sizes["feature"], "S": session_length(world), "beta": float(world.attrs["beta"]),
            "b": int(world.attrs["bank_size"]), "N": n_arrivals}


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
    policy: object
    sched: object            # online.schedule.Schedule
    feats: np.ndarray        # [Q, K, d] read-only
    probs: np.ndarray        # [students, Q, K, K]
    U: np.ndarray            # [N, S, K]
    ctx: dict
    rng: np.random.Generator


def prepare_run(world: xr.Dataset, seed: int, spec: str, arrivals: int | None) -> RunSetup:
    """Schedule, utilities, read-only features, the policy and its random stream for one run. The world, the
    seed and the truncation are checked first (``tdmodels.run_inputs``), as the command line checks them."""
    world, seed = checked_world(world), checked_seed(seed)
    arrivals = arrivals_limit(world, arrivals)
    check_run_memory(world, arrivals or int(world.attrs["arrivals"]))
    ps = policy_spec(spec)
    policy = make_policy(ps.canonical)
    sched = make_schedule(world, seed, arrivals)
    feats = world["features"].values.copy()
    feats.flags.writeable = False
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), POLICY_STREAM]))
    return RunSetup(arrivals, ps, policy, sched, feats, world["probs"].values, session_utilities(world, sched),
                    policy_context(world, sched.question.shape[0]), rng)


class Played(NamedTuple):
    """What the replay loop records: [N, S] arrays."""
    pairs: np.ndarray        # [N, S, 2] shown pairs (0, 0 on asked rounds)
    clicks: np.ndarray       # [N, S] int8, 1 if the first won (0 on asked rounds)
    asked: np.ndarray        # [N, S] the persona asked about, -1 where a pair was shown
    answers: np.ndarray      # [N, S] the stated answers, NaN where none
    wall_s: float            # the loop's wall time (the policy's methods and the click draws)


def play(run: RunSetup, answer: Callable[[int, int], float] | None = None) -> Played:
    """The replay loop, the one every mode runs: each arrival's session, round by round.

    Parameters
    ----------
    run : RunSetup
        From `prepare_run`.
    answer : callable, optional
        answer(arrival, k) -> the stated answer about persona k. Given, a policy that declares ``asks``
        is asked each round first (``ask(Phi)``), and a persona index it returns spends the round on the
        question (``policy.answer(k, value)``) instead of a pair (the combined mode). Without it,
        ``ask`` is never called.
    """
    policy, sched, feats, probs, spec = run.policy, run.sched, run.feats, run.probs, run.spec.canonical
    N, S = sched.question.shape
    K = feats.shape[-2]
    pairs = np.zeros((N, S, 2), dtype=np.int64)
    clicks = np.zeros((N, S), dtype=np.int8)
    asked = np.full((N, S), -1, dtype=np.int64)
    answers = np.full((N, S), np.nan)
    ask = None
    if answer is not None and getattr(policy, "asks", False) is True:
        if not (callable(getattr(policy, "ask", None)) and callable(getattr(policy, "answer", None))):
            raise PolicyOutputError(f"policy {spec!r} declares asks = True but has no ask(Phi) and answer(k, value)")
        ask = policy.ask
    t0 = time.perf_counter()
    policy.reset(run.rng, run.ctx)
    for a in range(N):
        s = sched.student[a]
        policy.start_student()
        for t in range(S):
            q = sched.question[a, t]
            if ask is not None:
                k = ask(feats[q])
                if k is not None:
                    if type(k) not in (int, np.int64) or not 0 <= k < K:
                        raise PolicyOutputError(f"policy {spec!r} at arrival {a}, round {t}: ask returned {k!r}, "
                                                f"expected None or a persona index in 0..{K - 1}")
                    value = float(answer(a, int(k)))
                    policy.answer(int(k), value)
                    asked[a, t], answers[a, t] = k, value
                    continue
            i, j = check_pair(policy.select(feats[q]), K, spec, a, t)
            y = int(sched.uniform[a, t] < probs[s, q, i, j])
            policy.update(y)
            pairs[a, t] = i, j
            clicks[a, t] = y
        policy.end_student()
    return Played(pairs, clicks, asked, answers, time.perf_counter() - t0)


def _play(world: xr.Dataset, seed: int, spec: str, arrivals: int | None, keep_log: bool) -> tuple[dict, ClickLog | None]:
    run = prepare_run(world, seed, spec, arrivals)
    arrivals, ps, policy, sched = run.arrivals, run.spec, run.policy, run.sched
    spec, target, settings = ps.canonical, ps.target, ps.settings
    played = play(run)
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
    return row, log._replace(**recorded(policy))


LOG_FIELDS = {"arrival_priors": "priors", "arrival_recalibrations": "recalibration", "session_beliefs": "beliefs",
              "click_predictions": "predictions"}


def recorded(policy) -> dict:
    """The click log's fields a policy declares it records (its `records`), read from it after the run."""
    declared = getattr(policy, "records", frozenset())
    name = getattr(policy, "name", type(policy).__name__)
    if not isinstance(declared, (set, frozenset, tuple, list)) or not all(isinstance(r, str) for r in declared):
        raise PolicyOutputError(f"policy {name!r}: records must be a set of names ({', '.join(LOG_FIELDS)}), "
                                f"got {declared!r}")
    unknown = set(declared) - set(LOG_FIELDS)
    if unknown:
        raise PolicyOutputError(f"policy {name!r} declares records {sorted(unknown)}; "
                                f"known: {', '.join(LOG_FIELDS)}")
    missing = [r for r in declared if r in LOG_FIELDS and not callable(getattr(policy, r, None))]
    if missing:
        raise PolicyOutputError(f"policy {name!r} declares records {missing} but has no such method")
    return {LOG_FIELDS[r]: getattr(policy, r)() for r in declared}
