"""One pair shown to everyone: the hindsight pair is the reference row's, and any pair scores on any world."""
import numpy as np
import pytest

from diagnostics.references import fixed_pair_scores, hindsight_pair
from diagnostics.stats import reference_table


def test_the_hindsight_pair_scores_the_reference_row_and_no_pair_scores_more(dev_world):
    pair = hindsight_pair(dev_world, [0])
    ref = reference_table(dev_world, [0])["best-pair-everyone"][0]["score"]
    assert fixed_pair_scores(dev_world, pair, [0])[0] == pytest.approx(ref)
    assert fixed_pair_scores(dev_world, pair[::-1], [0])[0] == pytest.approx(ref)          # unordered
    others = [fixed_pair_scores(dev_world, (i, j), [0])[0] for i in range(6) for j in range(i + 1, 6)]
    assert max(others) == pytest.approx(ref)
    for bad in ((2, 2), (0, 6), (-1, 3)):
        with pytest.raises(ValueError, match="pair"):
            fixed_pair_scores(dev_world, bad, [0])


def test_a_pair_chosen_on_dev_scores_on_the_real_sample(dev_world, sample_path):
    """One reading of the published 'best fixed pair' row (5 on the held-out profiles): dev's pair applied there.
    On the 48 real sessions the pairs of the held-out profiles' favourites score 27-30, Examples + Concise 4.6."""
    from tdmodels.sample import load_sample

    sample = load_sample(sample_path)
    assert hindsight_pair(sample, [0]) == (1, 2)                          # Examples + Socratic
    assert fixed_pair_scores(sample, (1, 2), [0])[0] == pytest.approx(30.5, abs=0.05)
    assert fixed_pair_scores(sample, (1, 4), [0])[0] == pytest.approx(4.6, abs=0.05)
    assert np.isfinite(fixed_pair_scores(sample, hindsight_pair(dev_world, [0]), [0])[0])
