"""Compiling a learner's kernels in a second process while its first cell runs.

From an empty kernel cache, a CODuel cell spends most of its first run compiling: the kernels of
its pair rule (`select`) and those of its click update and its population refit (`update`,
`end_session`), one after the other, in one process. A sweep whose cache is cold therefore starts a
helper process beside its workers that drives each learner it is about to run through `update` and
`end_session` only, never `select`, on the first arrivals of the cell's own world (the same feature
arrays, so the same compiled signatures). The kernels it compiles land in the on-disk cache
(``inference.kernel_cache``), where the worker loads them when it first needs them, while it
compiles the pair rule itself. The helper's pairs and clicks are thrown away; it changes no row
(a kernel it has not finished is compiled by the worker as before, the same machine code).

Only the toolkit's registered policies are warmed: a plug-in's code runs only in its own worker.
A learner once warmed leaves a marker in the cache folder, so later sweeps start no helper for it.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from tdmodels.atomic_file import save_cache_file

WARM_SESSIONS = 24      # sessions driven: past the thresholds of the toolkit's learners (gate, recalibration)


def _marker(spec: str) -> Path | None:
    """The file that says this canonical spec's kernels were warmed into the configured cache (None where
    no cache folder is configured, or kernels are not cached on disk)."""
    from inference.kernel_cache import disk_cache

    folder = os.environ.get("NUMBA_CACHE_DIR")
    if not folder or not disk_cache():
        return None
    return Path(folder) / "warmed" / hashlib.sha256(spec.encode()).hexdigest()[:24]


def specs_to_warm(specs) -> list[str]:
    """The canonical specs among `specs` (in order, once each) worth a helper: registered policies whose
    kernels were not warmed into the configured on-disk cache yet. Empty where kernels are not cached
    on disk (a helper's work would be lost)."""
    from online.registry import registered_target

    out = []
    for spec in dict.fromkeys(specs):
        marker = _marker(spec)
        if marker is not None and registered_target(spec) is not None and not marker.exists():
            out.append(spec)
    return out


def warm_learners(source: str, digest: str, specs: list[str]) -> None:
    """Drive each spec's learner through `update` and `end_session` on the first `WARM_SESSIONS` arrivals of
    the world in file `source` (content `digest`), seed 0, with pairs of its own: its kernels are compiled
    into the cache. Marks each spec done. A task for a helper process; raises what the learner raises."""
    from online.replay import prepare_run
    from online.sweep_cell import load_world_once

    world = load_world_once(source, digest)
    sessions = min(WARM_SESSIONS, int(world.attrs["arrivals"]))
    for spec in specs:
        _drive(prepare_run(world, 0, spec, sessions))
        marker = _marker(spec)
        if marker is not None and sessions == WARM_SESSIONS:    # a shorter world left later thresholds cold
            save_cache_file(marker, b"")


def _drive(run) -> None:
    learner, sched = run.learner, run.sched
    N, S = sched.question.shape
    K = run.feats.shape[-2]
    rng = np.random.default_rng(0)
    state = learner.init(run.ctx)
    for a in range(N):
        state, _ = learner.start_session(state, rng)
        for t in range(S):
            q = sched.question[a, t]
            i = (a + t) % K
            j = (i + 1 + t % (K - 1)) % K
            y = int(sched.uniform[a, t] < run.probs[sched.student[a], q, i, j])
            state, _ = learner.update(state, run.feats[q], (i, j), y)
        state, _ = learner.end_session(state)
