"""The validation report's figures and summary: titles clear of each other and of the axes, every summary
figure labelled with its meaning."""
from __future__ import annotations

import html

import arviz as az
import numpy as np
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg

from diagnostics.posterior_checks import UserChecks
from diagnostics.validation_report import SUMMARY, _belief_figure, _rank_figure, summary_table


def _overlaps(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def _assert_titles_clear(fig):
    FigureCanvasAgg(fig).draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_visible()]
    titles = [ax.title.get_window_extent(renderer) for ax in axes]
    for i, (ax, t) in enumerate(zip(axes, titles)):
        assert not _overlaps(t, ax.get_window_extent(renderer)), f"title of axes {i} over its own plot"
        for j, other in enumerate(axes):
            if j != i:
                assert not _overlaps(t, other.get_tightbbox(renderer)), f"title of axes {i} over axes {j}"
    if fig._suptitle is not None:
        sup = fig._suptitle.get_window_extent(renderer)
        for i, t in enumerate(titles):
            assert not _overlaps(sup, t), f"the figure's title over the title of axes {i}"


def test_the_rank_plots_titles_stay_clear_of_the_axes():
    theta = np.random.default_rng(0).normal(size=(4, 200, 3, 7))
    idata = az.InferenceData(posterior=xr.Dataset({"theta": (("chain", "draw", "user", "dim"), theta)}))
    _assert_titles_clear(_rank_figure(idata, 1))


def test_a_belief_figures_title_stays_clear_of_its_axes():
    rows = [{"belief": b, "arrivals": a, "users": 50, "khat_median": 0.5, "share_khat_over": (0.1, 0.05, 0.2),
             "mean_abs_error_sd": 0.1, "sd_ratio_median": 1.0, "w1_over_floor_median": 1.2, "log_loss": 0.6,
             "ece": 0.02} for b in ("laplace", "adf") for a in ((0, 49), (50, 99), "all")]
    for key in ("share_khat_over", "log_loss"):
        _assert_titles_clear(_belief_figure(rows, key))


def test_every_summary_figure_has_a_label_and_a_meaning():
    rng = np.random.default_rng(1)
    checks = UserChecks(np.arange(5), rng.normal(size=(5, 7)), np.ones((5, 7)), np.ones((5, 7)), np.ones((5, 7)),
                        rng.random(5), rng.random((5, 4)))
    keys = set(checks.summary()) | {"weights_tv_median", "weights_tv_max"}
    assert keys <= set(SUMMARY)
    page = summary_table({**checks.summary(), "weights_tv_median": 0.1, "weights_tv_max": 0.3})
    for k in keys:
        label, meaning = SUMMARY[k]
        assert html.escape(label) in page and html.escape(meaning) in page
    assert "<script" not in summary_table({"<script>alert(1)</script>": 1.0})
