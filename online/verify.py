"""Rows anyone can check: a row's figures recomputed from the world, the seed and what was played.

Every row carries what its policy did (``played``: the pair shown in every round and the click it
got, compressed; about 1-3 kB a row). From the world and the seed alone the schedule gives who
arrived, their questions and the click uniforms (common random numbers), so a reader can check:

- every pair is two distinct persona indices;
- every click is what the uniforms give: ``u[arrival, round] < P[student, question, first, second]``;
- every figure (regret, floor, random, excess, score, per user and per round) equals the one
  computed here, to 1e-9 relative;
- the click log beside the row, if any, is this run's: its world, seed, policy, code and
  truncation, and its pairs and clicks are the row's.

``score_played`` is also how a sweep scores a run: the worker returns the pairs and clicks, and
the parent process, which never ran the policy, computes the figures (``rescored``).

Verdicts are cached by the SHA-256 of the row file's bytes and this verifier's code identity, in
``$TUTORDUEL_CACHE`` (default ``~/.cache/tutorduel``), outside the store: a store received from
someone else carries no verdicts of its own.
"""
from __future__ import annotations

import base64
import hashlib
import os
import zlib
from pathlib import Path

import numpy as np
import xarray as xr

from online.code_identity import cache_root, code_identity
from online.schedule import make_schedule, session_utilities
from online.scoring import benchmark_score, floor_regret, random_regret, strong_regret
from online.store import ROW_BYTES
from tdmodels.file_read import UnreadableFileError, read_regular, regular_file_digest

FIGURE_RTOL = 1e-9
LOG_BYTES = 8 * 2**30          # a click log larger than this is not checked (hashed in 1 MiB chunks below it)
FIGURES = ("regret", "floor", "random", "excess", "score")
CURVES = ("regret", "floor", "random")


class RowCheckError(ValueError):
    """A row (or a worker's result) whose pairs, clicks or figures are not what its world and seed give."""


class ScoreUndefinedError(RowCheckError):
    """A run whose random pairs already reach the floor: the score's denominator is zero."""


def encode_played(pairs: np.ndarray, clicks: np.ndarray, K: int) -> dict:
    """What a run played, for its row: pairs [N, S, 2] and clicks [N, S] (0/1) as zlib-compressed base64."""
    dtype = np.uint8 if K <= 256 else np.uint16
    pack = lambda b: base64.b64encode(zlib.compress(b, 9)).decode("ascii")  # noqa: E731
    return {"dtype": np.dtype(dtype).str, "pairs": pack(np.ascontiguousarray(pairs, dtype=dtype).tobytes()),
            "clicks": pack(np.packbits(np.asarray(clicks, dtype=np.uint8).ravel()).tobytes())}


def _inflate(text: str, size: int) -> bytes:
    """base64 + zlib text -> bytes, refusing more than `size` bytes (never inflating a hostile row's bomb)."""
    d = zlib.decompressobj()
    out = d.decompress(base64.b64decode(text, validate=True), size + 1)
    if len(out) > size or d.unconsumed_tail:
        raise ValueError(f"more than the {size} bytes expected")
    return out


def decode_played(played, N: int, S: int) -> tuple[np.ndarray, np.ndarray]:
    """(pairs [N, S, 2] int64, clicks [N, S] int8) from a row's ``played``; RowCheckError if malformed."""
    if not isinstance(played, dict) or not all(isinstance(played.get(k), str) for k in ("dtype", "pairs", "clicks")):
        raise RowCheckError("field 'played' missing or malformed")
    if played["dtype"] not in ("|u1", "<u2"):
        raise RowCheckError(f"field 'played.dtype' is {played['dtype']!r}")
    try:
        raw_pairs = _inflate(played["pairs"], N * S * 2 * np.dtype(played["dtype"]).itemsize)
        raw_clicks = _inflate(played["clicks"], (N * S + 7) // 8)
    except (ValueError, zlib.error) as exc:
        raise RowCheckError(f"field 'played' cannot be decoded ({exc})") from None
    pairs = np.frombuffer(raw_pairs, dtype=np.dtype(played["dtype"]))
    if pairs.size != N * S * 2 or len(raw_clicks) != (N * S + 7) // 8:
        raise RowCheckError(f"field 'played' holds {pairs.size // 2} pairs and {8 * len(raw_clicks)} click bits, "
                            f"expected {N * S} ({N} arrivals x {S} rounds)")
    clicks = np.unpackbits(np.frombuffer(raw_clicks, dtype=np.uint8))[:N * S].reshape(N, S).astype(np.int8)
    return pairs.reshape(N, S, 2).astype(np.int64), clicks


def score_played(world: xr.Dataset, seed: int, arrivals: int | None, pairs: np.ndarray, clicks: np.ndarray,
                 sched=None) -> dict:
    """The figures of a run from what it played, after checking the pairs are legal and every click is
    the common random numbers' click. Raises RowCheckError naming the first bad round. `sched`: the run's
    schedule if the caller already made it (``online.schedule.make_schedule(world, seed, arrivals)``).

    Returns
    -------
    dict
        regret, floor, random, excess, score, per_user {regret, floor, random} [N], per_round {...} [S].
    """
    sched = make_schedule(world, seed, arrivals) if sched is None else sched
    N, S = sched.question.shape
    K = world.sizes["persona"]
    pairs, clicks = np.asarray(pairs), np.asarray(clicks)
    if pairs.shape != (N, S, 2) or clicks.shape != (N, S):
        raise RowCheckError(f"played {pairs.shape[:2]} rounds; the schedule of seed {seed} has ({N}, {S})")
    i, j = pairs[..., 0], pairs[..., 1]
    bad = (i < 0) | (i >= K) | (j < 0) | (j >= K) | (i == j)
    if bad.any():
        a, t = map(int, np.argwhere(bad)[0])
        raise RowCheckError(f"arrival {a}, round {t}: pair ({int(i[a, t])}, {int(j[a, t])}) is not two distinct "
                            f"personas of 0..{K - 1}")
    P = world["probs"].values[sched.student[:, None], sched.question, i, j]
    expected = (sched.uniform < P).astype(np.int8)
    wrong = expected != clicks
    if wrong.any():
        a, t = map(int, np.argwhere(wrong)[0])
        raise RowCheckError(f"arrival {a}, round {t}: click {int(clicks[a, t])}, but seed {seed}'s uniform gives "
                            f"{int(expected[a, t])} ({int(wrong.sum())} click(s) differ)")
    U = session_utilities(world, sched)
    r, G, Rr = strong_regret(U, i, j), floor_regret(U), random_regret(U)
    R_sum, G_sum, Rr_sum = float(r.sum()), float(G.sum()), float(Rr.sum())
    if not Rr_sum > G_sum:
        raise ScoreUndefinedError(f"world {world.attrs['roster']!r} seed {seed}: random pairs reach the floor on every "
                                  f"scheduled question (the personas' utilities are equal), so the score "
                                  f"100 (R_rand - R) / (R_rand - G) is undefined")
    return {"regret": R_sum, "floor": G_sum, "random": Rr_sum, "excess": R_sum - G_sum,
            "score": float(benchmark_score(R_sum, G_sum, Rr_sum)),
            "per_user": {"regret": r.sum(1).tolist(), "floor": G.sum(1).tolist(), "random": Rr.sum(1).tolist()},
            "per_round": {"regret": r.sum(0).tolist(), "floor": G.sum(0).tolist(), "random": Rr.sum(0).tolist()}}


def row_played(row: dict) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, clicks) of a row."""
    return decode_played(row.get("played"), int(row["arrivals"]), int(row["rounds"]))


def rescored(world: xr.Dataset, row: dict) -> dict:
    """The row with every figure recomputed here from its own pairs and clicks (a worker's figures are not
    trusted); RowCheckError if what it played is not legal or not what the seed's uniforms give."""
    pairs, clicks = row_played(row)
    return {**row, **score_played(world, int(row["seed"]), row["arrivals_limit"], pairs, clicks)}


def _differs(got, want) -> bool:
    return not abs(got - want) <= FIGURE_RTOL * max(1.0, abs(want))


def figure_problem(row: dict, fig: dict) -> str | None:
    """The first figure of `row` that is not `fig`'s (to FIGURE_RTOL), or None."""
    for k in FIGURES:
        if _differs(row[k], fig[k]):
            return f"{k} is {row[k]!r}, recomputed {fig[k]!r}"
    for part in ("per_user", "per_round"):
        for k in CURVES:
            got, want = row[part][k], fig[part][k]
            bad = [n for n, (g, w) in enumerate(zip(got, want)) if _differs(g, w)]
            if len(got) != len(want) or bad:
                n = bad[0] if bad else min(len(got), len(want))
                return f"{part}.{k}[{n}] differs from the recomputed figure ({len(bad)} of {len(want)} differ)"
    return None


def click_log_problem(row: dict, log, world: xr.Dataset | None = None) -> str | None:
    """Why a click log (``online.clicklog.ClickLog``) is not the log of this row, or None. With the row's
    `world`, everything in the log that follows from the world, the seed and the pairs is recomputed and
    compared too: who arrived, the questions, the shown personas' feature rows and the rater scores
    (what ``tutorduel fit`` reads). What the policy recorded of itself (priors, recalibration, beliefs,
    predictions) only a replay can check (``online.replay_check``)."""
    want = {"world_digest": row["world_digest"], "seed": int(row["seed"]), "policy": row["policy"],
            "code": row["code"]["digest"], "arrivals_limit": row["arrivals_limit"]}
    for k, v in want.items():
        got = log.attrs.get(k)
        if k in ("seed", "arrivals_limit") and got is not None:
            try:
                got = int(got)
            except (TypeError, ValueError):
                pass
        if got != v:
            return f"its click log is of {k} {got!r}, the row's is {v!r}"
    pairs, clicks = row_played(row)
    if log.first.shape != pairs.shape[:2] or not (np.array_equal(log.first, pairs[..., 0])
                                                  and np.array_equal(log.second, pairs[..., 1])
                                                  and np.array_equal(log.outcome, clicks)):
        return "its click log's pairs and clicks are not the row's"
    if world is not None:
        from online.clicklog import make_click_log

        sched = make_schedule(world, int(row["seed"]), row["arrivals_limit"])
        want = make_click_log(np.asarray(world["features"].values, dtype=float), sched.student, sched.question,
                              pairs, clicks, {})
        for name in ("student", "question", "phi_first", "phi_second", "rater"):
            got, exp = np.asarray(getattr(log, name)), getattr(want, name)
            if got.shape != exp.shape or not np.array_equal(got, exp):
                return f"its click log's {name} is not what the world and the seed give"
    return None


def verify_row(world: xr.Dataset, row: dict) -> str | None:
    """What is wrong with a stored row against its world (pairs, clicks, figures), or None."""
    from tdmodels.world import world_digest

    from tdmodels.rosters import reserved_name

    if world_digest(world) != row["world_digest"]:
        return f"the world given has digest {world_digest(world)}, the row's is {row['world_digest']}"
    label, roster = str(row.get("world")), str(world.attrs.get("roster"))
    if reserved_name(label) and label != roster:
        return (f"labelled world {label!r}, but its world digest {row['world_digest']} is world {roster!r}'s (a row "
                f"is shown and exported under its label)")
    try:
        pairs, clicks = row_played(row)
        fig = score_played(world, int(row["seed"]), row["arrivals_limit"], pairs, clicks)
    except RowCheckError as exc:
        return str(exc)
    return figure_problem(row, fig)


# --- the verdict cache -------------------------------------------------------------------------------------

def verifier_identity() -> str:
    """The code identity of this verifier (its module and everything it imports from the project)."""
    return code_identity(__name__).digest


def _verdict_path(row_bytes: bytes, log_digest: bytes | None) -> Path:
    h = hashlib.sha256(b"tutorduel-verdict\0" + verifier_identity().encode() + b"\0" + row_bytes)
    if log_digest is not None:
        h.update(b"\0log\0" + log_digest)
    d = h.hexdigest()
    return cache_root() / "verified" / d[:2] / d[2:]


def log_digest(row_path: Path) -> bytes | None:
    """SHA-256 of the click log beside a row (read in chunks, bounded), None where there is none;
    UnreadableFileError for a log that is not a regular file or is too large to check."""
    log = Path(row_path).with_suffix(".clicks.nc")
    if not os.path.lexists(log):
        return None
    return regular_file_digest(log, LOG_BYTES)


def _verdict_text(row_bytes: bytes, log_digest: bytes | None) -> bytes:
    """What a passing verdict's file holds: which bytes it verified (the row's and the click log's SHA-256)
    and by which verifier, so that a file is a verdict only of what it names."""
    return (f"tutorduel verified\nrow {hashlib.sha256(row_bytes).hexdigest()}\n"
            f"log {log_digest.hex() if log_digest is not None else '-'}\nverifier {verifier_identity()}\n").encode()


def known_good(row_bytes: bytes, log_digest: bytes | None = None) -> bool:
    """Whether these exact row bytes (and click log, by its SHA-256) verified before on this machine: the
    verdict's file is there, a regular file, and says it verified these bytes (an empty folder or any other
    file at its path had counted as a verdict)."""
    want = _verdict_text(row_bytes, log_digest)
    try:
        return read_regular(_verdict_path(row_bytes, log_digest), len(want) + 1) == want
    except (OSError, UnreadableFileError):
        return False


def remember_good(row_bytes: bytes, log_digest: bytes | None = None) -> None:
    """Cache a passing verdict (best effort: an unwritable cache only costs the work next time)."""
    from tdmodels.atomic_file import save_cache_file

    save_cache_file(_verdict_path(row_bytes, log_digest), _verdict_text(row_bytes, log_digest))


# --- auditing stored rows ----------------------------------------------------------------------------------

OK, BAD_ROW, BAD_LOG, UNVERIFIABLE = "ok", "bad row", "bad click log", "unverifiable"


def audit_rows(store_root: str, world_files: dict, paths: list[str]) -> list[tuple[str, str, str]]:
    """Verify stored rows: (path, verdict, message) for each row file in `paths`, verdict one of OK,
    BAD_ROW (its pairs, clicks or figures are wrong), BAD_LOG (the click log beside it is not its own) or
    UNVERIFIABLE (its world is not among `world_files`, digest -> world file or Dataset, or the file is
    unreadable).
    Run it in a fresh process (``audit_in_fresh_process``) so that no policy code is loaded beside it."""
    from online.store import CorruptRowError, parse_row
    from tdmodels.world import WorldFormatError, load_world, world_digest

    worlds, out = {}, []
    for p in map(Path, paths):
        try:
            row_bytes = read_regular(p, ROW_BYTES)
            row = parse_row(row_bytes, p)
        except (OSError, UnreadableFileError, CorruptRowError) as exc:
            out.append((str(p), UNVERIFIABLE, str(exc)))
            continue
        log_path = p.with_suffix(".clicks.nc")
        try:
            log_sha = log_digest(p)
        except UnreadableFileError as exc:
            out.append((str(p), BAD_LOG, f"click log {exc}"))
            continue
        if known_good(row_bytes, log_sha):
            out.append((str(p), OK, ""))
            continue
        digest = row["world_digest"]
        if digest not in worlds:
            f = world_files.get(digest)
            try:
                worlds[digest] = f if isinstance(f, xr.Dataset) else load_world(f) if f else None
            except WorldFormatError as exc:
                worlds[digest] = exc
            if f and not isinstance(worlds[digest], Exception) and world_digest(worlds[digest]) != digest:
                worlds[digest] = ValueError(f"world file {f} has digest {world_digest(worlds[digest])} now")
        world = worlds[digest]
        if world is None or isinstance(world, Exception):
            why = f"its world {digest} was not given" if world is None else str(world)
            out.append((str(p), UNVERIFIABLE, why))
            continue
        out.append((str(p), *_audit_row(world, row, row_bytes, log_path, log_sha)))
    return out


def _audit_row(world: xr.Dataset, row: dict, row_bytes: bytes, log_path: Path, log_sha: bytes | None) -> tuple[str, str]:
    """(verdict, message) of one row read from `row_bytes` (and its click log) against its world; a passing
    verdict is cached."""
    from online.clicklog import ClickLogError, load_click_log

    problem = verify_row(world, row)
    if problem:
        return BAD_ROW, problem
    if log_sha is not None:
        try:
            problem = click_log_problem(row, load_click_log(log_path), world)
        except ClickLogError as exc:
            problem = str(exc)
        if problem:
            return BAD_LOG, f"{problem} ({log_path})"
    remember_good(row_bytes, log_sha)
    return OK, ""


def audit_stored_row(world: xr.Dataset, path) -> str:
    """The verdict (``OK``, ``BAD_ROW``, ``BAD_LOG`` or ``UNVERIFIABLE``) on the row file at `path` of a world
    whose content the caller has checked (its digest is the row's), cached when it passes. For a process
    that has run no plug-in (``online.registry.plugins_loaded``), which checks what it has just stored."""
    from online.store import CorruptRowError, parse_row

    p = Path(path)
    try:
        row_bytes = read_regular(p, ROW_BYTES)
        row = parse_row(row_bytes, p)
        log_sha = log_digest(p)
    except (OSError, UnreadableFileError, CorruptRowError):
        return UNVERIFIABLE
    if known_good(row_bytes, log_sha):
        return OK
    return _audit_row(world, row, row_bytes, p.with_suffix(".clicks.nc"), log_sha)[0]


def audit_in_fresh_process(store_root, world_files: dict, paths: list) -> list[tuple[str, str, str]]:
    """``audit_rows`` in a newly started process that imports no policy (a plug-in loaded in this process
    cannot reach the verifier)."""
    cached, paths = [], [Path(p) for p in paths]
    for p in paths:           # rows whose exact bytes verified before need no process
        try:
            if known_good(read_regular(p, ROW_BYTES), log_digest(p)):
                cached.append(p)
        except (OSError, UnreadableFileError):
            pass
    todo = [p for p in paths if p not in set(cached)]
    return [(str(p), OK, "") for p in cached] + (_audit_elsewhere(store_root, world_files, todo) if todo else [])


def _audit_elsewhere(store_root, world_files: dict, paths: list) -> list[tuple[str, str, str]]:
    from online.process_pool import WorkerPool

    result = {}

    def keep(tag, status, payload):
        result["status"], result["payload"] = status, payload

    WorkerPool(1, result_globals=frozenset()).run([("audit", _audit_task, (str(store_root), dict(world_files), [str(p) for p in paths]))], keep)
    if result.get("status") != "ok":
        raise RowCheckError(f"the verifier's process failed: {result.get('payload')}")
    return result["payload"]


def _audit_task(store_root, world_files, paths):
    try:
        return "ok", audit_rows(store_root, world_files, paths)
    except Exception as exc:  # reported by the parent as the verifier's failure
        return "error", f"{type(exc).__name__}: {exc}"
