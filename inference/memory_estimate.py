"""What the per-user reference (and a validation built on it) holds in memory, estimated before any work.

The estimate is the sum of three parts, each an upper bound measured on this project's runs:
- FIXED_BYTES: a process that has imported the numerical libraries, compiled the sampler and the
  kernels, and holds the world and the click log;
- one chunk: the sampler's lanes (each (unit, chain)'s kept draws and statistics), the chunk's draws
  of theta, and the importance-sampling evidence of its units (`is_draws` draws x the rounds);
- per user: the draws of the user's posterior that the output holds (float32), and for a validation
  the checks' float64 copy, the online belief's draws and the files' bytes.
Only the last part grows with the run's users.
"""
from __future__ import annotations

import math
import os
import numbers
from typing import NamedTuple

from tdmodels.errors import InputError, check_flag

FIXED_BYTES = 1_400_000_000
GIB = 1 << 30


class MemoryEstimate(NamedTuple):
    """Bytes: fixed, one chunk, all users' output; `total` their sum."""
    fixed: int
    chunk: int
    users: int

    @property
    def total(self) -> int:
        return self.fixed + self.chunk + self.users

    def line(self) -> str:
        return (f"about {self.total / GIB:.2f} GiB: {self.fixed / GIB:.2f} fixed, {self.chunk / GIB:.2f} for a chunk "
                f"of units, {self.users / GIB:.2f} for the users' draws")


def reference_memory(users: int, components: int, chains: int, draws: int, chunk: int, rounds: int = 24,
                     dim: int = 7, is_draws: int = 4000, validate: bool = False) -> MemoryEstimate:
    """The estimate for a reference of `users` users under priors of `components` components, `chunk` units at a
    time (a user's units are never split, so a chunk holds up to max(chunk, components) units). Every count
    must be a positive integer (InputError naming it): a zero or negative one had given a smaller, or
    negative, estimate."""
    for name, v in (("users", users), ("components", components), ("chains", chains), ("draws", draws),
                    ("chunk", chunk), ("rounds", rounds), ("dim", dim), ("is_draws", is_draws)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise InputError(f"reference_memory: {name}={v!r} must be a positive integer")
    validate = check_flag("reference_memory: validate", validate)
    users, components, chains, draws, chunk, rounds, dim, is_draws = (
        int(v) for v in (users, components, chains, draws, chunk, rounds, dim, is_draws))
    units = max(chunk, components)
    per_call = max(os.cpu_count() or 1, chains) * 64     # lanes run 64 to a device, one device a core (configure_jax)
    lanes = -(-units * chains // per_call) * per_call
    sampler = 3 * lanes * draws * (dim + 3) * 8            # device buffers, host copies, per-unit reshapes
    theta = 3 * lanes * draws * dim * 8                    # theta, its flat view's copy, deviations
    evidence = 4 * units * is_draws * (rounds + 2 * dim) * 8
    per_user = chains * draws * dim * 4
    if validate:
        per_user += chains * draws * dim * (8 + 4 + 4 + 4)   # checks' float64 copy, online draws, two files
    return MemoryEstimate(FIXED_BYTES, sampler + theta + evidence, users * per_user)


def check_reference_memory(estimate: MemoryEstimate, limit_gib: float | None, available: int | None) -> None:
    """One InputError, before any work, when the estimate exceeds `limit_gib` (``--max-memory``) or the memory
    available to the process."""
    if limit_gib is not None and (isinstance(limit_gib, bool) or not isinstance(limit_gib, (int, float))
                                  or not math.isfinite(limit_gib) or limit_gib <= 0):
        raise InputError(f"--max-memory {limit_gib!r}: a positive number of GiB")
    if limit_gib is not None and estimate.total > limit_gib * GIB:
        raise InputError(f"the reference needs {estimate.line()}; over --max-memory {limit_gib:g} GiB: fit fewer "
                         f"users (--users), fewer draws (--draws, --chains) or fewer units at a time (--chunk)")
    if available is not None and estimate.total > available:
        raise InputError(f"the reference needs {estimate.line()}; this process has {available / GIB:.2f} GiB "
                         f"available: fit fewer users (--users), fewer draws or fewer units at a time (--chunk)")


__all__ = ["FIXED_BYTES", "MemoryEstimate", "check_reference_memory", "reference_memory"]
