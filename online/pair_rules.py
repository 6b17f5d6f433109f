"""Pair rules of the per-user learners: greedy (the top two utilities) and double Thompson sampling.

CODuel's rules under a mixture belief (greedy and the knowledge-gradient lookahead) run in compiled
kernels (``inference.kernels.belief``); their plain NumPy statement, the test oracle, is
``online.lookahead_reference``.
"""
from __future__ import annotations

import numpy as np


def greedy_pair(utilities: np.ndarray) -> tuple[int, int]:
    """Top two of `utilities` [K], best first; stable (lower index wins ties)."""
    order = np.argsort(-utilities, kind="stable")
    return int(order[0]), int(order[1])


def thompson_pair(mean: np.ndarray, cov: np.ndarray, Phi: np.ndarray, rng: np.random.Generator) -> tuple[int, int]:
    """Double Thompson sampling from N(mean [d], cov [d, d]) for features Phi [K, d]."""
    L = np.linalg.cholesky(cov + 1e-12 * np.eye(len(mean)))
    draws = mean + rng.standard_normal((2, len(mean))) @ L.T
    first = int(np.argmax(Phi @ draws[0]))
    u = Phi @ draws[1]
    u[first] = -np.inf
    return first, int(np.argmax(u))
