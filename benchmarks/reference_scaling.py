"""The per-user NUTS reference's time and peak memory as a run's users grow, each size in a fresh process.

The run (CODuel on a stress preset built with as many arrivals as the largest size; by default
stress-unstructured, 1,000 arrivals) is replayed once, in the parent,
and its click log written to a file; each child reads it, fits the reference on the first n users
(``inference.user_reference.fit_users``, the defaults: 4 chains x (1000 + 1000)) and reports the fit's
seconds and the process's peak resident set while it ran (the imports' and the log's resident memory
included; the high-water mark is reset after loading where Linux allows it). The reference figure of each
row is the smallest size's, so the ratios say how time and memory grow with the users. Each process compiles
the sampler (seconds), which its time includes: at a few users (`--quick`) that is most of it.
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.measure import Ratio
from benchmarks.memory import PEAK_READ, PEAK_RESET

_CHILD = """
import json, sys, time
from inference import configure_jax
configure_jax(4)
from inference.kernel_cache import configure_kernel_cache
configure_kernel_cache()
from online.clicklog import load_click_log
from inference.user_reference import fit_users
from inference.health import stored_health
from tdmodels.priors import MixturePrior
path, n = json.loads(sys.argv[1])
log = load_click_log(path)
z, y = log.recalibrated_design(slice(None, n))
prior = MixturePrior(*(a[:n] for a in log.priors))
""" + PEAK_RESET + """
t = time.perf_counter()
idata = fit_users(z, y, prior)
seconds = time.perf_counter() - t
""" + PEAK_READ + """
print(json.dumps({"seconds": seconds, "peak_mib": peak, "units": int(idata["units"].sizes["unit"]),
                  "health": stored_health(idata).line()}))
"""


def _fit(path: str, n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([path, n])], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"reference benchmark: the fit of {n} users failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def measure_reference_scaling(world: str = "stress-unstructured", users: tuple[int, ...] = (100, 300, 1000),
                              spec: str = "coduel") -> list[Ratio]:
    """Rows "reference, n users": seconds per 100 users and peak MiB, each against the smallest size's. `world`: a
    roster, or a stress preset built with as many arrivals as the largest size (a roster's students cannot fill
    more arrivals than it has)."""
    from online.clicklog import save_click_log
    from online.replay import replay_logged

    n_max = max(users)
    if world.startswith("stress-"):
        from tdmodels.stress_knobs import preset_knobs
        from tdmodels.stress_worlds import build_stress_world

        roster = build_stress_world(preset_knobs(world)._replace(arrivals=max(n_max, 2)), name=f"{world}-{n_max}")
    else:
        from tdmodels.simulator import build_roster

        roster = build_roster(world)
    _, log = replay_logged(roster, 0, spec, n_max)
    with tempfile.TemporaryDirectory(prefix="tutorduel-reference-") as tmp:
        path = str(save_click_log(log, Path(tmp) / "run.clicks.nc"))
        fits = {n: _fit(path, n) for n in sorted(users)}
    first = min(users)
    base = fits[first]
    rows = []
    for n, f in fits.items():
        note = f"{roster.attrs['roster']} seed 0, {spec}; {f['units']:,} units; {f['health']}"
        rows.append(Ratio("reference", f"per 100 users, {n} users", 100 * f["seconds"] / n,
                          f"per 100 users, {first} users", 100 * base["seconds"] / first, note=note))
        rows.append(Ratio("reference", f"peak memory, {n} users", f["peak_mib"], f"peak memory, {first} users",
                          base["peak_mib"], unit="MiB", note="peak resident set while the reference ran"))
    return rows
