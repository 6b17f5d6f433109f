"""Click logs: exactly what a policy saw and did in one run, for offline model fits.

For every (arrival, round): the user (student index), the question, the two personas
shown (first, second), their feature rows, the rater scores of all K personas on that
question (what recalibration needs), and the click (1: first won). Stored as netCDF
beside the run row (``seed-NNNN.clicks.nc``), written atomically.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
import xarray as xr

from tdmodels.priors import MixturePrior
from tdmodels.world import WorldFormatError, check_fits_in_memory
from tdmodels.errors import InputError
from tdmodels.netcdf_file import dataset_bytes, save_netcdf

LOG_VERSION = 3           # 3: the run's code digest among its attributes (its identity: world, seed, policy, code, truncation)


class ClickLogError(InputError):
    """A click-log file that cannot be read or does not match its run."""


class ClickLog(NamedTuple):
    """Every round of one run: who arrived, the questions, the pairs shown and the clicks, and what
    the policy recorded (its prior, recalibration, final beliefs and predictions at each arrival)."""
    student: np.ndarray      # [N] int: student index of each arrival (arrival = user)
    question: np.ndarray     # [N, S] int
    first: np.ndarray        # [N, S] int: persona shown first
    second: np.ndarray       # [N, S] int
    phi_first: np.ndarray    # [N, S, d]
    phi_second: np.ndarray   # [N, S, d]
    rater: np.ndarray        # [N, S, K]: rater column of Phi for every persona of the question
    outcome: np.ndarray      # [N, S] int8: 1 if first won
    attrs: dict              # world, world_digest, seed, policy, code, arrivals_limit: the run it belongs to
    priors: MixturePrior | None = None   # the policy's prior at each arrival (weights [N, C]), if it records one
    recalibration: np.ndarray | None = None   # [N, K, K] the rater recalibration A each arrival's clicks were read with
    beliefs: MixturePrior | None = None  # each user's online posterior at session end (Gaussian mixture), if recorded
    predictions: dict | None = None      # learner name -> [N, S] P(first wins) predicted before each click, if recorded

    @property
    def n_users(self) -> int:
        return int(self.outcome.shape[0])

    def design(self, users: slice | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(z [U, S, d] = phi_first - phi_second, y [U, S]) of the chosen arrivals (default: all)."""
        idx = np.arange(self.n_users)[users] if users is not None else np.arange(self.n_users)
        return self.phi_first[idx] - self.phi_second[idx], self.outcome[idx].astype(np.int64)

    def recalibrated_design(self, users: slice | np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """As `design`, with each arrival's rater column read through the A recorded for it
        (g -> A g), i.e. the design the policy's learner used; `design` when none is recorded."""
        z, y = self.design(users)
        if self.recalibration is None:
            return z, y
        idx = np.arange(self.n_users)[users] if users is not None else np.arange(self.n_users)
        Ag = np.einsum("npq,nsq->nsp", self.recalibration[idx], self.rater[idx])
        take = lambda which: np.take_along_axis(Ag, which[idx][..., None], -1)[..., 0]  # noqa: E731
        z = z.copy()
        z[..., -1] = take(self.first) - take(self.second)
        return z, y


def make_click_log(features: np.ndarray, student: np.ndarray, question: np.ndarray, pairs: np.ndarray,
                   outcome: np.ndarray, attrs: dict) -> ClickLog:
    """Assemble a log from a world's features [Q, K, d], the schedule and the played pairs [N, S, 2]."""
    first, second = pairs[..., 0], pairs[..., 1]
    K = features.shape[1]
    return ClickLog(student.astype(np.int64), question.astype(np.int64), first.astype(np.int64),
                    second.astype(np.int64), features[question, first], features[question, second],
                    features[question, :, K], outcome.astype(np.int8), dict(attrs))


def to_dataset(log: ClickLog) -> xr.Dataset:
    """The log as an xarray Dataset over (arrival, round, ...) dims, with what the policy recorded as extra variables."""
    a = ("arrival",)
    ar = ("arrival", "round")
    attrs = {k: ("" if v is None else v) for k, v in log.attrs.items()}
    priors = {}
    if log.priors is not None:
        w, m, C = log.priors
        priors = {"prior_weights": (("arrival", "component"), w), "prior_means": (("arrival", "component", "feature"), m),
                  "prior_covs": (("arrival", "component", "feature", "feature2"), C)}
    if log.recalibration is not None:
        priors["recalibration"] = (("arrival", "persona", "persona2"), log.recalibration)
    for name, p in (log.predictions or {}).items():
        priors[f"pred_{name}"] = (("arrival", "round"), p)
    if log.beliefs is not None:
        w, m, C = log.beliefs
        priors.update({"belief_weights": (("arrival", "slot"), w), "belief_means": (("arrival", "slot", "feature"), m),
                       "belief_covs": (("arrival", "slot", "feature", "feature2"), C)})
    return xr.Dataset(
        {"student": (a, log.student), "question": (ar, log.question), "first": (ar, log.first),
         "second": (ar, log.second), "phi_first": (ar + ("feature",), log.phi_first),
         "phi_second": (ar + ("feature",), log.phi_second), "rater": (ar + ("persona",), log.rater),
         "outcome": (ar, log.outcome), **priors},
        attrs={**attrs, "log_version": LOG_VERSION})


def save_click_log(log: ClickLog, path: str | os.PathLike) -> Path:
    """Write the log as netCDF, atomically; returns the path (``load_click_log`` reads it back)."""
    return save_netcdf(path, dataset_bytes(to_dataset(log)))


def load_click_log(path: str | os.PathLike) -> ClickLog:
    """Read and check a click log; ClickLogError names the file and the problem."""
    path = Path(path)
    if not path.is_file():     # a device, a pipe or a folder in the log's place is never opened
        raise ClickLogError(f"click log {path}: not a regular file")
    try:
        with xr.open_dataset(path, engine="h5netcdf") as lazy:
            check_fits_in_memory(lazy, f"click log {path}")
            ds = lazy.load()
    except WorldFormatError as exc:
        raise ClickLogError(str(exc)) from None
    except Exception as exc:  # h5py/netCDF raise many types for damaged files
        raise ClickLogError(f"click log {path}: unreadable ({type(exc).__name__}: {exc})") from None
    try:
        return _click_log_of(ds, path)
    except ClickLogError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:   # a field of the wrong shape or type
        raise ClickLogError(f"click log {path}: malformed ({type(exc).__name__}: {exc})") from None


def _click_log_of(ds: xr.Dataset, path: Path) -> ClickLog:
    """The checked ClickLog of a loaded click-log Dataset."""
    names = ("student", "question", "first", "second", "phi_first", "phi_second", "rater", "outcome")
    missing = [n for n in names if n not in ds]
    if missing:
        raise ClickLogError(f"click log {path}: missing variable(s) {', '.join(missing)}")
    arrs = {n: ds[n].values for n in names}
    N, S = arrs["outcome"].shape
    if arrs["question"].shape != (N, S) or arrs["student"].shape != (N,) or arrs["phi_first"].shape[:2] != (N, S):
        raise ClickLogError(f"click log {path}: variables disagree on (arrival, round) = ({N}, {S})")
    if not np.isin(arrs["outcome"], (0, 1)).all():
        raise ClickLogError(f"click log {path}: outcome holds values other than 0 and 1")
    for n in ("phi_first", "phi_second", "rater"):
        if not np.all(np.isfinite(arrs[n])):
            raise ClickLogError(f"click log {path}: {n} has non-finite entries")
    if int(ds.attrs.get("log_version", 0)) != LOG_VERSION:
        raise ClickLogError(f"click log {path}: format version {ds.attrs.get('log_version')}, "
                            f"this tutorduel writes {LOG_VERSION}")
    attrs = {k: v for k, v in ds.attrs.items() if k != "log_version"}
    if attrs.get("arrivals_limit", "") == "":
        attrs["arrivals_limit"] = None
    for n in ("student", "question", "first", "second"):
        arrs[n] = arrs[n].astype(np.int64)
    priors = None
    if "prior_weights" in ds:
        priors = MixturePrior(ds["prior_weights"].values, ds["prior_means"].values, ds["prior_covs"].values)
        if priors.weights.shape[0] != N:
            raise ClickLogError(f"click log {path}: priors for {priors.weights.shape[0]} arrivals, clicks for {N}")
    recal = None
    if "recalibration" in ds:
        recal = ds["recalibration"].values
        K = arrs["rater"].shape[-1]
        if recal.shape != (N, K, K) or not np.all(np.isfinite(recal)):
            raise ClickLogError(f"click log {path}: recalibration must be finite [{N}, {K}, {K}], got {recal.shape}")
    beliefs = None
    if "belief_weights" in ds:
        beliefs = MixturePrior(ds["belief_weights"].values, ds["belief_means"].values, ds["belief_covs"].values)
        if beliefs.weights.shape[0] != N:
            raise ClickLogError(f"click log {path}: beliefs for {beliefs.weights.shape[0]} arrivals, clicks for {N}")
    preds = {str(n)[5:]: ds[n].values for n in ds.data_vars if str(n).startswith("pred_")} or None
    for name, p in (preds or {}).items():
        if p.shape != (N, S) or not np.all((p >= 0) & (p <= 1)):
            raise ClickLogError(f"click log {path}: predictions of {name!r} must be probabilities [{N}, {S}]")
    return ClickLog(**arrs, attrs=attrs, priors=priors, recalibration=recal, beliefs=beliefs, predictions=preds)
