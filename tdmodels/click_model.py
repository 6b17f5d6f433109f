"""The Bradley-Terry-Luce click model and the per-user linear utility model, as NumPyro functions.

Click model: a user with weights theta sees personas (first, second) with feature rows
phi_first, phi_second and clicks the first with probability
sigmoid(theta . (phi_first - phi_second)). A design row is z = phi_first - phi_second.

Models take the design and an optional `y`: with y=None they draw clicks (prior
predictive); with y given they condition on it (NUTS, log density).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist

from tdmodels.prior_distributions import prior_distribution
from tdmodels.priors import MixturePrior


def btl_probability(theta, z):
    """P(first wins) for weights theta [..., d] and design rows z [..., d]."""
    return 1.0 / (1.0 + jnp.exp(-jnp.sum(theta * z, axis=-1)))


def btl_clicks(theta, z, y=None):
    """Click site "y" [U, S]: Bernoulli(sigmoid(theta_u . z_us)) for theta [U, d], z [U, S, d].

    Call inside a plate over the U users (dim -1); the S rounds are the event.
    """
    eta = jnp.einsum("usd,ud->us", z, theta)
    return numpyro.sample("y", dist.Bernoulli(logits=eta).to_event(1), obs=y)


def user_utilities(z, prior: MixturePrior, y=None):
    """Per-user linear utilities: theta_u ~ prior independently, clicks from the BTL model.

    z [U, S, d] design rows (phi_first - phi_second) of each user's S rounds; y [U, S] in
    {0, 1} or None. prior: one MixturePrior shared by all users (weights [C]) or one per
    user (weights [U, C]). Sites: "theta" [U, d], "y" [U, S].
    """
    with numpyro.plate("users", z.shape[0]):
        theta = numpyro.sample("theta", prior_distribution(prior))
        return btl_clicks(theta, z, y)
