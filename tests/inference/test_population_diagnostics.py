"""Label-invariant diagnostics: they flag chains that agree on theta but not on the partition."""
import numpy as np
import xarray as xr
from scipy.stats import multivariate_normal

from inference.population_diagnostics import (LabelInvariantHealth, label_invariant_draws, label_invariant_health,
                                              pair_subset, slot_log_joint)

D, U, DRAWS = 2, 4, 600
CENTRES = np.array([[3.0, 0.0], [3.0, 0.0], [-3.0, 0.0], [-3.0, 0.0]])


def _chain(rng, together: bool):
    """Draws in which users 0-1 and 2-3 form two clusters, or (together) all four share one wide component."""
    theta = CENTRES + 0.1 * rng.standard_normal((DRAWS, U, D))
    if together:
        mu = np.stack([np.zeros(D), [30.0, 30.0]])
        sd = np.array([[3.0, 3.0], [0.5, 0.5]])
    else:
        mu = np.stack([[3.0, 0.0], [-3.0, 0.0]])
        sd = np.full((2, D), 0.5)
    mu = mu + 0.02 * rng.standard_normal((DRAWS, 2, D))
    sd = sd * np.exp(0.02 * rng.standard_normal((DRAWS, 2, D)))
    chol = sd[..., :, None] * np.eye(D)
    w = np.broadcast_to([0.49, 0.49, 0.02], (DRAWS, 3)) if not together else np.broadcast_to([0.96, 0.02, 0.02], (DRAWS, 3))
    return dict(weights=w, mu=mu, cov_chol=chol, theta=theta, sd=sd)


def _posterior(chains):
    dims = {"weights": ["slot"], "mu": ["component", "dim"], "cov_chol": ["component", "dim", "dim2"],
            "theta": ["user", "dim"]}
    return xr.Dataset({k: (["chain", "draw"] + dims[k], np.stack([c[k] for c in chains])) for k in dims},
                      coords={"chain": np.arange(len(chains)), "draw": np.arange(DRAWS)})


def _clicks(rng):
    z = rng.standard_normal((U, 6, D))
    y = (rng.random((U, 6)) < 0.5).astype(float)
    return z, y


def test_slot_log_joint_is_the_weighted_gaussian_log_density():
    rng = np.random.default_rng(0)
    c = _chain(rng, together=False)
    x = rng.standard_normal((3, D))
    out = slot_log_joint(c["weights"][:2], c["mu"][:2], c["cov_chol"][:2], x, broad_var=4.0)
    assert out.shape == (2, 3, 3)
    for s in range(2):
        for k in range(2):
            ref = np.log(c["weights"][s, k]) + multivariate_normal(c["mu"][s, k], np.diag(c["sd"][s, k] ** 2)).logpdf(x)
            np.testing.assert_allclose(out[s, k], ref, rtol=1e-10)
        np.testing.assert_allclose(out[s, 2], np.log(0.02) + multivariate_normal(np.zeros(D), 4.0 * np.eye(D)).logpdf(x))


def test_chains_in_different_partitions_are_flagged_though_theta_agrees():
    rng = np.random.default_rng(1)
    post = _posterior([_chain(rng, together=False), _chain(rng, together=True)])
    z, y = _clicks(rng)
    draws = label_invariant_draws(post, z, y, test_points=CENTRES[[0, 2]], broad_var=4.0)
    h = label_invariant_health(draws, post["theta"])
    assert h.quantities["theta"].max_rhat < 1.01                  # theta alone says converged
    assert h.quantities["co_clustering"].max_rhat > 1.5            # users 0 and 2 together in one chain only
    assert h.quantities["occupied"].max_rhat > 1.5
    assert not h.ok and any(p.startswith("co_clustering") for p in h.problems)
    pair = int(np.flatnonzero((draws.pair_i.values == 0) & (draws.pair_j.values == 2))[0])
    cc = draws["co_clustering"].isel(pair=pair).mean("draw").values
    assert cc[0] < 0.01 and cc[1] > 0.9
    back = LabelInvariantHealth.from_attrs(h.as_attrs())
    assert back.problems == h.problems


def test_chains_from_one_posterior_pass_and_one_chain_never_does():
    rng = np.random.default_rng(2)
    post = _posterior([_chain(rng, together=False), _chain(rng, together=False)])
    z, y = _clicks(rng)
    draws = label_invariant_draws(post, z, y, test_points=CENTRES[[0, 2]], broad_var=4.0)
    h = label_invariant_health(draws, post["theta"])
    assert h.ok, h.problems
    assert set(h.quantities) == {"theta", "log_density", "co_clustering", "occupied", "log_lik"}
    one = label_invariant_health(draws.isel(chain=[0]), post["theta"].isel(chain=[0]))
    assert not one.ok and "1 chain" in one.problems[0]


def test_pairs_are_all_or_a_fixed_subset():
    i, j = pair_subset(5)
    assert len(i) == 10 and (i < j).all()
    a, b = pair_subset(300, max_pairs=100, seed=3)
    assert len(a) == 100 and (a < b).all() and np.array_equal(a, pair_subset(300, 100, 3)[0])


def test_one_user_has_no_pairs_and_is_judged_on_the_rest():
    rng = np.random.default_rng(4)
    chains = [_chain(rng, together=False), _chain(rng, together=False)]
    for c in chains:
        c["theta"] = c["theta"][:, :1]
    post = _posterior(chains)
    z, y = _clicks(rng)
    draws = label_invariant_draws(post, z[:1], y[:1], test_points=CENTRES[[0]], broad_var=4.0)
    h = label_invariant_health(draws, post["theta"])
    assert draws["co_clustering"].sizes["pair"] == 0 and "co_clustering" not in h.quantities
    assert not any("no finite R-hat" in p for p in h.problems)


def test_chains_stuck_at_different_constants_fail_the_check():
    """Two users certain to share a component in one chain and certain not to in the other: each
    chain's co-clustering is a constant, the within-chain variance 0 and R-hat infinite (or huge, by
    rounding). That entry counts, and fails; an infinite one was left out as not finite, and the fit
    called healthy."""
    rng = np.random.default_rng(5)
    post = _posterior([_chain(rng, together=False), _chain(rng, together=False)])
    z, y = _clicks(rng)
    draws = label_invariant_draws(post, z, y, test_points=CENTRES[[0, 2]], broad_var=4.0)
    stuck = draws["co_clustering"].values.copy()
    stuck[0, :, 0], stuck[1, :, 0] = 0.0, 1.0
    draws["co_clustering"] = (draws["co_clustering"].dims, stuck)
    h = label_invariant_health(draws, post["theta"])
    q = h.quantities["co_clustering"]
    assert q.max_rhat > 1e6 and q.n_rhat_over >= 1 and not h.ok
