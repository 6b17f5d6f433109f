"""How much is a well-estimated population worth? Greedy pairs under a Gaussian prior fitted in hindsight.

The diagnostic behind the `low-rank` policy. Every student's theta is fitted in hindsight on all of the
world's questions and pairs (``inference.hindsight``, never available to a policy); one Gaussian is fitted
to those thetas, with a full covariance or a PPCA one of the given rank; each user then starts from it
and is shown greedy pairs, as `low-rank` does with a population it has to learn from the clicks. The
scores are paired with `low-rank` and CODuel over the seeds (common random numbers).

    python examples/oracle_population_prior.py --world dev --seeds 4
"""
# ruff: noqa: E402  (the kernel cache is configured before numba is imported)
from inference.kernel_cache import configure_kernel_cache

configure_kernel_cache()     # a script is an entry point: compiled kernels cached under their source digest

import argparse

import numpy as np

from diagnostics.stats import t_interval
from inference.gaussian_population import identified_basis, ppca_covariance
from inference.hindsight import fit_btl_hindsight
from online.learner import Learner
from online.policies import no_transfer as nt
from online.replay import play, prepare_run, replay
from online.verify import score_played
from tdmodels.rosters import open_world


def hindsight_population(world, rank=None):
    """Mean [d] and covariance [d, d] of the students' hindsight thetas; with a rank, PPCA within the
    directions that the world's pairs identify, as `low-rank` fits it."""
    probs, feats = world["probs"].values, world["features"].values
    theta = np.stack([fit_btl_hindsight(feats[None], probs[s][None])[0] for s in range(probs.shape[0])])
    cov = np.cov(theta.T) if len(theta) > 1 else np.zeros((theta.shape[1],) * 2)
    if rank is None:
        return theta.mean(axis=0), cov
    diffs = (feats[:, :, None] - feats[:, None]).reshape(-1, feats.shape[-1])
    Q = identified_basis(diffs.T @ diffs)
    return theta.mean(axis=0), Q @ ppca_covariance(Q.T @ cov @ Q, rank) @ Q.T


def fixed_prior_learner(mean, cov):
    """The no-transfer learner with its prior replaced by N(mean, cov), the same for every user."""
    def init(context):
        return nt.init(context.d, 1.0, context.S)._replace(mean=mean, cov=cov, prior_mean=mean, prior_cov=cov)

    return Learner(init, lambda state, rng: (nt.start_session(state), None),
                   lambda state, Phi, rng: nt.greedy_select(state, Phi), nt.update, lambda state: (state, None))


def score_with(world, seed, learner, arrivals):
    run = prepare_run(world, seed, "no-transfer", arrivals)._replace(learner=learner)
    played = play(run)
    return score_played(world, seed, arrivals, played.pairs, played.clicks, run.sched)["score"]


def main(args):
    world = open_world(args.world, allow_test=args.allow_test)
    seeds = range(args.seeds)
    scores = {"coduel": [replay(world, s, "coduel", arrivals=args.arrivals)["score"] for s in seeds],
              "low-rank": [replay(world, s, "low-rank", arrivals=args.arrivals)["score"] for s in seeds]}
    for label, rank in (("hindsight, full", None), (f"hindsight, rank {args.rank}", args.rank)):
        mean, cov = hindsight_population(world, rank)
        cov = cov + 1e-9 * np.eye(len(mean))          # a population of one student has no spread
        scores[label] = [score_with(world, s, fixed_prior_learner(mean, cov), args.arrivals) for s in seeds]
    for label, sc in scores.items():
        m, h = t_interval(sc)
        line = f"{label:18s} score {m:5.1f} ± {h:.1f}"
        if label != "coduel" and len(sc) > 1:
            dm, dh = t_interval(np.subtract(sc, scores["coduel"]))
            line += f"   minus CODuel {dm:+5.1f} ± {dh:.1f}"
        print(line + f"   (95%, {len(sc)} seeds)")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--world", default="dev")
    p.add_argument("--seeds", type=int, default=4)
    p.add_argument("--arrivals", type=int, default=None)
    p.add_argument("--rank", type=int, default=2)
    p.add_argument("--allow-test", action="store_true", help="allow held-out rosters (evaluation only)")
    main(p.parse_args())
