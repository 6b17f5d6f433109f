"""Figures of simulation-based calibration results (``inference.sbc``)."""
from __future__ import annotations

import numpy as np
from scipy import stats

from inference.sbc import SBCResult


def plot_sbc_ecdf(result: SBCResult, path=None, names=None):
    """ECDF-difference plot of the PITs (rank + 0.5) / (L + 1), one panel per coordinate, with bands."""
    import arviz as az
    import matplotlib.pyplot as plt

    d = result.ranks.shape[1]
    fig, axes = plt.subplots(1, d, figsize=(2.6 * d, 2.6), sharey=True, squeeze=False)
    L = result.L
    pit = (result.ranks + 0.5) / (L + 1)

    def rvs(n, random_state=None):   # PITs of exact ranks: discrete uniform on L + 1 points
        rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
        return (rng.integers(0, L + 1, size=n) + 0.5) / (L + 1)

    for c, ax in enumerate(axes[0]):
        az.plot_ecdf(pit[:, c], cdf=stats.uniform().cdf, rvs=rvs, eval_points=np.linspace(0, 1, 101), difference=True, confidence_bands=True, ax=ax)
        ax.set_title(names[c] if names else f"theta[{c}]", fontsize=9)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=110)
    return fig
