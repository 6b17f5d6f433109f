"""One rule for ties, wherever a persona or a pair is chosen by its value outside a policy.

Values computed two ways (another BLAS kernel, another summation order, a posterior mean
summed from other draws) differ in their last bits. An argmax that meets two near-equal
values would then pick one persona on one machine and another elsewhere. The rule here:

    values within TIE_RTOL * max(1, |best|) of the best value tie, and the lowest index wins.

The scale floor of 1 fits the quantities chosen on (utilities in [0, 1], logits, regrets of
order 1): a value that is zero up to rounding ties with zero. ``argmax``/``argmin`` apply it
along the last axis; ``top_two`` gives the best and the best of the rest (the best distinct
pair, the higher first). Scoring needs no argmax: strong regret, the floor G and the random
expectation depend only on the values.
"""
from __future__ import annotations

import numpy as np

TIE_RTOL = 1e-9


def argmax(values, axis: int = -1) -> np.ndarray:
    """Index of the best value along `axis`, ties (within TIE_RTOL * max(1, |best|)) to the lowest index.
    NaN is never the best (an all-NaN row gives 0)."""
    v = np.moveaxis(np.asarray(values, dtype=np.float64), axis, -1)
    filled = np.where(np.isnan(v), -np.inf, v)
    best = filled.max(axis=-1, keepdims=True)
    tol = TIE_RTOL * np.maximum(1.0, np.abs(np.where(np.isfinite(best), best, 0.0)))
    tied = (filled >= best - tol) | (filled == best)
    return np.argmax(tied, axis=-1)


def argmin(values, axis: int = -1) -> np.ndarray:
    """Index of the smallest value along `axis`, ties to the lowest index (the rule of ``argmax``)."""
    return argmax(-np.asarray(values, dtype=np.float64), axis=axis)


def top_two(values) -> tuple[np.ndarray, np.ndarray]:
    """(first, second) along the last axis: the best index and the best of the others, each by ``argmax``'s
    tie rule (so the higher of a pair comes first and equal values go in index order)."""
    v = np.asarray(values, dtype=np.float64)
    first = argmax(v)
    rest = v.copy()
    np.put_along_axis(rest, np.asarray(first)[..., None], -np.inf, axis=-1)
    return first, argmax(rest)
