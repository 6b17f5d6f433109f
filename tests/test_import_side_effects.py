"""Importing any module of the toolkit changes no global state: JAX's config, XLA flags and
matplotlib's backend are what a fresh interpreter has."""
import subprocess
import sys

import pytest

PROBE = r"""
import importlib, json, os, pkgutil, sys
before = {"xla": os.environ.get("XLA_FLAGS"), "mpl": os.environ.get("MPLBACKEND")}
import jax, matplotlib
x64, backend = jax.config.jax_enable_x64, matplotlib.rcParams["backend"]
names = []
for pkg in ("tdmodels", "inference", "online", "diagnostics", "tutorduel"):
    mod = importlib.import_module(pkg)
    names.append(pkg)
    for info in pkgutil.walk_packages(mod.__path__, pkg + "."):
        importlib.import_module(info.name)
        names.append(info.name)
print(json.dumps({"modules": len(names), "x64": [x64, jax.config.jax_enable_x64],
                  "xla": [before["xla"], os.environ.get("XLA_FLAGS")],
                  "backend": [backend, matplotlib.rcParams["backend"]],
                  "devices": jax.local_device_count()}))
"""


def test_importing_every_module_changes_nothing():
    import json

    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, env=_clean_env())
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["modules"] > 60
    assert seen["x64"] == [False, False]
    assert seen["xla"][0] == seen["xla"][1]
    assert seen["backend"] == ["svg", "svg"]          # nothing switched the backend the user chose
    assert seen["devices"] == 1


def _clean_env():
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_ENABLE_X64")}
    return {**env, "MPLBACKEND": "svg"}


FIT = r"""
import jax, numpy as np, numpyro, numpyro.distributions as dist
from inference.nuts import run_nuts

def model():
    numpyro.sample("x", dist.Normal(0.0, 1.0))

idata = run_nuts(model, chains=2, warmup=50, draws=50)
print(idata.posterior["x"].dtype, jax.config.jax_enable_x64)
"""


@pytest.mark.slow
def test_a_fit_without_configuration_is_float64_and_leaves_jax_alone():
    out = subprocess.run([sys.executable, "-c", FIT], capture_output=True, text=True, check=True, env=_clean_env())
    assert out.stdout.split()[-2:] == ["float64", "False"]
