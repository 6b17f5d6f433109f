"""The benchmark's statistics from stored rows: mean +/- s.e. over seeds, reference rows,
paired comparisons.

Reference rows are recomputed from the world for exactly the seeds the policies ran on
(they are cheap and exact), so every row of a table averages over the same seeds.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np
from scipy.special import stdtrit      # the t quantile scipy.stats.t.ppf calls, without scipy.stats' import

from diagnostics.references import REFERENCES, reference_regrets
from online.scoring import benchmark_score
from tdmodels.errors import InputError
from tdmodels.world import world_digest

REFERENCE_LABELS = {
    "random": "random pairs", "best-pair-everyone": "best fixed pair (everyone, hindsight)",
    "best-fixed-pair": "best fixed pair per user (hindsight)", "linear-oracle": "per-user linear oracle", "floor": "floor G",
}


def _values(x, what: str = "values") -> np.ndarray:
    """x as a non-empty 1-D float array of numbers, or one InputError naming `what`."""
    arr = np.asarray(x)
    if arr.dtype.kind not in "iuf" or arr.ndim != 1 or arr.size == 0:
        raise InputError(f"{what}: need a non-empty 1-D sequence of numbers, got "
                         f"{'dtype ' + str(arr.dtype) if arr.dtype.kind not in 'iuf' else f'shape {arr.shape}'}")
    return arr.astype(float)


def checked_level(level) -> float:
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)) or not 0 < level < 1:
        raise InputError(f"level {level!r}: an interval's coverage, a number strictly between 0 and 1")
    return float(level)


def mean_se(x) -> tuple[float, float]:
    """(mean, standard error) of the values x [n] (n >= 1); the standard error is NaN for one value. A
    non-finite value makes the mean non-finite (it is not dropped)."""
    x = _values(x)
    se = float(x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")
    return float(x.mean()), se


def t_quantile(n: int, level: float = 0.95) -> float:
    """The two-sided t quantile of a `level` interval from n observations (NaN below two)."""
    return float(stdtrit(n - 1, 0.5 + checked_level(level) / 2)) if n > 1 else float("nan")


def t_interval(x, level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of the t-interval of figures x [n] (seeds, users; NaN half-width for one)."""
    x = _values(x)
    m, se = mean_se(x)
    return m, t_quantile(len(x), level) * se


def paired_gain(excess_a, excess_b, level: float = 0.95) -> dict:
    """Relative excess-regret reduction of A against B over the same seeds, 1 - sum A / sum B,
    with a t interval on the per-seed differences propagated by the delta method.

    Parameters
    ----------
    excess_a, excess_b : sequences [n]
        Excess regret (regret above the floor, so >= 0) of A and B, seed by seed: the same seeds in
        the same order, finite, and B's mean above 0 (else the gain is undefined).
    level : float
        The interval's coverage, in (0, 1).

    Returns
    -------
    dict
        "gain", "lo", "hi" (NaN for one seed), "n".
    """
    a, b = _values(excess_a, "excess_a"), _values(excess_b, "excess_b")
    level = checked_level(level)
    if len(a) != len(b):
        raise InputError(f"paired_gain: {len(a)} values of A against {len(b)} of B; pair them seed by seed")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("paired_gain: excess regret must be finite (a NaN or infinite value is not a run's figure)")
    if min(a.min(), b.min()) < -1e-9 * (1.0 + max(np.abs(a).max(), np.abs(b).max())):
        raise InputError(f"paired_gain: excess regret is regret above the floor, never below 0; got "
                         f"{min(a.min(), b.min())!r}")
    if not b.mean() > 0:
        raise InputError("paired_gain: B's mean excess regret is 0, so a relative reduction against it is undefined")
    n = len(a)
    gain = 1.0 - a.mean() / b.mean()
    if n < 2:
        return {"gain": float(gain), "lo": float("nan"), "hi": float("nan"), "n": n}
    # influence of each seed on the ratio mean(a)/mean(b)
    infl = (a - a.mean()) / b.mean() - a.mean() * (b - b.mean()) / b.mean() ** 2
    se = infl.std(ddof=1) / np.sqrt(n)
    t = stdtrit(n - 1, 0.5 + level / 2)
    return {"gain": float(gain), "lo": float(gain - t * se), "hi": float(gain + t * se), "n": n}


def reference_table(world, seeds, arrivals=None) -> dict[str, dict[int, dict]]:
    """{reference: {seed: {regret, floor, random, excess, score}}}."""
    if isinstance(seeds, (str, bytes)) or not hasattr(seeds, "__iter__"):
        raise InputError(f"seeds {seeds!r}: give a list of seeds (integers), e.g. online.sweep.parse_seeds('0-7')")
    out = defaultdict(dict)
    for seed in seeds:
        regs = reference_regrets(world, seed, arrivals)
        G, Rr = float(regs["floor"].sum()), float(regs["random"].sum())
        for name in REFERENCES:
            R = float(regs[name].sum())
            out[name][seed] = {"regret": R, "floor": G, "random": Rr, "excess": R - G,
                               "score": float(benchmark_score(R, G, Rr))}
    return out


def leaderboard(rows: list[dict], world=None, arrivals: int | None = None, references=reference_table) -> list[dict]:
    """One line per policy, averaged over its seeds, plus the reference rows over all those seeds.

    rows: runs of one world with one truncation `arrivals` (None: full runs), one per policy and seed;
    rows of several worlds or truncations, or two of one policy and seed, are refused (a table over them
    would average what is not comparable, or keep one run and drop the other). `references`: what computes
    the reference rows, `reference_table` or one with its signature (a cache of it).
    """
    for field in ("world_digest", "arrivals_limit"):
        seen = {r.get(field) for r in rows}
        if len(seen) > 1:
            raise InputError(f"leaderboard: rows of {len(seen)} different {field} values {sorted(map(str, seen))}; "
                             f"a table is of one world and one truncation")
    if world is not None and rows and rows[0].get("world_digest") not in (None, world_digest(world)):
        raise InputError(f"leaderboard: the rows ran on world {rows[0]['world_digest']}, not on the world given "
                         f"({world_digest(world)})")
    by = defaultdict(dict)
    for r in rows:
        if int(r["seed"]) in by[r["policy"]]:
            raise InputError(f"leaderboard: two rows of {r['policy']!r} for seed {r['seed']}")
        by[r["policy"]][int(r["seed"])] = r
    lines = []
    for spec, seeds in sorted(by.items()):
        sc, ex = mean_se([r["score"] for r in seeds.values()]), mean_se([r["excess"] for r in seeds.values()])
        lines.append({"name": spec, "kind": "policy", "n": len(seeds), "score": sc, "excess": ex,
                      "seeds": sorted(seeds), "wall_s": float(np.mean([r["wall_s"] for r in seeds.values()])),
                      "code": ",".join(sorted({r["code"]["digest"] for r in seeds.values() if "code" in r}))})
    if world is not None and by:
        all_seeds = sorted(set().union(*[set(s) for s in by.values()]))
        refs = references(world, all_seeds, arrivals)
        for name in ("random", "best-pair-everyone", "best-fixed-pair", "linear-oracle", "floor"):
            vals = refs[name].values()
            lines.append({"name": REFERENCE_LABELS[name], "kind": "reference", "n": len(all_seeds),
                          "score": mean_se([v["score"] for v in vals]), "excess": mean_se([v["excess"] for v in vals]),
                          "seeds": all_seeds, "wall_s": float("nan"), "code": ""})
    return lines


def format_table(lines: list[dict], title: str = "") -> str:
    """Markdown table; reference rows in italics."""
    out = [f"### {title}", ""] if title else []
    out += ["| policy | seeds | score | excess regret R - G | code |", "|---|---|---|---|---|"]
    for ln in sorted(lines, key=lambda x: (x["kind"] == "reference", -x["score"][0])):
        s, e = ln["score"], ln["excess"]
        se_s = f" ± {s[1]:.1f}" if np.isfinite(s[1]) and s[1] > 0 else ""
        se_e = f" ± {e[1]:.1f}" if np.isfinite(e[1]) and e[1] > 0 else ""
        name = f"*{ln['name']}*" if ln["kind"] == "reference" else ln["name"]
        out.append(f"| {name} | {ln['n']} | {s[0]:.1f}{se_s} | {e[0]:.1f}{se_e} | {ln.get('code', '')} |")
    return "\n".join(out)
