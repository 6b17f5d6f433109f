"""Priors over a user's utility weights theta in R^d, as arrays (``tdmodels.prior_distributions`` turns them
into NumPyro distributions; this module imports neither JAX nor NumPyro).

A `MixturePrior` is a Gaussian mixture with fixed weights, means and covariances: the
belief a learner holds about a user before the first click. The isotropic Gaussian is
the one-component case. Leading batch dims are allowed (e.g. one prior per user:
weights [U, C], means [U, C, d], covs [U, C, d, d]).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from tdmodels.errors import InputError

DEFAULT_PRIOR_VAR = 4.0      # logits^2: the no-transfer learner's prior and CODuel's isotropic component


class MixturePrior(NamedTuple):
    """A Gaussian mixture over theta, or a batch of them (leading axes ...): weights, means, covariances."""
    weights: np.ndarray      # [..., C], sums to 1 over C
    means: np.ndarray        # [..., C, d]
    covs: np.ndarray         # [..., C, d, d], symmetric positive definite

    @property
    def n_components(self) -> int:
        return int(np.shape(self.weights)[-1])

    @property
    def dim(self) -> int:
        return int(np.shape(self.means)[-1])


def isotropic_prior(d: int, var: float = DEFAULT_PRIOR_VAR) -> MixturePrior:
    """N(0, var I_d) as a one-component mixture."""
    if not var > 0:
        raise InputError(f"prior variance must be positive, got {var!r}")
    return MixturePrior(np.ones(1), np.zeros((1, d)), var * np.eye(d)[None])


def validate_prior(prior: MixturePrior, d: int | None = None) -> MixturePrior:
    """Check shapes, weights and positive definiteness; return the prior as float64 arrays."""
    w, m, S = (np.asarray(a, dtype=float) for a in prior)
    if m.ndim < 2 or S.shape != m.shape + m.shape[-1:] or w.shape != m.shape[:-1]:
        raise InputError(f"mixture prior shapes do not agree: weights {w.shape}, means {m.shape}, covs {S.shape}")
    if d is not None and m.shape[-1] != d:
        raise InputError(f"mixture prior has dimension {m.shape[-1]}, the data have {d}")
    if not (np.all(np.isfinite(w)) and np.all(np.isfinite(m)) and np.all(np.isfinite(S))):
        raise InputError("mixture prior has non-finite entries")
    if np.any(w < 0) or not np.allclose(w.sum(-1), 1.0, atol=1e-8):
        raise InputError("mixture prior weights must be non-negative and sum to 1")
    if not np.allclose(S, np.swapaxes(S, -1, -2), atol=1e-10):
        raise InputError("mixture prior covariances must be symmetric")
    if np.any(np.linalg.eigvalsh(S)[..., 0] <= 0):
        raise InputError("mixture prior covariances must be positive definite")
    return MixturePrior(w, m, S)
