"""The tie rule: values within TIE_RTOL * max(1, |best|) of the best tie, and the lowest index wins."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from tdmodels import ties

values = arrays(np.float64, st.integers(3, 8), elements=st.floats(-1e6, 1e6, allow_nan=False))


@given(values)
def test_argmax_is_a_best_value_and_the_lowest_index_among_near_equals(v):
    k = int(ties.argmax(v))
    tol = ties.TIE_RTOL * max(1.0, abs(v.max()))
    assert v[k] >= v.max() - tol and not np.any(v[:k] >= v.max() - tol)


@given(values, st.floats(-1, 1))
def test_last_bit_noise_never_changes_the_choice(v, sign):
    bumped = v + sign * 4 * np.spacing(np.maximum(np.abs(v), 1.0))
    near_tie = np.sort(v)[-1] - np.sort(v)[-2] <= 2 * ties.TIE_RTOL * max(1.0, abs(v.max()))
    if not near_tie or np.ptp(v) == 0:
        assert ties.argmax(bumped) == ties.argmax(v)


def test_exact_and_rounding_ties_go_to_the_lowest_index():
    assert ties.argmax([0.0, 1.0, 1.0]) == 1
    assert ties.argmax([5.5e-17, 0.0, 1e-16, -1e-17]) == 0          # zero up to rounding ties with zero
    assert ties.argmin([3.0, 1.0 + 1e-12, 1.0]) == 1
    assert ties.argmax([np.nan, 2.0, 2.0]) == 1
    first, second = ties.top_two(np.array([[0.2, 0.9, 0.9, 0.1], [1e-17, 0.0, -1e-17, 0.0]]))
    assert first.tolist() == [1, 0] and second.tolist() == [2, 1]


def test_axis_and_batch_shapes():
    v = np.random.default_rng(0).normal(size=(3, 4, 6))
    assert np.array_equal(ties.argmax(v), v.argmax(-1))
    assert np.array_equal(ties.argmax(v, axis=1), v.argmax(1))
