"""`prefdisco`, `prefdisco-validate`, `combined`: the cold-start commands."""
from __future__ import annotations

from tdmodels.limits import MAX_ARRIVALS, MAX_REFERENCE_SEEDS, MAX_SEED, MAX_TURNS
from tutorduel.arg_types import MAX_DRAWS, MAX_JOBS, float_in, folder_arg, int_in
from tutorduel.cli.options import common_options

NO_STORE = "of the runs one command computes (no store)"


def cmd_prefdisco(a) -> int:
    from online.sweep import parse_seeds
    from tutorduel.prefdisco_commands import prefdisco_and_report

    seeds = parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, NO_STORE)
    policies = [p.strip() for p in a.policies.split(",")] if a.policies else None
    return prefdisco_and_report(seeds, policies, a.questions, a.answer_noise, a.cost, a.scenarios, a.jobs, a.out,
                                a.curve)


def cmd_prefdisco_validate(a) -> int:
    from inference.nuts import configure_jax

    configure_jax()                      # first: one host device per chain, float64, before JAX starts
    from tutorduel.prefdisco_commands import prefdisco_validate_and_report

    return prefdisco_validate_and_report(a.seed, a.out, a.world, a.scenarios, a.questions, a.answer_noise, a.cost,
                                         a.warmup, a.draws, a.truth_scenarios)


def cmd_combined(a) -> int:
    from online.registry import split_specs
    from online.sweep import parse_seeds
    from tutorduel.prefdisco_commands import combined_and_report

    seeds = parse_seeds(a.seeds, MAX_REFERENCE_SEEDS, NO_STORE)
    return combined_and_report(a.world, seeds, split_specs(a.policies), a.answer_noise, a.arrivals, a.jobs,
                               a.allow_test, a.worlds)


def add_parsers(sub) -> None:
    p = sub.add_parser("prefdisco", help="simulated PrefDisco: baseline, oracle and discovery PrefAlign and NormAlign")
    p.add_argument("--seeds", default="0-7", help="world seeds (default 0-7)")
    p.add_argument("--policies", help="comma-separated: answer-now, ask-random, ask-top-weight, ask-bayes (default: all)")
    p.add_argument("--questions", type=int_in(0, MAX_TURNS), default=3,
                   help=f"question budget of each asking policy (0-{MAX_TURNS}, default 3)")
    p.add_argument("--answer-noise", type=float_in(0, 100), default=0.0, help="sd of the noise on stated values")
    p.add_argument("--cost", type=float_in(0, 1000),
                   help="ask-bayes stops when no question's expected PrefAlign gain reaches this "
                        "(default online.prefdisco_bayes.COST, 0.002)")
    p.add_argument("--scenarios", type=int_in(1, 100_000), help="scenarios drawn per world (default: every persona x task)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1, help="world seeds run in parallel processes")
    p.add_argument("--out", type=folder_arg, help="folder for the results (netCDF) and the curve plot")
    p.add_argument("--curve", action="store_true", help=f"also NormAlign against budgets of 0-{MAX_TURNS} questions")
    p.set_defaults(fn=cmd_prefdisco)

    p = sub.add_parser("prefdisco-validate", help="ask-bayes's beliefs against NUTS and against the simulated truth")
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0, help="world seed (and the seed of the checks)")
    p.add_argument("--world", help="a PrefDisco world file (netCDF) instead of the seed's world")
    p.add_argument("--scenarios", type=int_in(1, 100_000), default=8, help="scenarios checked against NUTS (default 8)")
    p.add_argument("--truth-scenarios", type=int_in(1, 100_000),
                   help="scenarios checked against the simulated truth (default: all)")
    p.add_argument("--questions", type=int_in(0, MAX_TURNS), default=3,
                   help=f"question budget (0-{MAX_TURNS}, default 3)")
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
    p.add_argument("--answer-noise", type=float_in(0, 100), default=0.5,
                   help="sd of the students' answers, logits (default 0.5)")
    p.add_argument("--arrivals", type=int_in(1, MAX_ARRIVALS), help="only the first N arrivals")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=1)
    common_options(p, store=False)
    p.set_defaults(fn=cmd_combined)
