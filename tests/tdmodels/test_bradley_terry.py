import json

import numpy as np
from scipy.special import expit

from tdmodels.bradley_terry import fit_bt_scores, order_averaged, reference_utilities


def test_recovers_scores_from_exact_bt_probabilities():
    s = np.array([1.5, 0.2, -0.3, 0.0, -1.0, -0.4])
    pbar = expit(s[:, None] - s[None, :])
    fit = fit_bt_scores(pbar, ridge=1e-9)
    np.testing.assert_allclose(fit - fit.mean(), s - s.mean(), atol=1e-6)


def test_order_averaging_is_symmetric():
    rng = np.random.default_rng(0)
    P = rng.uniform(0.1, 0.9, (4, 6, 6))
    pb = order_averaged(P)
    iu, ju = np.triu_indices(6, 1)
    np.testing.assert_allclose(pb[:, iu, ju] + pb[:, ju, iu], 1.0)


def test_reproduces_the_published_utilities(sample_path):
    raw = json.loads(sample_path.read_text())
    iu, ju = np.triu_indices(6, 1)
    worst = 0.0
    for arr in raw["arrivals"][:6]:
        for q in arr["qs"]:
            P = np.full((6, 6), 0.5)
            P[iu, ju] = q["P"]
            P[ju, iu] = 1 - np.asarray(q["P"])
            worst = max(worst, np.abs(reference_utilities(P) - np.asarray(q["U"])).max())
    assert worst < 0.002
