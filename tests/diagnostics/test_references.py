"""Reference rows: their memory is checked before anything is allocated."""
import numpy as np
import pytest


def test_the_reference_rows_of_a_world_of_many_personas_are_refused_before_allocating(monkeypatch):
    """The hindsight oracle's designs grow as K cubed: a world of 1,000 personas had asked for 179 GiB and died in
    a MemoryError traceback; its check had counted the [N, S, K, K] arrays only."""
    import tdmodels.run_inputs as run_inputs
    from diagnostics.references import reference_regrets
    from tdmodels.from_arrays import world_from_arrays
    from tdmodels.run_inputs import RunTooLargeError

    wide = world_from_arrays(np.random.default_rng(0).uniform(size=(2, 24, 120)), name="wide")
    monkeypatch.setattr(run_inputs, "memory_available", lambda: 2**30)
    with pytest.raises(RunTooLargeError, match="the reference rows over 2 arrivals x 24 questions x 120 x 120"):
        reference_regrets(wide, 0)
