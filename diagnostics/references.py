"""Reference rows computed from the world in hindsight (never available to a policy).

Per arrival of one (world, seed):
- floor: the best distinct pair on every question (regret G);
- random: the exact expectation over the 15 pairs;
- best fixed pair per user: the one pair with the least summed regret over that session;
- best fixed pair for everyone: one pair for the whole run (tells whether pooling hurts);
- per-user linear oracle: a theta per user chosen in hindsight on the features, then the
  top two of theta . phi on every question. Two hindsight fits are tried per user, the
  Bradley-Terry MLE on all 15 order-averaged judge probabilities of its 24 questions and
  least squares of U on Phi (per-question centred); the one with less regret is kept.
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from inference.hindsight import fit_btl_hindsight, fit_ls_hindsight
from online.schedule import Schedule, make_schedule, session_utilities
from online.scoring import floor_regret, pair_regrets, random_regret, strong_regret
from tdmodels import ties
from tdmodels.bradley_terry import order_averaged
from tdmodels.run_inputs import check_pair_memory, checked_arrivals, checked_seed, checked_world

REFERENCES = ("floor", "random", "best-fixed-pair", "best-pair-everyone", "linear-oracle")


def _session_arrays(world: xr.Dataset, sched: Schedule):
    Phi = world["features"].values[sched.question]                            # [N, S, K, d]
    P = world["probs"].values[sched.student[:, None], sched.question]         # [N, S, K, K]
    return Phi, P, session_utilities(world, sched)


def top2_regret(theta: np.ndarray, Phi: np.ndarray, U: np.ndarray) -> np.ndarray:
    """Regret [N, S] of showing the two personas with the largest theta . phi (ties by ``tdmodels.ties``)."""
    first, second = ties.top_two(np.einsum("nskd,nd->nsk", Phi, theta))
    return strong_regret(U, first, second)


def reference_regrets(world: xr.Dataset, seed: int, arrivals: int | None = None) -> dict[str, np.ndarray]:
    """Per-round regret [N, S] of every reference for one (world, seed)."""
    world, seed, arrivals = checked_world(world), checked_seed(seed), checked_arrivals(arrivals)
    sched = make_schedule(world, seed, arrivals)
    check_pair_memory(world, len(sched.student), "the reference rows")
    Phi, P, U = _session_arrays(world, sched)
    K = U.shape[-1]
    pr = pair_regrets(U)                                                   # [N, S, K, K]
    iu, ju = np.triu_indices(K, 1)
    per_pair = pr[..., iu, ju]                                             # [N, S, 15]
    best_user = ties.argmin(per_pair.sum(axis=1))                          # [N]
    best_all = int(ties.argmin(per_pair.sum(axis=(0, 1))))
    r_btl = top2_regret(fit_btl_hindsight(Phi, order_averaged(P)), Phi, U)
    r_ls = top2_regret(fit_ls_hindsight(Phi, U), Phi, U)
    use_btl = ties.argmin(np.stack([r_btl.sum(axis=1), r_ls.sum(axis=1)], -1)) == 0   # the better fit, BTL on a tie
    return {
        "floor": floor_regret(U),
        "random": random_regret(U),
        "best-fixed-pair": np.take_along_axis(per_pair, best_user[:, None, None], axis=-1)[..., 0],
        "best-pair-everyone": per_pair[..., best_all],
        "linear-oracle": np.where(use_btl[:, None], r_btl, r_ls),
    }


def _pair_totals(world: xr.Dataset, seed: int) -> tuple[np.ndarray, float, float]:
    """(summed regret of each of the K(K-1)/2 unordered pairs shown on every question [pairs], the floor G,
    random pairs' regret) of one (world, seed)'s full run."""
    world, seed = checked_world(world), checked_seed(seed)
    sched = make_schedule(world, seed)
    check_pair_memory(world, len(sched.student), "the fixed pairs")
    U = session_utilities(world, sched)
    K = U.shape[-1]
    iu, ju = np.triu_indices(K, 1)
    return pair_regrets(U)[..., iu, ju].sum(axis=(0, 1)), float(floor_regret(U).sum()), float(random_regret(U).sum())


def hindsight_pair(world: xr.Dataset, seeds) -> tuple[int, int]:
    """The one pair (i < j) with the least regret summed over every question of every seed's run: the best fixed
    pair for everyone, in hindsight over `seeds` together."""
    totals = sum(_pair_totals(world, s)[0] for s in seeds)
    iu, ju = np.triu_indices(world.sizes["persona"], 1)
    k = int(ties.argmin(totals))
    return int(iu[k]), int(ju[k])


def fixed_pair_scores(world: xr.Dataset, pair: tuple[int, int], seeds) -> np.ndarray:
    """[seeds] the score of showing `pair` on every question of each seed's run (e.g. a pair chosen on another
    roster: the reference's "best fixed pair" row may be dev's, applied to every roster)."""
    from online.scoring import benchmark_score

    i, j = sorted(int(p) for p in pair)
    K = world.sizes["persona"]
    if not 0 <= i < j < K:
        raise ValueError(f"pair {pair!r}: two distinct persona indices in [0, {K})")
    k = [(a, b) for a, b in zip(*np.triu_indices(K, 1))].index((i, j))
    out = []
    for s in seeds:
        totals, G, Rr = _pair_totals(world, s)
        out.append(float(benchmark_score(totals[k], G, Rr)))
    return np.asarray(out)
