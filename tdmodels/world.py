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

Loading validates everything and raises :class:`WorldFormatError` naming the field.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import xarray as xr

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
ARRIVAL_MODES = ("uniform", "distinct", "fixed")


class WorldFormatError(ValueError):
    """A world file or Dataset that does not follow the world format."""


def _fail(source, field, problem):
    raise WorldFormatError(f"world {source}: field '{field}': {problem}")


def _require_var(ds, name, dims, source):
    if name not in ds.variables:
        _fail(source, name, "missing variable")
    if tuple(ds[name].dims) != tuple(dims):
        _fail(source, name, f"dims {tuple(ds[name].dims)}, expected {tuple(dims)}")
    return ds[name].values


def validate_world(ds: xr.Dataset, source: str = "<memory>") -> xr.Dataset:
    """Check a world Dataset against the format; return it unchanged or raise."""
    for key, typ in REQUIRED_ATTRS.items():
        if key not in ds.attrs:
            _fail(source, f"attrs.{key}", "missing attribute")
        try:
            typ(ds.attrs[key])
        except (TypeError, ValueError):
            _fail(source, f"attrs.{key}", f"not a {typ.__name__}: {ds.attrs[key]!r}")
    if int(ds.attrs["format_version"]) != FORMAT_VERSION:
        _fail(source, "attrs.format_version", f"{ds.attrs['format_version']} (this toolkit reads {FORMAT_VERSION})")
    mode = str(ds.attrs["arrival_mode"])
    if mode not in ARRIVAL_MODES:
        _fail(source, "attrs.arrival_mode", f"{mode!r} is not one of {ARRIVAL_MODES}")

    feats = _require_var(ds, "features", ("question", "persona", "feature"), source)
    probs = _require_var(ds, "probs", ("student", "question", "first", "second"), source)
    utils = _require_var(ds, "utilities", ("student", "question", "persona"), source)
    n_s, n_q, K = utils.shape
    if K < 2:
        _fail(source, "utilities", f"needs at least 2 personas, has {K}")
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

    for name in ("persona", "first", "second"):
        if name not in ds.coords or ds[name].size != K:
            _fail(source, name, "missing coordinate of persona names")
    if list(ds["first"].values) != list(ds["persona"].values) or list(ds["second"].values) != list(ds["persona"].values):
        _fail(source, "first/second", "coordinates must equal the persona coordinate")
    for dim in ("student", "question"):
        if dim not in ds.coords:
            _fail(source, dim, "missing id coordinate")
        ids = ds[dim].values
        if len(set(ids.tolist())) != len(ids):
            _fail(source, dim, "ids are not unique")

    reach = reachable_cells(ds, source)
    off = ~np.eye(K, dtype=bool)
    p_reach = probs[reach][:, off]
    if not np.all(np.isfinite(p_reach)):
        _fail(source, "probs", "NaN or infinite value in a reachable (student, question) cell")
    if np.any((p_reach <= 0) | (p_reach >= 1)):
        v = p_reach[(p_reach <= 0) | (p_reach >= 1)][0]
        _fail(source, "probs", f"probability {v} outside the open interval (0, 1)")
    u_reach = utils[reach]
    if not np.all(np.isfinite(u_reach)):
        _fail(source, "utilities", "NaN or infinite value in a reachable (student, question) cell")
    if np.any((u_reach < 0) | (u_reach > 1)):
        v = u_reach[(u_reach < 0) | (u_reach > 1)][0]
        _fail(source, "utilities", f"utility {v} outside [0, 1]")
    p_other = probs[~reach][:, off]
    if np.any(np.isfinite(p_other) & ((p_other <= 0) | (p_other >= 1))):
        _fail(source, "probs", "probability outside (0, 1) in an unreachable cell (use NaN there)")

    _validate_metadata(ds, n_q, n_s, source)
    return ds


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
        per = int(ds.attrs["chains_per_topic"]) * int(ds.attrs["questions_per_chain"])
        topics = np.asarray(ds["question_topic"].values).astype(str)
        uniq, counts = np.unique(topics, return_counts=True)
        if np.any(counts != per):
            t = uniq[counts != per][0]
            _fail(source, "question_topic", f"topic {t!r} has {counts[counts != per][0]} questions, expected {per}")
        if len(uniq) < int(ds.attrs["topics_per_session"]):
            _fail(source, "question_topic", f"{len(uniq)} topics, a session needs {ds.attrs['topics_per_session']}")
        if str(ds.attrs["arrival_mode"]) == "distinct" and n_s < int(ds.attrs["arrivals"]):
            _fail(source, "student", f"{n_s} students cannot fill {ds.attrs['arrivals']} distinct arrivals")


def reachable_cells(ds: xr.Dataset, source: str = "<memory>") -> np.ndarray:
    """Boolean [student, question]: cells some session of this world can visit."""
    n_s, n_q = ds.sizes["student"], ds.sizes["question"]
    if str(ds.attrs["arrival_mode"]) != "fixed":
        return np.ones((n_s, n_q), dtype=bool)
    st = _require_var(ds, "schedule_student", ("arrival",), source)
    qu = _require_var(ds, "schedule_question", ("arrival", "round"), source)
    if qu.shape[0] != int(ds.attrs["arrivals"]):
        _fail(source, "schedule_question", f"{qu.shape[0]} arrivals, attrs say {ds.attrs['arrivals']}")
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
    """Short content hash of the arrays a replay reads (features, probs, utilities, schedule)."""
    h = hashlib.sha256()
    for name in ("features", "probs", "utilities", "schedule_student", "schedule_question"):
        if name in ds.variables:
            h.update(name.encode())
            h.update(np.ascontiguousarray(ds[name].values).tobytes())
    for key in ("roster", "arrivals", "arrival_mode", "topics_per_session"):
        h.update(f"{key}={ds.attrs[key]}".encode())
    h.update(np.asarray(ds["question_topic"].values).astype(str).tobytes())
    return h.hexdigest()[:16]


def write_world_file(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Write atomically as netCDF (h5netcdf engine, zlib-compressed numeric variables); no validation."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    enc = {v: {"zlib": True, "complevel": 4} for v in ds.data_vars if ds[v].dtype.kind in "fiu"}
    ds.to_netcdf(tmp, engine="h5netcdf", encoding=enc)
    os.replace(tmp, path)
    return path


def read_world_file(path: str | os.PathLike, label: str = "world") -> xr.Dataset:
    """Read a netCDF file into memory; a missing or damaged file raises WorldFormatError naming it."""
    path = Path(path)
    if not path.exists():
        raise WorldFormatError(f"{label} {path}: no such file")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as ds:
            return ds.load()
    except Exception as exc:  # h5py/xarray raise many types for damaged files
        raise WorldFormatError(f"{label} {path}: not a readable netCDF file ({type(exc).__name__}: {exc})") from None


def save_world(ds: xr.Dataset, path: str | os.PathLike) -> Path:
    """Validate and write atomically as netCDF (h5netcdf engine, zlib-compressed)."""
    validate_world(ds, str(path))
    return write_world_file(ds, path)


def load_world(path: str | os.PathLike) -> xr.Dataset:
    """Read and validate a world file; any problem raises WorldFormatError naming it."""
    return validate_world(read_world_file(path), str(path))
