"""Rank-normalised split R-hat, bulk ESS and tail ESS of many scalar quantities at once.

The same figures as ``arviz.rhat`` (method "rank") and ``arviz.ess`` (methods "bulk" and "tail"),
Vehtari et al. (2021), computed for every entry of a [chain, draw, entry] array together. ArviZ computes them one entry
at a time; a population fit's label-invariant check has thousands of entries (every user's theta, 2,000
co-clustering pairs) and runs after every round of its chains, while the chains wait. The tests hold
these to ArviZ's values. One difference: where more than half of an entry's values are infinite, the
folded values hold NaN, which ArviZ's ranks omit and these rank last (no label-invariant quantity is
infinite).
"""
from __future__ import annotations

import threading

import numpy as np
from scipy.fft import irfft, next_fast_len, rfft
from scipy.special import ndtri

from inference.kernels.convergence import average_ranks, geyer_ess

CHUNK = 512          # entries handled together (bounds the memory of the FFTs)
TAIL_PROBS = (0.05, 0.95)   # the quantiles whose indicators' ESS is the tail ESS (ArviZ's)
# The ranks run in a parallel kernel; numba's workqueue threading layer (used where OpenMP and TBB are not)
# aborts the process when two Python threads enter a parallel kernel at once, so calls take turns.
_RANKS_LOCK = threading.Lock()



def _draws(x) -> np.ndarray:
    """Draws as a float array [chain, draw, entry] with at least one chain, or one ValueError naming why."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"draws must be real numbers; got dtype {arr.dtype}")
    if arr.ndim != 3 or arr.shape[0] < 1:
        raise ValueError(f"draws must be an array [chain, draw, entry]; got shape {arr.shape} (and at least one chain)")
    return arr.astype(float)

def _split_rows(x: np.ndarray) -> np.ndarray:
    """[C, N, E] -> [E, 2C, N // 2], contiguous: each chain's first and last halves as chains (the middle
    draw of an odd N left out), an entry's draws in one row."""
    half = x.shape[1] // 2
    split = np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)
    return np.ascontiguousarray(np.moveaxis(split, -1, 0))


def _z_scale(rows: np.ndarray) -> np.ndarray:
    """Normal scores of the pooled average ranks of each entry's values: [E, C, M] -> the same shape."""
    E, C, M = rows.shape
    flat = rows.reshape(E, C * M)
    ranks = np.empty_like(flat)
    with _RANKS_LOCK:
        average_ranks(flat, ranks)
    ranks -= 0.375
    ranks /= C * M + 0.25
    return ndtri(ranks).reshape(E, C, M)


def _rhat(z: np.ndarray) -> np.ndarray:
    E, C, M = z.shape
    between = M * np.var(z.mean(axis=2), axis=1, ddof=1)
    within = np.var(z, axis=2, ddof=1).mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + M - 1) / M)


def rhat_and_bulk_ess(x) -> tuple[np.ndarray, np.ndarray]:
    """Rank-normalised split R-hat (the larger of the bulk's and the folded tail's; ``arviz.rhat``) and
    bulk effective sample size (``arviz.ess``, method "bulk") of each entry of x [chain, draw, entry].

    Returns
    -------
    rhat, ess : arrays [entry]
        NaN for an entry with a NaN value or fewer than 4 draws; R-hat also NaN with fewer than 2 chains.
    """
    x = _draws(x)
    C, N, E = x.shape
    rhat, ess = np.full(E, np.nan), np.full(E, np.nan)
    if N < 4:
        return rhat, ess
    ok = ~np.isnan(x).any(axis=(0, 1))
    for s in range(0, E, CHUNK):
        idx = np.flatnonzero(ok[s:s + CHUNK]) + s
        if not len(idx):
            continue
        rows = _split_rows(x[:, :, idx])
        z = _z_scale(rows)
        ess[idx] = _ess(z)
        if C < 2:
            continue
        bulk = _rhat(z)
        med = np.median(rows.reshape(len(idx), -1), axis=1)
        tail = _rhat(_z_scale(np.abs(rows - med[:, None, None])))
        rhat[idx] = np.where(np.isnan(bulk) | ~(tail > bulk), bulk, tail)    # ArviZ's max(bulk, tail)
    return rhat, ess


def _type7_quantile(sorted_values: np.ndarray, p: float) -> np.ndarray:
    """The p-quantile of each row of sorted_values [E, n] (n >= 2) as ArviZ takes it (R's type 7, by
    ``scipy.stats.mstats.mquantiles`` with alphap = betap = 1), in the same arithmetic."""
    n = sorted_values.shape[1]
    aleph = n * p + (1.0 + p * (1.0 - 1.0 - 1.0))
    k = int(np.floor(np.clip(aleph, 1, n - 1)))
    gamma = float(np.clip(aleph - k, 0, 1))
    return (1.0 - gamma) * sorted_values[:, k - 1] + gamma * sorted_values[:, k]


def tail_ess(x) -> np.ndarray:
    """Tail effective sample size (``arviz.ess``, method "tail") of each entry of x [chain, draw, entry]: the
    smaller of the split-chain ESS of the indicators x <= q at the 5% and the 95% quantiles q of the entry's
    draws.

    Returns
    -------
    array [entry]
        NaN for an entry with a NaN value or fewer than 4 draws.
    """
    x = _draws(x)
    C, N, E = x.shape
    out = np.full(E, np.nan)
    if N < 4:
        return out
    ok = ~np.isnan(x).any(axis=(0, 1))
    for s in range(0, E, CHUNK):
        idx = np.flatnonzero(ok[s:s + CHUNK]) + s
        if not len(idx):
            continue
        rows = _split_rows(x[:, :, idx])                                   # [e, 2C, N // 2]
        ordered = np.sort(np.moveaxis(x[:, :, idx], -1, 0).reshape(len(idx), C * N), axis=1)
        low, high = (_ess((rows <= _type7_quantile(ordered, p)[:, None, None]).astype(float)) for p in TAIL_PROBS)
        out[idx] = np.where(high < low, high, low)                         # Python's min(low, high), as ArviZ's
    return out


def _ess(z: np.ndarray) -> np.ndarray:
    """ESS of each entry of z [E, C, M] (ArviZ's `_ess`: FFT autocovariances, Geyer's truncation)."""
    E, C, M = z.shape
    n = next_fast_len(2 * M, real=True)
    f = rfft(z - z.mean(axis=2, keepdims=True), n=n, axis=2, workers=-1)
    f *= np.conjugate(f)
    acov = irfft(f, n=n, axis=2, workers=-1)[..., :M] / M                            # [E, C, M]
    mean_var = acov[..., 0].mean(axis=1) * M / (M - 1.0)
    var_plus = mean_var * (M - 1.0) / M
    if C > 1:
        var_plus = var_plus + np.var(z.mean(axis=2), axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]       # [E, M]
    ess = geyer_ess(np.ascontiguousarray(rho), C)
    ess[np.isnan(rho).any(axis=1)] = np.nan
    flat = (z.max(axis=(1, 2)) - z.min(axis=(1, 2))) < np.finfo(float).resolution
    ess[flat] = C * M
    return ess
