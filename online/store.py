"""The run store: one JSON row per run, addressed by what produced it, written atomically.

A run is identified by the world's content digest, the canonical policy spec (settings equal
to their defaults dropped), the code identity of the policy (``online.code_identity``), the
seed and the truncation. The file's place is that identity:

    ROOT/<world digest>/<policy slug>/<code digest>/seed-NNNN.json          a full run
    ROOT/<world digest>/<policy slug>/<code digest>/seed-NNNN-firstM.json   its first M arrivals
    ROOT/<world digest>/world.json                                           names the world was run under
    ROOT/_failed/<same path>                                                 a cell that failed

so a row of another world or another code version is never overwritten: it lives at another
path, stays there, and is reported (``RunStore.other_versions``). No name a world file or a user
controls becomes a path: the world digest is hex, the policy slug is sanitised and carries a hash
of the spec. A row is written to a temporary file in the same folder, fsynced and renamed, so a
kill at any moment leaves either no row or the whole row.

Reading validates every row against the schema (fields, types, finite figures, lengths, the
totals adding up) and against its own path (world, policy, code, seed, truncation). A row that
fails is damaged: reported by path, never used, and moved aside to ``*.corrupt`` when its cell is
recomputed.

Location: --store PATH, else $TUTORDUEL_STORE, else ./runs.
"""
from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import re
from pathlib import Path
from typing import Iterator, NamedTuple

from tdmodels.atomic_file import atomic_save, check_output_path, folder_problem
from tdmodels.file_read import UnreadableFileError, read_regular, read_regular_text
from tdmodels.errors import InputError

ROW_SCHEMA = 3            # 3: every row carries what it played (pairs and clicks; online.verify)
RECORD_BYTES = 2**20       # a failure record or world.json
ROW_BYTES = 512 * 2**20    # a row of a million arrivals is a few hundred MB; a larger file is refused unread
FAILED = "_failed"
_DIGEST = re.compile(r"[0-9a-f]{16}")
_CODE = re.compile(r"code-[0-9a-f]{12}")
_ROW_FILE = re.compile(r"seed-(\d{4,})(?:-first(\d+))?\.json")
EXPORT_COLUMNS = ("world", "world_digest", "seed", "policy", "target", "code", "arrivals", "rounds", "regret", "floor",
                  "random", "excess", "score", "wall_s")


class CorruptRowError(InputError):
    """A stored row that cannot be read, does not follow the schema, or does not belong where it lies."""


class StoreError(OSError):
    """The store cannot be written (read-only, not a folder, ...)."""


class CannotMoveAsideError(StoreError):
    """A bad file that could not be moved aside (a read-only store): readers skip it and say so."""


class CellKey(NamedTuple):
    """Where a run lives: everything that determines its row."""
    world_digest: str
    seed: int
    policy: str              # canonical spec
    code: str                # code digest, 12 hex
    arrivals: int | None     # None: the full run

    @classmethod
    def of_row(cls, row: dict) -> "CellKey":
        return cls(row["world_digest"], int(row["seed"]), row["policy"], row["code"]["digest"], row["arrivals_limit"])


def store_root(path: str | os.PathLike | None = None) -> Path:
    """The run store folder: `path`, else $TUTORDUEL_STORE, else ./runs."""
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise StoreError(f"run store {path!r}: give a folder path (a str or os.PathLike)")
    return Path(path or os.environ.get("TUTORDUEL_STORE") or "runs")


def policy_slug(spec: str) -> str:
    """A file-name-safe folder name for a canonical spec: its text cleaned and cut, with a hash of the whole."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_.")[:60] or "policy"
    return f"{clean}-{hashlib.sha1(spec.encode()).hexdigest()[:8]}"


def _atomic_write(path: Path, text: str) -> None:
    atomic_save(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def to_json(obj) -> str:
    """Compact JSON that refuses NaN and infinities (they are not JSON)."""
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return (isinstance(v, float) or _is_int(v)) and math.isfinite(v)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-7 * max(1.0, abs(a), abs(b))


def _label_problem(row: dict) -> str | None:
    """Whether the row's target, and its settings that the canonical spec names, say what that spec says
    (``online.registry``: the target, then the settings that differ from their defaults, as JSON). The
    other settings are the policy's defaults, which only its declaration gives; they are not checked here,
    where no policy module is imported."""
    from online.registry import PolicySpecError, split_specs

    target, bracket, body = row["policy"].partition("[")
    if target != row["target"]:
        return f"field 'target' is {row['target']!r}, the policy {row['policy']!r} names {target!r}"
    if not bracket:
        return None
    try:
        parts = split_specs(body[:-1]) if body.endswith("]") else None
        changed = dict(part.split("=", 1) for part in parts) if parts else None
        changed = {k: json.loads(v) for k, v in changed.items()} if changed else None
    except (PolicySpecError, ValueError, RecursionError):
        changed = None
    if changed is None:
        return f"field 'policy' {row['policy']!r} is not a canonical spec"
    for k, v in changed.items():
        if k not in row["settings"] or json.dumps(row["settings"][k]) != json.dumps(v):
            return (f"field 'settings' has {k}={json.dumps(row['settings'].get(k))}, the policy {row['policy']!r} "
                    f"says {json.dumps(v)}")
    return None


# a label printed into tables: a line break in one would forge a row of its own
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
MAX_LABEL = 4_096


def row_problem(row) -> str | None:
    """What is wrong with a row against the schema, or None."""
    if not isinstance(row, dict):
        return "not a JSON object"
    if row.get("schema") != ROW_SCHEMA:
        return (f"schema {row.get('schema')!r}, this toolkit reads {ROW_SCHEMA}" + (
            " (an earlier toolkit's row, without the pairs it played, so it cannot be verified; tutorduel replay "
            "recomputes it)" if row.get("schema") == 2 else ""))
    types = {"world": str, "world_digest": str, "policy": str, "target": str, "settings": dict, "versions": dict,
             "code": dict, "per_user": dict, "per_round": dict, "played": dict}
    for k, t in types.items():
        if not isinstance(row.get(k), t):
            return f"field {k!r} missing or not a {t.__name__}"
    if row.get("kind") != "policy":
        return f"field 'kind' is {row.get('kind')!r}, expected 'policy'"
    for k in ("world", "policy", "target"):
        if _CONTROL.search(row[k]) or len(row[k]) > MAX_LABEL:
            return f"field {k!r} is not one line of at most {MAX_LABEL:,} visible characters"
    label = _label_problem(row)
    if label:
        return label
    for k in ("seed", "arrivals", "rounds"):
        if not _is_int(row.get(k)) or row[k] < (0 if k == "seed" else 1):
            return f"field {k!r} missing or not a {'non-negative' if k == 'seed' else 'positive'} integer"
    lim = row.get("arrivals_limit", "absent")
    if lim is not None and not (_is_int(lim) and lim == row["arrivals"]):
        return f"field 'arrivals_limit' is {lim!r}; expected null or the number of arrivals"
    for k in ("regret", "floor", "random", "excess", "score", "wall_s"):
        if not _is_num(row.get(k)):
            return f"field {k!r} missing or not a finite number"
    if not _DIGEST.fullmatch(row["world_digest"]):
        return "field 'world_digest' is not 16 hex digits"
    if not isinstance(row["code"].get("digest"), str) or not re.fullmatch(r"[0-9a-f]{12}", row["code"]["digest"]):
        return "field 'code.digest' is not 12 hex digits"
    for part, n in (("per_user", row["arrivals"]), ("per_round", row["rounds"])):
        for k in ("regret", "floor", "random"):
            v = row[part].get(k)
            if not isinstance(v, list) or len(v) != n or not all(map(_is_num, v)):
                return f"field '{part}.{k}' missing or not {n} finite numbers"
    for k in ("regret", "floor", "random"):
        if not (_close(sum(row["per_user"][k]), row[k]) and _close(sum(row["per_round"][k]), row[k])):
            return f"field {k!r} is not the sum of its per-user and per-round figures"
    for part in ("per_user", "per_round"):
        fig = row[part]
        for i, (r, g, rr) in enumerate(zip(fig["regret"], fig["floor"], fig["random"])):
            if r < g - 1e-9 * max(1.0, abs(g)) or rr < g - 1e-9 * max(1.0, abs(g)):
                return (f"field '{part}' at {i}: regret {r!r} or random {rr!r} below the floor {g!r} (the floor is "
                        f"the least regret any distinct pair has)")
    if not _close(row["excess"], row["regret"] - row["floor"]):
        return "field 'excess' is not regret - floor"
    denom = row["random"] - row["floor"]
    if denom <= 0 or not _close(row["score"], 100.0 * (row["random"] - row["regret"]) / denom):
        return "field 'score' is not 100 (random - regret) / (random - floor)"
    return None


def read_row(path: Path) -> dict:
    """Parse and check one row file; raise CorruptRowError naming the file and the problem."""
    try:
        data = read_regular(path, ROW_BYTES)
    except (OSError, UnreadableFileError) as exc:
        raise CorruptRowError(f"run row {path}: unreadable ({type(exc).__name__}: {exc})") from None
    return parse_row(data, path)


def parse_row(data: bytes, path) -> dict:
    """Parse and check the bytes of the row file at `path` (named in the error): a checker that caches its
    verdict by the bytes it read parses those same bytes, not a second read of the file."""
    try:
        row = json.loads(data.decode("utf-8"), parse_constant=lambda c: float("nan"))
    except (ValueError, RecursionError) as exc:   # ValueError: not UTF-8, bad JSON, huge ints
        raise CorruptRowError(f"run row {path}: unreadable ({type(exc).__name__}: {exc})") from None
    problem = row_problem(row)
    if problem:
        raise CorruptRowError(f"run row {path}: {problem}")
    return row


class RunStore:
    """The run store: one JSON row per run at the path of its identity (world digest, policy spec,
    code digest, seed, truncation), written atomically; rows that fail their schema check are moved
    aside as ``*.corrupt`` and reported, never counted.

    Parameters
    ----------
    root : path, optional
        The store folder (default: $TUTORDUEL_STORE or ./runs).
    """

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = store_root(root)
        problem = folder_problem(self.root)
        if problem:
            raise StoreError(f"run store {self.root}: {problem}; give another with --store PATH")

    @staticmethod
    def _name(seed: int, arrivals: int | None) -> str:
        return f"seed-{int(seed):04d}" + (f"-first{int(arrivals)}" if arrivals is not None else "") + ".json"

    def _rel(self, key: CellKey) -> Path:
        if not _DIGEST.fullmatch(key.world_digest):
            raise ValueError(f"world digest {key.world_digest!r} is not 16 hex digits")
        if not re.fullmatch(r"[0-9a-f]{12}", key.code):
            raise ValueError(f"code digest {key.code!r} is not 12 hex digits")
        return Path(key.world_digest, policy_slug(key.policy), f"code-{key.code}", self._name(key.seed, key.arrivals))

    def path(self, key: CellKey) -> Path:
        """The row file of a cell."""
        return self.root / self._rel(key)

    def clicks_path(self, key: CellKey) -> Path:
        """The click log of a cell (``online.clicklog``), beside its row."""
        return self.path(key).with_suffix(".clicks.nc")

    def fit_path(self, key: CellKey, model: str) -> Path:
        """Where `tutorduel fit` writes a model's InferenceData for a cell."""
        return self.path(key).with_suffix(f".{model}.nc")

    def _failed_path(self, key: CellKey) -> Path:
        return self.root / FAILED / self._rel(key)

    def check_writable(self) -> None:
        """Raise StoreError naming the store if rows cannot be written there."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".write-probe.{os.getpid()}"
            _atomic_write(probe, "ok")
            probe.unlink()
        except OSError as exc:
            what = "is a file, not a folder" if self.root.is_file() else f"cannot be written ({exc.strerror or exc})"
            raise StoreError(f"run store {self.root}: {what}; give another with --store PATH") from None

    def get(self, key: CellKey) -> dict | None:
        """The stored row of a cell, None if absent; CorruptRowError if damaged or misplaced."""
        p = self.path(key)
        if not p.exists():
            return None
        row = read_row(p)
        if CellKey.of_row(row) != key:
            raise CorruptRowError(f"run row {p}: holds another cell ({_describe(CellKey.of_row(row))})")
        return row

    def quarantine(self, path: Path, suffix: str = ".corrupt") -> Path:
        """Move a damaged file aside to *.corrupt (or another suffix; never over an earlier one); return where
        it went.

        Safe when several processes (two readers of one store) move the same file at once: each target name is
        taken exclusively (a hard link, never over an existing file), and a process that finds the file
        already gone returns where the other one put it (or raises StoreError naming the race)."""
        names = (path.with_name(path.name + suffix if n == 0 else f"{path.name}{suffix}.{n}") for n in range(10_000))
        for target in names:
            try:
                os.link(path, target)
            except FileExistsError:
                continue
            except FileNotFoundError:
                return self._moved_by_another(path, suffix)
            except OSError:              # a file system without hard links: the plain rename
                if target.exists():
                    continue
                try:
                    os.replace(path, target)
                except FileNotFoundError:
                    return self._moved_by_another(path, suffix)
                except OSError as exc:   # a read-only store: the reader skips the file and says so
                    err = CannotMoveAsideError(f"{path}: left in place (the store cannot be written: "
                                               f"{exc.strerror or exc})")
                    err.why = f"the store cannot be written: {exc.strerror or exc}"
                    raise err from None
                return target
            path.unlink(missing_ok=True)
            return target
        raise StoreError(f"{path}: 10,000 files already moved aside beside it; clear them out")

    @staticmethod
    def _moved_by_another(path: Path, suffix: str) -> Path:
        """Where another process just moved `path` aside: the last of its numbered targets."""
        taken = [p for p in path.parent.glob(path.name + suffix + "*")
                 if p.name == path.name + suffix or p.name[len(path.name + suffix) + 1:].isdigit()]
        if not taken:
            raise StoreError(f"{path}: gone while this process moved it aside (another process moved or removed it "
                             f"at the same time); rerun to read the store as it is now")
        return max(taken, key=lambda p: (len(p.name), p.name))

    def reject(self, path: Path) -> Path:
        """Move aside a row that failed verification (``online.verify``) to *.rejected, numbered, never over an
        earlier one; its cell then counts as not run."""
        return self.quarantine(path, ".rejected")

    def put(self, row: dict) -> Path:
        """Write a finished row atomically (a damaged file in its place is moved aside first, a valid
        one is kept: a cell's row is a function of its key); clears any failure record of the cell."""
        problem = row_problem(row)
        if problem:
            who = repr(row.get("policy")) if isinstance(row, dict) else f"type {type(row).__name__}"
            raise InputError(f"refusing to store a row of {who}: {problem}")
        key = CellKey.of_row(row)
        p = self.path(key)
        try:
            self.get(key)
        except CorruptRowError:
            self.quarantine(p)
        if not p.exists():
            _atomic_write(p, to_json(row))
        self._failed_path(key).unlink(missing_ok=True)
        return p

    def put_failure(self, key: CellKey, world: str, error: str) -> None:
        _atomic_write(self._failed_path(key), to_json({"world": world, "world_digest": key.world_digest,
                                                       "seed": int(key.seed), "policy": key.policy, "code": key.code,
                                                       "arrivals_limit": key.arrivals, "error": error}))

    def failures(self, world_digest: str | None = None) -> list[dict]:
        base = self.root / FAILED / (world_digest or "")
        out = []
        for p in sorted(base.rglob("seed-*.json")) if base.is_dir() else []:
            if any(part.endswith(".partial") for part in p.relative_to(base).parts[:-1]):
                continue                   # a write a kill interrupted (tdmodels.atomic_file), not a record
            try:
                rec = json.loads(read_regular_text(p, RECORD_BYTES))
            except (OSError, ValueError, RecursionError):
                continue
            if isinstance(rec, dict) and isinstance(rec.get("error"), str) and rec["error"].strip() \
                    and isinstance(rec.get("policy"), str) and isinstance(rec.get("seed"), int) \
                    and not isinstance(rec.get("seed"), bool) and not _CONTROL.search(rec["policy"]) \
                    and not _CONTROL.search(str(rec.get("code", ""))):
                out.append(rec)
        return out

    def note_world(self, digest: str, name: str, info: dict) -> None:
        """Record that world `digest` was run under `name` (ROOT/<digest>/world.json)."""
        path = self.root / digest / "world.json"
        known = self.world_names(digest)
        if name not in known:
            _atomic_write(path, to_json({"digest": digest, "names": sorted(known | {name}), **info}))

    def world_names(self, digest: str) -> set[str]:
        """The names world `digest` was run under (ROOT/<digest>/world.json); a damaged or odd file gives none."""
        try:
            names = json.loads(read_regular_text(self.root / digest / "world.json", RECORD_BYTES)).get("names", [])
        except (OSError, ValueError, AttributeError, RecursionError):
            return set()
        return {n for n in names if isinstance(n, str) and not _CONTROL.search(n)} if isinstance(names, list) else set()

    def world_digests(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir() if p.is_dir() and _DIGEST.fullmatch(p.name))

    def _files(self, world_digest: str | None) -> Iterator[Path]:
        for d in [world_digest] if world_digest else self.world_digests():
            base = self.root / d
            if base.is_dir():
                yield from sorted(base.glob("*/code-*/seed-*.json"))

    def _check_place(self, path: Path, row: dict) -> None:
        rel = path.relative_to(self.root)
        try:
            expected = self._rel(CellKey.of_row(row))
        except ValueError as exc:
            raise CorruptRowError(f"run row {path}: {exc}") from None
        if rel != expected:
            raise CorruptRowError(f"run row {path}: holds {_describe(CellKey.of_row(row))}, which belongs at "
                                  f"{self.root / expected}")

    def scan(self, world_digest: str | None = None) -> tuple[list[dict], list[str]]:
        """Every valid row (optionally of one world) and a message per damaged or misplaced file."""
        rows, problems = [], []
        for p in self._files(world_digest):
            try:
                row = read_row(p)
                self._check_place(p, row)
                rows.append(row)
            except CorruptRowError as exc:
                problems.append(str(exc))
        return rows, problems

    def rows(self, world_digest: str | None = None) -> Iterator[dict]:
        """Every row that passes the schema check (``row_problem``), optionally of one world; damaged files
        are left out (``scan`` names them). Not verified: a row whose figures agree with each other is read
        as written. For rows recomputed from their world and what they played, use
        ``tutorduel.store_view.verified_rows`` (what ``tutorduel stats`` and ``export`` read)."""
        yield from self.scan(world_digest)[0]

    def other_versions(self, key: CellKey) -> list[Path]:
        """Rows of the same world, policy, seed and truncation run on other code versions."""
        folder = self.path(key).parent
        return sorted(p for p in folder.parent.glob(f"code-*/{self._name(key.seed, key.arrivals)}") if p.parent != folder)

    def legacy_rows(self) -> list[Path]:
        """Rows in the layout of toolkit versions before schema 2 (ROOT/<world name>/<policy>/seed-*.json)."""
        if not self.root.is_dir():
            return []
        return sorted(p for d in self.root.iterdir() if d.is_dir() and d.name != FAILED and not _DIGEST.fullmatch(d.name)
                      for p in d.glob("*/seed-*.json"))

    def export(self, path: str | os.PathLike, world_digest: str | None = None, rows: list[dict] | None = None) -> Path:
        """Flat table of the scalar fields of `rows` (default: every row that passes the schema check, of one
        world if given, not verified: see `rows`): .csv (stdlib) or .parquet (pandas + pyarrow)."""
        path = check_output_path(path)         # the name as given: 'rows.csv/.' names a folder
        if path.suffix not in (".csv", ".parquet"):
            raise InputError(f"export to {path}: use a .csv or .parquet file name")
        records = [{c: (r["code"]["digest"] if c == "code" else r.get(c)) for c in EXPORT_COLUMNS}
                   for r in (self.rows(world_digest) if rows is None else rows)]
        if path.suffix == ".parquet":
            try:
                import pandas as pd
                frame = pd.DataFrame.from_records(records, columns=list(EXPORT_COLUMNS))
                atomic_save(path, lambda tmp: frame.to_parquet(tmp))
            except ImportError:
                raise ExportError(f"export to {path}: parquet needs pandas and pyarrow "
                                  f"(pip install 'tutorduel[export]'), or use a .csv name") from None
            return path

        def write(tmp):
            with open(tmp, "w", newline="") as fh:
                w = csv.DictWriter(fh, fieldnames=list(EXPORT_COLUMNS))
                w.writeheader()
                w.writerows({k: spreadsheet_safe(v) for k, v in r.items()} for r in records)
        return atomic_save(path, write)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """A CSV cell a spreadsheet will not run: text starting with = + - @, a tab or a carriage return gets a
    leading apostrophe (numbers are left as they are)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


class ExportError(InputError):
    """An export the installed packages cannot write."""


def _describe(key: CellKey) -> str:
    cut = f", first {key.arrivals} arrivals" if key.arrivals is not None else ""
    return f"world {key.world_digest} seed {key.seed} {key.policy} code {key.code}{cut}"
