"""CODuel's click under an online belief other than the paper's Laplace step (``inference.online_beliefs``):
what the compiled click reads besides the two beliefs (the session's starting belief for the beliefs that
reread the session, expectation propagation's sites) and the state that keeps what it wrote."""
from __future__ import annotations

import numpy as np

from inference import kernels as kn
from inference.constants import BELIEFS, EP_BELIEFS, SESSION_BELIEFS
from inference.kernels.importance_laplace import base_draws
from inference.online_beliefs import UNREAD_SITES, checked_sites, new_sites
from online.policies.coduel_prior import belief_from


def belief_click(state, Phi: np.ndarray, i: int, j: int, y: int, settings):
    """The click y on the pair (i, j) of Phi [K, d] into a CODuel state's two beliefs by `settings.belief`:
    (the state with EP's new sites, then ``kn.coduel_click_belief``'s P, z, the population belief and log
    p(y), the no-transfer belief and log p(y)). The state's own arrays are not written."""
    b, a = state.belief, state.alone
    prior = b
    if settings.belief in SESSION_BELIEFS:
        prior = state.start if state.start is not None else belief_from(      # a state built without it
            state.pop, state.floor, settings.change_hazard, settings.change_weight_max, state.arrival_gain).belief
    sites, alone_sites = UNREAD_SITES, UNREAD_SITES
    if settings.belief in EP_BELIEFS:                    # the kernel writes into these copies
        S, d = len(state.session.y), b.means.shape[1]
        sites = checked_sites(state.sites, len(state.active), S, d, "CODuel")
        alone_sites = checked_sites(state.alone_sites, 1, S, d, "CODuel (its no-transfer belief)")
    out = kn.coduel_click_belief(b.log_w, b.means, b.covs, state.active, a.log_w, a.means, a.covs, Phi, state.A, i, j,
                                 int(y), BELIEFS.index(settings.belief), prior.log_w, prior.means, prior.covs,
                                 state.session_z, state.session.y, state.t, base_draws(Phi.shape[1]), *sites,
                                 *alone_sites)
    if settings.belief in EP_BELIEFS:
        state = state._replace(sites=sites, alone_sites=alone_sites)
    return (state, *out)


def session_sites(settings, C: int, S: int, d: int) -> dict:
    """A CODuel state's EP sites at a session's start (none fitted) for the beliefs that keep them, None for
    the others: {"sites": [C, 3, S] ..., "alone_sites": [1, 3, S] ...}."""
    if settings.belief not in EP_BELIEFS:
        return {"sites": None, "alone_sites": None}
    return {"sites": new_sites(C, S, d), "alone_sites": new_sites(1, S, d)}


__all__ = ["belief_click", "session_sites"]
