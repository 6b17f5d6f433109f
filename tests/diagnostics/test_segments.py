"""Per-segment figures: the masks cover what they say, a score over every arrival is the run's score, the
worst switch is the lowest, and `stats` prints the table for a world with segments only."""
import numpy as np
import pytest

from diagnostics.segments import (arrival_segments, format_segment_table, masked_score, segment_table, switch_masks,
                                  switch_starts)
from online.replay import replay
from tdmodels.stress_knobs import StressKnobs
from tdmodels.stress_worlds import build_stress_world
from tutorduel.cli import main


def test_switch_masks_hold_the_first_arrivals_after_each_switch_and_stop_at_the_next():
    seg = np.array([0] * 7 + [1] * 3 + [2] * 8)
    assert switch_starts(seg) == [7, 10]
    masks = switch_masks(seg, first=5)
    assert [np.flatnonzero(m).tolist() for m in masks] == [[7, 8, 9], [10, 11, 12, 13, 14]]
    assert switch_masks(np.zeros(9, dtype=int)) == []
    with pytest.raises(ValueError, match="an integer >= 1"):
        switch_masks(seg, first=0)


def _row(regret, floor, rand):
    return {"per_user": {"regret": list(regret), "floor": list(floor), "random": list(rand)}}


def test_the_score_over_every_arrival_is_the_run_score_and_over_some_is_theirs():
    w = build_stress_world(StressKnobs(arrivals=30, block_length=10), 0, "s")
    row = replay(w, 0, "no-transfer")
    assert masked_score(row, np.ones(30, bool)) == pytest.approx(row["score"], abs=1e-9)
    toy = _row([1.0, 3.0, 2.0], [0.0, 1.0, 0.0], [2.0, 5.0, 4.0])
    assert masked_score(toy, np.array([False, True, True])) == pytest.approx(100 * (9 - 5) / (9 - 1))


def test_the_worst_switch_is_the_one_with_the_lowest_mean_and_pairs_are_differences():
    seg = np.array([0, 0, 1, 1, 2, 2])
    good = _row([1, 1, 1, 1, 1, 1], [0] * 6, [2] * 6)                 # score 50 everywhere
    bad_second = _row([1, 1, 1, 1, 2, 2], [0] * 6, [2] * 6)           # 0 after the second switch
    lines = segment_table({"a": {0: good, 1: good}, "b": {0: bad_second, 1: good}}, seg, against="a", first=2)
    b = next(ln for ln in lines if ln["name"] == "b")
    assert b["worst_switch"]["arrival"] == 4 and b["worst_switch"]["mean"] == pytest.approx(25.0)
    assert b["worst_switch_diff"]["mean"] == pytest.approx(-25.0) and b["worst_switch_diff"]["arrival"] == 4
    assert b["after_diff"][0] == pytest.approx(-12.5)
    text = format_segment_table(lines, first=2)
    assert "first 2 after a switch" in text and "paired against a" in text


def test_stats_prints_segments_for_a_world_that_has_them_only(env_dirs, capsys):
    assert main(["worlds", "stress", "--name", "drifting", "--arrivals", "24", "--block-length", "8"]) == 0
    assert main(["worlds", "stress", "--name", "steady", "--arrivals", "24"]) == 0
    for w in ("drifting", "steady"):
        assert main(["replay", "--world", w, "--seeds", "0-1", "--policies", "no-transfer,coduel"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "drifting", "--against", "no-transfer"]) == 0
    out = capsys.readouterr().out
    assert "per segment (2 switches, at arrivals 8, 16)" in out and "paired against no-transfer" in out
    assert "per block, against no-transfer:" in out and "| block (arrival) | first arrival | arrivals 2-5 |" in out
    assert "per block, against coduel:" in out and "no-transfer minus coduel, paired over 2 seed(s)" in out
    assert main(["stats", "--world", "steady"]) == 0
    assert "per segment" not in capsys.readouterr().out
    figures = env_dirs / "figs"
    assert main(["stats", "--world", "drifting,steady", "--curves", str(figures)]) == 0
    assert f"recovery after a change: {figures / 'recovery-drifting.png'}" in capsys.readouterr().out
    assert sorted(p.name for p in figures.iterdir()) == ["curves-drifting.png", "curves-steady.png",
                                                         "recovery-drifting.png"]
    assert arrival_segments(build_stress_world(StressKnobs(arrivals=5), 0, "s"), 5).tolist() == [0] * 5


def test_a_segment_score_without_random_excess_reads_undefined_not_nan():
    from diagnostics.segments import format_segment_table

    line = {"name": "p", "n": 2, "after": (float("nan"), float("nan")), "rest": (50.0, 1.0),
            "worst_switch": {"arrival": 4, "mean": float("nan"), "spread": float("nan")},
            "against": "q", "n_common": 2, "after_diff": (float("nan"), float("nan")), "rest_diff": (1.0, 0.5),
            "worst_switch_diff": {"arrival": 4, "mean": float("nan"), "spread": float("nan")}}
    text = format_segment_table([line])
    assert "nan" not in text and text.count("undefined (no random excess)") == 4


def test_block_parts_cover_each_blocks_first_arrival_the_next_four_and_the_rest():
    from diagnostics.segments import block_part_masks

    seg = np.array([0] * 7 + [1] * 3 + [2] * 8)
    parts = [(a, [np.flatnonzero(m).tolist() for m in ms]) for a, ms in block_part_masks(seg)]
    assert parts == [(0, [[0], [1, 2, 3, 4], [5, 6]]), (7, [[7], [8, 9], []]),
                     (10, [[10], [11, 12, 13, 14], [15, 16, 17]])]


def test_a_long_block_table_shows_its_ends_and_a_verdict_counts_what_it_does_not_name():
    from diagnostics.segments import SHOWN_BLOCKS, SHOWN_FAILURES, _verdict, block_table, format_block_table

    seg = np.repeat(np.arange(100), 2)                                 # 100 blocks of 2 arrivals
    base = _row([1] * 200, [0] * 200, [2] * 200)
    worse = _row([1, 1.5] * 100, [0] * 200, [2] * 200)                 # every block's arrival 2 at 25
    text = format_block_table(block_table({"nt": {0: base}, "p": {0: worse}}, seg, "nt"))
    rows = [r for r in text.splitlines() if r.startswith("| ") and not r.startswith("| block")]
    assert len(rows) == SHOWN_BLOCKS + 1 and f"| ... {100 - SHOWN_BLOCKS} more blocks" in text
    assert rows[0].startswith("| 0 |") and rows[-1].startswith("| 198 |")
    fails = [f"block at {i}, arrivals 2-5: -25.0 < -10" for i in range(100)]
    assert _verdict(fails).endswith(f"; and {100 - SHOWN_FAILURES} more") and _verdict([]).startswith("every")


def test_block_table_pairs_each_part_and_names_the_blocks_below_the_floors():
    from diagnostics.segments import block_table, format_block_table, recovery_failures

    seg = np.array([0] * 6 + [1] * 6)
    base = _row([1] * 12, [0] * 12, [2] * 12)                          # score 50 on every part
    worse = [1] * 6 + [1, 1.2, 1.2, 1.2, 1.2, 1.05]                     # block 2: 2-5 at 40, 6 on at 47.5
    lines = block_table({"nt": {0: base, 1: base}, "p": {0: _row(worse, [0] * 12, [2] * 12), 1: base}}, seg, "nt")
    (line,) = lines
    assert line["n_common"] == 2 and [b["arrival"] for b in line["blocks"]] == [0, 6]
    first, early, late = line["blocks"][1]["parts"]
    assert first[0] == pytest.approx(0.0) and early[0] == pytest.approx(-5.0) and late[0] == pytest.approx(-1.25)
    assert recovery_failures(line) == []
    assert recovery_failures(line, (None, -4.0, -1.0)) == ["block at 6, arrivals 2-5: -5.0 < -4",
                                                            "block at 6, arrivals 6 on: -1.2 < -1"]
    text = format_block_table(lines)
    assert "p minus nt, paired over 2 seed(s)" in text and "| 6 | +0.0 [+0.0, +0.0] | -5.0 [" in text
    assert block_table({"p": {0: base}}, seg, "nt") == []
