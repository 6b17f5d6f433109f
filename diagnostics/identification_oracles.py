"""What identifying the student is worth: two oracle replays that read the world's hidden student ids.

Both keep, for every student, the Laplace posterior of all clicks seen in that student's earlier
sessions, pooled (prior N(0, prior_var I); ``inference.laplace.laplace_fit``), and play one
session per arrival with the one-click Laplace updates of ``inference.mixture_belief``:

- the *clustering* oracle knows which earlier sessions belong to the same student, not who the
  current user is: the user's prior is the mixture of the students' pooled posteriors seen so far,
  weighted by their session counts, with a broad N(0, prior_var I) component at weight
  `alpha / (alpha + n)`. It bounds what a perfect clustering of past sessions gives; its posterior
  weight on the right student after t clicks says how fast a user can be identified;
- the *identity* oracle also knows who the user is: the prior is that student's pooled posterior
  alone (the broad prior on a first visit).

Pairs are greedy (the top two belief-averaged utilities) or double Thompson sampling from the
mixture. Not policies (they read what no policy may); the figures bound the identification route
of issue 18.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from inference.laplace import laplace_fit
from inference.mixture_belief import MixtureBelief, expected_utilities, update_belief
from online.replay import prepare_run
from online.scoring import benchmark_score, floor_regret, random_regret, strong_regret
from tdmodels.priors import DEFAULT_PRIOR_VAR

RULES = ("greedy", "thompson")
ORACLES = ("clustering", "identity")


class OracleRun(NamedTuple):
    """One oracle replay."""
    score: float
    per_round: np.ndarray        # [S] score of each round's summed regret
    identified: np.ndarray       # [S] share of returning users whose heaviest component after t + 1 clicks is their own student (clustering oracle; NaN for identity)


def _pair(belief: MixtureBelief, Phi: np.ndarray, rule: str, rng: np.random.Generator) -> tuple[int, int]:
    if rule == "greedy":
        order = np.argsort(-expected_utilities(belief, Phi), kind="stable")
        return int(order[0]), int(order[1])
    w = np.exp(belief.log_w - belief.log_w.max())
    draws = []
    for _ in range(2):
        k = rng.choice(len(w), p=w / w.sum())
        L = np.linalg.cholesky(belief.covs[k] + 1e-10 * np.eye(belief.means.shape[1]))
        draws.append(belief.means[k] + L @ rng.standard_normal(belief.means.shape[1]))
    first = int(np.argmax(Phi @ draws[0]))
    u = Phi @ draws[1]
    u[first] = -np.inf
    return first, int(np.argmax(u))


def oracle_replay(world, seed: int, oracle: str = "clustering", rule: str = "greedy", arrivals: int | None = None,
                  alpha: float = 1.0, prior_var: float = DEFAULT_PRIOR_VAR) -> OracleRun:
    """Replay one oracle on (world, seed) under the benchmark's common random numbers.

    Parameters
    ----------
    world : xarray.Dataset
        A world with its `probs` and utilities (the oracle reads the schedule's student ids).
    seed : int
        The run's seed: the same arrivals, questions and click draws as every policy's run.
    oracle : {"clustering", "identity"}
    rule : {"greedy", "thompson"}
    arrivals : int, optional
        Only the first `arrivals`.
    alpha, prior_var : float
        The broad component's weight alpha / (alpha + n) and variance (clustering oracle).

    Returns
    -------
    OracleRun
    """
    if oracle not in ORACLES or rule not in RULES:
        raise ValueError(f"oracle must be one of {ORACLES} and rule one of {RULES}, got {oracle!r}, {rule!r}")
    run = prepare_run(world, seed, "random", arrivals)
    sched, feats, probs, U = run.sched, run.feats, run.probs, run.U
    N, S = sched.question.shape
    d = feats.shape[-1]
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 18]))
    broad = (np.zeros(d), prior_var * np.eye(d))
    clicks, fits = {}, {}
    pairs = np.zeros((N, S, 2), dtype=np.int64)
    hits, returning = np.zeros(S), 0
    for n in range(N):
        s = int(sched.student[n])
        keys = list(fits)
        if oracle == "identity":
            m, C = fits.get(s, broad)
            belief = MixtureBelief(np.zeros(1), m[None], C[None])
        else:
            w = np.array([len(clicks[k][1]) / S for k in keys] + [alpha])
            belief = MixtureBelief(np.log(w / w.sum()), np.array([fits[k][0] for k in keys] + [broad[0]]),
                                   np.array([fits[k][1] for k in keys] + [broad[1]]))
        own = keys.index(s) if (oracle == "clustering" and s in fits) else None
        returning += own is not None
        Z, y = [], []
        for t in range(S):
            q = sched.question[n, t]
            i, j = _pair(belief, feats[q], rule, rng)
            click = int(sched.uniform[n, t] < probs[s, q, i, j])
            belief, _ = update_belief(belief, feats[q][i] - feats[q][j], click)
            pairs[n, t] = i, j
            Z.append(feats[q][i] - feats[q][j])
            y.append(click)
            if own is not None:
                hits[t] += int(np.argmax(belief.log_w)) == own
        Zs, ys = clicks.get(s, (np.zeros((0, d)), np.zeros(0)))
        clicks[s] = (np.vstack([Zs, Z]), np.r_[ys, y])
        fits[s] = laplace_fit(broad[0], broad[1], *clicks[s])
    r = strong_regret(U, pairs[..., 0], pairs[..., 1])
    G, Rr = floor_regret(U), random_regret(U)
    per_round = 100 * (Rr.sum(0) - r.sum(0)) / (Rr.sum(0) - G.sum(0))
    identified = hits / returning if returning else np.full(S, np.nan)
    if oracle == "identity":
        identified = np.full(S, np.nan)
    return OracleRun(float(benchmark_score(r.sum(), G.sum(), Rr.sum())), per_round, identified)


__all__ = ["oracle_replay", "OracleRun", "ORACLES", "RULES"]
