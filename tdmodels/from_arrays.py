"""A world from your own arrays: utilities U, and judge probabilities P or a stated click model.

Only U (and P) carry information a policy is scored on; the rest of the format is filled with
generic metadata: every question is its own topic (one chain of one question, kind
"definition", cue 0), so a session is `session_length` distinct questions drawn at random,
and the rater feature is absent (zeros) unless rater scores are given.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import xarray as xr

from .bradley_terry import order_averaged
from .portable_math import expit, standardise
from .simulator import BETA_SEARCH, fit_click_scale
from .run_inputs import check_memory
from .limits import MAX_ARRIVALS
from .world import FORMAT_VERSION, WorldFormatError, check_name, validate_world

DEFAULT_CLICK_SCALE = 11.0    # logits per unit of U: the real sample's pooled fit P ~ sigmoid(11 (U_a - U_b))
DEFAULT_CLIP = 0.1            # the reference judge's probabilities lie in [0.1, 0.9]
ARRAY_NAMES = ("utilities", "probs", "rater", "personas")


def check_click_model(beta, clip) -> None:
    """One WorldFormatError unless beta is a finite positive number and clip a number in [0, 0.5)."""
    for name, value in (("beta", beta), ("clip", clip)):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise WorldFormatError(f"click model: {name} {value!r} must be a number")
        if isinstance(value, (int, np.integer)) and abs(int(value)) > 2**53:
            raise WorldFormatError(f"click model: {name} {value!r} is out of range")
    if not (np.isfinite(beta) and beta > 0):
        raise WorldFormatError(f"click model: beta {beta!r} must be a finite positive number")
    if not 0 <= clip < 0.5:
        raise WorldFormatError(f"click model: clip {clip!r} must lie in [0, 0.5)")


def btl_probs(U: np.ndarray, beta: float = DEFAULT_CLICK_SCALE, clip: float = DEFAULT_CLIP) -> np.ndarray:
    """P[..., i, j] = clip(sigmoid(beta (U_i - U_j)), clip, 1 - clip), diagonal 0.5; U [..., K]."""
    check_click_model(beta, clip)
    U = np.asarray(U, dtype=float)
    P = expit(beta * (U[..., :, None] - U[..., None, :]))
    P = np.clip(P, max(clip, 1e-12), min(1 - clip, 1 - 1e-12))
    K = U.shape[-1]
    P[..., np.arange(K), np.arange(K)] = 0.5
    return P


def _array(value, name: str, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged nested lists and the like
        raise WorldFormatError(f"{name}: not an array ({type(exc).__name__}: {exc})") from None
    if arr.dtype.kind not in "fiu":
        raise WorldFormatError(f"{name}: values of type {arr.dtype}; expected numbers")
    if arr.ndim != ndim:
        raise WorldFormatError(f"{name}: {arr.ndim} dimensions {arr.shape}, expected {ndim}")
    arr = arr.astype(float)
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(arr))[0])
        raise WorldFormatError(f"{name}: non-finite value {arr[bad]} at index {bad}"
                               + (f" ({int((~np.isfinite(arr)).sum()):,} of {arr.size:,} values)" if arr.size > 1 else ""))
    return arr


def _npz_shapes(npz) -> dict:
    """name -> (shape, dtype) of every array in an open .npz, read from the headers (no array is loaded)."""
    out = {}
    for key in npz.files:
        with npz.zip.open(key + ".npy") as fh:
            version = np.lib.format.read_magic(fh)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(fh)
        out[key] = (shape, dtype)
    return out


def read_arrays(path) -> dict:
    """The arrays of a .npz file for `world_from_arrays`: 'utilities' and optionally 'probs', 'rater',
    'personas'. Pickled objects are refused, and so is a file whose arrays (read from their headers,
    before any is loaded) or the world they make would not fit in memory; WorldFormatError names the
    problem."""
    import zipfile

    if not Path(path).is_file():        # a pipe would block np.load, a device feed it without end
        what = "no such file" if not Path(path).exists() else "not a regular file"
        raise WorldFormatError(f"arrays {path}: {what}")
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head[:4] != b"PK\x03\x04" and head != b"\x93NUMPY":   # numpy reads anything else as a pickle, refused
        raise WorldFormatError(f"arrays {path}: not a .npz file (it does not start as a zip archive does); save "
                               f"with numpy.savez(path, utilities=U[, probs=P, rater=G, personas=names])")
    try:
        npz = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        raise WorldFormatError(f"arrays {path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise WorldFormatError(f"arrays {path}: a single array (.npy), not a .npz file of named arrays; save with "
                               f"numpy.savez(path, utilities=U[, probs=P, rater=G, personas=names])")
    with npz:
        try:
            shapes = _npz_shapes(npz)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
            raise WorldFormatError(f"arrays {path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None
        unknown = sorted(set(shapes) - set(ARRAY_NAMES))
        if "utilities" not in shapes or unknown:
            raise WorldFormatError(f"arrays {path}: needs 'utilities' [students, questions, K], optionally 'probs', "
                                   f"'rater', 'personas'" + (f"; unknown: {', '.join(unknown)}" if unknown else ""))
        stored = sum(int(np.prod(sh, dtype=np.float64)) * dt.itemsize for sh, dt in shapes.values())
        u = shapes["utilities"][0]
        made = _world_bytes(*u) if len(u) == 3 else 0
        check_memory(stored + made, f"arrays {path}: the arrays ({stored / 2**30:.2f} GiB) and the world they make "
                                    f"({made / 2**30:.2f} GiB)")
        try:
            return {k: npz[k] for k in npz.files}
        except (OSError, ValueError, zipfile.BadZipFile) as exc:
            raise WorldFormatError(f"arrays {path}: not a readable .npz file ({type(exc).__name__}: {exc})") from None


def _world_bytes(n_s: int, n_q: int, K: int) -> int:
    """About what building and validating a world of this size allocates: P [n_s, n_q, K, K] and its
    temporaries, U, features."""
    return int(8 * (4 * n_s * n_q * K * K + 3 * n_s * n_q * K + n_q * K * (K + 1)))


def _fitted_scale(P: np.ndarray, U: np.ndarray) -> float:
    """The click scale fitted to a given P, refusing P that runs against U or barely depends on it."""
    K = U.shape[-1]
    iu, ju = np.triu_indices(K, 1)
    pbar = order_averaged(P)
    du, dp = (U[..., iu] - U[..., ju]).ravel(), (pbar[..., iu, ju] - 0.5).ravel()
    if not np.sum(du * dp) > 0:
        raise WorldFormatError("probs: P does not rise with U (the sum over pairs of (P_ij - 1/2)(U_i - U_j) is "
                               f"{np.sum(du * dp):.3g}, not > 0); probs[s, q, i, j] must be P(the first shown, i, "
                               "wins), rising with U_i - U_j. Check the order of the last two axes")
    beta = fit_click_scale(pbar, U)
    lo, hi = BETA_SEARCH
    if not lo * 1.01 < beta < hi * 0.99:
        raise WorldFormatError(f"probs: the click scale fitted to P, {beta:.3g} logits per unit of U, is at the edge "
                               f"of its search range [{lo:g}, {hi:g}] (P hardly follows U, or follows it as a step); "
                               f"give beta explicitly")
    return beta


def world_from_arrays(utilities, probs=None, *, name: str = "mine", rater=None, personas=None,
                      beta: float | None = None, clip: float = DEFAULT_CLIP, arrivals: int | None = None,
                      session_length: int = 24, arrival_mode: str = "uniform", held_out: bool = False,
                      description: str = "") -> xr.Dataset:
    """Build a validated world Dataset from U and, optionally, P.

    Parameters
    ----------
    utilities : array [students, questions, K]
        Reference utilities U in [0, 1]; K >= 3 personas.
    probs : array [students, questions, K, K], optional
        P(first shown wins), order-aware, in (0, 1) off the diagonal. Without it, P comes from the
        click model ``btl_probs(U, beta, clip)``.
    name : str
        The world's roster name (it also salts the session schedule).
    rater : array [questions, K], optional
        Rater scores g(p, q); centred over personas and scaled to unit sd here. Absent: zeros.
    personas : list of K str, optional
        Persona names (default P0..P{K-1}).
    beta : float, optional
        Click scale in logits per unit of U: the click model's when P is absent (default 11), else
        fitted to P (least squares of the order-averaged P on sigmoid(beta (U_a - U_b))) when None.
    clip : float
        The click model's clip bound (default 0.1: P in [0.1, 0.9]).
    arrivals : int, optional
        Arrivals per run (default: the number of students).
    session_length : int
        Questions per session, drawn without replacement (default 24; at most the number of questions).
    arrival_mode : {"uniform", "distinct", "ordered"}
        Students drawn with replacement, each at most once in a seeded order, or each once in the
        arrays' order (the last two need students >= arrivals).
    held_out : bool
        Mark the world as held out (readable only with --allow-test).

    Returns
    -------
    xarray.Dataset
        A world in the on-disk format, validated.
    """
    check_name(name)
    check_click_model(DEFAULT_CLICK_SCALE if beta is None else beta, clip)
    if not isinstance(held_out, (bool, np.bool_)):
        raise WorldFormatError(f"held_out {held_out!r}: must be True or False")
    U = _checked_utilities(utilities)
    n_s, n_q, K = U.shape
    P, click_model = _checked_probs(probs, U, beta, clip)
    if beta is None:
        beta = _fitted_scale(P, U) if probs is not None else DEFAULT_CLICK_SCALE
    personas = [str(p) for p in (personas if personas is not None else [f"P{k}" for k in range(K)])]
    if len(personas) != K:
        raise WorldFormatError(f"personas: {len(personas)} names for {K} personas")
    if arrival_mode not in ("uniform", "distinct", "ordered"):
        raise WorldFormatError(f"arrival_mode {arrival_mode!r}: use 'uniform', 'distinct' or 'ordered'")
    if arrivals is not None and (isinstance(arrivals, bool) or not isinstance(arrivals, (int, np.integer))
                                 or not 1 <= arrivals <= MAX_ARRIVALS):
        raise WorldFormatError(f"arrivals {arrivals!r}: must be an integer in [1, {MAX_ARRIVALS:,}]")
    if isinstance(session_length, bool) or not isinstance(session_length, (int, np.integer)) \
            or not 1 <= session_length <= n_q:
        raise WorldFormatError(f"session_length {session_length!r}: must be an integer in 1..{n_q} (the questions)")
    g = np.zeros((n_q, K)) if rater is None else _array(rater, "rater", 2)
    if g.shape != (n_q, K):
        raise WorldFormatError(f"rater: shape {g.shape}, expected {(n_q, K)}")
    if rater is not None:
        g = standardise(g)
    attrs = {"roster": name, "arrivals": int(n_s if arrivals is None else arrivals),
             "topics_per_session": int(session_length), "chains_per_topic": 1, "questions_per_chain": 1,
             "arrival_mode": arrival_mode, "held_out": int(bool(held_out)), "rater_available": int(rater is not None),
             "beta": float(beta), "bank_size": 16, "format_version": FORMAT_VERSION, "generator": "from-arrays",
             "click_model": click_model, "description": description or f"{n_s} students x {n_q} questions from arrays"}
    ds = _world_dataset(U, P, g, personas, attrs)
    return validate_world(ds, f"{name} (from arrays)")


def _checked_utilities(utilities) -> np.ndarray:
    U = _array(utilities, "utilities", 3)
    n_s, n_q, K = U.shape
    if n_s < 1 or n_q < 1:
        raise WorldFormatError(f"utilities: shape {U.shape} has {n_s} students and {n_q} questions; a world needs at "
                               f"least one of each")
    if K < 3:
        raise WorldFormatError(f"utilities: shape {U.shape}: needs at least 3 personas, has {K} (with 2, every pair is "
                               f"the best pair and the score is undefined)")
    if np.any((U < 0) | (U > 1)):
        bad = tuple(int(i) for i in np.argwhere((U < 0) | (U > 1))[0])
        raise WorldFormatError(f"utilities: value {U[bad]} at index {bad} outside [0, 1]")
    check_memory(_world_bytes(n_s, n_q, K), f"a world of {n_s:,} students x {n_q:,} questions x {K:,} personas")
    return U


def _checked_probs(probs, U: np.ndarray, beta, clip) -> tuple[np.ndarray, str]:
    """(P, the click model's description): the click model's P when `probs` is None, else `probs` checked."""
    n_s, n_q, K = U.shape
    if probs is None:
        scale = DEFAULT_CLICK_SCALE if beta is None else beta
        P = btl_probs(U, scale, clip)                    # checks beta and clip
        return P, f"btl beta={float(scale)} clip={clip}"
    P = _array(probs, "probs", 4)
    if P.shape != (n_s, n_q, K, K):
        raise WorldFormatError(f"probs: shape {P.shape}, expected {(n_s, n_q, K, K)} to match utilities")
    P = P.copy()
    P[..., np.arange(K), np.arange(K)] = 0.5
    outside = (P <= 0) | (P >= 1)
    if np.any(outside):
        bad = tuple(int(i) for i in np.argwhere(outside)[0])
        raise WorldFormatError(f"probs: probability {P[bad]} at index {bad} outside the open interval (0, 1)")
    return P, "given"


def _world_dataset(U, P, g, personas: list[str], attrs: dict) -> xr.Dataset:
    """The on-disk layout of a world from arrays: one-hot persona features plus the rater column, neutral
    question and student descriptions."""
    n_s, n_q, K = U.shape
    features = np.concatenate([np.broadcast_to(np.eye(K), (n_q, K, K)), g[:, :, None]], axis=2)
    return xr.Dataset(
        {
            "features": (("question", "persona", "feature"), features),
            "probs": (("student", "question", "first", "second"), P),
            "utilities": (("student", "question", "persona"), U),
            "question_topic": (("question",), np.array([f"q{i}" for i in range(n_q)])),
            "question_chain": (("question",), np.zeros(n_q, dtype=np.int64)),
            "question_kind": (("question",), np.array(["definition"] * n_q)),
            "question_cue": (("question",), np.zeros(n_q, dtype=np.int64)),
            "question_text": (("question",), np.array([f"question {i}" for i in range(n_q)])),
            "student_profile": (("student",), np.array([f"s{i}" for i in range(n_s)])),
            "student_traits": (("student",), np.array([""] * n_s)),
            "student_quirks": (("student",), np.array([""] * n_s)),
        },
        coords={"student": np.arange(n_s), "question": np.arange(n_q), "persona": personas, "first": personas,
                "second": personas, "feature": [f"e_{p}" for p in personas] + ["g"]},
        attrs=attrs,
    )
