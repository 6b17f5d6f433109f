"""Tuning a policy on dev (issue 61): every evaluation is rows in the run store, a killed tuning resumes with
the proposals the uninterrupted one would have made, a finished one is read back, a held-out world is never
read, and every bad input is one named error with nothing stored that is not a finished evaluation."""
import json

import pytest

from diagnostics.leaderboard_report import leaderboard_policies
from diagnostics.tuned_settings import TunedSettingsError, read_tuned_settings
from online.search_space import search_space
from online.store import RunStore
from tdmodels.errors import InputError
from tutorduel.cli import main
from tutorduel.tune import (MAX_BUDGET, TuningError, journal_path, propose, record_tuning, tune, tuning_entry)

QUICK = dict(seeds=[1000, 1001], arrivals=3, inline=True, progress=False)


def _rows(store):
    return list(store.rows())


@pytest.fixture(scope="module")
def quick_tuning(tmp_path_factory):
    """A finished two-evaluation tuning of meta-ts on dev's first 3 arrivals, for the tests of what is done with one."""
    folder = tmp_path_factory.mktemp("quick-tuning")
    return tune("meta-ts", budget=2, store=RunStore(folder / "runs"), worlds_dir=folder / "worlds", **QUICK)


def _journal(store, tuning):
    [path] = (store.root / "_tuning" / tuning.world_digest).glob("*.json")
    return path, json.loads(path.read_text())


def test_every_evaluation_is_rows_in_the_store_and_a_finished_tuning_is_read_back(env_dirs):
    store = RunStore()
    t = tune("meta-ts", budget=3, store=store, **QUICK)
    specs = {t.default.spec, *(e.spec for e in t.evaluations)}
    assert t.default.spec == "meta-ts" and len(t.evaluations) == 3 and t.sampler == "tpe"
    assert len(_rows(store)) == 2 * len(specs)
    assert t.best.mean == max(e.mean for e in (t.default, *t.evaluations))
    for e in t.evaluations:
        assert len(e.scores) == 2 and e.se >= 0
    again = tune("meta-ts", budget=3, store=store, **QUICK)
    assert [e.spec for e in again.evaluations] == [e.spec for e in t.evaluations]
    assert [e.scores for e in again.evaluations] == [e.scores for e in t.evaluations]
    assert all(e.wall_s == 0 for e in (again.default, *again.evaluations))     # nothing computed twice
    path, journal = _journal(store, t)
    assert path == journal_path(store, journal["identity"]) and len(journal["points"]) == 3


@pytest.mark.parametrize("kept", [1, 3])           # killed in the random start, or after TPE's first proposal
def test_a_killed_tuning_resumes_with_the_proposals_of_an_uninterrupted_one(env_dirs, monkeypatch, kept):
    import tutorduel.tune

    monkeypatch.setattr(tutorduel.tune, "STARTUP", 2)      # two random points, then TPE
    store = RunStore()
    full = tune("hierts", budget=4, store=store, **QUICK)
    path, journal = _journal(store, full)
    path.write_text(json.dumps({**journal, "points": journal["points"][:kept]}))
    resumed = tune("hierts", budget=4, store=store, **QUICK)
    assert [e.spec for e in resumed.evaluations] == [e.spec for e in full.evaluations]
    space = search_space("hierts")
    history = [(e.point, e.mean) for e in full.evaluations[:3]]
    assert propose(space, history, 3) == propose(space, history, 3) == full.evaluations[3].point


def test_a_damaged_journal_is_moved_aside_and_the_tuning_starts_over(env_dirs, capsys):
    store = RunStore()
    t = tune("rucb", budget=2, store=store, **QUICK)
    path, _ = _journal(store, t)
    path.write_text('{"identity": {"policy": "rucb"}, "points": [{"alpha": 1e9}]')
    again = tune("rucb", budget=2, store=store, **QUICK)
    assert [e.spec for e in again.evaluations] == [e.spec for e in t.evaluations]
    assert "moved aside" in capsys.readouterr().err
    assert list(path.parent.glob("*.corrupt"))


def test_a_grid_that_fits_the_budget_is_run_whole_once(env_dirs):
    t = tune("pooled", searches={"rule": "greedy,thompson"}, budget=24, store=RunStore(), **QUICK)
    assert t.sampler == "grid" and t.budget == 2
    assert [e.point for e in t.evaluations] == [{"rule": "greedy"}, {"rule": "thompson"}]


@pytest.mark.parametrize("world", ["composite", "quirky", "test_topics", "test_profiles", "real-sessions-0"])
def test_a_held_out_world_is_never_tuned_on(env_dirs, world):
    with pytest.raises(TuningError, match="held out for evaluation: tuning never reads it, and no flag lifts"):
        tune("meta-ts", world=world, budget=2, store=RunStore(), **QUICK)
    assert not _rows(RunStore()) and not (RunStore().root / "_tuning").exists()


def test_the_real_sessions_are_never_tuned_on_even_as_a_copy_with_the_mark_removed(env_dirs, sample_path):
    from tdmodels.rosters import open_world
    from tdmodels.world import save_world

    assert main(["worlds", "import-sample", str(sample_path)]) == 0
    save_world(open_world("real-sessions-0", allow_test=True).assign_attrs(held_out=0), env_dirs / "mine.nc")
    for world in ("sample", str(env_dirs / "mine.nc")):
        with pytest.raises(TuningError, match="holds the real sessions or a held-out roster .*: tuning never reads"):
            tune("meta-ts", world=world, budget=2, store=RunStore(), **QUICK)
    assert not _rows(RunStore())


@pytest.mark.parametrize("kwargs, words", [
    (dict(budget=0), "budget=0: give an integer number of evaluations in [1, 500]"),
    (dict(budget=10**9), "budget=1000000000"),
    (dict(budget=True), "budget=True"),
    (dict(budget=2.5), "budget=2.5"),
    (dict(seeds="1000-1015"), "give a list of integers"),
    (dict(seeds=[3]), "at least two distinct seeds"),
    (dict(seeds=[3, 3]), "at least two distinct seeds"),
    (dict(seeds=[1, -2]), "seed -2"),
    (dict(seeds=range(10**12)), "seeds: at most"),
    (dict(seeds=range(100), budget=MAX_BUDGET), "runs; at most"),
    (dict(sampler_seed=-1), "sampler_seed=-1"),
    (dict(arrivals=0), "arrivals=0"),
    (dict(arrivals=2.5), "arrivals=2.5"),
    (dict(store="runs"), "give an online.store.RunStore"),
    (dict(searches={"nope": "0:1"}), "has no setting 'nope'"),
    (dict(searches={"s0_var": "0.01:1e6"}), "outside the setting's own range"),
])
def test_bad_input_is_one_named_error_and_stores_nothing(env_dirs, kwargs, words):
    args = {**dict(budget=2, seeds=[1000, 1001], arrivals=3, inline=True, progress=False), **kwargs}
    with pytest.raises(InputError) as err:
        tune("meta-ts", **args)
    assert words in str(err.value), str(err.value)
    assert not _rows(RunStore())


def test_a_plugin_that_raises_fails_its_evaluation_by_name_and_records_nothing(env_dirs, tmp_path):
    store = RunStore()
    with pytest.raises(TuningError, match=r"evaluation 1 \(.*explore=0.1.*\) failed on seed 1000: .*not supported"):
        tune("tests.online.helpers:RaisesWhenGreedy", searches={"explore": "0.1,0.9"}, budget=2, store=store, **QUICK)
    assert not list((store.root / "_tuning").rglob("*.json"))     # the defaults' rows only, no evaluation
    assert {r["policy"] for r in _rows(store)} == {"tests.online.helpers:RaisesWhenGreedy"}


def test_a_plugin_that_hangs_is_stopped_by_the_cell_time_limit(env_dirs):
    with pytest.raises(TuningError, match="evaluation 1 .* failed on seed"):
        tune("tests.online.helpers:SleepsWhenGreedy", searches={"explore": "0.1,0.9"}, budget=2, store=RunStore(),
             seeds=[1000, 1001], arrivals=2, progress=False, cell_timeout=3)


def test_a_plugin_that_hangs_while_it_is_built_is_stopped_by_the_same_limit(env_dirs):
    with pytest.raises(InputError, match="importing and constructing it took more than 2 s"):
        tune("tests.online.helpers:HangsWhenBuilt", searches={"explore": "0.1,0.9"}, budget=2, store=RunStore(),
             seeds=[1000, 1001], arrivals=2, progress=False, cell_timeout=2)
    assert not list((RunStore().root / "_tuning").rglob("*.json"))


def test_a_tuning_larger_than_a_sweeps_confirmation_runs_without_it(env_dirs, monkeypatch):
    import online.sweep_plan

    monkeypatch.setattr(online.sweep_plan, "CONFIRM_CELLS", 4)     # the tuner's own cap applies, not --yes's
    t = tune("rucb", budget=3, store=RunStore(), **QUICK)
    assert len(t.evaluations) == 3


def test_a_plugins_ranges_are_its_search(env_dirs):
    t = tune("tests.online.helpers:tunable_pairs", budget=2, store=RunStore(), **QUICK)
    assert {d.name for d in t.space.dimensions} == {"explore", "pair"}
    assert all(0 <= e.point["explore"] <= 1 and e.point["pair"] in range(5) for e in t.evaluations)


def test_the_chosen_settings_are_recorded_and_become_the_leaderboards(env_dirs, tmp_path, quick_tuning):
    t = quick_tuning
    path = tmp_path / "tuned.json"
    entry = record_tuning(t, path, "meta-ts")
    assert entry == tuning_entry(t, "meta-ts", entry["date"])
    record_tuning(t, path, "meta-ts")                                           # a later tuning replaces it
    entries = read_tuned_settings(path)
    assert set(entries) == {"meta-ts"} and entries["meta-ts"]["spec"] == t.best.spec
    assert entries["meta-ts"]["world"] == "dev" and entries["meta-ts"]["seeds"] == [1000, 1001]
    policies = leaderboard_policies(path)
    assert policies["meta-ts"] == t.best.spec and policies["hierts"] == "hierts"
    coduel = tune("coduel", budget=1, store=RunStore(), **QUICK)
    record_tuning(coduel, path, "coduel")
    assert "coduel" in read_tuned_settings(path) and leaderboard_policies(path)["coduel"] == "coduel"  # the paper's


@pytest.mark.parametrize("text, words", [
    ("not json", "cannot be read as JSON"),
    ('{"policies": []}', "expected an object with a 'policies' object"),
    ('{"policies": {"meta-ts": {"spec": "meta-ts"}}}', "field 'base' is missing"),
])
def test_a_damaged_tuned_settings_file_is_refused_and_not_overwritten(tmp_path, quick_tuning, text, words):
    path = tmp_path / "tuned.json"
    path.write_text(text)
    with pytest.raises(TunedSettingsError, match=words):
        read_tuned_settings(path)
    with pytest.raises(TunedSettingsError):
        record_tuning(quick_tuning, path, "meta-ts")
    assert path.read_text() == text


@pytest.mark.parametrize("edit, words", [
    (lambda e: e.update(seeds=[]), "not a list of distinct seeds"),
    (lambda e: e.update(seeds=["a", "b"]), "not a list of distinct seeds"),
    (lambda e: e.update(dimensions=[]), "'dimensions' is empty"),
    (lambda e: e["dimensions"][0].update(lo=None), "needs finite lo < hi"),
    (lambda e: e["evaluations"][0].update(point={}), "evaluation 1: its point sets []"),
    (lambda e: e["evaluations"][0]["point"].update(s0_var="big"), "s0_var='big' is outside"),
    (lambda e: e["evaluations"][0]["point"].update(s0_var=1e9), "s0_var=1000000000.0 is outside"),
    (lambda e: e.update(spec="meta-ts[s0_var=0.5]"), "is not the best evaluated"),
    (lambda e: e.update(score=[99.0, 0.1]), "is not the best evaluated"),
])
def test_a_hand_edited_entry_is_refused_by_name(tmp_path, quick_tuning, edit, words):
    path = tmp_path / "tuned.json"
    record_tuning(quick_tuning, path, "meta-ts")
    data = json.loads(path.read_text())
    edit(data["policies"]["meta-ts"])
    path.write_text(json.dumps(data))
    with pytest.raises(TunedSettingsError, match=None) as err:
        read_tuned_settings(path)
    assert words in str(err.value), str(err.value)
    assert main(["tuned", "--file", str(path), "--plot", str(tmp_path / "p.png")]) == 2


def test_an_entry_filed_under_another_policy_is_refused(tmp_path, quick_tuning):
    path = tmp_path / "tuned.json"
    record_tuning(quick_tuning, path, "meta-ts")
    data = json.loads(path.read_text())
    data["policies"]["hierts"] = data["policies"].pop("meta-ts")
    path.write_text(json.dumps(data))
    with pytest.raises(TunedSettingsError, match="filed under 'hierts' but tunes 'meta-ts'"):
        read_tuned_settings(path)


@pytest.mark.parametrize("argv, words", [
    (["tune", "meta-ts", "--budget", "0"], "--budget: '0': must be an integer in [1, 500]"),
    (["tune", "meta-ts", "--budget", "1000000000"], "--budget: '1000000000': must be an integer"),
    (["tune", "meta-ts", "--world", "composite"], "tuning never reads it, and no flag lifts this"),
    (["tune", "meta-ts", "--world", "composite", "--allow-test"], "--allow-test does not change that"),
    (["tune", "meta-ts", "--search", "bogus=0:1"], "has no setting 'bogus'"),
    (["tune", "meta-ts", "--search", "s0_var=0.001:1e9"], "outside the setting's own range"),
    (["tune", "meta-ts", "--search", "s0_var"], "give NAME=LO:HI"),
    (["tune", "meta-ts", "--search", "s0_var=0.1:1", "--search", "s0_var=0.2:1"], "given twice"),
    (["tune", "meta-ts", "--seeds", "5"], "at least two distinct seeds"),
    (["tune", "no-such-policy"], "unknown policy"),
])
def test_the_command_refuses_bad_input_on_one_line(env_dirs, capsys, argv, words):
    try:
        code = main(argv)
    except SystemExit as exc:          # argparse's own checks
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert not _rows(RunStore())


def test_the_command_tunes_writes_its_table_and_plot_and_records(env_dirs, capsys, tmp_path):
    out, record = tmp_path / "out", tmp_path / "tuned.json"
    argv = ["tune", "rucb", "--budget", "1", "--seeds", "1000-1001", "--arrivals", "2", "--out", str(out),
            "--record", str(record)]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "tune rucb: 1/1 rucb[alpha=" in captured.err and "best so far" in captured.err
    assert "defaults" in captured.out and "chosen: rucb" in captured.out
    assert sorted(p.suffix for p in out.iterdir()) == [".md", ".png"]
    assert set(read_tuned_settings(record)) == {"rucb"}


def test_the_tuned_command_shows_a_file_and_refuses_what_it_lacks(quick_tuning, tmp_path, capsys):
    path, png = tmp_path / "tuned.json", tmp_path / "tuning.png"
    record_tuning(quick_tuning, path, "meta-ts")
    assert main(["tuned", "--file", str(path), "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "| meta-ts |" in out and "### meta-ts" in out and "| defaults |" in out and png.stat().st_size > 0
    assert main(["tuned", "--file", str(path), "--policies", "hierts"]) == 2
    assert "no entry 'hierts'" in capsys.readouterr().err
    assert main(["tuned", "--file", str(tmp_path / "none.json")]) == 2


def test_a_choice_at_the_end_of_its_search_is_flagged(quick_tuning):
    from diagnostics.tuning_report import edge_warnings

    entry = tuning_entry(quick_tuning, "meta-ts")
    dims = {d["name"]: d for d in entry["dimensions"]}
    assert dims["s0_var"]["log"] and dims["s0_var"]["lo"] == 0.001 and dims["s0_var"]["hi"] == 10.0
    first = entry["evaluations"][0]
    for value, flagged in ((0.0011, "low end"), (9.5, "high end"), (0.1, None)):
        e = {**entry, "spec": first["spec"], "evaluations": [{**first, "point": {**first["point"], "s0_var": value}}]}
        lines = [x for x in edge_warnings(e) if x.startswith("s0_var")]
        assert (lines == []) if flagged is None else (flagged in lines[0] and "[0.001, 10]" in lines[0])
    assert edge_warnings({**entry, "spec": entry["default"]["spec"]}) == []     # the defaults kept: nothing to widen


def test_two_plugins_of_one_module_get_their_own_tuning_files():
    from tutorduel.cli.tuning import tuning_files
    names = ["mypkg.policies:first", "mypkg.policies:second", "meta-ts[s0_var=0.25]", "meta-ts[s0_var=0.5]"]
    files = [tuning_files("out", n) for n in names]
    assert len({f for pair in files for f in pair}) == 2 * len(names)
    assert all(md.suffix == ".md" and png.suffix == ".png" and md.with_suffix("") == png.with_suffix("")
               for md, png in files)
