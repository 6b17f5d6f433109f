"""Worlds have the same bytes on every machine: every roster and stress preset builds its published digest under
several OpenBLAS kernels every x86-64 CPU runs, and with the C library's and NumPy's newer code
paths turned off (what an older CPU would run)."""
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tdmodels import portable_math as pm
from tdmodels.roster_digests import ROSTER_DIGESTS, published_digest
from tdmodels.sample_roster import GENERATOR as REAL_GENERATOR
from tdmodels.simulator import ROSTERS
from tdmodels.simulator_params import GENERATOR_BASE
from tdmodels.stress_knobs import STRESS_PRESETS
from tdmodels.stress_worlds import GENERATOR as STRESS_GENERATOR

ROOT = Path(__file__).resolve().parents[2]
CALIBRATED = "sim-2+485bbdd151"
OLD_CPU = {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F",
           "NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX2 FMA3"}
KERNELS = {"Prescott": OLD_CPU, "Nehalem": {}, "Sandybridge": {}, "Haswell": {}}

BUILD = r"""
import json, sys
import numpy as np
from tdmodels.from_arrays import btl_probs, world_from_arrays
from tdmodels.rosters import read_simulator_file
from tdmodels.sample import load_sample
from tdmodels.simulator import ROSTERS, build_roster
from tdmodels.world import world_digest
cal = read_simulator_file("calibration/simulator.json")
names = sys.argv[2].split(",")
from tdmodels.simulator_params import SIM2_PARAMS
out = {"sim": {n: world_digest(build_roster(n)) for n in names},
       "sim2": {n: world_digest(build_roster(n, params=SIM2_PARAMS)) for n in names[:1]},
       "calibrated": {n: world_digest(build_roster(n, params=cal)) for n in names[:2]}}
rng = np.random.default_rng(7)
U = rng.uniform(0, 1, (5, 12, 4))
P = np.clip(btl_probs(U, 7.0) + rng.uniform(-0.05, 0.05, (5, 12, 4, 4)), 0.05, 0.95)   # follows U, with noise
out["arrays"] = [world_digest(world_from_arrays(U, session_length=6)),
                 world_digest(world_from_arrays(U, P, rater=rng.normal(size=(12, 4)), session_length=6))]
sample = load_sample(sys.argv[1])
out["sample"] = world_digest(sample)
from tdmodels.sample_roster import real_session_roster
out["real"] = [world_digest(real_session_roster(sample, r)) for r in (0, 1)]
from tdmodels.stress_knobs import STRESS_PRESETS
from tdmodels.stress_worlds import build_stress_world
out["stress"] = {p: world_digest(build_stress_world(k, 0, p, d)) for p, (k, d) in STRESS_PRESETS.items()
                 if p in sys.argv[3].split(",")}
print(json.dumps(out))
"""


def _build_under(kernel: str, extra: dict, sample: Path, rosters, stress) -> dict:
    env = {**os.environ, "OPENBLAS_CORETYPE": kernel, **extra}
    proc = subprocess.run([sys.executable, "-c", BUILD, str(sample), ",".join(rosters), ",".join(stress)], cwd=ROOT,
                          env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{kernel}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _check_kernels(sample_path, rosters, stress=("stress-drift",)):
    with ThreadPoolExecutor(2) as pool:
        got = dict(zip(KERNELS, pool.map(lambda k: _build_under(k, KERNELS[k], sample_path, rosters, stress),
                                         KERNELS)))
    for kernel, out in got.items():
        assert out["sim"] == {n: ROSTER_DIGESTS[GENERATOR_BASE][n] for n in rosters}, kernel
        assert out["sim2"] == {n: ROSTER_DIGESTS["sim-2"][n] for n in out["sim2"]}, kernel
        assert out["calibrated"] == {n: ROSTER_DIGESTS[CALIBRATED][n] for n in out["calibrated"]}, kernel
        assert out["sample"] == published_digest("site-sample", "sample"), kernel
        assert out["real"] == [published_digest(REAL_GENERATOR, f"real-sessions-{r}") for r in (0, 1)], kernel
        assert out["stress"] == {p: published_digest(STRESS_GENERATOR, p) for p in stress}, kernel
    assert len({json.dumps(out["arrays"]) for out in got.values()}) == 1, {k: v["arrays"] for k, v in got.items()}


def test_the_development_roster_builds_its_published_digests_under_every_kernel(sample_path):
    _check_kernels(sample_path, ["dev"])


@pytest.mark.slow
def test_every_roster_builds_its_published_digest_under_every_kernel(sample_path):
    _check_kernels(sample_path, list(ROSTERS), list(STRESS_PRESETS))


def test_every_roster_has_a_published_digest():
    assert set(ROSTER_DIGESTS[GENERATOR_BASE]) == set(ROSTERS) == set(ROSTER_DIGESTS[CALIBRATED])
    assert set(ROSTER_DIGESTS["sim-2"]) == set(ROSTERS)
    assert set(ROSTER_DIGESTS[STRESS_GENERATOR]) == set(STRESS_PRESETS)


def test_the_committed_calibration_names_the_published_generator():
    spec = json.loads((ROOT / "calibration" / "simulator.json").read_text())
    assert spec["generator"] == CALIBRATED


@pytest.mark.parametrize("f, ref, domain, ulps", [
    (pm.exp, np.exp, np.linspace(-700, 700, 200_001), 2),
    (pm.log, np.log, np.exp(np.linspace(-700, 700, 200_001)), 4),
    (pm.expit, lambda x: 1 / (1 + np.exp(-x)), np.linspace(-36, 36, 200_001), 4),
])
def test_portable_functions_are_within_a_few_ulps(f, ref, domain, ulps):
    got, want = f(domain), ref(domain)
    assert np.all(np.abs(got - want) <= ulps * np.spacing(np.maximum(np.abs(want), 1e-300)))


def test_portable_functions_at_the_edges():
    assert np.array_equal(pm.exp([-np.inf, np.inf, 0.0, 710.0, -746.0]), [0.0, np.inf, 1.0, np.inf, 0.0])
    assert np.isnan(pm.exp(np.nan)) and np.isnan(pm.log(-1.0)) and pm.log(0.0) == -np.inf and pm.log(1.0) == 0.0
    assert np.array_equal(pm.expit([np.inf, -np.inf, 0.0, 800.0, -800.0]), [1.0, 0.0, 0.5, 1.0, 0.0])


def test_portable_linear_algebra_matches_lapack():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(20, 6, 6))
    H = np.einsum("nij,nkj->nik", A, A) + np.eye(6)
    g = rng.normal(size=(20, 6))
    np.testing.assert_allclose(pm.solve_spd(H, g), np.linalg.solve(H, g[..., None])[..., 0], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pm.dot(A, g[:, None, :]), np.einsum("nij,nj->ni", A, g), rtol=1e-13)
    with pytest.raises(ValueError, match="positive definite"):
        pm.solve_spd(-H, g)
    s = pm.standardise(rng.normal(size=(5, 6)))
    np.testing.assert_allclose(s.mean(1), 0, atol=1e-15)
    np.testing.assert_allclose(s.std(1), 1)
    assert np.array_equal(pm.standardise(np.ones((2, 6))), np.zeros((2, 6)))
