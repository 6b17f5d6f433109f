"""The reference rows kept between commands are the ones computed afresh, and a damaged entry is recomputed."""
import json

import pytest

from diagnostics.stats import reference_table
from tutorduel.reference_cache import cached_reference_table


@pytest.fixture()
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache" / "references"


def test_cached_references_are_the_computed_ones(private_cache, dev_world):
    world = dev_world
    fresh = reference_table(world, [0, 1], 20)
    assert cached_reference_table(world, [0, 1], 20) == fresh          # computed, kept
    assert len([p for p in private_cache.rglob("*") if p.is_file()]) == 2
    assert cached_reference_table(world, [1, 0], 20) == fresh          # read back
    assert cached_reference_table(world, [0], 21) == reference_table(world, [0], 21)   # another truncation


@pytest.mark.parametrize("damage", ["", "{", "[]", '{"floor": 1}', None])
def test_a_damaged_entry_is_recomputed_not_believed(private_cache, damage, dev_world):
    world = dev_world
    right = cached_reference_table(world, [0], 20)
    [entry] = [p for p in private_cache.rglob("*") if p.is_file()]
    if damage is None:                       # the right names, a figure that is not a finite number
        got = json.loads(entry.read_text())
        got["figures"]["floor"]["score"] = float("nan")
        damage = json.dumps(got)
    entry.write_text(damage)
    assert cached_reference_table(world, [0], 20) == right


@pytest.mark.parametrize("forge", ["edited", "other key"])
def test_an_entry_of_the_right_shape_that_is_not_what_it_says_is_recomputed(private_cache, dev_world, forge):
    """An edited figure of a valid shape had changed the per-user oracle's score in stats."""
    right = cached_reference_table(dev_world, [0], 20)
    cached_reference_table(dev_world, [1], 20)
    entries = sorted((p for p in private_cache.rglob("*") if p.is_file()), key=lambda p: p.stat().st_mtime_ns)
    first = entries[0]
    if forge == "edited":
        got = json.loads(first.read_text())
        got["figures"]["linear-oracle"]["score"] += 7.0
        first.write_text(json.dumps(got))
    else:                                     # seed 1's entry (a valid one, for its own key) at seed 0's place
        first.write_bytes(entries[1].read_bytes())
    assert cached_reference_table(dev_world, [0], 20) == right


def test_a_cache_that_cannot_be_written_costs_only_the_work(tmp_path, monkeypatch, dev_world):
    (tmp_path / "cache").write_text("a file where the cache folder would be")
    monkeypatch.setenv("TUTORDUEL_CACHE", str(tmp_path / "cache"))
    world = dev_world
    assert cached_reference_table(world, [0], 20) == reference_table(world, [0], 20)


def test_a_pipe_planted_at_an_entry_is_not_read_and_not_replaced(private_cache, dev_world):
    import os

    right = cached_reference_table(dev_world, [0], 20)
    [entry] = [p for p in private_cache.rglob("*") if p.is_file()]
    entry.unlink()
    os.mkfifo(entry)                          # a read would block forever; a plain write would feed it
    assert cached_reference_table(dev_world, [0], 20) == right
    assert entry.is_fifo()
