"""Planning a sweep: its cells and their store identities, the seed ranges, and every check a sweep
makes before any cell runs (sizes, policies, worlds, memory, the store)."""
from __future__ import annotations

import numbers
import re
from dataclasses import dataclass, field

from online.code_identity import policy_code
from online.registry import make_learner, policy_spec, resolve
from online.replay import arrivals_limit
from online.store import CellKey, CorruptRowError, RunStore
from online.time_limit import time_limit
from tdmodels.errors import InputError, check_flag
from tdmodels.limits import MAX_SEED
from tdmodels.rosters import open_world, reserved_name, world_file, world_name
from tdmodels.run_inputs import check_run_memory
from tdmodels.world import world_digest

MAX_SEEDS = 1_000_000            # a seed list longer than this is refused outright
CONFIRM_CELLS = 10_000           # a sweep over more cells needs confirm=True (--yes)
MAX_CELLS = 1_000_000            # even with confirm: one row file per cell


class SweepError(InputError):
    """A sweep that cannot start: too many cells, an unreachable scheduler, bad executor options."""


@dataclass(frozen=True)
class Cell:
    """One run of a sweep, with its store identity."""
    world: str                  # the name the world was asked for
    digest: str                 # its content digest
    seed: int
    policy: str                 # canonical spec
    code: str                   # the policy's code digest
    arrivals: int | None = None  # None: the full run; else the first `arrivals` arrivals

    @property
    def key(self) -> CellKey:
        return CellKey(self.digest, self.seed, self.policy, self.code, self.arrivals)

    def __str__(self):
        cut = f" (first {self.arrivals} arrivals)" if self.arrivals is not None else ""
        return f"{self.world} seed {self.seed} {self.policy}{cut}"


@dataclass
class SweepResult:
    """What a sweep did with each cell: computed, already stored, failed, damaged rows moved aside, other code versions kept, not finished."""
    done: list = field(default_factory=list)        # cells computed now
    cached: list = field(default_factory=list)      # cells already in the store
    failed: list = field(default_factory=list)      # (cell, message)
    corrupt: list = field(default_factory=list)     # (message, where the damaged file was moved)
    superseded: list = field(default_factory=list)  # (cell, [paths of rows of other code versions, kept])
    interrupted: list = field(default_factory=list)  # cells not finished when the sweep was stopped
    worlds: dict = field(default_factory=dict)      # each world as named -> the Dataset the sweep ran on


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C during a sweep; `.result` holds what was stored before it."""

    def __init__(self, result: SweepResult):
        super().__init__("sweep interrupted")
        self.result = result


def _seed_ranges(text: str) -> list[tuple[int, int]]:
    out = []
    for part in str(text).split(","):
        m = re.fullmatch(r"\s*([0-9]{1,19})\s*(?:-\s*([0-9]{1,19})\s*)?", part)
        if not m or (m.group(2) is not None and int(m.group(2)) < int(m.group(1))):
            raise InputError(f"seed range {text!r}: cannot parse {part.strip()[:40]!r}; use e.g. 0-7 or 0-3,8,10-11 "
                             f"(non-negative)")
        lo = int(m.group(1))
        hi = int(m.group(2) or lo)
        if hi > MAX_SEED:
            raise InputError(f"seed range {text[:60]!r}: seed {hi} is above {MAX_SEED} (seeds are stored as int64)")
        out.append((lo, hi))
    return out


def parse_seeds(text: str, limit: int = MAX_SEEDS, what: str = "in one sweep") -> list[int]:
    """'0-7', '3', '0-3,8,10-11' -> sorted unique seeds; ValueError naming the bad part or a list over `limit`
    (MAX_SEEDS for a sweep; commands that compute references per seed in one process allow fewer)."""
    if not isinstance(text, str) or len(text) > 10_000:
        raise InputError(f"seed range {str(text)[:60]!r}: give a text such as 0-7 or 0-3,8,10-11 (at most 10,000 "
                         f"characters)")
    ranges = _seed_ranges(text)
    if sum(hi - lo + 1 for lo, hi in ranges) > limit:
        raise InputError(f"seed range {text[:60]!r}: {sum(hi - lo + 1 for lo, hi in ranges):,} seeds; at most "
                         f"{limit:,} {what}")
    seeds = set()
    for lo, hi in ranges:
        seeds.update(range(lo, hi + 1))
    return sorted(seeds)


def plan_sweep(worlds: list[str], seeds: list[int], specs: list[str], store: RunStore, allow_test: bool = False,
               arrivals: int | None = None, worlds_dir=None, keep_clicks: bool = False, copies: int = 1,
               confirm: bool = False, time_limit_s: float | None = None):
    """Check everything a sweep needs before any cell runs; return (cells to run, world files by digest, the
    worlds by digest, result so far). A spec whose import and construction here take longer than `time_limit_s`
    (the cell time limit) stops the sweep (``online.time_limit``)."""
    allow_test, keep_clicks, confirm = (check_flag(n, v) for n, v in (("allow_test", allow_test),
                                                                      ("keep_clicks", keep_clicks), ("confirm", confirm)))
    if isinstance(worlds, str) or isinstance(specs, str) or isinstance(seeds, str):
        raise SweepError("worlds, seeds and specs are lists (a single name is [name]; seeds: parse_seeds('0-7'))")
    if not isinstance(store, RunStore):
        raise SweepError(f"store {store!r}: give an online.store.RunStore")
    if not worlds or not seeds or not specs:
        raise SweepError("a sweep needs at least one world, one seed and one policy")
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, numbers.Integral) or not 0 <= s <= MAX_SEED]
    if bad:
        raise SweepError(f"seed {bad[0]!r}: seeds are integers in [0, {MAX_SEED}]")
    n = len(worlds) * len(seeds) * len(specs)
    if n > MAX_CELLS:
        raise SweepError(f"{n:,} cells ({len(worlds)} world(s) x {len(seeds):,} seeds x {len(specs)} policies): "
                         f"at most {MAX_CELLS:,} in one sweep; split it")
    if n > CONFIRM_CELLS and not confirm:
        raise SweepError(f"{n:,} cells ({len(worlds)} world(s) x {len(seeds):,} seeds x {len(specs)} policies); "
                         f"pass --yes to run more than {CONFIRM_CELLS:,}")
    parsed, codes = [], {}
    for s in specs:          # an unknown policy, a wrong setting or a plug-in that hangs stops the sweep before any work
        with time_limit(time_limit_s, f"policy {s!r}: importing and constructing it"):
            ps = policy_spec(s)
            make_learner(ps.canonical)
            codes[ps.canonical] = policy_code(resolve(ps.target)).digest
        parsed.append(ps)
    canon = list(dict.fromkeys(ps.canonical for ps in parsed))
    store.check_writable()
    res, todo, sources, loaded = SweepResult(), [], {}, {}
    for w in worlds:
        ds = open_world(w, allow_test=allow_test, directory=worlds_dir, copies=copies)
        digest, limit, name = world_digest(ds), arrivals_limit(ds, arrivals), world_name(w)
        if reserved_name(name) and name != str(ds.attrs["roster"]):
            raise SweepError(f"world {w}: a file named like the toolkit's world {name!r} holds world "
                             f"{str(ds.attrs['roster'])!r}; its rows would be shown under a name that is not theirs "
                             f"(rename the file)")
        check_run_memory(ds, limit or int(ds.attrs["arrivals"]), f"a run on world {name!r}")
        res.worlds[w] = ds
        if digest in sources:          # the same world given twice (two names or paths): its cells once
            continue
        sources[digest] = str(world_file(w, worlds_dir).resolve())
        loaded[digest] = ds
        store.note_world(digest, name, {"roster": str(ds.attrs["roster"]), "students": ds.sizes["student"],
                                        "questions": ds.sizes["question"], "arrivals": int(ds.attrs["arrivals"])})
        for seed in seeds:
            for spec in canon:
                cell = Cell(name, digest, int(seed), spec, codes[spec], limit)
                try:
                    row = store.get(cell.key)
                except CorruptRowError as exc:
                    res.corrupt.append((str(exc), store.quarantine(store.path(cell.key))))
                    row = None
                if row is not None and (not keep_clicks or store.clicks_path(cell.key).exists()):
                    res.cached.append(cell)
                    continue
                todo.append(cell)
                others = store.other_versions(cell.key)
                if others and row is None:
                    res.superseded.append((cell, others))
    return todo, sources, loaded, res


def is_plugin(spec: str) -> bool:
    """Whether a canonical spec's policy comes from outside this toolkit (a researcher's plug-in)."""
    from online.code_identity import PROJECT_PACKAGES
    from online.registry import REGISTRY

    target = policy_spec(spec).target
    return REGISTRY.get(target, target).split(":")[0].split(".")[0] not in PROJECT_PACKAGES

