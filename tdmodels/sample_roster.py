"""A roster of real sessions: the site sample's 48 arrivals resampled into a 350-arrival roster.

The sample (``tdmodels.sample``) holds 48 real sessions of the reference's held-out-profile roster,
8 profiles with 4 to 8 sessions each, judged by the reference's own judge. A real-session roster draws
each of its arrivals as the reference's roster does (a profile uniformly), then one of that profile's
real sessions uniformly, and replays it as recorded: its 24 questions, their utilities and click
probabilities. Nothing is simulated, so the roster checks the policies' implementations independently
of any simulator; the price is that a session recurs about 7 times in 350 arrivals, where the
reference judged each arrival on its own questions. No rater feature was published: g is absent.

Resample r is a function of the sample's content and r alone (integer draws from a seeded
``numpy.random.Generator``, the same on every machine). Its world is named ``real-sessions-{r}``;
it is held out, as the roster it comes from is.
"""
from __future__ import annotations

import re

import numpy as np
import xarray as xr

from .errors import InputError
from .limits import MAX_ARRIVALS, MAX_RESAMPLE
from .world import world_digest

GENERATOR = "real-sessions-1"
ARRIVALS = 350                        # the reference's held-out-profile roster
NAME = re.compile(r"real-sessions-(\d{1,6})")


def resample_name(resample: int) -> str:
    """The world name of resample `resample`: ``real-sessions-{resample}``."""
    return f"real-sessions-{resample}"


def resample_of(name: str) -> int | None:
    """The resample number a world name stands for (``real-sessions-3`` -> 3), else None."""
    m = NAME.fullmatch(str(name))
    return int(m.group(1)) if m and str(int(m.group(1))) == m.group(1) else None


def resampled_schedule(profiles: np.ndarray, resample: int, arrivals: int = ARRIVALS) -> np.ndarray:
    """Which recorded session each arrival replays: [arrivals] indices into the sample's sessions.

    Parameters
    ----------
    profiles : np.ndarray
        [sessions] int, the profile (student index) of each recorded session.
    resample : int
        The resample's seed, 0 to 999,999.
    arrivals : int
        The roster's length.

    Returns
    -------
    np.ndarray
        [arrivals] int64: per arrival, a profile drawn uniformly among those recorded, then one of its
        sessions uniformly.
    """
    if isinstance(resample, bool) or not isinstance(resample, (int, np.integer)) or not 0 <= resample <= MAX_RESAMPLE:
        raise InputError(f"resample {resample!r}: an integer in [0, {MAX_RESAMPLE:,}]")
    if isinstance(arrivals, bool) or not isinstance(arrivals, (int, np.integer)) or not 1 <= arrivals <= MAX_ARRIVALS:
        raise InputError(f"arrivals {arrivals!r}: an integer in [1, {MAX_ARRIVALS:,}]")
    profiles = np.asarray(profiles)
    kinds = np.unique(profiles)
    sessions = [np.flatnonzero(profiles == p) for p in kinds]
    rng = np.random.default_rng(np.random.SeedSequence([0x5E55, int(resample)]))
    out = np.empty(int(arrivals), dtype=np.int64)
    for a in range(len(out)):
        of_profile = sessions[int(rng.integers(len(kinds)))]
        out[a] = of_profile[int(rng.integers(len(of_profile)))]
    return out


def real_session_roster(sample: xr.Dataset, resample: int, arrivals: int = ARRIVALS) -> xr.Dataset:
    """The real-session roster `resample` built from the imported sample world.

    Parameters
    ----------
    sample : xr.Dataset
        The world ``tutorduel worlds import-sample`` writes (a fixed schedule of recorded sessions).
    resample : int
        The resample's seed; its world is named ``resample_name(resample)``.
    arrivals : int
        The roster's length (default 350, the reference's).

    Returns
    -------
    xr.Dataset
        A fixed-schedule, held-out world: the sample's students, questions, utilities and probabilities,
        its arrivals drawn by `resampled_schedule`.
    """
    if str(sample.attrs.get("arrival_mode")) != "fixed" or "schedule_student" not in sample:
        raise InputError("a real-session roster is resampled from recorded sessions: give the imported sample "
                         "world (a fixed schedule)")
    st = np.asarray(sample["schedule_student"].values)
    sq = np.asarray(sample["schedule_question"].values)
    pick = resampled_schedule(st, resample, arrivals)
    name = resample_name(resample)
    ds = sample.drop_vars(["schedule_student", "schedule_question"])
    ds = ds.assign(schedule_student=(("arrival",), st[pick]), schedule_question=(("arrival", "round"), sq[pick]))
    ds.attrs = {**sample.attrs, "roster": name, "arrivals": int(arrivals), "held_out": 1, "generator": GENERATOR,
                "resample": int(resample), "source_digest": world_digest(sample),
                "description": f"{int(arrivals)} arrivals resampled (profile uniform, then one of its sessions) from "
                               f"the {len(st)} real sessions of the reference's held-out-profile roster; resample "
                               f"{int(resample)}; no rater feature"}
    return ds


__all__ = ["real_session_roster", "resampled_schedule", "resample_name", "resample_of", "GENERATOR", "ARRIVALS"]
