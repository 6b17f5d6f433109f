"""Online beliefs side by side: the exact-moments row, the table by arrival block and the target."""
import numpy as np


def test_the_exact_moments_row_is_checked_beside_the_beliefs_and_never_counts_as_one():
    """The mixture of the reference's own component moments is the bound the online beliefs are read against:
    a row of its own, with no click predictions, left out of the target."""
    import xarray as xr

    from diagnostics.belief_comparison import EXACT_MOMENTS, belief_table, exact_moments_mixture, target_met

    C, d = 3, 2
    units = xr.Dataset({"unit_user": ("unit", [0, 0, 1]), "unit_component": ("unit", [0, 2, 1]),
                        "posterior_weight": ("unit", [0.25, 0.75, 1.0]),
                        "unit_mean": (("unit", "dim"), np.arange(6.0).reshape(3, 2)),
                        "unit_cov": (("unit", "dim", "dim2"), np.stack([np.eye(2) * (k + 1) for k in range(3)]))})
    pm, pc = np.zeros((2, C, d)), np.broadcast_to(np.eye(d), (2, C, d, d))
    w, m, S = exact_moments_mixture(units, 2, pm, pc)
    np.testing.assert_array_equal(w, [[0.25, 0, 0.75], [0, 1, 0]])
    np.testing.assert_array_equal(m[0, 2], [2.0, 3.0])
    np.testing.assert_array_equal(S[1, 1], 3 * np.eye(2))
    np.testing.assert_array_equal(S[0, 1], np.eye(2))                 # pruned: the prior's, weight 0
    U, R = 4, 2
    ds = xr.Dataset({"khat": (("belief", "user"), np.full((2, U), 0.9)),
                     "khat_replicates": (("belief", "user", "replicate"), np.full((2, U, R), 0.9)),
                     **{k: (("belief", "user", "dim"), np.ones((2, U, d))) for k in ("mean_error", "sd_ratio", "w1",
                                                                                      "w1_floor")},
                     "p_first": (("belief", "user", "round"), np.r_[np.full((1, U, 3), 0.6), np.full((1, U, 3), np.nan)]),
                     "y": (("user", "round"), np.ones((U, 3), int))},
                    coords={"belief": ["adf", EXACT_MOMENTS], "user": np.arange(U)}, attrs={"block": 2})
    rows = belief_table(ds)
    assert [r["arrivals"] for r in rows] == [(0, 1), (2, 3), "all"] * 2
    assert np.isnan(rows[-1]["log_loss"]) and np.isfinite(rows[0]["log_loss"])
    assert target_met(rows) == {"adf": False}
