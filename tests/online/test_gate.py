import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from online.gate import GateState, end_session, observe, standard_error, transfer_on


def _run(sessions):
    g = GateState()
    for rounds in sessions:
        for lp_pop, lp_alone in rounds:
            g = observe(g, lp_pop, lp_alone)
        g = end_session(g)
    return g


@given(st.lists(st.lists(st.tuples(st.floats(-5, 0), st.floats(-5, 0)), min_size=1, max_size=24),
                min_size=2, max_size=40))
@settings(max_examples=50, deadline=None)
def test_moments_match_numpy_and_the_rule(sessions):
    g = _run(sessions)
    D = np.array([sum(a - b for a, b in r) for r in sessions])
    assert g.n == len(D) and math.isclose(g.mean, D.mean(), abs_tol=1e-9)
    se = D.std(ddof=1) / math.sqrt(len(D))
    assert math.isclose(standard_error(g), se, rel_tol=1e-6, abs_tol=1e-9)
    want = len(D) >= 8 and D.mean() > 0.5 * se
    if abs(D.mean() - 0.5 * se) > 1e-9:
        assert transfer_on(g) == want


def test_needs_eight_sessions_and_a_clear_margin():
    better = [[(-0.5, -0.7)] * 24] * 7                 # population predicts better in every session
    assert not transfer_on(_run(better))                # but only 7 sessions so far
    assert transfer_on(_run(better + [[(-0.4, -0.7)] * 24]))
    noisy = [[(-0.5, -0.7)]] * 4 + [[(-0.9, -0.7)]] * 4  # mean ratio 0: no transfer
    assert not transfer_on(_run(noisy))
