"""Figures of simulation-based calibration results (``inference.sbc``)."""
from __future__ import annotations

import numpy as np
from scipy import stats

from inference.sbc import SBCResult


def plot_sbc_ecdf(result: SBCResult, path=None, names=None, ncols: int = 7):
    """ECDF-difference plot of the PITs (rank + 0.5) / (L + 1), one panel per checked quantity (rows of
    `ncols`), with simultaneous bands. `result` is any SBC result with ranks [N, Q] and L (e.g.
    ``inference.sbc.SBCResult`` or ``PopulationSBC``); names default to the result's own, if any."""
    import arviz as az

    from diagnostics.figures import new_figure

    d = result.ranks.shape[1]
    names = names if names is not None else getattr(result, "names", None)
    cols = min(d, ncols)
    rows = (d + cols - 1) // cols
    fig, axes = new_figure(rows, cols, figsize=(2.6 * cols, 2.6 * rows), sharey=True, squeeze=False)
    for ax in axes.ravel()[d:]:
        ax.set_visible(False)
    L = result.L
    pit = (result.ranks + 0.5) / (L + 1)

    def rvs(n, random_state=None):   # PITs of exact ranks: discrete uniform on L + 1 points
        rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
        return (rng.integers(0, L + 1, size=n) + 0.5) / (L + 1)

    for c, ax in enumerate(axes.ravel()[:d]):
        az.plot_ecdf(pit[:, c], cdf=stats.uniform().cdf, rvs=rvs, eval_points=np.linspace(0, 1, 101), difference=True, confidence_bands=True, ax=ax)
        ax.set_title(names[c] if names else f"theta[{c}]", fontsize=9)
    fig.tight_layout()
    if path:
        from tdmodels.atomic_file import atomic_save

        atomic_save(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    return fig
