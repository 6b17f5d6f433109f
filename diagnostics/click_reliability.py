"""How reliable click predictions made before each click is revealed are (the word "calibration" is
kept for the simulator's calibration; "recalibration" is the rater map A).

For predictions p = P(first shown wins) and clicks y in {0, 1}: log loss (nats per click),
Brier score, and the reliability diagram (equal-width bins of p: mean prediction against
observed frequency, with a binomial standard error), summarised by the expected
calibration error (count-weighted mean |frequency - prediction| over bins).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from tdmodels.errors import InputError
from tdmodels.run_inputs import checked_count


def checked(p, y) -> tuple[np.ndarray, np.ndarray]:
    """(p, y) as float arrays of one shape, p in [0, 1] and y in {0, 1}, or one InputError naming which."""
    p, y = np.asarray(p), np.asarray(y)
    if p.dtype.kind not in "biuf" or y.dtype.kind not in "biuf":
        raise InputError(f"click predictions and clicks are numbers, got dtypes {p.dtype} and {y.dtype}")
    p, y = p.astype(float), y.astype(float)
    if p.shape != y.shape or p.size == 0:
        raise InputError(f"predictions {p.shape} and clicks {y.shape}: one prediction per click, at least one")
    if not (np.isfinite(p).all() and (p >= 0).all() and (p <= 1).all()):
        raise InputError("predicted click probabilities must lie in [0, 1] (a NaN is not a prediction)")
    if not ((y == 0) | (y == 1)).all():
        raise InputError(f"clicks must be 0 or 1, got {np.unique(y[(y != 0) & (y != 1)])[:5]}")
    return p, y


class Reliability(NamedTuple):
    """A reliability diagram: per bin of predicted probability, the mean prediction, the observed click frequency, its standard error and the count."""
    edges: np.ndarray        # [B + 1] bin edges on [0, 1]
    predicted: np.ndarray    # [B] mean prediction in the bin (nan if empty)
    observed: np.ndarray     # [B] click frequency in the bin (nan if empty)
    stderr: np.ndarray       # [B] binomial standard error of the frequency
    count: np.ndarray        # [B] clicks in the bin


def log_loss(p, y) -> float:
    """Mean negative log-likelihood of clicks y under predicted probabilities p (clipped to 1e-15)."""
    p, y = checked(p, y)
    p = np.clip(p, 1e-15, 1 - 1e-15)
    return float(-np.mean(y * np.log(p) + (1 - y) * np.log1p(-p)))


def brier(p, y) -> float:
    """Mean squared error of predicted probabilities p against clicks y."""
    p, y = checked(p, y)
    return float(np.mean((p - y) ** 2))


def reliability(p, y, bins: int = 10) -> Reliability:
    """Reliability diagram of predicted click probabilities p against clicks y (any equal shapes),
    in `bins` equal-width bins of p: mean prediction, observed frequency, its binomial standard
    error and the count per bin (NaN in empty bins)."""
    checked_count(bins, "bins", 1, 10**6)
    p, y = (np.ravel(a) for a in checked(p, y))
    edges = np.linspace(0.0, 1.0, bins + 1)
    idx = np.clip(np.digitize(p, edges[1:-1]), 0, bins - 1)
    count = np.bincount(idx, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        predicted = np.bincount(idx, p, bins) / count
        observed = np.bincount(idx, y, bins) / count
        stderr = np.sqrt(observed * (1 - observed) / count)
    return Reliability(edges, predicted, observed, stderr, count)


def expected_calibration_error(rel: Reliability) -> float:
    """Count-weighted mean |observed - predicted| over the non-empty bins of `rel`."""
    ok = rel.count > 0
    return float(np.sum(rel.count[ok] * np.abs(rel.observed[ok] - rel.predicted[ok])) / rel.count.sum())


def reliability_table(predictions: dict, y) -> dict:
    """{learner: {"log_loss", "brier", "ece", "clicks"}} for predictions {learner: p [N, S]}."""
    return {name: {"log_loss": log_loss(p, y), "brier": brier(p, y), "ece": expected_calibration_error(reliability(p, y)),
                   "clicks": int(np.size(y))} for name, p in predictions.items()}
