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
