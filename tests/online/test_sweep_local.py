"""The local executor: workers started while the sweep is planned, the verdicts of the rows it stores, and the
helper that compiles update kernels beside the first cell."""
import json
import multiprocessing as mp
import os
import subprocess
import sys

import pytest

from online import registry
from online.kernel_warmup import specs_to_warm
from online.store import RunStore
from online.sweep import SweepError, run_sweep
from online.verify import known_good, log_digest
from tests.online.helpers import plugin_module


def _remembered(store: RunStore) -> list[bool]:
    paths = sorted(p for p in store.root.rglob("*.json") if p.name != "world.json")
    assert paths
    return [known_good(p.read_bytes(), log_digest(p)) for p in paths]


def test_rows_stored_by_a_sweep_that_ran_no_plugin_are_known_good(env_dirs, monkeypatch):
    """The tables after a replay then need no verifier process: this process made the fresh process's check."""
    monkeypatch.setattr(registry, "_PLUGINS_LOADED", set())
    st = RunStore()
    run_sweep(["dev"], [0, 1], ["random", "no-transfer"], st, arrivals=3, progress=False, keep_clicks=True)
    assert all(_remembered(st))


def test_a_sweep_that_loaded_a_plugin_leaves_every_verdict_to_a_fresh_process(env_dirs, monkeypatch, tmp_path):
    monkeypatch.setattr(registry, "_PLUGINS_LOADED", set())
    plugin_module(tmp_path, "latency_plugin", monkeypatch)
    st = RunStore()
    run_sweep(["dev"], [0], ["random", "latency_plugin:P"], st, arrivals=3, progress=False)
    assert registry.plugins_loaded() == {"latency_plugin"}
    assert not any(_remembered(st))


@pytest.mark.parametrize("bad", [dict(worlds=["no-such-world"]), dict(specs=["no-such-policy"]), dict(seeds=[-1])])
def test_a_sweep_refused_while_its_workers_start_leaves_no_process(env_dirs, bad):
    args = {**dict(worlds=["dev"], seeds=[0], specs=["random"]), **bad}
    with pytest.raises((SweepError, ValueError, FileNotFoundError)):
        run_sweep(args["worlds"], args["seeds"], args["specs"], RunStore(), arrivals=3, progress=False)
    assert mp.active_children() == []


def test_a_sweep_with_nothing_to_do_stops_the_workers_it_started(env_dirs):
    st = RunStore()
    run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    res = run_sweep(["dev"], [0], ["random"], st, arrivals=3, progress=False)
    assert res.cached and not res.done
    assert mp.active_children() == []


def test_only_registered_learners_are_warmed_and_only_into_a_cache_named_by_the_kernels(monkeypatch, tmp_path):
    from inference.kernel_cache import kernel_digest

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))        # not named by the kernels' digest
    assert specs_to_warm(["coduel", "no-transfer"]) == []
    folder = tmp_path / kernel_digest()
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(folder))
    assert specs_to_warm(["coduel", "plugin_mod:P", "coduel", "no-transfer"]) == ["coduel", "no-transfer"]
    from online.kernel_warmup import _marker

    _marker("coduel").parent.mkdir(parents=True)
    _marker("coduel").touch()
    assert specs_to_warm(["coduel", "no-transfer"]) == ["no-transfer"]


WARM_OR_PLAY = r"""
import json, os, sys
from inference.kernel_cache import configure_kernel_cache
configure_kernel_cache(sys.argv[1])
from numba.core import event
compiled, depth = [], [0]
class Top(event.Listener):
    def on_start(self, ev):
        depth[0] += 1
    def on_end(self, ev):
        depth[0] -= 1
        if depth[0] == 0:
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)
event.register("numba:compile", Top())
from online.kernel_warmup import warm_learners, specs_to_warm
from online.replay import replay
from tdmodels.rosters import open_world
from tdmodels.world import world_digest
what, spec, path = sys.argv[2:5]
world = open_world(path)
if what == "warm":
    warm_learners(path, world_digest(world), [spec])
else:
    replay(world, 0, spec, 30)
print(json.dumps({"compiled": compiled, "to warm": specs_to_warm([spec])}))
"""


def _warm_then_play(spec: str, tmp_path) -> dict:
    """The helper's task in one process, then the cell in another (as a worker loads the kernels from disk)."""
    from tdmodels.rosters import open_world, world_file

    open_world("dev", directory=tmp_path / "worlds")
    path = str(world_file("dev", tmp_path / "worlds").resolve())
    seen = {}
    for what in ("warm", "play"):
        out = subprocess.run([sys.executable, "-c", WARM_OR_PLAY, str(tmp_path / "numba"), what, spec, path],
                             capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        seen[what] = json.loads(out.stdout.strip().splitlines()[-1])
    return {"warmed": seen["warm"]["compiled"], "played": seen["play"]["compiled"], "again": seen["play"]["to warm"]}


def test_the_helpers_kernels_are_the_ones_the_cell_then_loads(tmp_path):
    """From an empty cache: what the helper compiled (update, end of session) the cell does not compile again,
    so the signatures it compiled are the cell's; the cell compiles its pair rule only."""
    seen = _warm_then_play("no-transfer", tmp_path)
    assert seen["warmed"] and not set(seen["warmed"]) & set(seen["played"])
    assert seen["again"] == []                                              # marked as warmed


@pytest.mark.slow
def test_coduels_update_and_population_kernels_compile_in_the_helper(tmp_path):
    seen = _warm_then_play("coduel", tmp_path)
    assert {"coduel_click", "laplace_units", "surrogate_estep", "recalibration_newton"} <= set(seen["warmed"])
    assert seen["played"] == ["coduel_pair"]
