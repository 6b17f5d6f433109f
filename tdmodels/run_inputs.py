"""What every run, reference and figure checks before it starts: the world, the seed, the truncation and
whether the run's arrays fit in memory. The Python API and the command line go through these same
checks, so a value the CLI refuses is refused from Python with the same message."""
from __future__ import annotations

import numbers

import numpy as np
import xarray as xr

from tdmodels.limits import MAX_SEED
from tdmodels.world import WorldFormatError, memory_available, session_length, validate_world
from tdmodels.errors import InputError


class RunTooLargeError(InputError):
    """A run, reference or figure whose arrays would not fit in the memory available now."""


def checked_world(world, source: str = "<memory>") -> xr.Dataset:
    """The world if it is an xarray Dataset that follows the world format (``validate_world``), else
    WorldFormatError naming what it is."""
    if not isinstance(world, xr.Dataset):
        raise WorldFormatError(f"world {source}: expected an xarray Dataset in the world format, got "
                               f"{type(world).__name__}")
    return validate_world(world, source)


def _integer(value) -> bool:
    return isinstance(value, (numbers.Integral, np.integer)) and not isinstance(value, (bool, np.bool_))


def checked_seed(seed) -> int:
    """A seed: an integer in [0, MAX_SEED] (not a bool, not 1.5), else ValueError."""
    if not _integer(seed) or not 0 <= seed <= MAX_SEED:
        raise InputError(f"seed {seed!r}: seeds are integers in [0, {MAX_SEED}]")
    return int(seed)


def checked_count(value, name: str, lo: int, hi: int) -> int:
    """An integer setting in [lo, hi] (not a bool, not 2.5), else ValueError naming it."""
    if not _integer(value) or not lo <= value <= hi:
        raise InputError(f"{name} {value!r}: must be an integer in [{lo:,}, {hi:,}]")
    return int(value)


def checked_arrivals(arrivals) -> int | None:
    """A truncation: None (every arrival) or a positive integer, else ValueError."""
    if arrivals is None:
        return None
    if not _integer(arrivals) or arrivals < 1:
        raise InputError(f"arrivals {arrivals!r}: a positive integer (the first N arrivals), or None for all")
    return int(arrivals)


def check_memory(need: int, what: str) -> None:
    """RunTooLargeError if `need` bytes exceed the memory available now (unchecked where unknown)."""
    have = memory_available()
    if have is not None and need > have:
        raise RunTooLargeError(f"{what} needs about {need / 2**30:.2f} GiB, {have / 2**30:.2f} GiB available")


def check_run_memory(world: xr.Dataset, n_arrivals: int, what: str = "a run") -> None:
    """Refuse a run whose [N, S, ...] arrays (schedule, uniforms, gathered utilities and probabilities, pairs,
    clicks, with temporaries) would not fit."""
    K, S = world.sizes["persona"], session_length(world)
    per_round = 8 * (4 + 2 * K + K * K)
    check_memory(2 * n_arrivals * S * per_round, f"{what} of {n_arrivals:,} arrivals x {S} questions "
                                                  f"({K} personas)")


def check_pair_memory(world: xr.Dataset, n_arrivals: int, what: str) -> None:
    """Refuse a computation over every pair of personas on every scheduled question (references, world
    figures: [N, S, K, K] arrays, a few at once) that would not fit, with the hindsight oracle's designs
    (``inference.hindsight``: every pair's feature difference, [N, S K (K - 1) / 2, K + 1], and its
    temporaries), which grow as K cubed: a world of 1,000 personas had asked for 179 GiB."""
    K, S = world.sizes["persona"], session_length(world)
    pairs = 6 * 8 * n_arrivals * S * K * (K + 1)
    designs = 4 * 8 * n_arrivals * S * (K * (K - 1) // 2) * (K + 1)
    check_memory(pairs + designs, f"{what} over {n_arrivals:,} arrivals x {S} questions x {K} x {K} persona pairs")
