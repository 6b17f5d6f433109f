"""Who arrives, what they ask, and the uniform draws: a function of (world, seed) alone.

Every policy run on the same (world, seed) sees the same arrivals, questions and
uniforms u[arrival, round]; the click is u < P[student, question, first, second], so
identical pairs get identical clicks (common random numbers).
"""
from __future__ import annotations

import hashlib
from typing import NamedTuple

import numpy as np
import xarray as xr

from tdmodels.errors import InputError
from tdmodels.world import KINDS, session_length


class Schedule(NamedTuple):
    """Who arrives, which questions they ask and the click uniforms of one (world, seed): common random numbers shared by every policy."""
    student: np.ndarray      # [N] int, index into the world's student dim
    question: np.ndarray     # [N, S] int, index into the question dim
    uniform: np.ndarray      # [N, S] float in [0, 1)


def _roster_key(world: xr.Dataset) -> int:
    return int.from_bytes(hashlib.sha256(str(world.attrs["roster"]).encode()).digest()[:4], "little")


def topic_table(world: xr.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(topic names [T], question indices [T, chains * 3] in session order)."""
    topics = np.asarray(world["question_topic"].values).astype(str)
    chain = np.asarray(world["question_chain"].values)
    kind = np.asarray(world["question_kind"].values).astype(str)
    names = np.unique(topics)
    order = np.array([KINDS.index(k) for k in kind])
    table = []
    for t in names:
        idx = np.flatnonzero(topics == t)
        idx = idx[np.lexsort((order[idx], chain[idx]))]
        table.append(idx)
    return names, np.stack(table)


def make_schedule(world: xr.Dataset, seed: int, arrivals: int | None = None) -> Schedule:
    """The session schedule of (world, seed); `arrivals` truncates the run (default: the roster's)."""
    n_arr = int(world.attrs["arrivals"]) if arrivals is None else int(arrivals)
    S = session_length(world)
    s_arr, s_top, s_u = (np.random.default_rng(s) for s in np.random.SeedSequence([_roster_key(world), int(seed)]).spawn(3))
    # Only the first n_arr arrivals are drawn: each stream is consumed arrival by arrival, so a truncated
    # schedule is the prefix of the full one (and a world of a million arrivals costs a short run nothing).
    u = s_u.random((n_arr, S))
    mode = str(world.attrs["arrival_mode"])
    if mode == "fixed":
        st = np.asarray(world["schedule_student"].values)[:n_arr]
        qu = np.asarray(world["schedule_question"].values)[:n_arr]
        return Schedule(st.astype(np.int64), qu.astype(np.int64), u)
    n_s = world.sizes["student"]
    if mode == "uniform":
        st = s_arr.integers(n_s, size=n_arr)
    elif mode == "ordered":
        if n_arr > n_s:
            raise InputError(f"world {world.attrs['roster']!r}: {n_arr} arrivals, but its {n_s} students arrive "
                             f"once each, in order")
        st = np.arange(n_arr)
    else:
        st = s_arr.permutation(n_s)[:n_arr]
    _, table = topic_table(world)
    n_top = int(world.attrs["topics_per_session"])
    qu = np.stack([table[s_top.choice(len(table), size=n_top, replace=False)].ravel() for _ in range(n_arr)])
    return Schedule(st.astype(np.int64), qu.astype(np.int64), u)


def session_utilities(world: xr.Dataset, sched: Schedule) -> np.ndarray:
    """U [N, S, K] of the scheduled (student, question) cells."""
    U = world["utilities"].values
    return U[sched.student[:, None], sched.question]
