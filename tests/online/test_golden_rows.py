"""Every built-in policy's rows on dev are the golden ones, field by field (tests/online/golden.py):
seed 0 in the default set, seeds 1-3 in the slow set."""
import json

import pytest

from online.replay import replay
from tests.online.golden import PATH, SEEDS, SPECS, figures, mismatches

GOLDEN = json.loads(PATH.read_text())


@pytest.mark.parametrize("seed", [pytest.param(s, marks=[pytest.mark.slow] if s else []) for s in SEEDS])
@pytest.mark.parametrize("spec", SPECS)
def test_rows_equal_the_golden_figures(dev_world, spec, seed):
    bad = mismatches(figures(replay(dev_world, seed, spec)), GOLDEN[spec][str(seed)])
    assert not bad, f"{len(bad)} figures moved, e.g. " + "; ".join(bad[:5])
