"""The PrefDisco and combined-mode use cases: the simulated PrefDisco grid, ask-bayes's beliefs
against NUTS, and TutorDuel sessions in which a policy may ask a direct question."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from diagnostics import prefdisco_report as rep
from diagnostics.stats import paired_gain, t_interval
from online.prefdisco_run import MAX_TURNS, POLICIES
from online.process_pool import map_in_workers
from online.registry import canonical_spec, make_learner
from tdmodels.errors import InputError, check_flag
from tdmodels.prefdisco_world import DOMAINS
from tdmodels.rosters import open_world
from tdmodels.netcdf_file import inference_data_bytes, save_netcdf


def check_questions(questions: int) -> int:
    if not 0 <= questions <= MAX_TURNS:
        raise InputError(f"--questions must lie in 0..{MAX_TURNS}, got {questions}")
    return questions


def prefdisco_and_report(seeds: list[int], policies: list[str] | None = None, questions: int = 3,
                         answer_noise: float = 0.0, cost: float | None = None, scenarios: int | None = None,
                         jobs: int = 1, out=None, curve: bool = False) -> int:
    """Every PrefDisco policy over world seeds: the summary, paired and per-domain tables, the results file and
    (with `curve`) NormAlign against budgets of 0-5 questions."""
    curve = check_flag("curve", curve)
    policies = policies or list(POLICIES)
    bad = [p for p in policies if p not in POLICIES]
    if bad:
        raise InputError(f"unknown PrefDisco policy {bad[0]!r}; choose from {', '.join(POLICIES)}")
    twice = sorted({p for p in policies if policies.count(p) > 1})
    if twice:
        raise InputError(f"PrefDisco policy {twice[0]!r} is named twice in --policies")
    check_questions(questions)
    if answer_noise < 0 or (cost is not None and cost < 0):
        raise InputError("--answer-noise and --cost must be >= 0")
    res = rep.run_grid(seeds, policies, questions, answer_noise, cost, scenarios, jobs)
    print(f"PrefDisco, simulated: {len(seeds)} world seeds x {res.sizes['scenario']} scenarios, at most {questions} "
          f"question(s), answer noise {answer_noise}, ask-bayes cost {res.attrs['cost']} per question; mean over "
          f"seeds ± 95% t-interval\n")
    print(rep.summary_table(res))
    if "ask-bayes" in policies and len(policies) > 1 and len(seeds) > 1:
        print("\nPaired over world seeds:\n")
        print(rep.paired_table(res, "ask-bayes"))
    print("\nNormAlign by domain:\n")
    print(rep.domain_table(res, DOMAINS))
    if out:
        rep.save_results(res, Path(out) / f"prefdisco-q{questions}.nc")
    if curve:
        curves = {q: (res if q == questions else rep.run_grid(seeds, policies, q, answer_noise, cost, scenarios, jobs))
                  for q in range(MAX_TURNS + 1)}
        print("\nNormAlign against the question budget (mean over seeds ± 95%; mean questions asked):\n")
        print(rep.curve_table(curves))
        if out:
            for q, r in curves.items():
                rep.save_results(r, Path(out) / f"prefdisco-q{q}.nc")
            print(f"\nplot: {rep.plot_curves(curves, Path(out) / 'prefdisco-curve.png')}")
    if out:
        print(f"results: {out}/prefdisco-q*.nc")
    return 0


def prefdisco_validate_and_report(seed: int, out, world_file=None, scenarios: int = 8, questions: int = 3,
                                  answer_noise: float = 0.0, cost: float | None = None, warmup: int = 500,
                                  draws: int = 500, truth_scenarios: int | None = None) -> int:
    """ask-bayes's beliefs against NUTS and against the simulated truth, written as netCDF in `out`. JAX must be
    configured (``inference.nuts.configure_jax``) first."""
    from diagnostics.prefdisco_validate import summary_lines, validate_prefdisco
    from tdmodels.prefdisco_world import build_prefdisco_world, load_prefdisco_world

    check_questions(questions)
    world = load_prefdisco_world(world_file) if world_file else build_prefdisco_world(seed=seed)
    idata = validate_prefdisco(world, scenarios, questions, answer_noise, seed=seed, warmup=warmup, draws=draws,
                               truth_scenarios=truth_scenarios, **({"cost": cost} if cost is not None else {}))
    print("\n".join(summary_lines(idata)))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"prefdisco-validate-seed-{seed:04d}.nc"
    save_netcdf(path, inference_data_bytes(idata))
    print(f"written: {path}")
    return 0


def _combined_seed(args):
    from online.combined_replay import replay_combined

    world_name, seed, specs, arrivals, noise, allow_test, worlds_dir = args
    world = open_world(world_name, allow_test=allow_test, directory=worlds_dir)
    return {spec: replay_combined(world, seed, spec, arrivals, noise) for spec in specs}


def combined_and_report(world: str, seeds: list[int], specs: list[str], answer_noise: float = 0.5, arrivals=None,
                        jobs: int = 1, allow_test: bool = False, worlds_dir=None) -> int:
    """TutorDuel sessions in which a policy may ask a direct question, over seeds, with paired gains against the
    first policy."""
    open_world(world, allow_test=allow_test, directory=worlds_dir)      # refuse held-out worlds early
    specs = [canonical_spec(s) for s in specs]
    twice = sorted({s for s in specs if specs.count(s) > 1})
    if twice:
        raise InputError(f"policy {twice[0]!r} is named twice in --policies (after its settings are read)")
    for s in specs:
        make_learner(s)
    if answer_noise < 0:
        raise InputError("--answer-noise must be >= 0")
    tasks = [(world, s, specs, arrivals, answer_noise, allow_test, worlds_dir) for s in seeds]
    runs = map_in_workers(_combined_seed, tasks, jobs)
    print(f"combined mode on {world}: {len(seeds)} seeds, answer noise sd {answer_noise} logits; "
          "an asked round is charged a random pair's regret; mean ± 95% t-interval over seeds\n")
    print("| policy | score | excess regret | questions per user |\n|---|---|---|---|")
    for s in specs:
        m, h = t_interval([r[s]["score"] for r in runs])
        me, he = t_interval([r[s]["excess"] for r in runs])
        q = np.mean([r[s]["asked_per_user"].mean() for r in runs])
        pm = (lambda a, b: f"{a:.1f}" + (f" ± {b:.1f}" if np.isfinite(b) else ""))  # noqa: E731 (one seed: no interval)
        print(f"| {s} | {pm(m, h)} | {pm(me, he)} | {q:.2f} |")
    if len(specs) > 1 and len(seeds) > 1:
        base = specs[0]
        print(f"\npaired against {base} (95%):")
        for s in specs[1:]:
            d = np.array([r[s]["score"] - r[base]["score"] for r in runs])
            g = paired_gain([r[s]["excess"] for r in runs], [r[base]["excess"] for r in runs])
            m, h = t_interval(d)
            mr, hr = 100 * g["gain"], 100 * (g["hi"] - g["gain"])
            print(f"  {s}: score {m:+.2f} [{m - h:+.2f}, {m + h:+.2f}]; excess regret reduction "
                  f"{mr:+.1f}% [{mr - hr:+.1f}, {mr + hr:+.1f}]")
    return 0
