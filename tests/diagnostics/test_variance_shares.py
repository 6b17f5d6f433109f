"""The sequential decomposition of the utilities' variation: exact on worlds built to hold one part, the
real sample's figures reproduced."""
import numpy as np
import pytest

from diagnostics.variance_shares import PARTS, decompose, variance_shares
from tdmodels.sample import load_sample


def _cells(n=600, K=6, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.integers(8, size=n).astype(str), rng.choice(["definition", "computation", "why"], size=n),
            rng.integers(13, size=n), rng)


def test_each_part_alone_is_found_alone():
    profile, kind, cue, rng = _cells()
    lean = np.array([0.3, -0.1, 0.2, -0.2, 0.0, -0.2])
    assert decompose(np.tile(lean, (600, 1)), profile, kind, cue)["persona main effect"] == pytest.approx(1.0)
    own = {p: rng.normal(size=6) for p in np.unique(profile)}
    U = np.stack([own[p] - own[p].mean() for p in profile])
    U -= U.mean(0)                                                       # no main effect left
    shares = decompose(U, profile, kind, cue)
    assert shares["profile x persona"] == pytest.approx(1.0) and shares["residual"] == pytest.approx(0.0, abs=1e-12)
    by_kind = {k: rng.normal(size=6) for k in ("definition", "computation", "why")}
    U = np.stack([by_kind[k] for k in kind])
    U = U - U.mean(1, keepdims=True)
    U -= U.mean(0)
    assert decompose(U, profile, kind, cue)["kind and cue (shared)"] > 0.97


@pytest.mark.parametrize("seed", range(3))
def test_shares_are_a_partition_of_the_total(seed):
    profile, kind, cue, rng = _cells(seed=seed)
    shares = decompose(rng.normal(size=(600, 6)), profile, kind, cue)
    assert list(shares) == list(PARTS) and min(shares.values()) >= 0
    assert sum(shares.values()) == pytest.approx(1.0)
    assert shares["residual"] > 0.5                                       # noise is mostly residual


def test_the_real_samples_shares(sample_path):
    got = variance_shares(load_sample(sample_path))
    want = [0.104, 0.524, 0.042, 0.075, 0.255]          # docs/results/worlds.md
    np.testing.assert_allclose(list(got.values()), want, atol=0.0006)
