"""Two samplers on the same population posterior: the Gibbs reference against NUTS on the marginalised
mixture, on the first N arrivals of a run where NUTS can converge, compared on every label-invariant
quantity in units of Monte Carlo error (``diagnostics.population_fit_checks.reference_agreement``).

    python scripts/population_two_samplers.py [--users 12] [--nuts-warmup 2000] [--nuts-draws 4000]

The clicks are CODuel's on dev seed 0. Both fits must be healthy for the comparison to count: two
samplers that share no code agreeing on a posterior is the evidence that the reference is right.
"""
from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from inference.nuts import configure_jax  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=12)
    ap.add_argument("--chains", type=int, default=4)
    ap.add_argument("--nuts-warmup", type=int, default=2000)
    ap.add_argument("--nuts-draws", type=int, default=4000)
    ap.add_argument("--minutes", type=float, default=20.0, help="the Gibbs fit's budget (it runs until healthy)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="population-two-samplers")
    a = ap.parse_args(argv)
    configure_jax(a.chains)
    from diagnostics.population_fit_checks import reference_agreement
    from inference.health import FitHealthWarning, stored_health
    from inference.model_fits import fit_population, stored_label_invariant
    from online.process_pool import map_in_workers
    from online.replay import replay_logged
    from tdmodels.simulator import build_roster

    _, log = replay_logged(build_roster("dev"), a.seed, "coduel", arrivals=a.users)
    z, y = log.recalibrated_design()
    out = Path(a.out)
    out.mkdir(exist_ok=True)
    fits, ok = {}, True
    for name, kw in (("gibbs", dict(sampler="gibbs", max_seconds=60 * a.minutes,
                                    map_chains=lambda fn, items: map_in_workers(fn, items, 2))),
                     ("nuts", dict(sampler="nuts", warmup=a.nuts_warmup, draws=a.nuts_draws))):
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitHealthWarning)
            fits[name] = fit_population(z, y, seed=a.seed, chains=a.chains, **kw)
        li = stored_label_invariant(fits[name])
        ok &= li.ok
        print(f"{name} on {a.users} users: {time.perf_counter() - t:.0f} s")
        if name == "nuts":
            print(f"  {stored_health(fits[name]).line()}")
        print("\n".join("  " + line for line in li.lines()), flush=True)
        fits[name].to_netcdf(str(out / f"{name}.nc"))
    agreement = reference_agreement(fits["gibbs"], fits["nuts"])
    print("\n".join(agreement.lines("gibbs", "nuts")))
    print(f"agree within 4.5 Monte Carlo errors everywhere: {agreement.agree()}; both healthy: {ok}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
