"""Scores per student profile: each arrival's profile from the run's schedule, scores over a profile's arrivals."""
import copy

import numpy as np
import pytest

from diagnostics.profile_breakdown import arrival_profiles, format_profile_table, profile_table
from online.replay import replay
from online.schedule import make_schedule
from online.scoring import benchmark_score
from tutorduel.cli import main

ARRIVALS = 16


@pytest.fixture(scope="module")
def rows(dev_world):
    return {spec: {s: replay(dev_world, s, spec, arrivals=ARRIVALS) for s in (0, 1, 2)}
            for spec in ("random", "no-transfer")}


def test_each_arrival_gets_its_students_profile(dev_world, rows):
    row = rows["no-transfer"][1]
    students = make_schedule(dev_world, 1, ARRIVALS).student
    names = [str(dev_world["student_profile"].values[s]) for s in students]
    assert arrival_profiles(dev_world, row).tolist() == names
    short = copy.deepcopy(row)
    short["per_user"]["regret"] = short["per_user"]["regret"][:-1]
    with pytest.raises(ValueError, match="15 arrivals, the world's schedule gives 16"):
        arrival_profiles(dev_world, short)


def test_profile_scores_weighted_by_their_random_excess_give_the_run_score(dev_world, rows):
    """The profiles split a run's arrivals: their scores, weighted by each one's share of the random excess,
    add up to the run's score (seed by seed, so one seed a policy)."""
    for seed, row in rows["no-transfer"].items():
        lines = profile_table({"p": {seed: row}}, dev_world)
        who = arrival_profiles(dev_world, row)
        pu = {k: np.asarray(row["per_user"][k]) for k in ("regret", "floor", "random")}
        excess = {ln["profile"]: (pu["random"] - pu["floor"])[who == ln["profile"]].sum() for ln in lines}
        total = sum(excess[ln["profile"]] * ln["score"][0] for ln in lines) / sum(excess.values())
        assert total == pytest.approx(row["score"], rel=1e-9)
        assert sum(ln["arrivals"] for ln in lines) == ARRIVALS
        for ln in lines:
            m = who == ln["profile"]
            assert ln["score"][0] == pytest.approx(float(benchmark_score(pu["regret"][m].sum(), pu["floor"][m].sum(),
                                                                         pu["random"][m].sum())))


def test_paired_differences_are_seed_by_seed_score_differences(dev_world, rows):
    lines = profile_table(rows, dev_world, against="random")
    by = {(ln["name"], ln["profile"]): ln for ln in lines}
    for (name, profile), ln in by.items():
        if name == "random":
            assert "diff" not in ln
            continue
        mine = by[(name, profile)]
        theirs = by[("random", profile)]
        assert ln["n_common"] == ln["n"] == theirs["n"]
        assert ln["diff"][0] == pytest.approx(mine["score"][0] - theirs["score"][0], abs=1e-9)
    text = format_profile_table(lines)
    assert "paired against random" in text and "| no-transfer | " in text


def test_a_profile_with_no_random_excess_is_undefined_not_a_number(dev_world, rows):
    row = copy.deepcopy(rows["no-transfer"][0])
    who = arrival_profiles(dev_world, row)
    gone = who[0]
    for k in ("random", "floor", "regret"):
        row["per_user"][k] = [0.0 if p == gone else v for p, v in zip(who, row["per_user"][k])]
    lines = profile_table({"p": {0: row}}, dev_world)
    bad = next(ln for ln in lines if ln["profile"] == gone)
    assert bad["n"] == 0 and np.isnan(bad["score"][0])
    assert "undefined (no random excess)" in format_profile_table(lines)
    assert all(np.isfinite(ln["score"][0]) for ln in lines if ln["profile"] != gone)


def test_stats_by_profile_prints_the_table_and_names_a_world_with_too_many_profiles(env_dirs, capsys):
    assert main(["replay", "--world", "dev", "--seeds", "0-1", "--arrivals", "8", "--policies", "random,no-transfer"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "dev", "--arrivals", "8", "--against", "random", "--by-profile"]) == 0
    out = capsys.readouterr().out
    assert "per student profile" in out and "| no-transfer | " in out and "paired against random" in out
    assert main(["stats", "--world", "dev", "--arrivals", "8"]) == 0
    assert "per student profile" not in capsys.readouterr().out
    assert main(["worlds", "stress", "--name", "many", "--arrivals", "48", "--types", "1",
                 "--block-length", "1"]) == 0          # a fresh segment, so a profile of its own, for every student
    assert main(["replay", "--world", "many", "--seeds", "0", "--policies", "random"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "many", "--by-profile"]) == 0
    assert "per student profile: the world has 48 profiles, more than 40; not tabulated" in capsys.readouterr().out
