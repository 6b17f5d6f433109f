"""`run_leaderboard` from Python: the robustness rule's world-seed count is checked before any world is opened or
any cell runs."""
import pytest

from online.store import RunStore
from tdmodels.errors import InputError
from tutorduel.leaderboard import run_leaderboard


@pytest.mark.parametrize("bad", [0, 3, True, "4", 4.0, 65, None])
def test_a_bad_world_seed_count_is_refused_before_anything_runs(env_dirs, bad):
    store = RunStore(env_dirs / "store")
    with pytest.raises(InputError, match="world seeds"):
        run_leaderboard(store, env_dirs / "lb", rosters=["dev"], seeds=[0], stress="presets", world_seeds=bad)
    assert not (env_dirs / "store").exists() and not (env_dirs / "lb").exists()
