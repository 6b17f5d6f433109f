"""Whether a stored row is what its policy plays: the run replayed on this code, its pairs compared.

``online.verify`` checks a row against its world: every click is the world's for the pair shown, and
every figure follows from the pairs. What it cannot tell is which policy chose the pairs: a row of one
policy written under another's name (and that policy's code digest) verifies. Replaying tells, at the
price of the run: the row's policy, on this installation's code, is run again on the row's world, seed
and truncation (a policy's pairs are a function of those), and its pairs must be the row's, round by
round. A row is replayed only where its code digest is this installation's for its policy: another
code version may rightly play other pairs.

Importing this module imports no policy; ``replay_problem`` imports the row's policy, so the caller
decides which policies may be imported (``tutorduel verify --replay``: the registered ones and the
plug-ins the user names).
"""
from __future__ import annotations

import numpy as np

from online.verify import row_played


RECORD_RTOL = 1e-9           # a recorded belief or prediction replayed may differ in its last bits, no more


def replay_problem(world, row: dict, log=None) -> tuple[str, str] | None:
    """None if the row's policy, replayed on this code, shows the row's pairs in every round (and, given the
    row's click log, records what the log holds); else ("row" or "log", what differs: the first round that
    does and how many do, or the first record that does), or ("skip", why) where the code is not the row's
    (``replay_task`` adds ("error", what was raised) where the replay itself fails).

    Parameters
    ----------
    world : xarray.Dataset
        The row's world (its digest is the row's ``world_digest``).
    row : dict
        A stored row of the current code version of its policy (see ``online.store``), already verified
        against its world (``online.verify``).
    """
    from online.replay import replay_logged

    again, again_log = replay_logged(world, int(row["seed"]), row["policy"], arrivals=row["arrivals_limit"])
    if again["code"]["digest"] != row["code"]["digest"]:
        return "skip", (f"ran on code {row['code']['digest']}; {row['policy']} here is code "
                       f"{again['code']['digest']}, so its pairs may rightly differ (not compared)")
    mine, _ = row_played(row)
    theirs, _ = row_played(again)
    if mine.shape != theirs.shape:
        return "row", f"the row has {mine.shape[0]} arrivals x {mine.shape[1]} rounds, the replay {theirs.shape[:2]}"
    differs = (mine != theirs).any(-1)
    if not differs.any():
        why = None if log is None else _record_problem(log, again_log)
        return None if why is None else ("log", why)
    a, t = np.argwhere(differs)[0]
    return "row", (f"{row['policy']} on this code shows {tuple(int(x) for x in theirs[a, t])} at arrival {a}, "
                   f"round {t + 1}, where the row has {tuple(int(x) for x in mine[a, t])} ({int(differs.sum())} of "
                   f"{differs.size} rounds differ): the row is not this policy's run")


def _records(log) -> dict:
    """What a policy recorded of itself in a click log, by name."""
    out = {"recalibration": log.recalibration}
    for part in ("priors", "beliefs"):
        mix = getattr(log, part)
        out.update({f"{part}.{f}": None if mix is None else getattr(mix, f) for f in ("weights", "means", "covs")})
    out.update({f"predictions.{k}": v for k, v in (log.predictions or {}).items()})
    return out


def _record_problem(log, again) -> str | None:
    """The first record of the stored log that the replay's does not reproduce, or None."""
    mine, theirs = _records(log), _records(again)
    for name in sorted(set(mine) | set(theirs)):
        a, b = mine.get(name), theirs.get(name)
        if (a is None) != (b is None):
            return f"its click log {'lacks' if a is None else 'has'} {name}, the replay's {'has' if a is None else 'lacks'}"
        if a is not None and (np.shape(a) != np.shape(b) or
                              not np.allclose(a, b, rtol=RECORD_RTOL, atol=RECORD_RTOL, equal_nan=True)):
            return f"its click log's {name} is not what the policy records on a replay"
    return None


def replay_task(item: tuple) -> tuple[str, tuple[str, str] | None]:
    """(path, replay_problem's answer) for one (path, world file or Dataset, row): a module-level function for worker processes.
    The row's click log beside it, if any, is compared too."""
    from pathlib import Path

    from online.clicklog import ClickLogError, load_click_log
    from tdmodels.world import load_world

    path, world, row = item
    log_path = Path(path).with_suffix(".clicks.nc")
    try:
        log = load_click_log(log_path) if log_path.exists() else None
    except ClickLogError as exc:
        return path, ("log", f"its click log {log_path} cannot be read ({exc})")
    try:
        return path, replay_problem(world if not isinstance(world, str) else load_world(world), row, log)
    except Exception as exc:  # noqa: BLE001 - a policy that fails on replay: reported for this row, the rest go on
        return path, ("error", f"{type(exc).__name__}: {exc}")
