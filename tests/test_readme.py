"""The README's example policy runs as written."""
import re
import sys
from pathlib import Path

from online.replay import replay

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_policy_example_runs(dev_world, tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "class Favourite" in b)
    assert len(example.strip().splitlines()) <= 16
    (tmp_path / "readme_policy.py").write_text(example)
    monkeypatch.syspath_prepend(str(tmp_path))
    row = replay(dev_world, 0, "readme_policy:Favourite", arrivals=10)
    assert row["arrivals"] == 10 and -100 < row["score"] < 100
    sys.modules.pop("readme_policy", None)


def test_readme_bring_your_own_world_example_runs(env_dirs, monkeypatch, capsys):
    from tutorduel.cli import main

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "world_from_arrays(" in b)
    monkeypatch.chdir(env_dirs)                  # the example writes worlds/mine.nc; TUTORDUEL_WORLDS is env_dirs/worlds
    exec(compile(example, "README example", "exec"), {})
    assert main(["replay", "--world", "mine", "--seeds", "0", "--arrivals", "5",
                 "--policies", "random,no-transfer,coduel"]) == 0
    out = capsys.readouterr().out
    assert "3 cells computed" in out and "### mine" in out


def test_readme_learner_interface_example_runs(dev_world):
    import numpy as np

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "learner.init(Context" in b)
    ns = {"Phi": dev_world["features"].values[0], "rng": np.random.default_rng(0), "y": 1}
    exec(compile(example, "README learner example", "exec"), ns)
    assert ns["state"].mean.shape == (7,) and ns["pair"][0] != ns["pair"][1]


def test_readme_api_example_runs(env_dirs):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    example = next(b for b in blocks if "from diagnostics import" in b)
    ns = {}
    exec(compile(example.replace("arrivals=50", "arrivals=3").replace("0, \"coduel\", arrivals=50", "0, \"coduel\", arrivals=3"),
                 "README API example", "exec"), ns)
    assert ns["row"]["arrivals"] == 3 and ns["log"].n_users == 3
