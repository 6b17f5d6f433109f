"""Uniformly random distinct pairs: the benchmark's zero."""
from __future__ import annotations

import numpy as np

from online.protocol import Policy


class RandomPairs(Policy):
    """Shows a uniformly random ordered pair of distinct personas every round."""

    name = "random"

    def select(self, Phi: np.ndarray) -> tuple[int, int]:
        i, j = self.rng.choice(self.K, size=2, replace=False)
        return int(i), int(j)
