"""What `stats`, `leaderboard` and `export` read from the run store: the rows of one world version,
one truncation and the current code of each policy, with a note for everything left out.

Only rows that verify (``online.verify``: pairs legal, clicks what the seed's uniforms give, every
figure recomputed) are counted. The check runs in a fresh process; a row that verified before on
this machine (same bytes) is not checked again, and a sweep that imported no plug-in has checked the
rows it stored itself (``online.sweep``). A row that fails is moved aside (``*.rejected``),
a click log that is not its row's too (``*.clicks.nc.rejected``), and both are reported."""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import NamedTuple

from online import phase_clock
from online.code_identity import policy_code
from online.registry import PolicySpecError, canonical_spec, resolve
from online.replay import arrivals_limit
from online.store import CannotMoveAsideError, CellKey, RunStore
from online.verify import BAD_LOG, BAD_ROW, OK, audit_in_fresh_process
from tdmodels.errors import check_flag
from tdmodels.world import world_digest


class StoredRows(NamedTuple):
    """Rows of the store to show, the notes on what was left out, and each policy's current code digest."""
    rows: list[dict]         # the rows to show
    notes: list[str]         # one line per kind of row left out or damaged
    codes: dict              # policy -> current code digest (None where the policy cannot be loaded here)


def current_code(policy_rows: list[dict], trusted=frozenset()) -> str | None:
    """The code digest the policy of these rows has now, or None where it is not looked up.

    Only this toolkit's registered policies and the targets in `trusted` (what the user named on the
    command line) are imported: a row's `target` is never imported on the row's say, since a store
    received from someone else could then make the reader import any module on its path."""
    from online.registry import REGISTRY

    target = policy_rows[0]["target"]
    if target not in REGISTRY and target not in REGISTRY.values() and target not in trusted:
        return None
    try:
        return policy_code(resolve(target)).digest
    except PolicySpecError:
        return None


def non_canonical(policy: str) -> str | None:
    """Why a resolvable policy's stored name is not its canonical spec (a default written out,
    settings out of order, a name of the same policy spelled otherwise), or None when it is: each
    policy is one line, under one name."""
    try:
        canonical = canonical_spec(policy)
    except PolicySpecError as exc:
        return f"which is not a policy spec here ({exc})"
    return None if canonical == policy else f"a non-canonical name of {canonical!r}"


def moved_aside(store: RunStore, path: Path) -> str:
    """Move a file that failed its check aside (``RunStore.reject``) and say where; in a store that cannot be
    written, leave it, say so, and go on (it is skipped, not counted)."""
    try:
        return f"moved aside to {store.reject(path)}"
    except CannotMoveAsideError as exc:
        return f"left in place ({exc.why}); skipped"


def apply_verdicts(store: RunStore, verdicts) -> tuple[set, list[str]]:
    """Act on ``online.verify.audit_rows`` verdicts: move failed rows and foreign click logs aside. Returns
    (paths of the rows that verified, one line per row that did not)."""
    good, lines = set(), []
    for path, verdict, message in verdicts:
        p = Path(path)
        if verdict == OK:
            good.add(p)
        elif verdict == BAD_ROW:
            lines.append(f"run row {p}: does not verify: {message}; {moved_aside(store, p)}")
        elif verdict == BAD_LOG:
            log = p.with_suffix(".clicks.nc")
            lines.append(f"run row {p}: {message}; the click log was {moved_aside(store, log) if log.exists() else log}")
            good.add(p)
        else:
            lines.append(f"run row {p}: not verified ({message}); not counted")
    return good, lines


def verified_rows(store: RunStore, rows: list[dict], worlds: dict) -> tuple[list[dict], list[str]]:
    """The rows that verify against `worlds` (digest -> Dataset or world file), and a line per row that did not."""
    paths = [store.path(CellKey.of_row(r)) for r in rows]
    t0 = time.perf_counter()
    verdicts = audit_in_fresh_process(store.root, worlds, paths)
    phase_clock.spent("verification", time.perf_counter() - t0)
    good, lines = apply_verdicts(store, verdicts)
    return [r for r, p in zip(rows, paths) if p in good], lines


def stored_rows(store: RunStore, world, name: str, arrivals: int | None = None, any_code: bool = False,
                trusted=frozenset()) -> StoredRows:
    """Rows of `world` (by content digest) for one truncation. By default only rows run on the code this
    process has for each policy; `any_code` keeps every code version, each shown as its own line. A
    plug-in's current code is looked up only if its target is in `trusted` (see `current_code`); else each
    code version of its rows is its own line."""
    any_code = check_flag("any_code", any_code)
    digest, limit = world_digest(world), arrivals_limit(world, arrivals)
    rows, problems = store.scan(digest)
    notes = [f"{p} (skipped)" for p in problems]
    rows = [r for r in rows if r["arrivals_limit"] == limit]
    rows, rejected = verified_rows(store, rows, {digest: world})
    notes += rejected
    by_policy: dict[str, list[dict]] = {}
    for r in rows:
        by_policy.setdefault(r["policy"], []).append(r)
    codes, shown = {}, []
    for policy, prs in sorted(by_policy.items()):
        code = codes[policy] = current_code(prs, trusted)
        named = non_canonical(policy) if code is not None else None
        if named is not None:
            notes.append(f"{len(prs)} row(s) stored under {policy!r}, {named}; left out (tutorduel verify names "
                         f"them, tutorduel replay stores the canonical one)")
            continue
        if code is None:
            target = prs[0]["target"]
            why = ("cannot be loaded here" if target in trusted else
                   f"is a plug-in ({target!r}), not imported on a row's say (name it with --policies to check "
                   f"its code version)")
            notes.append(f"policy {policy!r} {why}; each code version of its rows is shown as its own line")
        for r in prs:
            r_code = r["code"]["digest"]
            if r_code == code:
                shown.append(r)
            elif any_code or code is None:
                shown.append({**r, "policy": f"{policy} (code {r_code})"})
        old = Counter(r["code"]["digest"] for r in prs if code is not None and r["code"]["digest"] != code)
        if old and not any_code:
            versions = ", ".join(f"{c} ({n} rows)" for c, n in sorted(old.items()))
            notes.append(f"{sum(old.values())} row(s) of {policy!r} ran on other code versions ({versions}); the current "
                         f"code is {code}; left out (tutorduel replay computes the current ones; --any-code shows them)")
    for other in store.world_digests():
        if other != digest and name in store.world_names(other):
            n = sum(1 for _ in store.rows(other))
            if n:
                notes.append(f"{n} row(s) of another version of world {name!r} (content digest {other}) are in the "
                             f"store; left out")
    legacy = store.legacy_rows()
    if legacy:
        notes.append(f"{len(legacy)} row file(s) in the layout of an earlier toolkit version (e.g. {legacy[0]}) are not "
                     f"read; tutorduel replay recomputes them")
    return StoredRows(shown, notes, codes)
