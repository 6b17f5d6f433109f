"""The reference's published learning curves, read from the site's curves file.

The file (``tutorduel-site-curves.json``, from the reference's public site) holds, for each of three
rosters (U held-out profiles, C composite, I quirky) and nine methods, the excess regret per user at
each of the 350 arrivals as a centred 25-arrival moving mean over 32 or 64 seeds, with a 95% band.
``tutorduel worlds import-curves PATH`` checks it and keeps a copy in the worlds folder
(`CURVES_FILE`), where the leaderboard finds it.

The plateau of a curve is its mean over arrivals 251-350 (`PLATEAU`), where the reference's curves
have stopped moving for most methods; ours is the mean per-user excess over the same arrivals.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tdmodels.errors import InputError
from tdmodels.file_read import UnreadableFileError, read_regular_text

CURVES_FILE = "published-curves.json"
CURVES_BYTES = 16 * 2**20          # the published file is about 170 kB
PLATEAU = slice(250, 350)          # arrivals 251-350
# the file's roster letters and method keys, and what this project calls them
ROSTER_OF = {"U": "test_profiles", "C": "composite", "I": "quirky"}
METHOD_OF = {"coduel": "coduel", "no_transfer": "no-transfer", "coldb": "coldb", "coldb_lr": "coldb-lr",
             "colstim": "colstim", "rucb": "rucb", "pooled": "pooled", "metats": "meta-ts", "hierts": "hierts"}


class PublishedCurve(NamedTuple):
    """One published curve: excess regret per user by arrival (index 0 = arrival 1), with its 95% band."""
    mean: np.ndarray     # [N]
    lo: np.ndarray       # [N]
    hi: np.ndarray       # [N]
    seeds: int

    @property
    def arrival(self) -> np.ndarray:
        """[N] the arrival of each point, from 0 (as ``diagnostics.learning_curves.Curve.arrival``)."""
        return np.arange(len(self.mean))

    @property
    def plateau(self) -> float:
        """The curve's mean over arrivals 251-350."""
        return float(np.mean(self.mean[PLATEAU]))


class CurvesFormatError(InputError):
    """A curves file that is not the reference's published curves."""


def parse_curves(raw, source: str = "<memory>") -> dict[str, dict[str, PublishedCurve]]:
    """{roster: {method: PublishedCurve}} from the parsed JSON of the curves file, in this project's names
    (``ROSTER_OF``, ``METHOD_OF``); CurvesFormatError naming the first place that is not as published."""
    def fail(where, problem):
        raise CurvesFormatError(f"curves {source}: {where}: {problem}")

    curves = raw.get("curves") if isinstance(raw, dict) else None
    if not isinstance(curves, dict) or not curves:
        fail("curves", "missing: the file needs an object 'curves' of roster -> method -> {mean, lo, hi, seeds}")
    out: dict[str, dict[str, PublishedCurve]] = {}
    for letter, methods in curves.items():
        if letter not in ROSTER_OF:
            fail(f"curves.{letter}", f"an unknown roster; the published ones are {', '.join(ROSTER_OF)}")
        if not isinstance(methods, dict) or not methods:
            fail(f"curves.{letter}", "expected an object of method -> curve")
        by = {}
        for key, c in methods.items():
            where = f"curves.{letter}.{key}"
            if key not in METHOD_OF:
                fail(where, f"an unknown method; the published ones are {', '.join(METHOD_OF)}")
            if not isinstance(c, dict):
                fail(where, "expected an object with mean, lo, hi and seeds")
            arrays = []
            for part in ("mean", "lo", "hi"):
                v = c.get(part)
                if (not isinstance(v, list) or not 1 <= len(v) <= 10**6 or not all(
                        isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
                        for x in v)):
                    fail(f"{where}.{part}", "expected a list of finite, non-negative numbers (excess regret per user)")
                arrays.append(np.asarray(v, dtype=float))
            if len({len(a) for a in arrays}) != 1:
                fail(where, f"mean, lo and hi differ in length ({', '.join(str(len(a)) for a in arrays)})")
            if np.any(arrays[1] > arrays[0] + 1e-9) or np.any(arrays[2] < arrays[0] - 1e-9):
                fail(where, "the band does not hold the mean (lo <= mean <= hi)")
            seeds = c.get("seeds")
            if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= 10**6:
                fail(f"{where}.seeds", f"expected a positive integer, got {seeds!r}")
            by[METHOD_OF[key]] = PublishedCurve(*arrays, seeds)
        out[ROSTER_OF[letter]] = by
    return out


def load_curves(path: str | Path) -> dict[str, dict[str, PublishedCurve]]:
    """The published curves in the file at `path` (``parse_curves``); CurvesFormatError naming the file
    where it cannot be read or is not the published curves."""
    try:
        raw = json.loads(read_regular_text(Path(path), CURVES_BYTES))
    except (UnreadableFileError, ValueError, RecursionError) as exc:      # ValueError: JSON, huge integers
        raise CurvesFormatError(f"curves {path}: not the reference's curves file ({type(exc).__name__}: {exc})") from None
    return parse_curves(raw, str(path))


def our_plateau(per_user_excess: np.ndarray) -> float | None:
    """The mean excess per user over arrivals 251-350 of runs [seeds, N], None for runs shorter than 350."""
    x = np.asarray(per_user_excess, dtype=float)
    if x.ndim != 2 or x.shape[1] < PLATEAU.stop:
        return None
    return float(np.mean(x[:, PLATEAU]))


__all__ = ["PublishedCurve", "CurvesFormatError", "parse_curves", "load_curves", "our_plateau", "CURVES_FILE",
           "PLATEAU", "ROSTER_OF", "METHOD_OF"]
