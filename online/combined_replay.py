"""The combined mode: a TutorDuel replay in which a policy may spend a round asking the student
one direct question instead of showing a pair.

Protocol addition (optional): ``ask(Phi) -> k or None`` is called before ``select`` each round;
for a persona index k the runner calls ``answer(k, value)`` instead of ``select``/``update``.
The simulated student answers c_k . theta* + N(0, answer_noise^2), theta* the student's
hindsight BTL fit on this session's questions (the best linear summary of their own
preferences, as the per-user linear oracle uses) and c_k persona k's indicator minus the mean
indicator (``online.direct_questions``). An asked round shows the student no chosen pair: it
is charged the expected regret of a uniformly random pair on that question. Policies without
``ask`` play exactly as in ``online.replay`` (same schedule, same click draws).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from inference.hindsight import fit_btl_hindsight
from online.direct_questions import persona_contrast
from online.replay import play, prepare_run
from online.scoring import benchmark_score, floor_regret, random_regret, strong_regret
from tdmodels.bradley_terry import order_averaged
from tdmodels.errors import InputError

ANSWER_STREAM = 7
MAX_ANSWER_NOISE = 100.0       # sd of a stated answer, logits


def student_thetas(world: xr.Dataset, sched) -> np.ndarray:
    """theta* [N, d]: each arrival's hindsight BTL fit on its session's questions."""
    Phi = world["features"].values[sched.question]
    P = world["probs"].values[sched.student[:, None], sched.question]
    return fit_btl_hindsight(Phi, order_averaged(P))


def replay_combined(world: xr.Dataset, seed: int, spec: str, arrivals: int | None = None,
                    answer_noise: float = 0.5) -> dict:
    """One run; returns score, regrets, the persona asked about per round (-1: a pair was shown)
    and the stated answers [N, S] (NaN where none)."""
    if isinstance(answer_noise, bool) or not isinstance(answer_noise, (int, float, np.integer, np.floating)) \
            or not 0 <= answer_noise <= MAX_ANSWER_NOISE:
        raise InputError(f"answer_noise {answer_noise!r}: must be a number in [0, {MAX_ANSWER_NOISE:g}] (logits)")
    run = prepare_run(world, seed, spec, arrivals)
    spec, sched, U = run.spec.canonical, run.sched, run.U
    N = sched.question.shape[0]
    K, d = run.feats.shape[-2:]
    theta = student_thetas(world, sched)
    answer_rng = np.random.default_rng(np.random.SeedSequence([int(seed), ANSWER_STREAM]))

    def answer(a, k):
        return persona_contrast(K, d, k) @ theta[a] + answer_noise * answer_rng.standard_normal()

    played = play(run, answer)
    pairs, asked, answers, wall = played.pairs, played.asked, played.answers, played.wall_s
    Rr, G = random_regret(U), floor_regret(U)
    r = np.where(asked >= 0, Rr, strong_regret(U, pairs[..., 0], pairs[..., 1]))
    R_sum, G_sum, Rr_sum = float(r.sum()), float(G.sum()), float(Rr.sum())
    return {"world": str(world.attrs["roster"]), "seed": int(seed), "policy": spec, "arrivals": N,
            "answer_noise": answer_noise, "regret": R_sum, "floor": G_sum, "random": Rr_sum,
            "excess": R_sum - G_sum, "score": float(benchmark_score(R_sum, G_sum, Rr_sum)),
            "asked_per_user": (asked >= 0).sum(1), "asked": asked, "answers": answers, "per_user_excess": (r - G).sum(1), "wall_s": wall}
