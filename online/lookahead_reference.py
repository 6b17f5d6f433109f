"""The NumPy reference of CODuel's pair rules: the test oracle of the compiled kernels, run by no policy.

Pair rules for strong regret under a mixture belief: greedy, and the knowledge-gradient lookahead.

Strong regret of showing (i, j) is 2 max_p u_p - u_i - u_j. Under a belief, its expectation
is 2 E[max u] - mu_i - mu_j with mu the belief-averaged utilities, so the greedy pair is the
top two of mu, and the smallest expected regret on a question is 2 E[max u] - top2(mu).

Lookahead (knowledge gradient): score a pair by its expected regret now plus the expected
regret of greedy play over the `remaining` rounds after its click, each future question
drawn from a bank of recent questions (a one-step lookahead: the belief after this click
is the one greedy play uses for the rest of the session). After the click the belief is
b'(y) with mean utilities mu'_q(y) on bank question q; the E[max u] terms are the same for
every pair (beliefs are martingales), so the rule is

    argmin_(i,j)  -(mu_i + mu_j) - remaining * mean_q KG_q,
    KG_q = E_y[ top2(mu'_q(y)) ] - top2(E_y[ mu'_q(y) ]),

with y ~ the belief's predictive for the pair. For an exact belief E_y mu'_q(y) = mu_q and
the subtracted term is the same for every pair; our Laplace/probit update is a martingale
only approximately, and multiplied by `remaining` its drift (measured 0.02-0.09 per click
on dev) outweighed the information value, so the subtraction is our choice: KG_q is then
the convexity gain of top2 alone, >= 0. Unordered pairs suffice (the click model is
symmetric in display order); the better-looking persona is shown first. Components under
exp(-PRUNE_NATS) of the heaviest weight are left out of the future term (their share of
the mean is below 1e-8 of it); ``inference.kernels.lookahead_scores`` is the implementation CODuel runs; this
module states the rule plainly, and the tests check the kernels against it.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

from inference.constants import LOOKAHEAD_RTOL, PRUNE_NATS
from inference.mixture_belief import MixtureBelief, expected_utilities
from inference.reference import update_belief_reference
from online.pair_rules import greedy_pair


def top2_sum(u: np.ndarray) -> np.ndarray:
    """Sum of the two largest entries along the last axis."""
    part = np.partition(u, -2, axis=-1)
    return part[..., -1] + part[..., -2]


def ordered(i: int, j: int, mu: np.ndarray) -> tuple[int, int]:
    """Show the persona with the larger mean utility first (the lower index on ties)."""
    return (i, j) if (mu[i], -i) >= (mu[j], -j) else (j, i)


def mixture_greedy_pair(belief: MixtureBelief, Phi: np.ndarray) -> tuple[int, int]:
    """Greedy pair under a mixture belief: the top two belief-averaged utilities, best first."""
    return greedy_pair(expected_utilities(belief, Phi))


def lookahead_scores(belief: MixtureBelief, Phi: np.ndarray, bank: np.ndarray, remaining: int) -> dict:
    """Knowledge-gradient score of every unordered pair {i, j} (lower is better); bank [B, K, d]."""
    mu = expected_utilities(belief, Phi)
    keep = belief.log_w >= belief.log_w.max() - PRUNE_NATS
    sub = MixtureBelief(*(x[keep] for x in belief))
    scores = {}
    for i, j in combinations(range(Phi.shape[0]), 2):
        now = -(mu[i] + mu[j])
        if remaining <= 0 or len(bank) == 0:
            scores[(i, j)] = now
            continue
        z = Phi[i] - Phi[j]
        b1, lp1 = update_belief_reference(sub, z, 1, LOOKAHEAD_RTOL)
        b0, _ = update_belief_reference(sub, z, 0, LOOKAHEAD_RTOL)
        p1 = np.exp(lp1)
        u1 = bank @ (np.exp(b1.log_w) @ b1.means)          # [B, K] utilities after a click for i
        u0 = bank @ (np.exp(b0.log_w) @ b0.means)
        fut = float(np.mean(p1 * top2_sum(u1) + (1.0 - p1) * top2_sum(u0) - top2_sum(p1 * u1 + (1.0 - p1) * u0)))
        scores[(i, j)] = now - remaining * fut
    return scores


def lookahead_pair(belief: MixtureBelief, Phi: np.ndarray, bank: np.ndarray, remaining: int) -> tuple[int, int]:
    """The pair minimising the lookahead score, displayed best first; ties go to the earlier pair."""
    scores = lookahead_scores(belief, Phi, bank, remaining)
    best = min(scores, key=lambda k: (scores[k], k))
    return ordered(*best, expected_utilities(belief, Phi))
