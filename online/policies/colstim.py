"""CoLSTIM (Bengs, Saha, Huellermeier, ICML 2022), each user alone.

Linear stochastic transitivity with the logistic link. Per user: theta_hat, the ridge
logistic MLE of the clicks so far (``inference.estimators.ridge_logistic``), and
M = lam I + sum z z^T over the user's design rows z = x_first - x_second.

    first  = argmax_i  theta_hat . x_i + eps_i ||x_i||_{M^-1},  eps_i ~ Gumbel clipped to [-C, C]
    second = argmax_{j != first}  theta_hat . (x_j - x_first) + c ||x_j - x_first||_{M^-1}

with C = c = sqrt(d ln T), T = the session length (24 rounds, d = 7: 4.72). The original's
forced exploration (tau = d K random rounds) is left out: it would fill most of a 24-round
session (ours, as in COMPETITORS.md).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.estimators import ridge_logistic
from online.protocol import Policy

RIDGE = 1.0


class CoLSTIMState(NamedTuple):
    theta: np.ndarray     # [d] ridge logistic MLE of the current user
    M: np.ndarray         # [d, d] lam I + sum z z^T
    Z: np.ndarray         # [n, d] the current user's design rows
    y: np.ndarray         # [n] their clicks


def init(d: int, lam: float = RIDGE) -> CoLSTIMState:
    return CoLSTIMState(np.zeros(d), lam * np.eye(d), np.zeros((0, d)), np.zeros(0))


def start_session(state: CoLSTIMState, lam: float = RIDGE) -> CoLSTIMState:
    return init(len(state.theta), lam)


def select(state: CoLSTIMState, Phi: np.ndarray, eps: np.ndarray, c: float) -> tuple[int, int]:
    """The pair for features Phi [K, d] given the clipped Gumbel draws eps [K] and width c."""
    Minv = np.linalg.inv(state.M)
    u = Phi @ state.theta
    width = np.sqrt(np.maximum(np.einsum("kd,de,ke->k", Phi, Minv, Phi), 0.0))
    first = int(np.argmax(u + eps * width))
    D = Phi - Phi[first]
    score = u - u[first] + c * np.sqrt(np.maximum(np.einsum("kd,de,ke->k", D, Minv, D), 0.0))
    score[first] = -np.inf
    return first, int(np.argmax(score))


def update(state: CoLSTIMState, z: np.ndarray, y: int, lam: float = RIDGE) -> CoLSTIMState:
    Z, Y = np.vstack([state.Z, z]), np.append(state.y, float(y))
    return CoLSTIMState(ridge_logistic(Z, Y, lam, init=state.theta), state.M + np.outer(z, z), Z, Y)


class CoLSTIM(Policy):
    """Per-user CoLSTIM. Settings: lam (ridge, default 1.0), c (confidence width and Gumbel clip;
    default sqrt(d ln S))."""

    name = "colstim"

    def __init__(self, lam: float = RIDGE, c: float | None = None):
        if not lam > 0:
            raise ValueError(f"lam must be positive, got {lam!r}")
        if c is not None and not c >= 0:
            raise ValueError(f"c must be non-negative, got {c!r}")
        self.lam, self.c_setting = float(lam), c

    def reset(self, rng, context):
        super().reset(rng, context)
        self.c = float(self.c_setting) if self.c_setting is not None else float(np.sqrt(context["d"] * np.log(context["S"])))
        self.state = init(context["d"], self.lam)

    def start_student(self):
        self.state = start_session(self.state, self.lam)

    def select(self, Phi):
        eps = np.clip(self.rng.gumbel(size=len(Phi)), -self.c, self.c)
        i, j = select(self.state, Phi, eps, self.c)
        self._z = Phi[i] - Phi[j]
        return i, j

    def update(self, outcome):
        self.state = update(self.state, self._z, outcome, self.lam)
