"""What one click says about the user's component: the mutual information against a NumPy statement of it,
and the CODuel variant that weighs it."""
import numpy as np
from scipy.special import expit

from inference.kernels.component_information import component_information


def _entropy(p):
    p = np.clip(p, 1e-300, 1 - 1e-16)
    return -(p * np.log(p) + (1 - p) * np.log1p(-p))


def test_the_information_is_the_clicks_entropy_less_its_entropy_given_the_component():
    rng = np.random.default_rng(0)
    C, d, K = 4, 7, 6
    means = rng.normal(size=(C, d)) * 1.5
    A = rng.normal(size=(C, d, d)) * 0.3
    covs = A @ np.swapaxes(A, 1, 2) + 0.1 * np.eye(d)
    w = rng.dirichlet(np.ones(C))
    P = np.c_[np.eye(K), rng.normal(size=K)]
    got = component_information(np.log(w), means, covs, np.ones(C, bool), P)
    want = []
    for i in range(K):
        for j in range(i + 1, K):
            z = P[i] - P[j]
            q = expit(means @ z / np.sqrt(1 + np.pi * np.einsum("i,cij,j->c", z, covs, z) / 8))
            want.append(_entropy(w @ q) - w @ _entropy(q))
    np.testing.assert_allclose(got, want, atol=1e-12)
    assert np.all(got >= 0) and np.all(got <= np.log(2))
    one = component_information(np.log(np.r_[1.0, 1e-30, 1e-30, 1e-30]), means, covs, np.ones(C, bool), P)
    np.testing.assert_array_equal(one, 0.0)                       # one component left: nothing to learn
    inactive = component_information(np.log(w), means, covs, np.array([True, False, False, False]), P)
    np.testing.assert_array_equal(inactive, 0.0)


def test_a_vanishing_weight_is_coduel_row_for_row(dev_world):
    from online.replay import replay

    a = replay(dev_world, 0, "coduel", arrivals=20)
    b = replay(dev_world, 0, "coduel[component_information=1e-9]", arrivals=20)
    assert a["per_user"] == b["per_user"] and a["score"] == b["score"]
