"""CoLSTIM (Bengs, Saha, Huellermeier, ICML 2022), each user alone.

Linear stochastic transitivity with the logistic link. Per user: theta_hat, the ridge
logistic MLE of the clicks so far (``inference.estimators.ridge_logistic``, its kernel called directly), and
M = lam I + sum z z^T over the user's design rows z = x_first - x_second.

    first  = argmax_i  theta_hat . x_i + eps_i ||x_i||_{M^-1},  eps_i ~ Gumbel clipped to [-C, C]
    second = argmax_{j != first}  theta_hat . (x_j - x_first) + c ||x_j - x_first||_{M^-1}

with C = c = sqrt(d ln T), T = the session length (24 rounds, d = 7: 4.72). The original's
forced exploration (tau = d K random rounds) is left out: it would fill most of a 24-round
session (ours, as in COMPETITORS.md). The leaderboard runs the settings chosen on dev (``tutorduel tune``).
"""
from __future__ import annotations

from typing import Annotated, NamedTuple

import numpy as np

from inference.constants import RIDGE_LOGISTIC_ITERS, RIDGE_LOGISTIC_TOL
from inference.kernels.ridge_logistic import ridge_logistic_mode
from online.learner import Learner, no_session_info
from online.setting_range import MIN_POSITIVE, Range, Search, ranged

RIDGE = 1.0


class CoLSTIMState(NamedTuple):
    """The current user's ridge logistic estimate, its design matrix and clicks so far."""
    theta: np.ndarray     # [d] ridge logistic MLE of the current user
    M: np.ndarray         # [d, d] lam I + sum z z^T
    Z: np.ndarray         # [S, d] the current user's design rows, the first n filled
    y: np.ndarray         # [S] their clicks
    n: int                # clicks of the current user so far


def init(d: int, S: int, lam: float = RIDGE) -> CoLSTIMState:
    """A user with no clicks: theta 0, M = lam I, empty [S, d] buffers."""
    return CoLSTIMState(np.zeros(d), lam * np.eye(d), np.zeros((S, d)), np.zeros(S), 0)


def start_session(state: CoLSTIMState, lam: float = RIDGE) -> CoLSTIMState:
    """Forget the previous user (CoLSTIM learns each user alone)."""
    return init(*state.Z.shape[::-1], lam)


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
    """Add the click (design z, y) and refit the ridge logistic estimate, warm-started at the last."""
    n = state.n + 1
    Z, Y = state.Z.copy(), state.y.copy()
    Z[n - 1], Y[n - 1] = z, float(y)
    theta = ridge_logistic_mode(Z[:n], Y[:n], float(lam), state.theta, RIDGE_LOGISTIC_ITERS, RIDGE_LOGISTIC_TOL)[0]
    return state._replace(theta=theta, M=state.M + np.outer(z, z), Z=Z, y=Y, n=n)


@ranged
def colstim(lam: Annotated[float, Range(MIN_POSITIVE, 1e6), Search(0.1, 10, log=True)] = RIDGE,
            c: Annotated[float, Range(0, 1e3), Search(0, 10)] | None = None) -> Learner:
    """Per-user CoLSTIM.

    Parameters
    ----------
    lam : float
        Ridge of the logistic MLE, in (0, 1e6] (default 1.0).
    c : float, optional
        Confidence width and Gumbel clip, in [0, 1000] (default sqrt(d ln S)).
    """
    lam = float(lam)

    def width(context_d: int, S: int) -> float:
        return float(c) if c is not None else float(np.sqrt(context_d * np.log(S)))

    def pick(state, Phi, rng):
        w = width(state.Z.shape[1], state.Z.shape[0])
        eps = np.clip(rng.gumbel(size=len(Phi)), -w, w)
        return select(state, Phi, eps, w), None

    return Learner(lambda context: init(context.d, context.S, lam), lambda state, rng: (start_session(state, lam), None),
                   pick, lambda state, Phi, pair, y: (update(state, Phi[pair[0]] - Phi[pair[1]], y, lam), None),
                   no_session_info)
