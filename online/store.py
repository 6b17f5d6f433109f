"""The run store: one JSON row per (world, seed, policy spec), written atomically.

Layout: ROOT/<world>/<policy slug>/seed-NNNN.json for a full run, seed-NNNN-firstM.json
for a run truncated to its first M arrivals (a different cell); the row holds its full spec.
A row is written to a temporary file in the same folder, fsynced, then renamed over
the target, so a kill at any moment leaves either the old state or the whole new row.
A row that does not parse (a damaged disk, a hand edit) is never silently used: it is
reported by path, moved aside to `*.corrupt` when the cell is recomputed, and counted as
missing. Failed cells are recorded under ROOT/_failed/ and never count as done.

Location: --store PATH, else $TUTORDUEL_STORE, else ./runs.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Iterator

ROW_KEYS = ("schema", "world", "seed", "policy", "regret", "floor", "random", "excess", "score")


class CorruptRowError(ValueError):
    """A stored row that cannot be read."""


def store_root(path: str | os.PathLike | None = None) -> Path:
    return Path(path or os.environ.get("TUTORDUEL_STORE") or "runs")


def policy_slug(spec: str) -> str:
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", spec).strip("_")[:60]
    return f"{clean}-{hashlib.sha1(spec.encode()).hexdigest()[:8]}"


def atomic_save(path: str | os.PathLike, write) -> Path:
    """Write a file so a kill leaves the old file or the whole new one: `write(tmp_path)` fills a
    temporary file in the same folder, which is fsynced and renamed over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write(tmp)
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return path


def _atomic_write(path: Path, text: str) -> None:
    atomic_save(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_row(path: Path) -> dict:
    """Parse one row file; raise CorruptRowError naming the file and the problem."""
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptRowError(f"run row {path}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(row, dict):
        raise CorruptRowError(f"run row {path}: not a JSON object")
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        raise CorruptRowError(f"run row {path}: missing field(s) {', '.join(missing)}")
    return row


class RunStore:
    def __init__(self, root: str | os.PathLike | None = None):
        self.root = store_root(root)

    @staticmethod
    def _name(seed: int, arrivals: int | None) -> str:
        return f"seed-{int(seed):04d}" + (f"-first{int(arrivals)}" if arrivals is not None else "") + ".json"

    def path(self, world: str, seed: int, spec: str, arrivals: int | None = None) -> Path:
        """File of the cell (world, seed, spec), truncated to `arrivals` when not None."""
        return self.root / world / policy_slug(spec) / self._name(seed, arrivals)

    def clicks_path(self, world: str, seed: int, spec: str, arrivals: int | None = None) -> Path:
        """The click log of a cell (``online.clicklog``), beside its row."""
        return self.path(world, seed, spec, arrivals).with_suffix(".clicks.nc")

    def fit_path(self, world: str, seed: int, spec: str, model: str, arrivals: int | None = None) -> Path:
        """Where `tutorduel fit` writes a model's InferenceData for a cell."""
        return self.path(world, seed, spec, arrivals).with_suffix(f".{model}.nc")

    def _failed_path(self, world: str, seed: int, spec: str, arrivals: int | None) -> Path:
        return self.root / "_failed" / world / policy_slug(spec) / self._name(seed, arrivals)

    def get(self, world: str, seed: int, spec: str, arrivals: int | None = None) -> dict | None:
        """The stored row of a cell, None if absent; CorruptRowError if damaged."""
        p = self.path(world, seed, spec, arrivals)
        if not p.exists():
            return None
        row = read_row(p)
        key = (row["world"], int(row["seed"]), row["policy"], row.get("arrivals_limit"))
        if key != (world, int(seed), spec, arrivals):
            raise CorruptRowError(f"run row {p}: holds cell {key}, not {(world, seed, spec, arrivals)}")
        return row

    def put(self, row: dict) -> Path:
        """Write a finished row atomically; clears any failure record of the cell."""
        cell = (row["world"], row["seed"], row["policy"], row.get("arrivals_limit"))
        p = self.path(*cell)
        if p.exists():
            try:
                read_row(p)
            except CorruptRowError:
                os.replace(p, p.with_suffix(".json.corrupt"))
        _atomic_write(p, json.dumps(row, separators=(",", ":")))
        f = self._failed_path(*cell)
        if f.exists():
            f.unlink()
        return p

    def put_failure(self, world: str, seed: int, spec: str, arrivals: int | None, error: str) -> None:
        _atomic_write(self._failed_path(world, seed, spec, arrivals),
                      json.dumps({"world": world, "seed": int(seed), "policy": spec, "arrivals_limit": arrivals,
                                  "error": error}))

    def failures(self, world: str | None = None) -> list[dict]:
        base = self.root / "_failed" / (world or "")
        out = []
        for p in sorted(base.rglob("seed-*.json")) if base.exists() else []:
            try:
                out.append(json.loads(p.read_text()))
            except (OSError, json.JSONDecodeError):
                continue
        return out

    def scan(self, world: str | None = None) -> tuple[list[dict], list[str]]:
        """All readable rows (optionally of one world) and a message per damaged file."""
        rows, problems = [], []
        worlds = [world] if world else sorted(p.name for p in self.root.iterdir() if p.is_dir() and p.name != "_failed") \
            if self.root.exists() else []
        for w in worlds:
            base = self.root / w
            if not base.exists():
                continue
            for p in sorted(base.glob("*/seed-*.json")):
                try:
                    rows.append(read_row(p))
                except CorruptRowError as exc:
                    problems.append(str(exc))
        return rows, problems

    def rows(self, world: str | None = None) -> Iterator[dict]:
        yield from self.scan(world)[0]

    def export(self, path: str | os.PathLike, world: str | None = None) -> Path:
        """Flat table of the scalar fields of every row: .csv (stdlib) or .parquet (pandas + pyarrow)."""
        path = Path(path)
        cols = ["world", "world_digest", "seed", "policy", "target", "arrivals", "rounds", "regret", "floor", "random",
                "excess", "score", "wall_s"]
        records = [{c: r.get(c) for c in cols} for r in self.rows(world)]
        if path.suffix == ".parquet":
            try:
                import pandas as pd
                pd.DataFrame.from_records(records, columns=cols).to_parquet(path)
            except ImportError as exc:
                raise RuntimeError(f"parquet export needs pandas and pyarrow (pip install 'tutorduel[export]'): {exc}") from None
            return path
        if path.suffix != ".csv":
            raise ValueError(f"export to {path}: use a .csv or .parquet file name")
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=cols)
            w.writeheader()
            w.writerows(records)
        return path
