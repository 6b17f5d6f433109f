"""The reference rows of a table (floor, random pairs, best fixed pairs, the per-user linear oracle), kept on
this machine between commands.

They are a function of the world's content, the seed, the truncation, the code that computes them
(``diagnostics.stats`` and what it imports) and the numerical libraries' versions, and
the oracle's per-user fits cost a sixth of a second a seed: `stats` printed the same reference rows at that
price on every call. Each seed's figures are kept under a digest of those four, in ``$TUTORDUEL_CACHE``
(default ``~/.cache/tutorduel``; beside the verified-row verdicts, outside any store), written atomically
with a SHA-256 over its key and figures, and read back only when that check holds and every figure is a
finite number of the expected names; anything else is recomputed. A cache that cannot be written costs only the recomputation.
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


def _key(world_id: str, seed: int, arrivals: int | None) -> str:
    return json.dumps(["tutorduel-references-3", world_id, int(seed), arrivals,
                       code_identity("diagnostics.stats").digest, np.__version__, scipy.__version__])


def _path(key: str):
    d = hashlib.sha256(key.encode()).hexdigest()
    return cache_root() / "references" / d[:2] / d[2:]


def _check(key: str, figures: dict) -> str:
    """SHA-256 over the entry's key and its figures (as written): an entry is read back only where both are
    what it says, so an edited figure, or an entry copied from another key, is recomputed."""
    return hashlib.sha256(json.dumps([key, figures], sort_keys=True).encode()).hexdigest()


def _entry(key: str, figures: dict) -> bytes:
    return json.dumps({"key": key, "figures": figures, "sha256": _check(key, figures)}, sort_keys=True).encode()


def _read(path, key: str) -> dict | None:
    try:
        got = json.loads(read_regular(path, 1 << 16))
    except (OSError, UnreadableFileError, ValueError, RecursionError):
        return None
    if not (isinstance(got, dict) and set(got) == {"key", "figures", "sha256"} and got["key"] == key):
        return None
    figures = got["figures"]
    ok = (isinstance(figures, dict) and set(figures) == set(REFERENCES)
          and all(isinstance(v, dict) and set(v) == set(_FIGURES)
                  and all(type(x) is float and math.isfinite(x) for x in v.values()) for v in figures.values()))
    return figures if ok and got["sha256"] == _check(key, figures) else None


def cached_reference_table(world, seeds, arrivals: int | None = None) -> dict[str, dict[int, dict]]:
    """``diagnostics.stats.reference_table(world, seeds, arrivals)``, each seed's figures read from the cache
    where they were computed before on this code, else computed and kept."""
    world_id = world_digest(world)
    out: dict[str, dict[int, dict]] = {name: {} for name in REFERENCES}
    for seed in seeds:
        key = _key(world_id, seed, arrivals)
        path = _path(key)
        figures = _read(path, key)
        if figures is None:
            fresh = reference_table(world, [seed], arrivals)
            figures = {name: fresh[name][seed] for name in REFERENCES}
            if all(math.isfinite(x) for v in figures.values() for x in v.values()):
                save_cache_file(path, _entry(key, figures))
        for name in REFERENCES:
            out[name][seed] = figures[name]
    return out
