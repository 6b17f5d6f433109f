"""Figures for files and pages, drawn on `matplotlib.figure.Figure` directly: no pyplot state, no
backend switch, nothing left open in the caller's session (a notebook keeps its own backend)."""
from __future__ import annotations

from matplotlib.figure import Figure


def new_figure(nrows: int = 1, ncols: int = 1, figsize=(6.0, 4.0), layout=None, **subplots_kw):
    """(figure, axes) as ``plt.subplots`` returns them, without pyplot; `layout` as ``Figure``'s
    ("constrained" keeps titles and labels from overlapping)."""
    fig = Figure(figsize=figsize, layout=layout)
    return fig, fig.subplots(nrows, ncols, **subplots_kw)
