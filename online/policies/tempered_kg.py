"""Tempered-KG: CODuel's population learner with its lookahead's future term tempered and the rater read as given.

    learner = tempered_kg()                             # an online.learner.Learner
    state = learner.init(context)
    state, info = learner.start_session(state, rng)
    pair, info = learner.select(state, Phi, rng)        # the state is not changed
    state, info = learner.update(state, Phi, pair, y)
    state, info = learner.end_session(state)

The belief, the population prior (incremental EM with births and removals) and the gate are
CODuel's (``online.policies.coduel``); two things differ, each chosen by measurement on dev and on
composite-like worlds generated with the development topics (never on a held-out roster):

- the pair rule scores a pair by its expected regret now plus `gamma` times CODuel's
  knowledge-gradient future term, remaining * mean_q KG_q (``online.lookahead_reference``). The
  knowledge gradient values one click as if its information served every remaining round and no
  later click would bring it; later clicks do, so the full term over-explores early in a session
  (CODuel's first round scores below random pairs on dev). gamma = 0 is greedy play, 1 is CODuel;
- the rater column g is read as given (no recalibration A = a I + A'): with the population prior
  in place the refitted A cost score on dev.

Settings: `gamma` (default ``GAMMA``), `recalibration` (default False) and `gate` (default True).
``tempered_kg(gamma=1,
recalibration=True)`` is CODuel itself, row for row. The state, the infos and the shapes are
CODuel's (``CODuelState``, ``UpdateInfo``, ``SessionInfo``).
"""
from __future__ import annotations

import math
from typing import Annotated

from online.learner import Learner
from online.policies.coduel import Settings, coduel_learner
from online.setting_range import Range, ranged
from tdmodels.errors import InputError

GAMMA = 0.25             # weight of the knowledge gradient's future term (dev and generated worlds)


@ranged
def tempered_kg(gamma: Annotated[float, Range(0, 100)] = GAMMA, recalibration: bool = False, gate: bool = True,
                belief: str = "laplace") -> Learner:
    """Tempered-KG as a Learner; the settings are closed over.

    Parameters
    ----------
    gamma : float
        Weight in [0, 100] of the lookahead's future term: 0 plays greedy pairs, 1 is CODuel's rule.
    recalibration : bool
        Refit the rater recalibration A as CODuel does (False: the rater column as given).
    gate : bool
        CODuel's gate: the no-transfer learner's pairs until the population predicts clicks better.
    belief : {"laplace", "adf", "laplace-is", "ep", "ep-corrected"}
        The per-user online belief, as CODuel's setting of that name.

    Returns
    -------
    online.learner.Learner
        Its state is an ``online.policies.coduel.CODuelState``.
    """
    if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not math.isfinite(gamma) or gamma < 0:
        raise InputError(f"tempered-kg: gamma must be a finite number >= 0, got {gamma!r}")
    return coduel_learner(Settings(recalibration=bool(recalibration), lookahead=True, gate=bool(gate),
                                   lookahead_weight=float(gamma), belief=str(belief)))


__all__ = ["tempered_kg", "GAMMA"]
