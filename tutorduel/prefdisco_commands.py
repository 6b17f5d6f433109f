"""The PrefDisco and combined-mode commands: `prefdisco`, `prefdisco-validate`, `combined`."""
from __future__ import annotations

from pathlib import Path

from tdmodels.limits import MAX_REFERENCE_SEEDS
from tutorduel.arg_types import MAX_DRAWS, MAX_JOBS, float_in, folder_arg, int_in
from tutorduel.errors import CLIError


def cmd_prefdisco(a) -> int:
    """`tutorduel prefdisco`: every PrefDisco policy over world seeds, with the summary tables and results file."""
    from diagnostics import prefdisco_report as rep
    from online.prefdisco_run import MAX_TURNS, POLICIES
    from online.sweep import parse_seeds
    from tdmodels.prefdisco_world import DOMAINS

    seeds = parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, "of the runs one command computes (no store)")
    policies = [p.strip() for p in a.policies.split(",")] if a.policies else list(POLICIES)
    bad = [p for p in policies if p not in POLICIES]
    if bad:
        raise CLIError(f"unknown PrefDisco policy {bad[0]!r}; choose from {', '.join(POLICIES)}")
    if not 0 <= a.questions <= MAX_TURNS:
        raise CLIError(f"--questions must lie in 0..{MAX_TURNS}, got {a.questions}")
    if a.answer_noise < 0 or (a.cost is not None and a.cost < 0):
        raise CLIError("--answer-noise and --cost must be >= 0")

    res = rep.run_grid(seeds, policies, a.questions, a.answer_noise, a.cost, a.scenarios, a.jobs)
    n_scen = res.sizes["scenario"]
    print(f"PrefDisco, simulated: {len(seeds)} world seeds x {n_scen} scenarios, at most {a.questions} question(s), "
          f"answer noise {a.answer_noise}, ask-bayes cost {res.attrs['cost']} per question; mean over seeds ± 95% t-interval\n")
    print(rep.summary_table(res))
    if "ask-bayes" in policies and len(policies) > 1 and len(seeds) > 1:
        print("\nPaired over world seeds:\n")
        print(rep.paired_table(res, "ask-bayes"))
    print("\nNormAlign by domain:\n")
    print(rep.domain_table(res, DOMAINS))
    if a.out:
        out = Path(a.out)
        rep.save_results(res, out / f"prefdisco-q{a.questions}.nc")
    if a.curve:
        curves = {q: (res if q == a.questions else
                      rep.run_grid(seeds, policies, q, a.answer_noise, a.cost, a.scenarios, a.jobs))
                  for q in range(MAX_TURNS + 1)}
        print("\nNormAlign against the question budget (mean over seeds ± 95%; mean questions asked):\n")
        print(rep.curve_table(curves))
        if a.out:
            for q, r in curves.items():
                rep.save_results(r, Path(a.out) / f"prefdisco-q{q}.nc")
            print(f"\nplot: {rep.plot_curves(curves, Path(a.out) / 'prefdisco-curve.png')}")
    if a.out:
        print(f"results: {a.out}/prefdisco-q*.nc")
    return 0


def cmd_prefdisco_validate(a) -> int:
    """`tutorduel prefdisco-validate`: ask-bayes's beliefs against NUTS and the simulated truth."""
    from inference.nuts import configure_jax

    configure_jax()                      # first: one host device per chain, float64, before JAX starts
    from diagnostics.prefdisco_validate import summary_lines, validate_prefdisco
    from tdmodels.prefdisco_world import build_prefdisco_world, load_prefdisco_world

    from online.prefdisco_run import MAX_TURNS

    if a.scenarios < 1:
        raise CLIError("--scenarios must be >= 1")
    if not 0 <= a.questions <= MAX_TURNS:
        raise CLIError(f"--questions must lie in 0..{MAX_TURNS}, got {a.questions}")
    world = load_prefdisco_world(a.world) if a.world else build_prefdisco_world(seed=a.seed)
    idata = validate_prefdisco(world, a.scenarios, a.questions, a.answer_noise, seed=a.seed,
                               warmup=a.warmup, draws=a.draws, truth_scenarios=a.truth_scenarios,
                               **({"cost": a.cost} if a.cost is not None else {}))
    print("\n".join(summary_lines(idata)))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"prefdisco-validate-seed-{a.seed:04d}.nc"
    from tdmodels.atomic_file import atomic_save

    atomic_save(path, lambda tmp: idata.to_netcdf(str(tmp)))
    print(f"written: {path}")
    return 0


def _combined_seed(args):
    from online.combined_replay import replay_combined
    from tdmodels.rosters import open_world

    world_name, seed, specs, arrivals, noise, allow_test, worlds_dir = args
    world = open_world(world_name, allow_test=allow_test, directory=worlds_dir)
    return {spec: replay_combined(world, seed, spec, arrivals, noise) for spec in specs}


def cmd_combined(a) -> int:
    """`tutorduel combined`: TutorDuel sessions in which a policy may ask a direct question, over seeds, with paired gains."""
    import numpy as np

    from diagnostics.stats import paired_gain, t_interval
    from online.process_pool import map_in_workers
    from online.registry import canonical_spec, make_policy, split_specs
    from online.sweep import parse_seeds
    from tdmodels.rosters import open_world

    open_world(a.world, allow_test=a.allow_test, directory=a.worlds)      # refuse held-out worlds early
    specs = [canonical_spec(s) for s in split_specs(a.policies)]
    for s in specs:
        make_policy(s)
    if a.answer_noise < 0:
        raise CLIError("--answer-noise must be >= 0")
    seeds = parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, "of the runs one command computes (no store)")
    tasks = [(a.world, s, specs, a.arrivals, a.answer_noise, a.allow_test, a.worlds) for s in seeds]
    runs = map_in_workers(_combined_seed, tasks, a.jobs)
    print(f"combined mode on {a.world}: {len(seeds)} seeds, answer noise sd {a.answer_noise} logits; "
          "an asked round is charged a random pair's regret; mean ± 95% t-interval over seeds\n")
    print("| policy | score | excess regret | questions per user |\n|---|---|---|---|")
    for s in specs:
        sc = [r[s]["score"] for r in runs]
        ex = [r[s]["excess"] for r in runs]
        q = [r[s]["asked_per_user"].mean() for r in runs]
        m, h = t_interval(sc)
        me, he = t_interval(ex)
        print(f"| {s} | {m:.1f} ± {h:.1f} | {me:.1f} ± {he:.1f} | {np.mean(q):.2f} |")
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


def add_prefdisco_parsers(sub, common) -> None:
    """Register the three commands on the CLI's subparsers; `common` adds --worlds/--allow-test."""
    p = sub.add_parser("prefdisco", help="simulated PrefDisco: baseline, oracle and discovery PrefAlign and NormAlign")
    p.add_argument("--seeds", default="0-7", help="world seeds (default 0-7)")
    p.add_argument("--policies", help="comma-separated: answer-now, ask-random, ask-top-weight, ask-bayes (default: all)")
    p.add_argument("--questions", type=int, default=3, help="question budget of each asking policy (0-5, default 3)")
    p.add_argument("--answer-noise", type=float_in(0, 100), default=0.0, help="sd of the noise on stated values")
    p.add_argument("--cost", type=float_in(0, 1000),
                   help="ask-bayes stops when no question's expected PrefAlign gain reaches this "
                        "(default online.prefdisco_bayes.COST, 0.002)")
    p.add_argument("--scenarios", type=int_in(1, 100_000), help="scenarios drawn per world (default: every persona x task)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1, help="world seeds run in parallel processes")
    p.add_argument("--out", type=folder_arg, help="folder for the results (netCDF) and the curve plot")
    p.add_argument("--curve", action="store_true", help="also NormAlign against budgets of 0-5 questions")
    p.set_defaults(fn=cmd_prefdisco)

    p = sub.add_parser("prefdisco-validate", help="ask-bayes's beliefs against NUTS and against the simulated truth")
    p.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0, help="world seed (and the seed of the checks)")
    p.add_argument("--world", help="a PrefDisco world file (netCDF) instead of the seed's world")
    p.add_argument("--scenarios", type=int_in(1, 100_000), default=8, help="scenarios checked against NUTS (default 8)")
    p.add_argument("--truth-scenarios", type=int_in(1, 100_000), help="scenarios checked against the simulated truth (default: all)")
    p.add_argument("--questions", type=int, default=3)
    p.add_argument("--answer-noise", type=float_in(0, 100), default=0.0)
    p.add_argument("--cost", type=float_in(0, 1000))
    p.add_argument("--warmup", type=int_in(1, MAX_DRAWS), default=500)
    p.add_argument("--draws", type=int_in(1, MAX_DRAWS), default=500)
    p.add_argument("--out", default="prefdisco-validation", type=folder_arg)
    p.set_defaults(fn=cmd_prefdisco_validate)

    p = sub.add_parser("combined", help="TutorDuel sessions where a policy may ask a direct question instead of a pair")
    p.add_argument("--world", default="dev")
    p.add_argument("--seeds", default="0-7")
    p.add_argument("--policies", default="coduel,coduel-ask,coduel-ask[max_questions=2]",
                   help="comma-separated specs; the first is the reference of the paired figures")
    p.add_argument("--answer-noise", type=float_in(0, 100), default=0.5, help="sd of the students' answers, logits (default 0.5)")
    p.add_argument("--arrivals", type=int_in(1, 1_000_000), help="only the first N arrivals")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1)
    common(p, store=False)
    p.set_defaults(fn=cmd_combined)

