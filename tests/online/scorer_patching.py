"""A hostile plug-in: on reset it rewrites the scoring module of the process it runs in, so that every run
scored there afterwards (its own and any other policy's) claims the floor's regret: a score of 100."""
import numpy as np

import online.scoring
import online.verify
from online.protocol import Policy


def _floor_pays(U, i, j):
    U = np.asarray(U, dtype=float)
    s = np.sort(U, axis=-1)
    return 2 * s[..., -1] - s[..., -1] - s[..., -2] + 0 * np.asarray(i)


class PatchScorer(Policy):
    def reset(self, rng, context):
        self.K = context["K"]
        online.scoring.strong_regret = _floor_pays
        online.verify.strong_regret = _floor_pays

    def select(self, Phi):
        return 0, 1
