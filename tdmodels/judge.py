"""The simulated judge and the rater.

Judge: for an ordered pair (a shown first, b second) the role-playing judge makes 4
sampled picks under each of 2 label assignments; each assignment gives a smoothed
log-odds log((k + 1/2) / (n - k + 1/2)); the two are averaged and mapped back with the
logistic function. With n = 4 the extremes are exactly 0.1 and 0.9, the clip bounds of
the reference judge, and order-averaging two such values gives the 41-value lattice seen
in the reference's real sample. Each pick follows
sigmoid(v_a - v_b + order_bias +/- label_bias) on the student's latent logits v.

Rater: scores how well each persona suits a question from its kind and cue alone, with
its own per-attribute and per-persona weighting (unlike any student), so g(p, q) is an
informative but distorted feature and a linear recalibration A g(q) can help.
"""
from __future__ import annotations

import numpy as np

from .catalog import ATTRIBUTES, PERSONA_STYLE, vec
from .portable_math import dot, expit, log, standardise

PICKS_PER_LABEL = 4
SMOOTH = 0.5
ORDER_BIAS = 0.25          # logits in favour of the answer shown first
RATER_ATTRIBUTE_WEIGHT = vec(rigor=1.4, examples=1.0, dialogue=0.6, intuition=0.9, brevity=1.2, structure=1.0, warmth=0.4)
RATER_PERSONA_GAIN = np.array([1.3, 1.0, 0.6, 0.9, 1.3, 0.7])
RATER_PERSONA_BIAS = np.array([0.25, 0.1, -0.3, 0.0, 0.3, -0.15])
RATER_NOISE = 0.15


def smoothed_log_odds(k, n=PICKS_PER_LABEL, smooth=SMOOTH):
    """log((k + smooth) / (n - k + smooth)): the judge's smoothed log odds of k picks out of n."""
    return log((k + smooth) / (n - k + smooth))


def judge_probs(v: np.ndarray, rng: np.random.Generator, label_bias: float = 0.0,
                order_bias: float = ORDER_BIAS) -> np.ndarray:
    """Order-aware P(first wins) [..., K, K] from latent logits v [..., K], by simulated picks.

    The diagonal is set to 0.5 (unused).
    """
    K = v.shape[-1]
    diff = v[..., :, None] - v[..., None, :] + order_bias          # [..., first, second]
    lo = 0.0
    for sign in (+1.0, -1.0):                                      # two label assignments
        k = rng.binomial(PICKS_PER_LABEL, expit(diff + sign * label_bias))
        lo = lo + smoothed_log_odds(k) / 2.0
    P = expit(lo)
    P[..., np.arange(K), np.arange(K)] = 0.5
    return P


def rater_scores(demand: np.ndarray, rng: np.random.Generator, style: np.ndarray = PERSONA_STYLE,
                 noise: float = RATER_NOISE) -> np.ndarray:
    """g(p, q) [n_q, K]: the rater's suitability scores, centred over personas, unit sd."""
    raw = dot(demand[:, None, :], style[None, :, :] * RATER_ATTRIBUTE_WEIGHT) * RATER_PERSONA_GAIN
    raw = raw + RATER_PERSONA_BIAS + noise * rng.standard_normal(raw.shape)
    return standardise(raw)


assert len(RATER_ATTRIBUTE_WEIGHT) == len(ATTRIBUTES)
