"""Online beliefs side by side: every belief replayed on the same users' clicks, under the prior each user
arrived under, and checked against the same exact reference (``diagnostics.posterior_checks``), with
its click predictions scored, by arrival block.

    ds = compare_beliefs(log, reference_draws, ("laplace", "adf"), users)
    rows = belief_table(ds)                     # one row per (belief, block)
    print(format_belief_table(rows))

The measures (`MEASURES`, each with a one-line meaning) are the per-user checks' (PSIS k-hat and the
share of users over 0.7 with its range over the independent proposal samples, mean |error| and sd
ratio in posterior sd, W1 over its noise floor) and the click predictions' (log loss and expected
calibration error, each click predicted by the belief before it was revealed).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

from diagnostics.click_reliability import reliability_table
from diagnostics.posterior_checks import (BLOCK, KHAT_MAX, PosteriorCheck, btl_log_posterior, check_posterior,
                                          exact_component_weights)
from tdmodels.errors import InputError

MEASURES = {
    "khat_median": "PSIS k-hat of the belief as a proposal for the exact posterior, median over users (< 0.7: usable)",
    "share_khat_over": f"share of users with k-hat over {KHAT_MAX}, mean over the proposal samples [min, max]",
    "mean_abs_error_sd": "|posterior mean error| in exact posterior sd, mean over users and coordinates",
    "sd_ratio_median": "belief sd / exact sd, median over users and coordinates (1: right width)",
    "w1_over_floor_median": "marginal W1 to the exact draws over W1 between two halves of them, median (1: at noise)",
    "log_loss": "click log loss in nats, each click predicted before it was revealed",
    "ece": "expected calibration error of those predictions (10 bins)",
}


def check_belief_names(beliefs) -> tuple[str, ...]:
    """The beliefs as a tuple, or InputError: each must be a known belief, named once, at least one."""
    from inference.online_beliefs import check_belief

    beliefs = tuple(beliefs)
    for b in beliefs:
        check_belief(b)
    if not beliefs or len(set(beliefs)) != len(beliefs):
        raise InputError(f"--beliefs: name each belief once, got {', '.join(map(str, beliefs)) or 'none'}")
    return beliefs


EXACT_MOMENTS = "exact moments"    # the row of `exact_moments_mixture`: not an online belief, what bounds them
EXACT_IMPORTANCE = "exact moments (importance)"   # the same bound to Monte Carlo precision (``inference.importance_moments``)
IMPORTANCE_AROUND = "ep-corrected"  # the belief whose Gaussians centre that row's proposals


def exact_moments_mixture(units, n_users: int, prior_means: np.ndarray, prior_covs: np.ndarray):
    """The best a Gaussian per component can be: each user's exact component weights, and in every component
    the exact posterior's mean and covariance (the reference's `units` group with `unit_mean` and
    `unit_cov`, ``inference.user_reference.compact_reference``). Components the reference pruned get weight
    0 (and the prior's moments). Returns (weights [U, C], means [U, C, d], covs [U, C, d, d])."""
    uu, kk = units["unit_user"].values, units["unit_component"].values
    keep = uu < n_users
    m, S = np.array(prior_means[:n_users], dtype=float), np.array(prior_covs[:n_users], dtype=float)
    m[uu[keep], kk[keep]] = units["unit_mean"].values[keep]
    S[uu[keep], kk[keep]] = units["unit_cov"].values[keep]
    return exact_component_weights(units, n_users, m.shape[1]), m, S


def compare_beliefs(log, reference_draws: np.ndarray, beliefs, users=None, seed: int = 0,
                    n_proposal: int = 4000, exact_moments=None, importance_draws: int = 0) -> xr.Dataset:
    """Replay each belief over the users' clicks and check it against the reference.

    Parameters
    ----------
    log : ClickLog
        A run's click log with the priors users arrived under (``log.priors``).
    reference_draws : array [S, U, d]
        Draws of each user's exact posterior (chains pooled), aligned with `users`.
    beliefs : sequence of str
        Names from ``inference.online_beliefs.BELIEFS``, each once.
    users : array [U], optional
        The users checked (default: the first U arrivals).
    seed : int
        Seeds the proposal samples (the same for every belief).
    exact_moments : (weights [U, C], means [U, C, d], covs [U, C, d, d]), optional
        `exact_moments_mixture` of the reference: checked as one more row, ``EXACT_MOMENTS``, with no click
        predictions (it is no online belief).
    importance_draws : int
        With a positive count, one more row, ``EXACT_IMPORTANCE``: each user's exact mixture by importance
        sampling with this many draws a component around the ``IMPORTANCE_AROUND`` belief
        (``inference.importance_moments``), its least effective sample size over the components weighing 1% or
        more in the attribute ``importance_ess_min``. The reference's moments spread with its few thousand
        draws; these do not, so this row is what a Gaussian at the exact moments reaches.

    Returns
    -------
    xarray.Dataset
        Over (belief, user[, dim, replicate, round]): khat, khat_replicates, mean_error, sd_ratio, w1,
        w1_floor and p_first (each click's predicted P(first wins)), with the clicks y (user, round).
    """
    from inference.online_beliefs import fold_session
    from tdmodels.priors import MixturePrior

    beliefs = check_belief_names(beliefs)
    if log.priors is None:
        raise InputError("comparing beliefs needs the priors users arrived under: replay a policy that records "
                         "them (e.g. coduel)")
    ref = np.asarray(reference_draws, dtype=float)
    users = np.arange(ref.shape[1]) if users is None else np.asarray(users)
    z, y = log.recalibrated_design(users)
    per_belief = []
    for b in beliefs:
        rng = np.random.default_rng(seed)
        checks, p_first = [], []
        for k, u in enumerate(users):
            prior = MixturePrior(*(a[u] for a in log.priors))
            folded = fold_session(prior, z[k], y[k], b)
            checks.append(check_posterior(ref[:, k], *folded.belief, btl_log_posterior(z[k], y[k], *prior), rng,
                                          n_proposal))
            p_first.append(folded.p_first)
        fields = {f: np.array([getattr(c, f) for c in checks]) for f in PosteriorCheck._fields}
        per_belief.append({**fields, "p_first": np.array(p_first)})
    if exact_moments is not None:
        rng = np.random.default_rng(seed)
        checks = [check_posterior(ref[:, k], *(a[k] for a in exact_moments),
                                  btl_log_posterior(z[k], y[k], *(a[u] for a in log.priors)), rng, n_proposal)
                  for k, u in enumerate(users)]
        per_belief.append({**{f: np.array([getattr(c, f) for c in checks]) for f in PosteriorCheck._fields},
                           "p_first": np.full(y.shape, np.nan)})
        beliefs = beliefs + (EXACT_MOMENTS,)
    attrs = {"khat_max": KHAT_MAX, "block": BLOCK}
    if importance_draws:
        row, ess = _importance_row(log, ref, users, z, y, seed, n_proposal, importance_draws)
        per_belief.append(row)
        beliefs = beliefs + (EXACT_IMPORTANCE,)
        attrs.update(importance_draws=int(importance_draws), importance_ess_min=ess)
    dims = {"khat": ("belief", "user"), "khat_replicates": ("belief", "user", "replicate"),
            "mean_error": ("belief", "user", "dim"), "sd_ratio": ("belief", "user", "dim"),
            "w1": ("belief", "user", "dim"), "w1_floor": ("belief", "user", "dim"),
            "p_first": ("belief", "user", "round")}
    data = {k: (v, np.stack([pb[k] for pb in per_belief])) for k, v in dims.items()}
    data["y"] = (("user", "round"), np.asarray(y, dtype=np.int8))
    return xr.Dataset(data, coords={"belief": list(beliefs), "user": users}, attrs=attrs)


def _importance_row(log, ref, users, z, y, seed, n_proposal, draws) -> tuple[dict, float]:
    """`compare_beliefs`' row ``EXACT_IMPORTANCE`` and its least effective sample size over the components
    weighing 1% or more."""
    from inference.importance_moments import importance_mixture
    from inference.online_beliefs import fold_session
    from tdmodels.priors import MixturePrior

    rng_is, rng = np.random.default_rng([seed, 1]), np.random.default_rng(seed)
    checks, ess = [], []
    for k, u in enumerate(users):
        prior = MixturePrior(*(a[u] for a in log.priors))
        exact = importance_mixture(prior, z[k], y[k], fold_session(prior, z[k], y[k], IMPORTANCE_AROUND).belief,
                                   draws, rng_is)
        heavy = exact.weights >= 1e-2
        ess.append(np.nanmin(exact.ess[heavy]) if heavy.any() else np.nan)
        checks.append(check_posterior(ref[:, k], *exact[:3], btl_log_posterior(z[k], y[k], *prior), rng, n_proposal))
    return ({**{f: np.array([getattr(c, f) for c in checks]) for f in PosteriorCheck._fields},
             "p_first": np.full(np.shape(y), np.nan)}, float(np.nanmin(ess)))


def _block_row(ds: xr.Dataset, belief: str, sel: np.ndarray) -> dict:
    part = ds.sel(belief=belief).isel(user=sel)
    rep = part.khat_replicates.values
    share = (rep > KHAT_MAX).mean(0)
    p = part.p_first.values.ravel()
    cal = (reliability_table({belief: p}, part.y.values.ravel())[belief] if np.isfinite(p).all()
           else {"log_loss": np.nan, "ece": np.nan})
    return {"khat_median": float(np.median(part.khat.values)),
            "share_khat_over": (float(share.mean()), float(share.min()), float(share.max())),
            "mean_abs_error_sd": float(np.mean(np.abs(part.mean_error.values))),
            "sd_ratio_median": float(np.median(part.sd_ratio.values)),
            "w1_over_floor_median": float(np.median(part.w1.values / part.w1_floor.values)),
            "log_loss": float(cal["log_loss"]), "ece": float(cal["ece"])}


def belief_table(ds: xr.Dataset, block: int | None = None) -> list[dict]:
    """One row per belief and arrival block [0, block), [block, 2 block), ... and one for all users:
    {"belief", "arrivals": (first, last) or "all", "users", and each of `MEASURES`}."""
    block = int(ds.attrs.get("block", BLOCK)) if block is None else int(block)
    users = ds.user.values
    out = []
    for b in ds.belief.values.tolist():
        for lo in range(0, int(users.max()) + 1, block):
            sel = np.flatnonzero((users >= lo) & (users < lo + block))
            if len(sel):
                out.append({"belief": b, "arrivals": (lo, lo + block - 1), "users": len(sel),
                            **_block_row(ds, b, sel)})
        out.append({"belief": b, "arrivals": "all", "users": len(users), **_block_row(ds, b, np.arange(len(users)))})
    return out


def _cell(key: str, value) -> str:
    if key == "share_khat_over":
        mean, lo, hi = value
        return f"{100 * mean:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]"
    if not np.isfinite(value):
        return "-"
    return f"{value:.3f}" if key != "khat_median" else f"{value:.2f}"


HEAD = ["belief", "arrivals", "users", "k-hat med", "k-hat > 0.7", "|err| sd", "sd ratio", "W1/floor", "log loss", "ECE"]


def table_cells(rows: list[dict]) -> list[list[str]]:
    """The rows as text cells under `HEAD`."""
    return [[r["belief"], r["arrivals"] if r["arrivals"] == "all" else f"{r['arrivals'][0]}-{r['arrivals'][1]}",
             str(r["users"])] + [_cell(k, r[k]) for k in MEASURES] for r in rows]


def format_belief_table(rows: list[dict]) -> str:
    """The rows as an aligned text table, then each column's one-line meaning."""
    head, body = HEAD, table_cells(rows)
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(line, widths)).rstrip() for line in [head] + body]
    legend = [f"  {label}: {MEASURES[k]}" for label, k in zip(head[3:], MEASURES)]
    return "\n".join(lines + ["where"] + legend)


def target_met(rows: list[dict], share: float = 0.05) -> dict[str, bool]:
    """Per belief: k-hat under 0.7 for at least 1 - `share` of the users in every arrival block (the
    mean share over the proposal samples)."""
    out: dict[str, bool] = {}
    for r in rows:
        if r["arrivals"] == "all" or r["belief"] in (EXACT_MOMENTS, EXACT_IMPORTANCE):
            continue
        out[r["belief"]] = out.get(r["belief"], True) and r["share_khat_over"][0] <= share
    return out
