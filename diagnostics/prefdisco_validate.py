"""Validation of ask-bayes on a PrefDisco world: its final belief in sampled scenarios against
NUTS on the same model and answers, and its beliefs in every scenario against the simulated
truth. Writes an ArviZ InferenceData (netCDF): ``posterior`` holds the NUTS draws of every
checked scenario's profile (scenario, chain, draw, coord), ``online`` the belief's location
and scale, ``checks`` the per-scenario checks, ``truth`` the PIT values of the true profiles.
"""
from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import xarray as xr

from diagnostics.profile_checks import check_belief, checks_dataset, coverage, marginal_pit
from inference.health import stored_health
from inference.profile_reference import profile_nuts, z_new_draws
from online.prefdisco_bayes import COST, elicit, scenario_model
from online.prefdisco_run import passive_user
from tdmodels.profile_model import profile_coordinates


def truth_pit(world: xr.Dataset, questions: int, answer_noise: float = 0.0, cost: float = COST,
                      seed: int = 0, scenarios: int | None = None) -> xr.Dataset:
    """PIT of every scenario's true profile coordinates (value logits, log-weights) under the final
    belief; answered coordinates are NaN when answers are exact. Dims (scenario, coord)."""
    rng = np.random.default_rng(seed)
    P, T = world.sizes["persona"], world.sizes["task"]
    pairs = [(p, t) for p in range(P) for t in range(T)]
    if scenarios is not None and scenarios < len(pairs):
        pairs = [pairs[k] for k in np.sort(rng.choice(len(pairs), scenarios, replace=False))]
    pits = []
    for p, t in pairs:
        m = scenario_model(world, p, t)
        e = elicit(m, passive_user(world["values"].values[p, t], answer_noise, rng), questions, cost, answer_noise)
        truth = profile_coordinates(world["values"].values[p, t, m.attributes], world["weights"].values[p, t, m.attributes])
        free = np.setdiff1d(np.arange(len(truth)), e.asked) if answer_noise == 0 else np.arange(len(truth))
        pit = np.full(len(truth), np.nan)
        pit[free] = marginal_pit(e.belief, truth, free)
        pits.append(pit)
    return xr.Dataset({"pit": (("scenario", "coord"), np.array(pits))},
                      coords={"persona": ("scenario", [p for p, _ in pairs]), "task": ("scenario", [t for _, t in pairs])})


def validate_prefdisco(world: xr.Dataset, scenarios: int, questions: int = 3, answer_noise: float = 0.0,
                       cost: float = COST, seed: int = 0, warmup: int = 500, draws: int = 500,
                       chains: int = 4, truth_scenarios: int | None = None) -> az.InferenceData:
    """NUTS references and checks for `scenarios` random scenarios of the world, plus the truth
    PITs over `truth_scenarios` random scenarios (default: all)."""
    rng = np.random.default_rng(seed)
    P, T = world.sizes["persona"], world.sizes["task"]
    picks = rng.choice(P * T, scenarios, replace=False)
    refs, locs, scales, checks, coords, health, asked_n = [], [], [], [], [], [], []
    for k, flat in enumerate(picks):
        p, t = divmod(int(flat), T)
        m = scenario_model(world, p, t)
        e = elicit(m, passive_user(world["values"].values[p, t], answer_noise, rng), questions, cost, answer_noise)
        others = np.arange(P) != p
        pop = profile_coordinates(world["values"].values[others, t][:, m.attributes],
                                  world["weights"].values[others, t][:, m.attributes])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            idata = profile_nuts(pop, e.asked, e.answers, np.sqrt(e.noise_var) if answer_noise > 0 else None,
                                 seed=seed + k, chains=chains, warmup=warmup, draws=draws)
        ref = z_new_draws(idata)
        with warnings.catch_warnings():   # exact answers: the log ratios are constant, PSIS fits a degenerate tail
            warnings.simplefilter("ignore", RuntimeWarning)
            c, cs = check_belief(e.belief, m.belief, e.asked, e.answers, e.noise_var, ref, rng)
        refs.append(idata.posterior["z_new"].values)
        locs.append(e.belief.mean)
        scales.append(np.sqrt(np.maximum(np.diag(e.belief.shape), 0.0)))
        checks.append(c)
        coords.append(cs)
        health.append(stored_health(idata))
        asked_n.append(len(e.asked))
    D = len(locs[0])
    post = xr.Dataset({"z_new": (("scenario", "chain", "draw", "coord"), np.array(refs))})
    # ArviZ groups need (chain, draw) first.
    post = post.transpose("chain", "draw", "scenario", "coord")
    online = xr.Dataset({"loc": (("scenario", "coord"), np.array(locs)), "scale": (("scenario", "coord"), np.array(scales)),
                         "asked": ("scenario", np.array(asked_n))})
    chk = checks_dataset(checks, coords, D)
    for f in ("max_rhat", "min_ess_bulk", "min_ess_tail", "divergences"):
        chk[f] = ("scenario", np.array([getattr(h, f) for h in health]))
    chk = chk.assign_coords(persona=("scenario", picks // T), task=("scenario", picks % T))
    truth = truth_pit(world, questions, answer_noise, cost, seed, truth_scenarios)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        out = az.InferenceData(posterior=post, online=online, checks=chk, truth=truth)
    for g in ("posterior", "online", "checks", "truth"):
        getattr(out, g).attrs.update({"world_seed": int(world.attrs.get("seed", -1)), "questions": questions,
                                      "answer_noise": answer_noise, "cost": cost})
    return out


def summary_lines(idata: az.InferenceData) -> list[str]:
    """The figures a reader checks first."""
    c, t = idata.checks, idata.truth
    me = np.abs(c["mean_error"].values)
    sr = c["sd_ratio"].values
    K = t.sizes["coord"] // 2
    pit = t["pit"].values
    cov_v, cov_w = (coverage(x[~np.isnan(x)], 0.9) for x in (pit[:, :K], pit[:, K:]))
    return [
        f"{c.sizes['scenario']} scenarios against NUTS: NUTS max R-hat {float(c['max_rhat'].max()):.3f}, "
        f"min ESS bulk {float(c['min_ess_bulk'].min()):.0f}, divergences {int(c['divergences'].sum())}",
        f"belief vs NUTS: |mean error| median {np.nanmedian(me):.3f} sd (max {np.nanmax(me):.3f}); "
        f"sd ratio median {np.nanmedian(sr):.3f} (range {np.nanmin(sr):.3f}-{np.nanmax(sr):.3f}); "
        f"k-hat median {float(c['khat'].median()):.2f} (max {float(c['khat'].max()):.2f}); "
        f"W1 / floor median {np.nanmedian(c['w1'].values / c['w1_floor'].values):.2f}",
        f"belief vs simulated truth over {t.sizes['scenario']} scenarios: 90% interval coverage "
        f"{cov_v:.3f} for value logits, {cov_w:.3f} for log-weights",
    ]
