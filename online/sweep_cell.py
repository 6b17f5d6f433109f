"""A sweep's cell as a worker computes it: the world loaded once per worker process (from its file,
or from the bytes a Dask task carries), the policy run, everything it raises turned into a failure."""
from __future__ import annotations

import importlib
import traceback

from online.protocol import PolicyOutputError
from online.registry import PolicySpecError
from online.replay import ScoreUndefinedError, replay, replay_logged
from tdmodels.world import WorldFormatError, read_world_file, validate_world, world_digest

# A cell's result as the parent reads it from a worker that ran a policy: a row (plain data) and a click log.
CELL_RESULT = frozenset({("online.clicklog", "ClickLog"), ("tdmodels.priors", "MixturePrior")})
_WORLDS: dict = {}               # worker-side cache: (source, digest) -> Dataset


def load_world_once(source, digest: str):
    """The world a worker computes on, loaded once per process: from a file path, or from a world file's
    bytes sent with a Dask task as (digest, bytes)."""
    key = source if isinstance(source, str) else source[0]
    if (key, digest) not in _WORLDS:
        _WORLDS.clear()              # one world at a time per worker process: sweeps go world by world
        if isinstance(source, str):
            _WORLDS[(key, digest)] = validate_world(read_world_file(source), source)
        else:
            _WORLDS[(key, digest)] = _world_from_bytes(source[1], digest)
    return _WORLDS[(key, digest)]


def compute_cell(source, digest: str, seed: int, spec: str, arrivals, keep_clicks: bool = False, code: str = ""):
    """One cell's (status, payload): ("ok", (row, log or None)) or ("error", message). Everything a policy
    raises becomes an error; KeyboardInterrupt is passed on (the sweep decides what it means)."""
    try:
        world = load_world_once(source, digest)
        if world_digest(world) != digest:
            where = source if isinstance(source, str) else "sent with the task"
            return "error", (f"the world file {where} changed since the sweep began (digest {world_digest(world)}, "
                             f"expected {digest}); rerun the sweep")
        row, log = replay_logged(world, seed, spec, arrivals) if keep_clicks else (replay(world, seed, spec, arrivals), None)
    except KeyboardInterrupt:
        raise
    except (PolicyOutputError, PolicySpecError, ScoreUndefinedError, WorldFormatError) as exc:
        return "error", str(exc)
    except SystemExit as exc:
        return "error", f"the policy called sys.exit({exc.code!r}); a policy must return, not end its process"
    except BaseException as exc:  # a researcher's policy can raise anything; report, keep the sweep going
        return "error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=4)}"
    if code and row["code"]["digest"] != code:
        return "error", (f"the worker ran code {row['code']['digest']}, this sweep expects {code} (the source changed "
                         f"during the sweep, or a Dask worker has another version installed)")
    return "ok", (row, log)


def warm_up(specs: tuple[str, ...] = ()) -> None:
    """Pay the replay's imports before any cell's clock starts (on a fresh Dask worker, a local worker that
    starts while the sweep is planned), and those of the registered policies among `specs` (their kernels'
    modules; a plug-in is never imported here)."""
    importlib.import_module("online.replay")
    from online.registry import ALIASES, PolicySpecError, registered_target, resolve

    for spec in specs:
        target = registered_target(spec)
        try:
            if target is not None:
                resolve(ALIASES[target][0] if target in ALIASES else target)
        except PolicySpecError:       # the sweep's planning names it
            pass


def _world_from_bytes(data: bytes, digest: str):
    """The world decoded from a world file's bytes (a Dask task's copy of the client's file)."""
    import io

    import xarray as xr

    with xr.open_dataset(io.BytesIO(data), engine="h5netcdf") as ds:
        world = ds.load()
    return validate_world(world, f"world {digest} (sent by the client)")

