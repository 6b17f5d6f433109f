"""Pair rules for strong regret under a mixture belief: greedy, and the knowledge-gradient lookahead.

Strong regret of showing (i, j) is 2 max_p u_p - u_i - u_j. Under a belief, its expectation
is 2 E[max u] - mu_i - mu_j with mu the belief-averaged utilities, so the greedy pair is the
top two of mu, and the smallest expected regret on a question is 2 E[max u] - top2(mu).

Lookahead (knowledge gradient): score a pair by its expected regret now plus the expected
regret of greedy play over the `remaining` rounds after its click, each future question
drawn from a bank of recent questions. After the click the belief is b'(y); since beliefs
are martingales, E_y E_b'[max u] = E_b[max u] and the max terms are the same for every
pair, so the rule is

    argmin_(i,j)  -(mu_i + mu_j) - remaining * mean_q E_y[ top2(mu'_q(y)) ],

with y ~ the belief's predictive for the pair. Unordered pairs suffice (the click model
is symmetric in display order); the better-looking persona is shown first.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np

from online.mixture_belief import MixtureBelief, expected_utilities, update_belief
from online.policies.no_transfer import greedy_pair


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
    scores = {}
    for i, j in combinations(range(Phi.shape[0]), 2):
        now = -(mu[i] + mu[j])
        if remaining <= 0 or len(bank) == 0:
            scores[(i, j)] = now
            continue
        z = Phi[i] - Phi[j]
        b1, lp1 = update_belief(belief, z, 1)
        b0, _ = update_belief(belief, z, 0)
        p1 = np.exp(lp1)
        fut = 0.0
        for b, p in ((b1, p1), (b0, 1.0 - p1)):
            m = np.exp(b.log_w) @ b.means                   # [d] belief-averaged theta after the click
            fut += p * float(np.mean(top2_sum(bank @ m)))
        scores[(i, j)] = now - remaining * fut
    return scores


def lookahead_pair(belief: MixtureBelief, Phi: np.ndarray, bank: np.ndarray, remaining: int) -> tuple[int, int]:
    """The pair minimising the lookahead score, displayed best first; ties go to the earlier pair."""
    scores = lookahead_scores(belief, Phi, bank, remaining)
    best = min(scores, key=lambda k: (scores[k], k))
    return ordered(*best, expected_utilities(belief, Phi))
