"""Vectorised R-hat, bulk ESS and tail ESS against ArviZ's own, entry by entry."""
import arviz as az
import numpy as np
import pytest
import xarray as xr

from inference import convergence
from inference.convergence import rhat_and_bulk_ess


def _arviz(x):
    ds = xr.Dataset({"q": (("chain", "draw", "entry"), x)})
    return az.rhat(ds)["q"].values, az.ess(ds, method="bulk")["q"].values


def _draws(chains, draws, seed):
    """Entries of every kind: independent, strongly autocorrelated (AR(1), 0.95), chains that disagree,
    ties (rounded values, a rare 1), a constant, a NaN."""
    rng = np.random.default_rng(seed)
    e = rng.standard_normal((chains, draws, 9))
    ar = np.zeros((chains, draws))
    for t in range(1, draws):
        ar[:, t] = 0.95 * ar[:, t - 1] + e[:, t, 0]
    x = np.stack([e[..., 1], ar, e[..., 2] + np.arange(chains)[:, None], np.round(e[..., 3]),
                  (e[..., 4] > 2.0).astype(float), np.full((chains, draws), 0.3), e[..., 5] ** 3,
                  np.where(np.arange(draws) == 7, np.nan, e[..., 6]), np.exp(e[..., 7])], axis=-1)
    return x


@pytest.mark.parametrize("chains, draws, seed", [(4, 1000, 0), (2, 501, 1), (3, 64, 2), (1, 200, 3), (4, 5, 4)])
@pytest.mark.parametrize("chunk", [convergence.CHUNK, 4])
def test_rhat_and_bulk_ess_are_arviz_figures(chains, draws, seed, chunk, monkeypatch):
    """Entry by entry, in one chunk of entries or in several."""
    monkeypatch.setattr(convergence, "CHUNK", chunk)
    x = _draws(chains, draws, seed)
    rhat, ess = _arviz(x)
    ours = rhat_and_bulk_ess(x)
    np.testing.assert_allclose(ours[0], rhat, rtol=1e-10, atol=0, equal_nan=True)
    np.testing.assert_allclose(ours[1], ess, rtol=1e-8, atol=0, equal_nan=True)


def test_too_few_draws_give_nan():
    x = np.random.default_rng(0).standard_normal((4, 3, 2))
    rhat, ess = rhat_and_bulk_ess(x)
    assert np.isnan(rhat).all() and np.isnan(ess).all()


def test_draws_of_another_shape_are_refused_by_shape_and_no_entries_give_empty_figures():
    with pytest.raises(ValueError, match=r"\[chain, draw, entry\]; got shape \(4, 100\)"):
        rhat_and_bulk_ess(np.zeros((4, 100)))
    rhat, ess = rhat_and_bulk_ess(np.zeros((4, 100, 0)))
    assert rhat.shape == ess.shape == (0,)


@pytest.mark.parametrize("chains, draws, seed", [(4, 1000, 0), (2, 501, 1), (3, 64, 2), (1, 200, 3), (4, 5, 4),
                                                 pytest.param(4, 4001, 5, marks=pytest.mark.slow),   # ArviZ: 40 s
                                                 (1, 201, 6), (3, 27, 7)])
@pytest.mark.parametrize("chunk", [convergence.CHUNK, 4])
def test_tail_ess_is_arviz_figure(chains, draws, seed, chunk, monkeypatch):
    """Entry by entry, with ties, a constant, a NaN, infinities, and quantiles that fall on a draw (type 7 puts the
    5% quantile on draw (n - 1) 0.05 + 1 of the n pooled draws: whole for n = 201 and 81)."""
    monkeypatch.setattr(convergence, "CHUNK", chunk)
    x = _draws(chains, draws, seed)
    inf = np.where(np.arange(draws) % 9 == 2, np.inf, x[..., :1])
    both = np.where(np.arange(draws) % 11 == 3, -np.inf, inf)
    x = np.concatenate([x, inf, both], axis=-1)
    want = az.ess(xr.Dataset({"q": (("chain", "draw", "entry"), x)}), method="tail")["q"].values
    np.testing.assert_allclose(convergence.tail_ess(x), want, rtol=1e-8, atol=0, equal_nan=True)


def test_tail_ess_refuses_other_shapes_and_gives_nan_below_4_draws():
    with pytest.raises(ValueError, match=r"\[chain, draw, entry\]"):
        convergence.tail_ess(np.zeros((4, 100)))
    assert np.isnan(convergence.tail_ess(np.zeros((4, 3, 2)))).all()
    assert convergence.tail_ess(np.zeros((4, 100, 0))).shape == (0,)


def test_threads_may_call_it_at_once_under_any_numba_threading_layer(tmp_path):
    """numba's workqueue layer aborts the process (SIGABRT) when two threads enter a parallel kernel at once."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "threads.py"
    script.write_text(
        "from concurrent.futures import ThreadPoolExecutor\n"
        "import numpy as np\n"
        "from inference.convergence import rhat_and_bulk_ess, tail_ess\n"
        "x = np.random.default_rng(0).normal(size=(4, 400, 600))\n"
        "with ThreadPoolExecutor(4) as ex:\n"
        "    out = list(ex.map(lambda k: (rhat_and_bulk_ess(x) if k % 2 else (tail_ess(x),))[0].sum(), range(16)))\n"
        "print(len(out))\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "NUMBA_THREADING_LAYER": "workqueue", "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "16"
