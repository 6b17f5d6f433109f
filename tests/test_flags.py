"""A flag of the Python API is a bool: a truthy string ("no", "false") or a number is an error naming it, never a
yes (``print_world_tables(..., allow_test='no')`` had opened held-out rosters)."""
import pytest

from online.store import RunStore
from tdmodels.errors import InputError


def _calls(tmp_path):
    from diagnostics.leaderboard_report import table_html
    from tdmodels.atomic_file import folder_problem
    from tdmodels.rosters import open_world
    from tutorduel.store_commands import print_family_robustness, print_world_tables
    from tutorduel.store_view import stored_rows
    from tutorduel.tune import tune

    store = RunStore(tmp_path / "runs")
    (tmp_path / "runs").mkdir()
    return {
        "print_world_tables(allow_test)": ("allow_test", lambda v: print_world_tables(store, "dev", v, None)),
        "print_world_tables(any_code)": ("any_code", lambda v: print_world_tables(store, "dev", False, None,
                                                                                 any_code=v)),
        "print_world_tables(by_profile)": ("by_profile", lambda v: print_world_tables(store, "dev", False, None,
                                                                                     by_profile=v)),
        "print_family_robustness(allow_test)": ("allow_test", lambda v: print_family_robustness(store, ["dev"], v,
                                                                                               None)),
        "stored_rows(any_code)": ("any_code", lambda v: stored_rows(store, open_world("dev"), "dev",
                                                                              any_code=v)),
        "tune(progress)": ("progress", lambda v: tune("rucb", store=store, progress=v, budget=1)),
        "tune(inline)": ("inline", lambda v: tune("rucb", store=store, inline=v, budget=1)),
        "table_html(marks_best)": ("marks_best", lambda v: table_html("| a | b |\n|---|---|\n| x | 1 |", v)),
        "folder_problem(writable)": ("writable", lambda v: folder_problem(tmp_path, writable=v)),
    }


NAMES = ["print_world_tables(allow_test)", "print_world_tables(any_code)", "print_world_tables(by_profile)",
         "print_family_robustness(allow_test)", "stored_rows(any_code)", "tune(progress)", "tune(inline)",
         "table_html(marks_best)", "folder_problem(writable)"]


@pytest.mark.parametrize("call", NAMES)
@pytest.mark.parametrize("value", ["no", 1])
def test_a_flag_that_is_not_a_bool_is_refused(tmp_path, monkeypatch, call, value):
    monkeypatch.setenv("TUTORDUEL_WORLDS", str(tmp_path / "worlds"))
    flag, fn = _calls(tmp_path)[call]
    with pytest.raises(InputError, match=f"{flag}={value!r}: give True or False"):
        fn(value)
    assert not list((tmp_path / "runs").rglob("*.json"))
