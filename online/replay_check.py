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


def replay_problem(world, row: dict) -> str | None:
    """None if the row's policy, replayed on this code, shows the row's pairs in every round; else what
    differs (the first round that does, and how many do).

    Parameters
    ----------
    world : xarray.Dataset
        The row's world (its digest is the row's ``world_digest``).
    row : dict
        A stored row of the current code version of its policy (see ``online.store``), already verified
        against its world (``online.verify``).
    """
    from online.replay import replay

    again = replay(world, int(row["seed"]), row["policy"], arrivals=row["arrivals_limit"])
    if again["code"]["digest"] != row["code"]["digest"]:
        return (f"ran on code {row['code']['digest']}; {row['policy']} here is code {again['code']['digest']}, "
                f"so its pairs may rightly differ (not compared)")
    mine, _ = row_played(row)
    theirs, _ = row_played(again)
    if mine.shape != theirs.shape:
        return f"the row has {mine.shape[0]} arrivals x {mine.shape[1]} rounds, the replay {theirs.shape[:2]}"
    differs = (mine != theirs).any(-1)
    if not differs.any():
        return None
    a, t = np.argwhere(differs)[0]
    return (f"{row['policy']} on this code shows {tuple(int(x) for x in theirs[a, t])} at arrival {a}, round {t + 1}, "
            f"where the row has {tuple(int(x) for x in mine[a, t])} ({int(differs.sum())} of {differs.size} rounds "
            f"differ): the row is not this policy's run")


def replay_task(item: tuple) -> tuple[str, str | None]:
    """(path, problem) for one (path, world file or Dataset, row): a module-level function for worker processes."""
    from tdmodels.world import load_world

    path, world, row = item
    return path, replay_problem(world if not isinstance(world, str) else load_world(world), row)
