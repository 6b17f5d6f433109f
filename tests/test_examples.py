"""Every script in examples/ runs with small arguments (numpyro's test_examples pattern)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = {
    "fit_click_model.py": ["--arrivals", "6", "--users", "3", "--chains", "2", "--warmup", "100", "--draws", "100",
                           "--out", "{tmp}/posterior.png"],
    "per_unit_against_joint_reference.py": ["--arrivals", "6", "--users", "3", "--chains", "2", "--warmup", "60",
                                            "--draws", "60"],
    "validate_coduel_beliefs.py": ["--arrivals", "12", "--users", "4", "--chains", "2", "--warmup", "100",
                                   "--draws", "100"],
    "my_policy_vs_coduel.py": ["--seeds", "3", "--arrivals", "30"],
    "sbc_click_model.py": ["--sims", "10", "--L", "19", "--chains", "2", "--warmup", "100", "--draws", "100",
                           "--out", "{tmp}/sbc.png"],
    "prefdisco_ask_bayes.py": ["--scenarios", "20"],
    "population_reference.py": ["--arrivals", "10", "--holdout", "3", "--chains", "2", "--warmup", "50",
                                "--draws", "100"],
    "bring_your_own_world.py": ["--students", "12", "--seeds", "2", "--arrivals", "20"],
    "oracle_population_prior.py": ["--seeds", "2", "--arrivals", "20"],
    "challenger_diagnostic.py": ["--seeds", "2", "--arrivals", "40"],
    "where_the_gain_sits.py": ["--world", "dev", "--arrivals", "20", "--store", "{tmp}/runs"],
    "gate_around_a_switch.py": ["--world", "dev", "--seeds", "2", "--arrivals", "30"],
    "recovery_after_switch.py": ["--world", "stress-lookalike", "--seeds", "2", "--arrivals", "60"],
    "which_learner_predicted.py": ["--seeds", "1", "--arrivals", "30"],
    "trace_user.py": ["--world", "dev", "--arrival", "30", "--seeds", "2", "--arrivals", "40"],
    "calibrate_simulator.py": ["--simulations", "10", "--wave-size", "3", "--jobs", "1"],
    "early_arrivals_against_the_paper.py": ["--seeds", "2", "--policies", "no-transfer,rucb", "--worlds", "{tmp}/w"],
}


def test_every_example_is_smoke_tested():
    assert sorted(p.name for p in (ROOT / "examples").glob("*.py")) == sorted(EXAMPLES)


# MCMC examples (each a NUTS, Gibbs or emulator fit, 20 s to 4 min) run in the slow set; the default set
# runs the others.
SLOW = {"fit_click_model.py", "validate_coduel_beliefs.py", "per_unit_against_joint_reference.py", "sbc_click_model.py",
        "population_reference.py",
        "calibrate_simulator.py", "bring_your_own_world.py"}


# What an example reads that commands make first (run in the example's folder, before it).
BEFORE = {"where_the_gain_sits.py": [["replay", "--world", "dev", "--seeds", "0-1", "--arrivals", "20",
                                      "--policies", "coduel,tempered-kg", "--store", "{tmp}/runs"]],
          "early_arrivals_against_the_paper.py": [["worlds", "import-sample", "{sample}", "--worlds", "{tmp}/w"],
                                                  ["worlds", "import-curves", "{curves}", "--worlds", "{tmp}/w"]]}


@pytest.mark.parametrize("script", [pytest.param(s, marks=pytest.mark.slow) if s in SLOW else s for s in sorted(EXAMPLES)])
def test_example_runs(script, tmp_path, sample_path, curves_path):
    args = [a.format(tmp=tmp_path) for a in EXAMPLES[script]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for command in BEFORE.get(script, []):
        command = [a.format(tmp=tmp_path, sample=sample_path, curves=curves_path) for a in command]
        before = subprocess.run([sys.executable, "-m", "tutorduel.cli", *command],
                                cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert before.returncode == 0, before.stderr[-3000:]
    out = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip()
