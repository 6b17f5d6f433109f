"""What a learner may record into a run's click log, and the recorder that reads it from the infos.

A learner declares the records its infos carry (``Learner.records``); each record is one field of
the info of one of its functions:

    record                    info of          field          click-log field
    arrival_priors            start_session    prior          priors: the prior the user arrived under
                                                                      (a MixturePrior, zero-padded to one
                                                                      component count over the run)
    arrival_recalibrations    start_session    A              recalibration [N, K, K]
    session_beliefs           end_session      belief         beliefs: the belief at session end, over the
                                                                       components of the arrival prior
    click_predictions         update           predictions    predictions: {learner: [N, S]} P(first wins)
                                                              before each click (a NamedTuple of floats
                                                              whose fields name the learners)

The replay reads nothing else and finds nothing by looking: a record the infos lack is one clear
error naming the learner, the record and the field.
"""
from __future__ import annotations

import numpy as np

from online.protocol import PolicyOutputError
from tdmodels.priors import MixturePrior

RECORDS = {
    "arrival_priors": ("start_session", "prior", "priors"),
    "arrival_recalibrations": ("start_session", "A", "recalibration"),
    "session_beliefs": ("end_session", "belief", "beliefs"),
    "click_predictions": ("update", "predictions", "predictions"),
}


def checked_records(records, name: str) -> frozenset:
    """A learner's declared records as a frozenset of known names, or PolicyOutputError."""
    if not isinstance(records, (set, frozenset, tuple, list)) or not all(isinstance(r, str) for r in records):
        raise PolicyOutputError(f"policy {name!r}: records must be a set of names ({', '.join(RECORDS)}), "
                                f"got {records!r}")
    unknown = set(records) - set(RECORDS)
    if unknown:
        raise PolicyOutputError(f"policy {name!r} declares records {sorted(unknown)}; known: {', '.join(RECORDS)}")
    return frozenset(records)


class Recorder:
    """Keeps the declared records from the infos a replay passes it (``online.replay.play``'s `observe`)."""

    def __init__(self, records, name: str, K: int, d: int):
        self.name, self.K, self.d = name, K, d
        self.records = checked_records(records, name)
        self.kept = {r: [] for r in self.records}
        self.by_kind = {}
        for r in self.records:
            kind, field, _ = RECORDS[r]
            self.by_kind.setdefault(kind, []).append((r, field))

    def __call__(self, kind: str, arrival: int, round_: int, info) -> None:
        for record, field in self.by_kind.get(kind, ()):
            try:
                value = getattr(info, field)
            except AttributeError:
                raise PolicyOutputError(f"policy {self.name!r} declares records {record!r} but its {kind} info "
                                        f"({type(info).__name__}) has no field {field!r}") from None
            problem = self._problem(record, value)
            if problem:
                raise PolicyOutputError(f"policy {self.name!r} at arrival {arrival}: its {kind} info's {field} "
                                        f"{problem} (record {record!r})")
            self.kept[record].append(value)

    def _problem(self, record: str, value) -> str | None:
        """What is wrong with a recorded value, or None."""
        if record in ("arrival_priors", "session_beliefs"):
            if not isinstance(value, MixturePrior):
                return f"is a {type(value).__name__}, not a tdmodels.priors.MixturePrior"
            w, m, S = (np.asarray(x) for x in value)
            C = w.shape[0] if w.ndim == 1 else -1
            if C < 1 or m.shape != (C, self.d) or S.shape != (C, self.d, self.d):
                return f"has weights {w.shape}, means {m.shape}, covs {S.shape}: not a mixture in {self.d} dimensions"
            if not (np.isfinite(w).all() and np.isfinite(m).all() and np.isfinite(S).all()):
                return "has non-finite entries"
        elif record == "arrival_recalibrations":
            A = np.asarray(value)
            if A.shape != (self.K, self.K) or not np.issubdtype(A.dtype, np.number) or not np.isfinite(A).all():
                return f"is not a finite [{self.K}, {self.K}] array"
        else:
            if not (isinstance(value, tuple) and hasattr(value, "_fields") and value
                    and all(isinstance(p, (float, int)) and 0.0 <= p <= 1.0 for p in value)):
                return "is not a NamedTuple of probabilities, one per learner"
        return None

    def fields(self, N: int, S: int) -> dict:
        """The click log's fields: {priors, recalibration, beliefs, predictions} for what was declared."""
        out = {}
        for record, values in self.kept.items():
            log_field = RECORDS[record][2]
            if record in ("arrival_priors", "session_beliefs"):
                out[log_field] = padded(values)
            elif record == "arrival_recalibrations":
                out[log_field] = np.array(values)
            else:
                names = type(values[0])._fields
                p = np.array(values, dtype=float).reshape(N, S, len(names))
                out[log_field] = {n: p[..., i] for i, n in enumerate(names)}
        return out


def padded(priors: list) -> MixturePrior:
    """Mixtures with different component counts, zero-padded (weight 0, identity covariance) to one array."""
    N, C = len(priors), max(len(p.weights) for p in priors)
    d = priors[0].means.shape[-1]
    w, m, S = np.zeros((N, C)), np.zeros((N, C, d)), np.tile(np.eye(d), (N, C, 1, 1))
    for a, p in enumerate(priors):
        k = len(p.weights)
        w[a, :k], m[a, :k], S[a, :k] = p
    return MixturePrior(w, m, S)
