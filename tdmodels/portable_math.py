"""Arithmetic that gives the same bits on every machine: what worlds are generated with.

A world's identity in the run store is the digest of its bytes, so the simulator must produce
the same bytes on any x86-64 or ARM machine, whatever its BLAS and its C library. Two things
in ordinary NumPy/SciPy code do not:

- BLAS and LAPACK (``@``, ``np.dot``, ``np.linalg.solve``) pick a kernel for the CPU at run time;
  kernels sum in different orders, so a product differs by an ulp from one kernel to the next;
- the C library's ``exp``/``log`` (behind ``scipy.special.expit``, NumPy's transcendental
  ufuncs on CPUs without their own SIMD versions) have an FMA variant chosen on CPUs that have
  FMA; the two round differently in a few cases in a thousand.

This module uses only the operations IEEE 754 defines exactly (``+ - * /``, ``sqrt``,
comparisons, ``rint``, ``frexp``/``ldexp``), one NumPy ufunc per operation (so nothing is
fused into an FMA), in an order fixed here. ``exp`` and ``log`` are a Cody-Waite reduction and
a polynomial (within about 2 ulp of the correctly rounded result; their bits, not their accuracy,
are what matters for a digest). Sums over a short last axis run in index order.
"""
from __future__ import annotations

import numpy as np

# ln 2 split so that n * LN2_HI is exact for |n| < 2**11
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_INV_LN2 = 1.44269504088896338700e+00
_EXP_MAX = 709.0
_EXP_MIN = -745.0
_EXP_TERMS = tuple(1.0 / np.prod(np.arange(1.0, k + 1.0)) for k in range(14))   # 1/k!, k = 0..13
_SQRT_HALF = 0.70710678118654752440


def exp(x) -> np.ndarray:
    """e**x, elementwise, the same bits everywhere (0 below -745, inf above 709)."""
    x = np.asarray(x, dtype=np.float64)
    xc = np.clip(np.where(np.isnan(x), 0.0, x), _EXP_MIN, _EXP_MAX)
    n = np.rint(xc * _INV_LN2)
    r = (xc - n * _LN2_HI) - n * _LN2_LO             # |r| <= ln2 / 2
    p = np.full_like(r, _EXP_TERMS[-1])
    for c in _EXP_TERMS[-2::-1]:                       # Horner: sum r**k / k!
        p = p * r + c
    # ldexp in two halves: 2**n alone can overflow or underflow where p * 2**n does not
    half = np.floor(n / 2.0)
    out = np.ldexp(np.ldexp(p, half.astype(np.int64)), (n - half).astype(np.int64))
    out = np.where(x > _EXP_MAX, np.inf, out)
    out = np.where(x < _EXP_MIN, 0.0, out)
    return np.where(np.isnan(x), np.nan, out)


def log(x) -> np.ndarray:
    """Natural log, elementwise, the same bits everywhere (-inf at 0, nan below 0)."""
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x) & (x > 0)
    m, e = np.frexp(np.where(ok, x, 1.0))             # x = m 2**e, m in [0.5, 1)
    low = m < _SQRT_HALF
    m = np.where(low, m * 2.0, m)                      # m in [sqrt(1/2), sqrt(2))
    e = (e - low).astype(np.float64)
    f = m - 1.0
    s = f / (2.0 + f)                                  # log m = 2 atanh s, |s| <= 0.172
    s2 = s * s
    p = np.full_like(s, 1.0 / 23.0)
    for k in range(21, 0, -2):                         # sum s**(2j) / (2j + 1)
        p = p * s2 + 1.0 / k
    out = e * _LN2_HI + (e * _LN2_LO + 2.0 * s * p)
    out = np.where(x == 0, -np.inf, out)
    out = np.where(x == np.inf, np.inf, out)
    return np.where((x < 0) | np.isnan(x), np.nan, out)


def expit(x) -> np.ndarray:
    """The logistic function 1 / (1 + e**-x), elementwise, the same bits everywhere."""
    x = np.asarray(x, dtype=np.float64)
    z = exp(-np.abs(x))                                # in (0, 1]: never overflows
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z))


def logit(p) -> np.ndarray:
    """log(p / (1 - p)), elementwise, the same bits everywhere."""
    p = np.asarray(p, dtype=np.float64)
    return log(p) - log(1.0 - p)


def dot(a, b) -> np.ndarray:
    """sum_k a[..., k] b[..., k], broadcasting the leading axes, summed in index order (no BLAS)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"dot: last axes differ ({a.shape[-1]} and {b.shape[-1]})")
    out = a[..., 0] * b[..., 0]
    for k in range(1, a.shape[-1]):
        out = out + a[..., k] * b[..., k]
    return out


def total(a) -> np.ndarray:
    """sum over the last axis in index order."""
    a = np.asarray(a, dtype=np.float64)
    out = a[..., 0].copy()
    for k in range(1, a.shape[-1]):
        out = out + a[..., k]
    return out


def standardise(a) -> np.ndarray:
    """Centre each row (last axis) and scale it to unit population sd; a constant row becomes zeros."""
    a = np.asarray(a, dtype=np.float64)
    n = a.shape[-1]
    c = a - (total(a) / n)[..., None]
    sd = np.sqrt(total(c * c) / n)[..., None]
    return np.divide(c, sd, out=np.zeros_like(c), where=sd > 0)


def solve_spd(H, g) -> np.ndarray:
    """x with H x = g for a batch of symmetric positive definite H [..., n, n], g [..., n]: Cholesky
    and two triangular solves, each sum in index order (no LAPACK). Raises ValueError where a pivot is
    not positive."""
    H, g = np.asarray(H, dtype=np.float64), np.asarray(g, dtype=np.float64)
    n = H.shape[-1]
    L = np.zeros_like(H)
    for j in range(n):
        d = H[..., j, j]
        for k in range(j):
            d = d - L[..., j, k] * L[..., j, k]
        if not np.all(d > 0):
            raise ValueError("solve_spd: matrix not positive definite")
        L[..., j, j] = np.sqrt(d)
        for i in range(j + 1, n):
            v = H[..., i, j]
            for k in range(j):
                v = v - L[..., i, k] * L[..., j, k]
            L[..., i, j] = v / L[..., j, j]
    y = np.zeros_like(g)
    for i in range(n):
        v = g[..., i]
        for k in range(i):
            v = v - L[..., i, k] * y[..., k]
        y[..., i] = v / L[..., i, i]
    x = np.zeros_like(g)
    for i in range(n - 1, -1, -1):
        v = y[..., i]
        for k in range(i + 1, n):
            v = v - L[..., k, i] * x[..., k]
        x[..., i] = v / L[..., i, i]
    return x
