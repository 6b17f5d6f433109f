"""The exact reference for the population model: a collapsed Gibbs sampler with split-merge moves.

The target is the posterior of ``tdmodels.population_model.population`` (truncated stick-breaking,
Normal-inverse-Wishart components, a broad component, users' theta seen through their BTL clicks),
with each user's component made explicit (c_u) and each learned component's mean and covariance
integrated out in closed form. One sweep (``inference.kernels.population_gibbs``):

1. for every user, a joint Metropolis-Hastings move on (c_u, theta_u) given everything else: a
   proposal built from a Laplace fit under every component (an independence sampler on the user's
   conditional, which moves theta_u and its component together, so a user changes component
   without first moving theta_u towards it);
2. split-merge moves between learned components (sequentially allocated, Dahl 2003), with the
   stick fractions integrated out, so clusters split and merge in one step;
3. label moves that swap two learned components' labels (the stick-breaking prior is not
   exchangeable, so labellings differ in probability);
4. the stick fractions v from their Beta conditional; every component's mean and covariance
   from their Normal-inverse-Wishart conditional when the sweep is stored.

Every move leaves the posterior invariant (tests check each conditional against the NumPyro
model's density), and there is nothing to adapt, so warm-up is burn-in only. Chains start from
different partitions (one component, every user alone in its own, all broad, random), so R-hat
across them sees a chain stuck in one partition.
"""
from __future__ import annotations

import time

from typing import NamedTuple

import arviz as az
import numpy as np
import xarray as xr

from inference.kernels.population_gibbs import (ChainState, Clicks, Moves, MoveCounts, Target, move_counts,
                                                no_draws, run_sweeps)
from tdmodels.errors import InputError
from tdmodels.population_model import PopulationHyper
from tdmodels.prior_distributions import stick_breaking

DEFAULT_CHAINS = 4
DEFAULT_WARMUP = 2000
DEFAULT_DRAWS = 2000
PROPOSAL_DF = 30.0           # the users' move's t proposal: degrees of freedom (capped by the component's)
REFINE_NATS = -1.0           # Newton-refine users' proposals under components within this of the best (< 0: none)
NEWTON_ITERS = 50
SPLIT_MERGE_PER_USER = 0.05  # split-merge attempts per sweep, per user
TRANSLATION_NEWTON = 2       # Newton steps refining a component translation's proposal
DILATE_STEP = 0.1            # a component's dilation about the origin: sd of log s
LABEL_SWAPS = 32             # label-swap attempts per sweep
RW_SCALE = 2.4               # users' random-walk step within their component: N(0, RW_SCALE^2 H^-1 / d)
RESTART_RHAT = 1.02          # rounds: chains this far apart, with ESS enough, start their kept draws anew
PAIR_BANDWIDTH = 1.0         # split-merge: half the pairs are neighbours in theta by a kernel of this width
SCALE_STEP = 1.0             # a component's scaling move: sd of log s times sqrt((n - 1) d)


class GibbsSettings(NamedTuple):
    """How the sampler moves (not what it targets): see the module docstring."""
    proposal_df: float = PROPOSAL_DF
    refine_nats: float = REFINE_NATS
    newton_iters: int = NEWTON_ITERS
    split_merge_per_user: float = SPLIT_MERGE_PER_USER
    label_swaps: int = LABEL_SWAPS
    scale_step: float = SCALE_STEP
    translation_newton: int = TRANSLATION_NEWTON
    dilate_step: float = DILATE_STEP
    rw_scale: float = RW_SCALE
    pair_bandwidth: float = PAIR_BANDWIDTH


STAT_NAMES = MoveCounts._fields


class Chain(NamedTuple):
    """One chain's stored draws and per-draw move counts."""
    theta: np.ndarray        # [D, U, d]
    assignment: np.ndarray   # [D, U]
    v: np.ndarray            # [D, K]
    mu: np.ndarray           # [D, K, d]
    cov_chol: np.ndarray     # [D, K, d, d]
    stats: np.ndarray        # [D, len(STAT_NAMES)] summed over the thinning interval
    warmup_stats: np.ndarray  # [len(STAT_NAMES)] summed over warm-up
    seconds: float
    state: ChainState        # where the chain stands after its last sweep


def broad_fits(z, y, broad_var: float):
    """Each user's Laplace fit under the broad prior and the Gaussian likelihood surrogate read off it:
    (modes [U, d], covs [U, d, d], (precision, linear, constant))."""
    from inference.kernels.laplace import laplace_units
    from inference.population import likelihood_surrogate

    U, _, d = z.shape
    modes, covs, log_ev, ok = laplace_units(z, y, np.arange(U), np.zeros(U, np.int64), np.zeros((1, d)),
                                            np.eye(d)[None] / broad_var, np.array([d * np.log(broad_var)]),
                                            np.zeros((U, d)))
    if not ok.all():
        raise RuntimeError(f"broad-prior Laplace fit did not converge for users {np.flatnonzero(~ok)[:10].tolist()}")
    H = np.linalg.inv(covs)
    H = 0.5 * (H + np.swapaxes(H, -1, -2))
    return modes, covs, likelihood_surrogate(modes, H, np.linalg.slogdet(H)[1], log_ev, broad_var)


def initial_state(chain: int, modes, covs, K: int, rng: np.random.Generator):
    """An over-dispersed start: theta from each user's broad-prior Laplace posterior; the partition by
    chain: all users in one component, each in a random one of the K, all broad, or random over a
    random number of components."""
    U, d = modes.shape
    theta = modes + np.einsum("uij,uj->ui", np.linalg.cholesky(covs), rng.standard_normal((U, d)))
    kind = chain % 4
    if kind == 0:
        c = np.zeros(U, np.int64)
    elif kind == 1:
        c = rng.integers(0, K, U)
    elif kind == 2:
        c = np.full(U, K, np.int64)
    else:
        c = rng.integers(0, rng.integers(2, K + 1), U)
    return ChainState(np.ascontiguousarray(c, dtype=np.int64), np.ascontiguousarray(theta))


class ChainTask(NamedTuple):
    """What one chain needs for one round (picklable, so a worker process can run it): round 0 starts
    from an over-dispersed state and burns in `warmup` sweeps; later rounds continue from `state`."""
    z: np.ndarray
    y: np.ndarray
    hyper: tuple
    settings: tuple
    chain: int
    seed: int
    warmup: int
    draws: int
    thin: int
    round: int = 0
    state: ChainState | None = None   # where the chain stands

    def __repr__(self) -> str:
        return (f"population Gibbs chain {self.chain} (seed {self.seed}, {self.z.shape[0]} users, round "
                f"{self.round}: {self.warmup} + {self.draws} x {self.thin} sweeps)")


def run_chain(task: ChainTask) -> Chain:
    """One round of one chain (a module-level function, so worker processes can run it). Every draw comes
    from one generator seeded by (seed, chain, round)."""
    hyper = PopulationHyper(*task.hyper)
    settings = GibbsSettings(*task.settings)
    z, y, draws, thin = task.z, task.y, task.draws, task.thin
    U, _, d = z.shape
    K = hyper.n_learned
    t0 = time.perf_counter()
    modes, covs, surrogate = broad_fits(z, y, hyper.broad_var)
    rng = np.random.default_rng([task.seed, task.chain, task.round])
    if task.state is None:
        state = initial_state(task.chain, modes, covs, K, rng)
    else:
        state = ChainState(*(np.ascontiguousarray(a).copy() for a in task.state))
    clicks = Clicks(z, y, *surrogate)
    target = Target(float(hyper.alpha), float(hyper.broad_var), hyper.cov_df(d), hyper.cov_prior_scale(d),
                    float(hyper.kappa0))
    moves = Moves(float(settings.proposal_df), float(settings.refine_nats), int(settings.newton_iters),
                  int(np.ceil(settings.split_merge_per_user * U)), int(settings.label_swaps),
                  float(settings.scale_step), float(settings.rw_scale), float(settings.pair_bandwidth),
                  int(settings.translation_newton), float(settings.dilate_step))
    warm = move_counts(task.warmup)
    if task.warmup:
        run_sweeps(clicks, target, moves, state, rng, task.warmup, 1, no_draws(U, K, d), warm)
    out, counts = no_draws(U, K, d, draws), move_counts(draws * thin)
    stored = run_sweeps(clicks, target, moves, state, rng, draws * thin, thin, out, counts)
    assert stored == draws
    stats = np.stack(counts, -1).reshape(draws, thin, -1).sum(1)
    return Chain(*out, stats, np.stack(warm, -1).sum(0), time.perf_counter() - t0, state)


def sample_population(z, y, hyper: PopulationHyper = PopulationHyper(), chains: int = DEFAULT_CHAINS,
                      warmup: int = DEFAULT_WARMUP, draws: int = DEFAULT_DRAWS, thin: int = 1, seed: int = 0,
                      settings: GibbsSettings = GibbsSettings(), map_chains=None, until=None,
                      max_seconds: float | None = None, progress=None, max_rounds: int | None = None) -> az.InferenceData:
    """Sample the population model's posterior given clicks y [U, S] on designs z [U, S, d].

    Parameters
    ----------
    z, y : arrays [U, S, d], [U, S]
        Design rows and clicks (checked by the caller, ``inference.model_fits.fit_population``).
    hyper : PopulationHyper
        The model's hyperparameters.
    chains, warmup, draws, thin : int
        Independent chains; burn-in sweeps; stored draws per chain; sweeps per stored draw.
    seed : int
        Seeds every chain (chain c, round r use (seed, c, r)).
    settings : GibbsSettings
        How the sampler moves.
    map_chains : callable or None
        ``map_chains(run_chain, tasks) -> list`` runs the chains (e.g. in worker processes:
        ``online.process_pool.map_in_workers`` with jobs); default: one after another, here.
    until : callable or None
        ``until(idata) -> RoundVerdict``. If given, the chains run on in rounds until it says met (e.g.
        every label-invariant diagnostic passes) or a budget is spent; `_next_round` says
        how far each round extends them (keeping at most 2 x `draws` per chain). Without it, one round.
    max_seconds, max_rounds : float, int or None
        Budgets: wall time (no round starts that would, at the last one's pace, end past it); rounds.
    progress : callable or None
        ``progress(message)`` after each round.

    Returns
    -------
    arviz.InferenceData
        posterior: theta [user, dim], assignment [user] (the slot, K = broad), v [component],
        weights [slot], weights_sorted [rank], mu [component, dim], cov_chol [component, dim, dim2];
        sample_stats: each move's counts per draw; attrs: sampler, settings, seconds per chain,
        rounds, thinning, whether `until` was met.
    """
    hyper = hyper.validate()
    checked_seconds(max_seconds)
    z = np.ascontiguousarray(z, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    run = (lambda tasks: list((map_chains or map)(run_chain, tasks)))
    t0 = time.perf_counter()
    kept, state, rnd, cur_thin, done, seconds = None, None, 0, thin, 0, np.zeros(chains)
    new_draws, start = draws, 0               # start: the sweep (per chain) where the kept draws begin
    while True:
        t_round = time.perf_counter()
        tasks = [ChainTask(z, y, tuple(hyper), tuple(settings), ch, seed, warmup if rnd == 0 else 0, new_draws,
                           cur_thin, rnd, None if state is None else state[ch]) for ch in range(chains)]
        fresh = run(tasks)
        state = [f.state for f in fresh]
        seconds += [f.seconds for f in fresh]
        done += tasks[0].warmup + new_draws * cur_thin
        kept = fresh if kept is None else [_append(k, f) for k, f in zip(kept, fresh)]
        start = warmup if rnd == 0 else start
        idata = to_inference_data([k._replace(seconds=s) for k, s in zip(kept, seconds)], hyper, settings, start,
                                  cur_thin)
        rnd += 1
        idata.sample_stats.attrs.update({"rounds": rnd, "sweeps_per_chain": int(done)})
        if until is None:
            return idata
        verdict = until(idata)
        idata.sample_stats.attrs["until_met"] = int(verdict.met)
        elapsed = time.perf_counter() - t0
        kept_sweeps = done - start
        drop_half, near_miss, factor, next_draws = _next_round(verdict, kept_sweeps, cur_thin, draws)
        next_thin = cur_thin * factor
        next_cost = (time.perf_counter() - t_round) * (next_draws * next_thin) / (tasks[0].warmup + new_draws * cur_thin)
        if progress is not None:
            progress(f"round {rnd}: {done} sweeps per chain, {kept_sweeps} kept ({len(kept[0].stats)} draws, thinning "
                     f"{cur_thin}), {elapsed:.0f} s; " + _verdict_words(verdict, drop_half, near_miss))
        if verdict.met or _budget_spent(elapsed + next_cost, max_seconds, rnd, max_rounds):
            return idata
        if drop_half:
            half = len(kept[0].stats) // 2
            kept = [_slice(k, half) for k in kept]
            start += half * cur_thin
        kept = [_thin(k, factor) for k in kept] if factor > 1 else kept
        cur_thin, new_draws = next_thin, next_draws


def checked_seconds(max_seconds):
    """A time budget in seconds: None (no budget) or a finite number above 0."""
    if max_seconds is not None and (isinstance(max_seconds, bool) or not isinstance(max_seconds, (int, float, np.integer, np.floating))
                                    or not np.isfinite(max_seconds) or max_seconds <= 0):
        raise InputError(f"max_seconds {max_seconds!r}: a finite number of seconds above 0, or None (no budget)")
    return max_seconds


def _budget_spent(seconds_after_next: float, max_seconds, rounds: int, max_rounds) -> bool:
    """Whether another round would pass the time budget, or the rounds' budget is spent."""
    return (max_seconds is not None and seconds_after_next > max_seconds) or (max_rounds is not None
                                                                              and rounds >= max_rounds)


def _next_round(verdict, kept_sweeps: int, cur_thin: int, draws: int) -> tuple[bool, bool, int, int]:
    """(drop the first half of the kept draws, a near miss, the thinning's factor, the next round's draws)."""
    drop_half = verdict.ess_fraction >= 1.0 and verdict.max_rhat > RESTART_RHAT
    if drop_half:
        # enough draws, yet the chains clearly disagree: the first half of the kept draws becomes
        # warm-up, and the chains run on for as long again
        more = float(kept_sweeps)
    elif verdict.ess_fraction >= 1.0:
        # enough draws and an R-hat just over its bound over thousands of entries (a noisy
        # maximum): more draws of the same chains
        more = 0.5 * kept_sweeps
    else:
        # short of ESS (a short run's R-hat is noisy too): extend, keeping the draws so far, by what
        # the shortfall suggests
        more = kept_sweeps * min(4.0, max(0.25, 1.3 * (1.0 / max(verdict.ess_fraction, 1e-3) - 1.0)))
    near_miss = verdict.ess_fraction >= 1.0 and not drop_half
    window = kept_sweeps // 2 if drop_half else kept_sweeps
    factor = 1
    while not near_miss and (window + more) / (cur_thin * factor) > 2 * draws:
        factor *= 2        # (a near miss keeps its thinning: an R-hat's noise shrinks with the draws)
    return drop_half, near_miss, factor, max(1, int(round(more / (cur_thin * factor))))


def _verdict_words(verdict, drop_half: bool, near_miss: bool) -> str:
    if verdict.met:
        return "healthy"
    if drop_half:
        return "chains disagree with enough draws: the first half of the kept ones becomes warm-up"
    if near_miss:
        return f"R-hat {verdict.max_rhat:.3f} just over its bound: more draws"
    return f"short of ESS ({100 * verdict.ess_fraction:.0f}% of it): extending"


class RoundVerdict(NamedTuple):
    """What `sample_population`'s `until` says of the draws kept so far."""
    met: bool                # stop: the fit is what was asked for
    max_rhat: float          # the largest R-hat over every quantity
    ess_fraction: float      # the smallest ESS over what is asked for (sizes the extension)


def _slice(chain: Chain, first: int) -> Chain:
    """The stored draws from index `first` on."""
    return chain._replace(theta=chain.theta[first:], assignment=chain.assignment[first:], v=chain.v[first:],
                          mu=chain.mu[first:], cov_chol=chain.cov_chol[first:], stats=chain.stats[first:])


def _thin(chain: Chain, factor: int) -> Chain:
    """Every `factor`-th stored draw (the last of each block), move counts summed over the block."""
    n = len(chain.stats) // factor * factor
    sub = lambda a: a[factor - 1:n:factor]  # noqa: E731
    return chain._replace(theta=sub(chain.theta), assignment=sub(chain.assignment), v=sub(chain.v),
                          mu=sub(chain.mu), cov_chol=sub(chain.cov_chol),
                          stats=chain.stats[:n].reshape(n // factor, factor, -1).sum(1))


def _append(a: Chain, b: Chain) -> Chain:
    cat = lambda f: np.concatenate([getattr(a, f), getattr(b, f)])  # noqa: E731
    return a._replace(**{f: cat(f) for f in ("theta", "assignment", "v", "mu", "cov_chol", "stats")}, state=b.state)


def to_inference_data(results: list[Chain], hyper: PopulationHyper, settings: GibbsSettings, warmup: int,
                      thin: int) -> az.InferenceData:
    """The chains as InferenceData (see `sample_population`)."""
    stack = lambda f: np.stack([getattr(r, f) for r in results])  # noqa: E731
    v = stack("v")
    weights = np.asarray(stick_breaking(v))
    nc, nd = v.shape[:2]
    coords = {"chain": np.arange(nc), "draw": np.arange(nd)}
    post = xr.Dataset({
        "theta": (("chain", "draw", "user", "dim"), stack("theta")),
        "assignment": (("chain", "draw", "user"), stack("assignment")),
        "v": (("chain", "draw", "component"), v),
        "weights": (("chain", "draw", "slot"), weights),
        "weights_sorted": (("chain", "draw", "rank"), -np.sort(-weights, axis=-1)),
        "mu": (("chain", "draw", "component", "dim"), stack("mu")),
        "cov_chol": (("chain", "draw", "component", "dim", "dim2"), stack("cov_chol")),
    }, coords=coords)
    stats = stack("stats")
    ss = xr.Dataset({name: (("chain", "draw"), stats[..., i]) for i, name in enumerate(STAT_NAMES)}, coords=coords)
    U = post.sizes["user"]
    ss.attrs.update({"sampler": "collapsed Gibbs with split-merge (inference.population_gibbs)", "warmup": warmup,
                     "thin": thin, "seconds_per_chain": [float(r.seconds) for r in results],
                     "user_move_acceptance": float(stats[..., 0].sum() / (U * nc * nd * thin)),
                     **{f"setting_{k}": v for k, v in settings._asdict().items()},
                     **{f"hyper_{k}": v for k, v in hyper._asdict().items()}})
    return az.InferenceData(posterior=post, sample_stats=ss)
