"""`fit` and `validate`: exact references on a stored run's clicks, and a learner's beliefs against them."""
from __future__ import annotations

from tdmodels.limits import MAX_ARRIVALS, MAX_FIT_ROUNDS, MAX_SESSION
from tutorduel.arg_types import MAX_DRAWS, MAX_JOBS, MAX_MINUTES, float_in, int_in, int_list_in
from tdmodels.errors import InputError
from tutorduel.cli.options import DEFAULT_JOBS, common_options, fit_options

DEFAULT_FIT_MINUTES = 30.0      # fit --model population: the time budget when neither minutes nor rounds are given


def cmd_fit(a) -> int:
    from inference.nuts import configure_jax

    configure_jax()                      # first: one host device per chain, float64, before JAX starts
    from online.store import RunStore
    from tdmodels.rosters import open_world
    from tutorduel.fit_report import fit_and_report

    world = open_world(a.world, allow_test=a.allow_test, directory=a.worlds)
    return fit_and_report(world, a.seed, a.policy, a.model, RunStore(a.store), strict=a.strict, prior=a.prior,
                          arrivals=a.arrivals, chains=a.chains, warmup=a.warmup, draws=a.draws, users=a.users,
                          sampler=a.sampler, thin=a.thin, jobs=a.jobs, max_rounds=a.max_rounds, chunk=a.chunk,
                          max_memory=a.max_memory,
                          max_minutes=DEFAULT_FIT_MINUTES if a.max_minutes is None and a.max_rounds is None
                          else a.max_minutes)


def cmd_validate(a) -> int:
    from inference.nuts import configure_jax

    configure_jax()                      # first: one host device per chain, float64, before JAX starts
    from online.store import RunStore
    from tdmodels.rosters import open_world
    from tutorduel.fit_report import validate_and_report

    world = open_world(a.world, allow_test=a.allow_test, directory=a.worlds)
    rounds = a.rounds or ()
    beliefs = tuple(b.strip() for b in a.beliefs.split(",")) if a.beliefs is not None else ()
    if a.seeds is not None:
        return _validate_seeds(a, world, rounds, beliefs)
    if a.scheduler is not None or a.dask_workers is not None:
        raise InputError("--scheduler and --dask-workers spread seeds over workers: give --seeds as well")
    return validate_and_report(world, a.seed, a.policy, RunStore(a.store), rounds=rounds, users=a.users,
                               arrivals=a.arrivals, chains=a.chains, warmup=a.warmup, draws=a.draws,
                               holdout=a.holdout, population_reference=a.population_reference,
                               reference_warmup=a.reference_warmup, reference_draws=a.reference_draws,
                               reference_thin=a.reference_thin, reference_minutes=a.reference_minutes, jobs=a.jobs,
                               beliefs=beliefs, chunk=a.chunk, max_memory=a.max_memory, exact_draws=a.exact_draws)


def _validate_seeds(a, world, rounds, beliefs) -> int:
    from inference.nuts import DEFAULT_DRAWS, DEFAULT_WARMUP
    from inference.user_reference import DEFAULT_CHUNK
    from online.store import RunStore
    from online.sweep import parse_seeds
    from tutorduel.fit_report import progress_line
    from tutorduel.validate_seeds import MAX_VALIDATE_SEEDS, print_seed_table, validate_seeds

    if a.population_reference:
        raise InputError("--population-reference runs one seed at a time: give --seed, not --seeds")
    seeds = parse_seeds(a.seeds, MAX_VALIDATE_SEEDS, "in one validation")
    figures = validate_seeds(world, seeds, a.policy, RunStore(a.store), jobs=a.jobs, scheduler=a.scheduler,
                             dask_workers=a.dask_workers, arrivals=a.arrivals, progress=progress_line,
                             max_memory=a.max_memory, users=a.users, chains=a.chains,
                             warmup=DEFAULT_WARMUP if a.warmup is None else a.warmup,
                             draws=DEFAULT_DRAWS if a.draws is None else a.draws, check_seed=0, rounds=list(rounds),
                             holdout=a.holdout, beliefs=list(beliefs),
                             chunk=DEFAULT_CHUNK if a.chunk is None else a.chunk, exact_draws=a.exact_draws)
    print_seed_table(figures)
    return 0


def reference_options(p) -> None:
    """The per-user reference's chunk and memory bound."""
    p.add_argument("--chunk", type=int_in(1, 100_000), metavar="UNITS",
                   help="users model: (user, component) units sampled together (default 64; a user's units are never "
                        "split); memory holds one chunk's draws")
    p.add_argument("--max-memory", type=float_in(0, 1 << 20, lo_open=True), metavar="GiB",
                   help="users model: refuse, before any sampling, a reference whose memory estimate exceeds this")


def add_parsers(sub) -> None:
    p = sub.add_parser("fit", help="NUTS reference fit of a model on the clicks of one run; writes netCDF")
    fit_options(p, "fit")
    p.add_argument("--policy", default="no-transfer", help="the policy whose clicks are fitted (default: no-transfer)")
    p.add_argument("--model", default="users", choices=["users", "population", "recalibration"])
    p.add_argument("--prior", default="policy", choices=["policy", "em"],
                   help="users' prior: the policy's own (default) or a mixture fitted by EM to the run's clicks")
    p.add_argument("--strict", action="store_true", help="fail (exit 1) when the fit misses a health threshold")
    p.add_argument("--sampler", default="gibbs", choices=["gibbs", "nuts"],
                   help="population model: the collapsed Gibbs sampler with split-merge moves (default; the exact "
                        "reference) or NUTS on the marginalised mixture (does not converge; for comparison)")
    p.add_argument("--thin", type=int_in(1, 10_000), default=1, help="population model, Gibbs: sweeps per stored draw")
    p.add_argument("--max-minutes", type=float_in(0, MAX_MINUTES),
                   help="population model, Gibbs: run the chains on in rounds (each extends them by what the "
                        "diagnostics' shortfall asks, keeping the draws so far) until every label-invariant diagnostic "
                        "passes or this many minutes are spent (default 30 without --max-rounds; 0: one run of "
                        "--warmup + --draws x --thin)")
    p.add_argument("--max-rounds", type=int_in(1, MAX_FIT_ROUNDS),
                   help="population model, Gibbs: at most this many rounds (a budget that does not depend on the "
                        "machine's speed; no time limit unless --max-minutes is given too)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=DEFAULT_JOBS,
                   help="population model, Gibbs: worker processes for the chains (default: the cores, at most 4)")
    reference_options(p)
    common_options(p)
    p.set_defaults(fn=cmd_fit)

    p = sub.add_parser("validate", help="check each user's online belief against a NUTS reference on the same clicks")
    fit_options(p, "validate")
    p.add_argument("--policy", default="coduel", help="a policy that records its beliefs (default: coduel)")
    p.add_argument("--rounds", type=int_list_in(1, MAX_SESSION), help="also check the beliefs after these many clicks, "
                                                                       "e.g. 6,12 (a NUTS fit each)")
    p.add_argument("--beliefs", help="also replay these online beliefs on the same clicks and check each against the "
                                      "same reference, side by side by arrival block: laplace, adf, laplace-is, ep, "
                                      "ep-corrected (comma-separated)")
    p.add_argument("--exact-draws", type=int_in(1_000, 10_000_000), default=0, metavar="N",
                   help="with --beliefs: one more row, each user's exact mixture by importance sampling with N draws "
                        "a component (e.g. 200000): what a Gaussian at the exact moments reaches, without the "
                        "reference's own spread")
    p.add_argument("--holdout", type=int_in(0, MAX_ARRIVALS), default=0,
                   help="also score the population prior on the run's last N arrivals (log predictive of their clicks)")
    p.add_argument("--population-reference", action="store_true",
                   help="with --holdout: also fit the hierarchical population model's exact reference (the Gibbs "
                        "sampler) on the other arrivals and compare batch EM and the online prior with it (density at "
                        "test points, held-out clicks, co-clustering, components, first pairs)")
    p.add_argument("--reference-warmup", type=int_in(1, MAX_DRAWS), help="the population reference's warm-up sweeps")
    p.add_argument("--reference-draws", type=int_in(1, MAX_DRAWS), help="the population reference's draws per chain")
    p.add_argument("--reference-thin", type=int_in(1, 10_000), default=1, help="the population reference's thinning")
    p.add_argument("--reference-minutes", type=float_in(0, MAX_MINUTES), default=30.0,
                   help="the population reference runs until healthy or this many minutes (0: one fixed run)")
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=DEFAULT_JOBS,
                   help="worker processes: with --seeds, seeds validated at once (each uses every core); otherwise "
                        "the population reference's chains")
    p.add_argument("--seeds", metavar="RANGE", help="validate each of these seeds (e.g. 0-7) and print the figures per "
                   "seed and pooled; a seed validated before with the same settings is read, not recomputed")
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="with --seeds: run the seeds on this Dask cluster "
                   "(this process alone writes the store; workers need tutorduel installed, not the worlds)")
    p.add_argument("--dask-workers", type=int_in(1, MAX_JOBS), metavar="N",
                   help="with --seeds: start a Dask LocalCluster of N worker processes")
    reference_options(p)
    common_options(p)
    p.set_defaults(fn=cmd_validate)
