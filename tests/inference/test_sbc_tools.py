import numpy as np

from inference.sbc import coverage, rank_uniformity, random_designs, sbc_ranks


def _ranks(post_sd, seed=0, U=300, d=3, M=400):
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal((U, d))
    draws = post_sd * rng.standard_normal((M, U, d))     # "posterior" that ignores the data: exact iff sd = 1
    return theta, draws, sbc_ranks(theta, draws, 99)


def test_exact_posteriors_pass_and_wrong_ones_fail():
    theta, draws, ranks = _ranks(1.0)
    assert rank_uniformity(ranks, 99)[1] > 0.01
    assert np.all(np.abs(coverage(theta, draws) - 0.9) < 0.06)
    theta, draws, ranks = _ranks(0.6)                     # overconfident: U-shaped ranks, undercoverage
    assert rank_uniformity(ranks, 99)[1] < 1e-6
    assert np.all(coverage(theta, draws) < 0.8)


def test_random_designs_show_two_distinct_personas(dev_world):
    F = dev_world["features"].values
    z = random_designs(F, 50, 24, np.random.default_rng(0))
    ind = z[..., :6]
    assert z.shape == (50, 24, 7)
    assert np.all((ind == 1).sum(-1) == 1) and np.all((ind == -1).sum(-1) == 1)


def test_sbc_verdicts_refuse_what_would_pass_by_accident():
    """bins=0 had given p = NaN, combined into 1.0 (a pass); NaN draws counted as not covered."""
    import pytest

    from tdmodels.errors import InputError

    theta, draws, ranks = _ranks(1.0)
    for kw in ({"bins": 0}, {"bins": 1}, {"bins": True}):
        with pytest.raises(InputError, match="bins"):
            rank_uniformity(ranks, 99, **kw)
    with pytest.raises(InputError, match="L=0"):
        rank_uniformity(ranks, 0)
    with pytest.raises(InputError, match=r"integers in \[0, 50\]"):
        rank_uniformity(ranks, 50)                        # ranks of 99 draws read against 50
    bad = draws.copy()
    bad[3, 2, 1] = np.nan
    with pytest.raises(InputError, match="NaN"):
        coverage(theta, bad)
    for prob in (0.0, 1.0, 1.5, float("nan")):
        with pytest.raises(InputError, match="prob"):
            coverage(theta, draws, prob)


def test_weights_distance_refuses_weights_that_are_not_a_distribution():
    import pytest

    from diagnostics.posterior_checks import weights_distance
    from tdmodels.errors import InputError

    good = np.array([[0.2, 0.8], [0.5, 0.5]])
    np.testing.assert_allclose(weights_distance(good, good[::-1]), [0.3, 0.3])
    for online, exact in ((np.array([[np.nan, 1.0], [0.5, 0.5]]), good), (np.zeros((2, 2)), good),
                          (np.array([[-0.5, 1.5], [0.5, 0.5]]), good), (good, good[:, :1]), (good, -good)):
        with pytest.raises(InputError, match="weights_distance"):
            weights_distance(online, exact)
