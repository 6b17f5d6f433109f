import numpy as np
import pytest

from diagnostics.calibration_targets import bootstrap_means, format_targets, session_statistics, world_targets
from tutorduel.cli import main


def test_the_samples_statistics_are_the_ones_the_spec_reports(env_dirs, sample_path):
    from tdmodels.rosters import open_world

    assert main(["worlds", "import-sample", str(sample_path)]) == 0
    stats = session_statistics(open_world("sample"))
    assert len(stats["floor / session"]) == 48
    means = {k: float(v.mean()) for k, v in stats.items()}
    assert round(means["P at 0.1 (share)"], 3) == 0.186 and round(means["P at 0.9 (share)"], 3) == 0.238
    assert round(means["floor / session"], 2) == 2.36 and round(means["random excess / session"], 2) == 6.75
    assert round(means["best persona share: Socratic"] * 1152) == 401            # of 1,152 questions
    boot = bootstrap_means(stats, draws=500)
    assert all(lo < m < hi for m, lo, hi in boot.values())


def test_bootstrap_intervals_shrink_with_sessions_and_refuse_one():
    rng = np.random.default_rng(0)
    wide = bootstrap_means({"x": rng.normal(size=20)})["x"]
    narrow = bootstrap_means({"x": rng.normal(size=2000)})["x"]
    assert (narrow[2] - narrow[1]) < 0.3 * (wide[2] - wide[1])
    assert bootstrap_means({"x": np.full(5, 2.0)})["x"] == (2.0, 2.0, 2.0)
    with pytest.raises(ValueError, match="at least 2 sessions"):
        bootstrap_means({"x": np.ones(1)})


def test_world_rows_against_the_published_ones(dev_world):
    t = world_targets({"dev": dev_world}, range(2))
    assert [x.figure for x in t] == ["dev: best fixed pair (everyone)", "dev: per-user linear oracle"]
    assert [x.target for x in t] == [41.0, 85.0] and all(x.hi - x.lo == 6.0 for x in t)
    table = format_targets(t)
    assert "| dev: per-user linear oracle | 85.0 [82.0, 88.0] |" in table and "of 2 figures inside" in table


def test_the_targets_command_reads_held_out_rosters_only_when_allowed(env_dirs, capsys):
    assert main(["worlds", "targets", "--seeds", "0-1"]) == 0
    out = capsys.readouterr().out
    assert "held-out rosters left out" in out and "dev: best fixed pair (everyone)" in out
    assert "test_profiles" not in out.split("| figure")[1]
