"""The on-disk world format: one roster = one xarray Dataset stored as netCDF.

Variables (dims in brackets; K personas, d = K + 1 features):

- ``features[question, persona, feature]``: Phi. Features 0..K-1 are the persona
  indicators e_p, feature K is the rater score g(p, q), centred over personas and scaled
  to unit sd (all zeros where the rater is absent, ``attrs["rater_available"] = 0``).
- ``probs[student, question, first, second]``: P(first shown wins), order-aware; the
  diagonal is unused (stored as 0.5). NaN only for (student, question) cells that no
  session can reach (fixed-schedule worlds such as the real sample).
- ``utilities[student, question, persona]``: reference utilities U in [0, 1].
- question metadata ``question_topic``, ``question_chain``, ``question_kind``,
  ``question_cue``, ``question_text``; student metadata ``student_profile``,
  ``student_traits``, ``student_quirks``.
- optional fixed schedule ``schedule_student[arrival]``, ``schedule_question[arrival,
  round]``; without it sessions are drawn from the recipe in ``attrs`` (see
  ``online.schedule``).
- arrival modes (``attrs["arrival_mode"]``): "uniform" (students drawn with replacement),
  "distinct" (each at most once, in a seeded order), "ordered" (student i is arrival i), "fixed"
  (the schedule above).
- optional ``student_segment[student]`` (ordered worlds only): non-decreasing segment numbers
  from 0, e.g. the blocks of a drifting population (``tdmodels.stress_worlds``); statistics are
  also given per segment.

Loading validates everything and raises :class:`WorldFormatError` naming the field.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import numpy as np
import xarray as xr

from tdmodels.limits import MAX_ARRIVALS, MAX_BANK, MAX_SESSION
from tdmodels.memory import memory_available
from tdmodels.errors import InputError
from tdmodels.netcdf_file import dataset_bytes, save_netcdf

KINDS = ("definition", "computation", "why")
FORMAT_VERSION = 1
REQUIRED_ATTRS = {
    "roster": str,
    "arrivals": int,
    "topics_per_session": int,
    "chains_per_topic": int,
    "questions_per_chain": int,
    "arrival_mode": str,
    "held_out": int,
    "rater_available": int,
    "beta": float,
    "bank_size": int,
    "format_version": int,
}
# Range of each integer attribute (held_out and rater_available are flags: 0 or 1). The upper ends
# bound the work a world file can ask for: a run's arrays are arrivals x session length.
_ATTR_RANGE = {"arrivals": (1, MAX_ARRIVALS), "topics_per_session": (1, MAX_SESSION),
               "chains_per_topic": (1, MAX_SESSION), "questions_per_chain": (1, MAX_SESSION), "bank_size": (1, MAX_BANK),
               "held_out": (0, 1), "rater_available": (0, 1), "format_version": (0, 1_000)}
ARRIVAL_MODES = ("uniform", "distinct", "fixed", "ordered")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
RATER_TOL = 1e-6      # the rater column is centred over personas with unit sd, to this tolerance


class WorldFormatError(InputError):
    """A world file or Dataset that does not follow the world format."""


def check_name(name: str, what: str = "world name") -> str:
    """A name that may become part of a file name: letters, digits, '.', '_' and '-', at most 64, not
    starting with '.' or '-'. Raise WorldFormatError otherwise."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        raise WorldFormatError(f"{what} {name!r}: use 1-64 letters, digits, '.', '_' or '-', starting with a "
                               f"letter or digit")
    return name


def _fail(source, field, problem):
    raise WorldFormatError(f"world {source}: field '{field}': {problem}")


def _require_var(ds, name, dims, source):
    if name not in ds.variables:
        _fail(source, name, "missing variable")
    if tuple(ds[name].dims) != tuple(dims):
        _fail(source, name, f"dims {tuple(ds[name].dims)}, expected {tuple(dims)}")
    return ds[name].values


def _require_numeric(ds, name, dims, source):
    values = _require_var(ds, name, dims, source)
    if values.dtype.kind not in "fiu":
        _fail(source, name, f"values of type {values.dtype} ({values.dtype.name}); expected numbers")
    return values.astype(float, copy=False)


def _attr_problem(value) -> str | None:
    """Why an attribute value would not survive a netCDF round trip as it is, or None: a string without NUL,
    a number (an integer within int64), or a flat list of strings or of numbers."""
    if isinstance(value, (bool, np.bool_)):
        return f"{value!r} is a bool (write 0 or 1)"
    if isinstance(value, str):
        return "holds a NUL character" if "\x00" in value else None
    if isinstance(value, (int, np.integer)):
        return None if -2**63 <= int(value) < 2**63 else f"{value!r} does not fit a 64-bit integer"
    if isinstance(value, (float, np.floating)):
        return None
    if isinstance(value, (list, tuple, np.ndarray)):
        items = value.tolist() if isinstance(value, np.ndarray) and value.ndim == 1 else list(value) \
            if not isinstance(value, np.ndarray) else None
        if items is None or any(isinstance(x, (list, tuple, dict)) for x in items):
            return "a nested list or an array of more than one dimension (it comes back flat)"
        if items and all(isinstance(x, str) for x in items):
            return "holds a NUL character" if any("\x00" in x for x in items) else None
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
            return _attr_problem(max(items, key=abs)) if any(isinstance(x, int) for x in items) and \
                not any(isinstance(x, float) for x in items) else None
        return "a list mixing strings, numbers or other values"
    return f"{type(value).__name__} {str(value)[:60]!r} cannot be written"


# Control characters (line breaks and tabs too), DEL, C1 controls and the bidirectional overrides: a name or a
# text of a world is printed into tables and sessions, where a line break would forge a row of its own.
_NOT_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
MULTILINE_ATTRS = ("cues",)      # the toolkit's own list of question cues, one per line


def _check_one_line(ds, source):
    """WorldFormatError naming the first string of the world (an attribute, a coordinate, a variable) that
    holds a control character: names and texts are one line of visible text."""
    for key, value in ds.attrs.items():
        for x in (value if isinstance(value, (list, tuple, np.ndarray)) else [value]):
            if isinstance(x, str):
                found = _NOT_ONE_LINE.findall(x.replace("\n", "") if key in MULTILINE_ATTRS else x)
                if found:
                    _fail(source, f"attrs.{key}", f"holds the control character {found[0]!r}; a world's names and "
                                                  f"texts are one line of visible text")
    for name, var in ds.variables.items():
        if var.dtype.kind not in "USO":
            continue
        flat = np.ravel(var.values)
        for i, x in enumerate(flat):
            text = x.decode("utf-8", "replace") if isinstance(x, bytes) else x
            if isinstance(text, str) and _NOT_ONE_LINE.search(text):
                where = f" at {var.dims[0]} {np.unravel_index(i, var.shape)[0]}" if var.ndim else ""
                _fail(source, str(name), f"holds the control character {_NOT_ONE_LINE.search(text).group()!r}{where} "
                                         f"({text[:40]!r}); a world's names and texts are one line of visible text")


def _check_attrs(ds, source):
    for key, typ in REQUIRED_ATTRS.items():
        if key not in ds.attrs:
            _fail(source, f"attrs.{key}", "missing attribute")
        value = ds.attrs[key]
        if typ is str:
            if not isinstance(value, str):
                _fail(source, f"attrs.{key}", f"not a string: {value!r}")
        elif typ is int:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                _fail(source, f"attrs.{key}", f"not an integer: {value!r}")
            lo, hi = _ATTR_RANGE[key]
            if not lo <= int(value) <= hi:
                allowed = "0 or 1" if hi == 1 else f"an integer in [{lo:,}, {hi:,}]"
                _fail(source, f"attrs.{key}", f"{int(value):,}; expected {allowed}")
        else:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                _fail(source, f"attrs.{key}", f"not a number: {value!r}")
    for key, value in ds.attrs.items():
        problem = _attr_problem(value)
        if problem:
            _fail(source, f"attrs.{key}", f"{problem}; a netCDF attribute is a string, a number or a list of them")
    for name, var in ds.variables.items():
        if var.dtype.kind in "USO" and any((b"\x00" if isinstance(x, bytes) else "\x00") in x
                                           for x in np.ravel(var.values) if isinstance(x, (str, bytes))):
            _fail(source, str(name), "a string holds a NUL character, which a netCDF file cannot store")
    _check_one_line(ds, source)
    beta = float(ds.attrs["beta"])
    if not (np.isfinite(beta) and beta > 0):
        _fail(source, "attrs.beta", f"{beta}; the click scale must be a finite positive number")
    check_name(ds.attrs["roster"], f"world {source}: field 'attrs.roster':")


def validate_world(ds: xr.Dataset, source: str = "<memory>") -> xr.Dataset:
    """Check a world Dataset against the format; return it unchanged or raise WorldFormatError naming the field."""
    _check_attrs(ds, source)
    if int(ds.attrs["format_version"]) != FORMAT_VERSION:
        _fail(source, "attrs.format_version", f"{ds.attrs['format_version']} (this toolkit reads {FORMAT_VERSION})")
    mode = str(ds.attrs["arrival_mode"])
    if mode not in ARRIVAL_MODES:
        _fail(source, "attrs.arrival_mode", f"{mode!r} is not one of {ARRIVAL_MODES}")

    feats = _require_numeric(ds, "features", ("question", "persona", "feature"), source)
    probs = _require_numeric(ds, "probs", ("student", "question", "first", "second"), source)
    utils = _require_numeric(ds, "utilities", ("student", "question", "persona"), source)
    n_s, n_q, K = utils.shape
    if n_s < 1 or n_q < 1:
        _fail(source, "utilities", f"{n_s} students x {n_q} questions; a world needs at least one of each")
    if K < 3:
        _fail(source, "utilities", f"needs at least 3 personas, has {K} (with 2, every pair is the best pair "
                                   f"and the score is undefined)")
    if feats.shape[:2] != (n_q, K):
        _fail(source, "features", f"shape {feats.shape} does not match {n_q} questions x {K} personas")
    if feats.shape[2] != K + 1:
        _fail(source, "features", f"{feats.shape[2]} features, expected K + 1 = {K + 1}")
    if probs.shape != (n_s, n_q, K, K):
        _fail(source, "probs", f"shape {probs.shape}, expected {(n_s, n_q, K, K)}")
    if not np.all(np.isfinite(feats)):
        bad = np.argwhere(~np.isfinite(feats))[0]
        _fail(source, "features", f"non-finite value {feats[tuple(bad)]} at question={bad[0]}, persona={bad[1]}, feature={bad[2]}")
    if not np.allclose(feats[:, :, :K], np.eye(K)[None]):
        _fail(source, "features", "features 0..K-1 must be the persona indicators e_p")
    _check_rater(feats[:, :, K], int(ds.attrs["rater_available"]), source)

    for name in ("persona", "first", "second"):
        if name not in ds.coords or ds[name].size != K:
            _fail(source, name, "missing coordinate of persona names")
    personas = [str(p) for p in ds["persona"].values]
    if len(set(personas)) != K:
        dup = next(p for p in personas if personas.count(p) > 1)
        _fail(source, "persona", f"persona name {dup!r} appears {personas.count(dup)} times; names must be unique")
    if [str(p) for p in ds["first"].values] != personas or [str(p) for p in ds["second"].values] != personas:
        _fail(source, "first/second", "coordinates must equal the persona coordinate")
    for dim in ("student", "question"):
        if dim not in ds.coords:
            _fail(source, dim, "missing id coordinate")
        ids = ds[dim].values
        if ids.dtype.kind in "fc" and not np.isfinite(ids).all():
            _fail(source, dim, "ids must be finite (a NaN id equals no other, so uniqueness cannot be checked)")
        if len(set(ids.tolist())) != len(ids):
            _fail(source, dim, "ids are not unique")

    reach = reachable_cells(ds, source)
    off = ~np.eye(K, dtype=bool)
    u_reach = utils[reach]
    if not np.all(np.isfinite(u_reach)):
        _fail(source, "utilities", "NaN or infinite value in a reachable (student, question) cell")
    if np.any((u_reach < 0) | (u_reach > 1)):
        v = u_reach[(u_reach < 0) | (u_reach > 1)][0]
        _fail(source, "utilities", f"utility {v} outside [0, 1]")
    p_reach = probs[reach][:, off]
    if not np.all(np.isfinite(p_reach)):
        _fail(source, "probs", "NaN or infinite value in a reachable (student, question) cell")
    if np.any((p_reach <= 0) | (p_reach >= 1)):
        v = p_reach[(p_reach <= 0) | (p_reach >= 1)][0]
        _fail(source, "probs", f"probability {v} outside the open interval (0, 1)")
    if np.all(u_reach.max(-1) == u_reach.min(-1)):
        _fail(source, "utilities", "every reachable (student, question) cell has equal utilities for all personas: "
                                   "random pairs reach the floor and the score is undefined")
    p_other = probs[~reach][:, off]
    if np.any(np.isfinite(p_other) & ((p_other <= 0) | (p_other >= 1))):
        _fail(source, "probs", "probability outside (0, 1) in an unreachable cell (use NaN there)")

    _validate_metadata(ds, n_q, n_s, source)
    return ds


def _check_rater(g: np.ndarray, available: int, source) -> None:
    """g [Q, K]: all zeros without a rater; else centred over personas with unit sd on every question
    (or all zeros on a question the rater does not separate)."""
    if not available:
        if np.any(g != 0):
            q = int(np.argwhere(g != 0)[0][0])
            _fail(source, "features", f"rater feature nonzero at question={q} although attrs.rater_available = 0")
        return
    with np.errstate(over="ignore", invalid="ignore"):
        mean, sd = g.mean(axis=1), g.std(axis=1)
    bad = (np.abs(mean) > RATER_TOL) | ((np.abs(sd - 1) > RATER_TOL) & (np.abs(g).max(axis=1) > 0))
    if np.any(bad):
        q = int(np.flatnonzero(bad)[0])
        _fail(source, "features", f"rater feature at question={q} has mean {mean[q]:.3g} and sd {sd[q]:.3g} over "
                                  f"personas; it must be centred with unit sd (or all zeros)")


def _validate_metadata(ds, n_q, n_s, source):
    for name in ("question_topic", "question_kind", "question_text"):
        _require_var(ds, name, ("question",), source)
    chain = _require_var(ds, "question_chain", ("question",), source)
    cue = _require_var(ds, "question_cue", ("question",), source)
    if not np.issubdtype(chain.dtype, np.integer) or not np.issubdtype(cue.dtype, np.integer):
        _fail(source, "question_chain/question_cue", "must be integers")
    kinds = set(map(str, ds["question_kind"].values))
    if not kinds <= set(KINDS):
        _fail(source, "question_kind", f"unknown kinds {sorted(kinds - set(KINDS))}; allowed {KINDS}")
    for name in ("student_profile", "student_traits", "student_quirks"):
        _require_var(ds, name, ("student",), source)
    if str(ds.attrs["arrival_mode"]) != "fixed":
        if session_length(ds) > MAX_SESSION:
            _fail(source, "attrs.topics_per_session", f"sessions of {session_length(ds):,} questions (topics_per_session"
                                                      f" x chains_per_topic x questions_per_chain); at most {MAX_SESSION:,}")
        per = int(ds.attrs["chains_per_topic"]) * int(ds.attrs["questions_per_chain"])
        topics = np.asarray(ds["question_topic"].values).astype(str)
        uniq, counts = np.unique(topics, return_counts=True)
        if np.any(counts != per):
            t = uniq[counts != per][0]
            _fail(source, "question_topic", f"topic '{t}' has {counts[counts != per][0]} questions, expected {per} "
                                            f"(chains_per_topic x questions_per_chain)")
        if len(uniq) < int(ds.attrs["topics_per_session"]):
            _fail(source, "question_topic", f"{len(uniq)} topics, a session needs {ds.attrs['topics_per_session']}")
        if str(ds.attrs["arrival_mode"]) in ("distinct", "ordered") and n_s < int(ds.attrs["arrivals"]):
            _fail(source, "student", f"{n_s} students cannot fill {ds.attrs['arrivals']} "
                                     f"{ds.attrs['arrival_mode']} arrivals")
    _check_segments(ds, source)


def _check_segments(ds, source) -> None:
    """``student_segment``: ordered worlds only; integers from 0, non-decreasing, in steps of at most one."""
    if "student_segment" not in ds.variables:
        return
    seg = _require_var(ds, "student_segment", ("student",), source)
    if str(ds.attrs["arrival_mode"]) != "ordered":
        _fail(source, "student_segment", f"segments need arrival mode 'ordered' (student i is arrival i), not "
                                         f"{str(ds.attrs['arrival_mode'])!r}")
    if seg.dtype.kind not in "iu":
        _fail(source, "student_segment", f"values of type {seg.dtype}; expected integers")
    steps = np.diff(seg.astype(np.int64))
    if seg.size and (int(seg[0]) != 0 or np.any((steps < 0) | (steps > 1))):
        _fail(source, "student_segment", "segment numbers must start at 0 and rise by 0 or 1 from one student to "
                                         "the next")


def reachable_cells(ds: xr.Dataset, source: str = "<memory>") -> np.ndarray:
    """Boolean [student, question]: cells some session of this world can visit."""
    n_s, n_q = ds.sizes["student"], ds.sizes["question"]
    if str(ds.attrs["arrival_mode"]) != "fixed":
        return np.ones((n_s, n_q), dtype=bool)
    st = _require_var(ds, "schedule_student", ("arrival",), source)
    qu = _require_var(ds, "schedule_question", ("arrival", "round"), source)
    for name, v in (("schedule_student", st), ("schedule_question", qu)):
        if v.dtype.kind not in "iu":
            _fail(source, name, f"values of type {v.dtype}; expected integer indices")
    if qu.shape[0] != int(ds.attrs["arrivals"]) or st.shape[0] != int(ds.attrs["arrivals"]):
        _fail(source, "schedule_question", f"{qu.shape[0]} arrivals, attrs say {ds.attrs['arrivals']}")
    if not 1 <= qu.shape[1] <= MAX_SESSION:
        _fail(source, "schedule_question", f"{qu.shape[1]} rounds per session; expected 1 to {MAX_SESSION:,}")
    if st.min() < 0 or st.max() >= n_s or qu.min() < 0 or qu.max() >= n_q:
        _fail(source, "schedule_student/schedule_question", "index out of range")
    reach = np.zeros((n_s, n_q), dtype=bool)
    reach[np.repeat(st, qu.shape[1]), qu.ravel()] = True
    return reach


def session_length(ds: xr.Dataset) -> int:
    """Questions per session S."""
    if str(ds.attrs["arrival_mode"]) == "fixed":
        return int(ds.sizes["round"])
    a = ds.attrs
    return int(a["topics_per_session"]) * int(a["chains_per_topic"]) * int(a["questions_per_chain"])


def world_digest(ds: xr.Dataset) -> str:
    """Content hash of a world: every variable and coordinate (name, dims, values) and every attribute.

    It is the world's identity in the run store, so it does not depend on the file's name or path,
    and the same Dataset hashes the same in memory and after a netCDF round trip (numbers are hashed as
    float64 or int64, text as UTF-8)."""
    h = hashlib.sha256(b"tutorduel-world\0")
    for name in sorted(map(str, ds.variables)):
        v = ds.variables[name]
        values = np.asarray(v.values)
        h.update(f"{name}{list(v.dims)}{list(values.shape)}".encode())
        if values.dtype.kind in "fc":
            values = np.where(np.isnan(values), np.nan, values)      # one NaN: -NaN (what 0/0 gives) is NaN
            h.update(b"f" + np.ascontiguousarray(values, dtype=np.float64).tobytes())
        elif values.dtype.kind in "iub":
            h.update(b"i" + np.ascontiguousarray(values, dtype=np.int64).tobytes())
        else:
            h.update(b"s" + "\x1f".join(map(str, values.ravel().tolist())).encode("utf-8", "surrogatepass"))
    attrs = {str(k): _attr_value(v) for k, v in ds.attrs.items()}
    h.update(json.dumps(attrs, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def _attr_value(v):
    """An attribute as netCDF gives it back: plain Python values, a list of one as that one value, a list of
    numbers with a float among them as floats."""
    v = v.tolist() if isinstance(v, (np.ndarray, np.generic)) else list(v) if isinstance(v, tuple) else v
    if isinstance(v, list) and any(isinstance(x, float) for x in v):
        v = [float(x) if isinstance(x, int) and not isinstance(x, bool) else x for x in v]
    return v[0] if isinstance(v, list) and len(v) == 1 and not isinstance(v[0], list) else v


def memory_needed(ds: xr.Dataset) -> int:
    """Bytes a loaded copy of the world takes (from dims and dtypes; nothing is read)."""
    return int(sum(v.dtype.itemsize * int(np.prod(v.shape, dtype=np.int64)) for v in ds.variables.values()))


def _largest(ds: xr.Dataset) -> str:
    name = max(ds.data_vars, key=lambda n: ds[n].dtype.itemsize * ds[n].size)
    v = ds[name]
    dims = ", ".join(f"{d}={n}" for d, n in zip(v.dims, v.shape))
    return f"{name} [{dims}] {v.dtype} is {v.dtype.itemsize * v.size / 2**30:.2f} GiB"


def check_fits_in_memory(ds: xr.Dataset, label: str, copies: int = 1) -> None:
    """Refuse (WorldFormatError) a world whose `copies` loaded copies, with the temporaries validation and
    replay make (about twice the arrays), would not fit in the memory available now."""
    need, have = 2 * copies * memory_needed(ds), memory_available()
    if have is not None and need > have:
        per = 2 * memory_needed(ds) / 2**30
        raise WorldFormatError(f"{label}: too large for this machine: about {per:.2f} GiB per process ({_largest(ds)})"
                               f" x {copies} process(es) = {need / 2**30:.2f} GiB, {have / 2**30:.2f} GiB available; "
                               f"use fewer --jobs or a smaller world")


def write_world_file(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write atomically (``tdmodels.atomic_file``: a kill leaves the old file or the new one) as netCDF (h5netcdf engine, zlib-compressed numeric variables); no validation."""
    enc = {v: {"zlib": True, "complevel": 4} for v in ds.data_vars if ds[v].dtype.kind in "fiu"}
    return save_netcdf(path, dataset_bytes(ds, encoding=enc))


def read_world_file(path: str | os.PathLike, label: str = "world", copies: int = 1) -> xr.Dataset:
    """Read a netCDF file into memory; a missing, damaged or too large file raises WorldFormatError naming it.

    `copies`: how many processes will hold the world at once (checked against available memory before
    the arrays are read)."""
    path = Path(path)
    if not path.is_file():
        what = ("a folder, not a file" if path.is_dir() else "a device, pipe or other special file, not a regular file"
                if path.exists() else "no such file")
        raise WorldFormatError(f"{label} {path}: {what}")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as lazy:
            check_fits_in_memory(lazy, f"{label} {path}", copies)
            return lazy.load()
    except WorldFormatError:
        raise
    except Exception as exc:  # h5py/xarray raise many types for damaged files
        raise WorldFormatError(f"{label} {path}: not a readable netCDF file ({type(exc).__name__}: {exc})") from None


def save_world(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Validate and write atomically as netCDF (h5netcdf engine, zlib-compressed)."""
    validate_world(ds, str(path))
    return write_world_file(ds, path)


def load_world(path: str | os.PathLike, copies: int = 1) -> xr.Dataset:
    """Read and validate a world file; any problem raises WorldFormatError naming it."""
    return validate_world(read_world_file(path, copies=copies), str(path))
