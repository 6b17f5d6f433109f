"""The reference rows of a table (floor, random pairs, best fixed pairs, the per-user linear oracle), kept on
this machine between commands.

They are a function of the world's content, the seed, the truncation, the code that computes them
(``diagnostics.stats`` and what it imports) and the numerical libraries' versions, and
the oracle's per-user fits cost a sixth of a second a seed: `stats` printed the same reference rows at that
price on every call. Each seed's figures are kept under a digest of those four, in ``$TUTORDUEL_CACHE``
(default ``~/.cache/tutorduel``; beside the verified-row verdicts, outside any store), written atomically
and read back only when every figure is a finite number of the expected names; anything else is
recomputed. A cache that cannot be written costs only the recomputation.
"""
from __future__ import annotations

import hashlib
import json
import math

import numpy as np
import scipy

from diagnostics.references import REFERENCES
from diagnostics.stats import reference_table
from online.code_identity import cache_root, code_identity
from tdmodels.atomic_file import save_cache_file
from tdmodels.file_read import UnreadableFileError, read_regular
from tdmodels.world import world_digest

_FIGURES = ("regret", "floor", "random", "excess", "score")


def _path(world_id: str, seed: int, arrivals: int | None):
    key = json.dumps(["tutorduel-references-2", world_id, int(seed), arrivals,
                      code_identity("diagnostics.stats").digest, np.__version__, scipy.__version__])
    d = hashlib.sha256(key.encode()).hexdigest()
    return cache_root() / "references" / d[:2] / d[2:]


def _read(path) -> dict | None:
    try:
        got = json.loads(read_regular(path, 1 << 16))
    except (OSError, UnreadableFileError, ValueError, RecursionError):
        return None
    ok = (isinstance(got, dict) and set(got) == set(REFERENCES)
          and all(isinstance(v, dict) and set(v) == set(_FIGURES)
                  and all(type(x) is float and math.isfinite(x) for x in v.values()) for v in got.values()))
    return got if ok else None


def cached_reference_table(world, seeds, arrivals: int | None = None) -> dict[str, dict[int, dict]]:
    """``diagnostics.stats.reference_table(world, seeds, arrivals)``, each seed's figures read from the cache
    where they were computed before on this code, else computed and kept."""
    world_id = world_digest(world)
    out: dict[str, dict[int, dict]] = {name: {} for name in REFERENCES}
    for seed in seeds:
        path = _path(world_id, seed, arrivals)
        figures = _read(path)
        if figures is None:
            fresh = reference_table(world, [seed], arrivals)
            figures = {name: fresh[name][seed] for name in REFERENCES}
            if all(math.isfinite(x) for v in figures.values() for x in v.values()):
                save_cache_file(path, json.dumps(figures).encode())
        for name in REFERENCES:
            out[name][seed] = figures[name]
    return out
