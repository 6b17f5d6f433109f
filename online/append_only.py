"""Append-only buffers shared between a learner's states, so that a state can grow by one row in O(row).

A learner's state is never changed in place (``online.learner``), yet copying an [N, ...] buffer
to add one row makes a run quadratic in its arrivals. States that only ever append can share the
buffers: a state that has seen `n` rows reads rows [:n] alone, so writing row n leaves every such
state as it was. The buffers carry a shared mark of how many rows have been written; a state
writes in place only when the mark equals its own count (it is the newest). Otherwise another
state has already written row n from the same past (the caller branched), and the buffers are
copied first, so neither branch sees the other's rows.
"""
from __future__ import annotations

import numpy as np


def new_mark() -> np.ndarray:
    """A fresh mark: no rows written."""
    return np.zeros(1, dtype=np.int64)


def writable_at(n: int, mark: np.ndarray, buffers: tuple) -> tuple[tuple, np.ndarray]:
    """Buffers in which row n may be written without changing what any other state reads.

    Parameters
    ----------
    n : int
        The rows the writing state has seen (it reads rows [:n] of each buffer and writes row n).
    mark : array [1] int
        The buffers' shared count of written rows.
    buffers : tuple of arrays
        Each indexed by row along its first axis (a buffer may also keep entries of row n in other
        axes, e.g. the column n of a square matrix: states reading [:n, :n] do not see it).

    Returns
    -------
    (buffers, mark)
        The same buffers and mark, advanced to n + 1, when the state is the newest; else copies with a
        new mark. Write row n into the returned buffers.
    """
    if int(mark[0]) != n:
        buffers, mark = tuple(b.copy() for b in buffers), new_mark()
    mark[0] = n + 1
    return buffers, mark
