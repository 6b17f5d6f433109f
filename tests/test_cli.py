import re
import numpy as np
import pytest

from tutorduel.cli import main


def test_replay_then_stats(env_dirs, capsys):
    assert main(["replay", "--world", "dev", "--seeds", "0-1", "--policies", "random,no-transfer", "--arrivals", "10"]) == 0
    out = capsys.readouterr().out
    assert "4 cells computed" in out and "| no-transfer | 2 |" in out and "*per-user linear oracle*" in out
    assert main(["replay", "--world", "dev", "--seeds", "0-1", "--policies", "random", "--arrivals", "10"]) == 0
    assert "0 cells computed, 2 already stored" in capsys.readouterr().out
    assert main(["stats", "--world", "dev", "--against", "random"]) == 0
    assert "no stored runs for world 'dev'" in capsys.readouterr().out          # only truncated runs stored
    assert main(["stats", "--world", "dev", "--against", "random", "--arrivals", "10"]) == 0
    out = capsys.readouterr().out
    assert "paired excess-regret reduction and score difference against random" in out and "no-transfer:" in out
    assert re.search(r"no-transfer: [+-][0-9.]+% \[.*\], score [+-][0-9.]+ \[[+-][0-9.]+, [+-][0-9.]+\] over", out)


@pytest.mark.parametrize("argv, words", [
    (["replay", "--world", "test_profiles", "--seeds", "0"], "--allow-test"),
    (["replay", "--world", "composite", "--seeds", "0"], "--allow-test"),
    (["replay", "--seeds", "0-x"], "seed range"),
    (["replay", "--seeds", "0", "--policies", "nope"], "unknown policy 'nope'"),
    (["replay", "--seeds", "0", "--policies", "no-transfer[prior_vr=2]"], "no setting 'prior_vr'"),
    (["replay", "--seeds", "0", "--policies", "no-transfer[prior_var=-1]"], "setting prior_var=-1: outside its range [1e-06, 10000]"),
    (["replay", "--seeds", "0", "--policies", "random[x"], "unbalanced brackets"),
    (["replay", "--world", "nowhere", "--seeds", "0"], "no world 'nowhere'"),
    (["stats", "--world", "sample"], "import-sample"),
])
def test_bad_input_gets_one_clear_error(env_dirs, capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("tutorduel: error:") and words in err and "Traceback" not in err


def test_failed_policy_exits_nonzero_and_lists_the_cell(env_dirs, capsys):
    rc = main(["replay", "--seeds", "0", "--arrivals", "3", "--policies", "random,tests.online.helpers:BadOutput[value=[0,9],arrival=1]"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "failed cells" in err and "out of range" in err and "arrival 1, round 5" in err


def test_worlds_list_and_describe(env_dirs, capsys):
    assert main(["worlds", "list"]) == 0
    assert "test_profiles" in capsys.readouterr().out
    assert main(["worlds", "describe", "dev", "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert "per-user linear oracle" in out and "floor gap mean" in out


def test_stats_leaves_out_rows_of_another_world_version(env_dirs, capsys):
    from tdmodels.rosters import open_world, world_file
    from tdmodels.world import save_world

    assert main(["replay", "--seeds", "0-1", "--policies", "random", "--arrivals", "5"]) == 0
    edited = open_world("dev").copy(deep=True)
    edited["utilities"].values[0, 0, 0] *= 0.5
    save_world(edited, world_file("dev"))                  # dev.nc rebuilt differently: a new version of 'dev'
    capsys.readouterr()
    assert main(["stats", "--world", "dev", "--arrivals", "5"]) == 0
    cap = capsys.readouterr()
    assert "another version of world 'dev'" in cap.err and "no stored runs" in cap.out


def test_fit_writes_inference_data_beside_the_row(env_dirs, capsys):
    import arviz as az

    from online.store import RunStore

    argv = ["fit", "--world", "dev", "--seed", "0", "--policy", "no-transfer", "--model", "users", "--arrivals", "6",
            "--chains", "2", "--warmup", "150", "--draws", "150"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "health: 2 chains x 150 draws, 42 parameters" in out and "theta[0, 0]" in out
    from online.replay import run_key
    from tdmodels.rosters import open_world

    store, key = RunStore(), run_key(open_world("dev"), 0, "no-transfer", 6)
    path = store.fit_path(key, "users")
    assert f"wrote {path}" in out and store.clicks_path(key).exists()
    assert store.get(key) is not None        # the replayed row was stored too
    idata = az.from_netcdf(str(path))
    assert idata.posterior.theta.shape == (2, 150, 6, 7) and idata.posterior.attrs["model"] == "users"


@pytest.mark.parametrize("command,edit", [("fit", "edited"), ("fit", "stripped"),
                                          pytest.param("validate", "edited", marks=pytest.mark.slow)])
def test_what_a_click_log_records_is_checked_before_it_is_believed(env_dirs, capsys, command, edit):
    """A stored log whose pairs and clicks are the row's but whose recorded beliefs were edited (+3 on
    every mean) is refused before any fit: fit and validate read the beliefs as the truth. So is one
    stripped of every record (priors, recalibration, beliefs, predictions): fit took it as a log of a policy
    that records nothing and fitted it under no-transfer's prior, exit 0."""
    from online.clicklog import load_click_log, save_click_log
    from online.replay import run_key
    from online.store import RunStore
    from tdmodels.rosters import open_world

    base = ["--world", "dev", "--seed", "0", "--policy", "coduel", "--arrivals", "4"]
    assert main(["replay", "--world", "dev", "--seeds", "0", "--policies", "coduel", "--arrivals", "4"]) == 0
    store, key = RunStore(), run_key(open_world("dev"), 0, "coduel", 4)
    path = store.clicks_path(key)
    if not path.exists():
        from tutorduel.cell_fit import cell_click_log
        store.path(key).unlink()
        cell_click_log(open_world("dev"), 0, "coduel", store, 4)
    log = load_click_log(path)
    if edit == "edited":
        save_click_log(log._replace(beliefs=log.beliefs._replace(means=log.beliefs.means + 3.0)), path)
    else:
        save_click_log(log._replace(priors=None, recalibration=None, beliefs=None, predictions={}), path)
    capsys.readouterr()
    argv = ([command, *base, "--model", "users", "--chains", "2", "--warmup", "5", "--draws", "5"] if command == "fit"
            else [command, *base, "--users", "1", "--chains", "2", "--warmup", "5", "--draws", "5"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    want = ("beliefs.means is not what the policy records on a replay" if edit == "edited"
            else "its click log lacks beliefs.covs, the replay's has")
    assert want in err and "Traceback" not in err
    assert not list(path.parent.glob("*.users.nc")) and not list(path.parent.glob("*validation*"))


def test_fit_rejects_unknown_model(env_dirs, capsys):
    with pytest.raises(SystemExit):
        main(["fit", "--model", "nope"])


@pytest.mark.slow
def test_fit_under_an_em_prior_weighs_components(env_dirs, capsys):
    import arviz as az

    argv = ["fit", "--world", "dev", "--seed", "1", "--policy", "random", "--model", "users", "--prior", "em",
            "--arrivals", "8", "--chains", "2", "--warmup", "150", "--draws", "150"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "units:" in out and "max importance k-hat" in out
    path = out.strip().splitlines()[-1].removeprefix("wrote ")
    idata = az.from_netcdf(path)
    units = idata["units"]
    assert idata.posterior.attrs["prior"] == "em"
    assert int(idata.constant_data.sizes["component"]) > 1
    for u in range(8):
        assert abs(float(units.posterior_weight.values[units.unit_user.values == u].sum()) - 1.0) < 1e-9


@pytest.mark.slow
def test_fit_refits_each_user_under_the_prior_it_arrived_under(env_dirs, capsys):
    import arviz as az

    argv = ["fit", "--world", "dev", "--seed", "0", "--policy", "coduel[lookahead=false]", "--arrivals", "10",
            "--chains", "2", "--warmup", "150", "--draws", "150"]
    assert main(argv) == 0
    path = capsys.readouterr().out.strip().splitlines()[-1].removeprefix("wrote ")
    idata = az.from_netcdf(path)
    w = idata.constant_data.prior_weights.values
    assert w.shape[0] == 10 and (w[0] > 0).sum() == 1 and (w[-1] > 0).sum() > 1


@pytest.mark.slow
def test_validate_checks_each_users_online_belief_against_nuts(env_dirs, capsys):
    import arviz as az

    argv = ["validate", "--world", "dev", "--seed", "2", "--policy", "coduel", "--arrivals", "12", "--users", "4",
            "--chains", "2", "--warmup", "150", "--draws", "150", "--rounds", "6", "--holdout", "4",
            "--beliefs", "laplace,adf,laplace-is", "--exact-draws", "2000"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "k-hat median" in out and "W1 / noise floor" in out and "after 6 clicks: k-hat median" in out
    assert "click predictions, population learner: log loss" in out and "click predictions, alone learner" in out
    idata = az.from_netcdf(out.strip().splitlines()[-1].removeprefix("wrote "))
    assert idata.posterior.theta.shape == (2, 150, 4, 7)
    assert idata["online"].theta.shape == (300, 4, 7)
    chk = idata["checks"]
    assert chk.khat.shape == (4,) and np.all(np.isfinite(chk.khat)) and chk.sd_ratio.shape == (4, 7)
    assert np.all(chk.w1_floor > 0)
    np.testing.assert_allclose(chk.exact_weights.values.sum(-1), 1.0)
    assert np.all((chk.weights_tv >= 0) & (chk.weights_tv <= 1))
    assert idata["checks_round_6"].khat.shape == (4,)
    assert "held-out users' clicks under the online prior" in out
    assert idata["population"]["log_pred_online"].shape == (4,)
    cal = idata["reliability"]
    assert int(cal.population_count.sum()) == 12 * 24 and 0 < cal.attrs["population_log_loss"] < 1
    report = [line for line in out.splitlines() if line.startswith("report ")][0].removeprefix("report ")
    page = open(report).read()
    assert page.count("<img") == 5 + 7 and "k-hat per user" in page and "<td>3</td>" in page
    assert "Held-out arrivals' clicks" in page and "Online beliefs side by side" in page
    from diagnostics.validation_report import write_report     # rebuilt from the netCDF alone
    again = write_report(idata, env_dirs / "again.html")
    assert again.read_text().count("<img") == 5 + 7
    beliefs = idata["beliefs"]                                  # every belief on the same users and clicks
    assert list(beliefs.belief.values) == ["laplace", "adf", "laplace-is", "exact moments", "exact moments (importance)"]
    assert beliefs.khat.shape == (5, 4) and beliefs.p_first.shape == (5, 4, 24)
    online_p = beliefs.p_first.values[:3]
    assert np.all((online_p > 0) & (online_p < 1)) and np.isnan(beliefs.p_first.values[3:]).all()
    assert beliefs.attrs["importance_draws"] == 2000 and beliefs.attrs["importance_ess_min"] > 100
    assert "exact moments (importance): 2,000 draws a component" in out
    np.testing.assert_allclose(beliefs.khat.sel(belief="laplace"), chk.khat)   # the recorded belief, refolded
    assert "online beliefs on the same clicks, against the same reference:" in out
    assert "k-hat under 0.7 for at least 95% of users in every block of 50: laplace " in out
    users_nc = list(env_dirs.rglob("*.users.nc"))               # the reference as stored: each user's draws
    ref = az.from_netcdf(users_nc[0])
    assert ref.posterior.theta.dims == ("chain", "draw", "user", "dim") and ref.posterior.theta.dtype == np.float32
    assert "unit_cov" in ref["units"]


@pytest.mark.parametrize("extra", [["--exact-draws", "5000"], ["--beliefs", "ep", "--exact-draws", "10"],
                                   ["--beliefs", "ep", "--exact-draws", "nan"], ["--beliefs", "ep", "--exact-draws", "1e9"]])
def test_validate_refuses_exact_draws_it_cannot_take_before_any_fit(env_dirs, capsys, extra):
    """--exact-draws adds a row to --beliefs' table: alone, too few, not a count or too many is one error."""
    try:
        rc = main(["validate", "--world", "dev", "--seed", "2", "--arrivals", "3", "--users", "2", "--chains", "2",
                   "--warmup", "10", "--draws", "10", *extra])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and "--exact-draws" in err and "Traceback" not in err
    assert not list(env_dirs.rglob("*.users.nc"))


@pytest.mark.parametrize("bad", ["no-such-belief", "laplace,laplace", "", "../laplace"])
def test_validate_refuses_unknown_or_repeated_beliefs_before_any_fit(env_dirs, capsys, bad):
    try:
        rc = main(["validate", "--world", "dev", "--seed", "2", "--arrivals", "3", "--users", "2", "--chains", "2",
                   "--warmup", "10", "--draws", "10", "--beliefs", bad])
    except SystemExit as e:              # '' is refused by the parser, as every empty value is
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and "belief" in err and "Traceback" not in err
    assert not list(env_dirs.rglob("*.users.nc"))


@pytest.mark.slow
def test_validate_compares_batch_em_and_the_online_prior_with_the_population_reference(env_dirs, capsys):
    import arviz as az

    argv = ["validate", "--world", "dev", "--seed", "2", "--policy", "coduel", "--arrivals", "12", "--users", "2",
            "--chains", "2", "--warmup", "100", "--draws", "100", "--holdout", "4", "--population-reference",
            "--reference-warmup", "200", "--reference-draws", "400", "--reference-minutes", "0", "--jobs", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "population model reference (gibbs" in out and "co-clustering: mean |em - reference|" in out
    assert "first pair shown to a held-out arrival" in out and "learned components: reference" in out
    idata = az.from_netcdf(out.strip().splitlines()[-1].removeprefix("wrote "))
    pf = idata["population_fits"]
    assert pf.co_clustering_reference.shape == (8, 8) and pf.log_density_em.shape == (4,)
    np.testing.assert_allclose(np.diag(pf.co_clustering_truth), 1.0)
    assert np.all((pf.co_clustering_reference >= 0) & (pf.co_clustering_reference <= 1 + 1e-12))
    assert np.all(np.isfinite(pf.log_pred_reference)) and np.all(np.isfinite(pf.log_density_reference))
    assert pf.first_pair_online.shape == (4, 2) and pf.log_density_reference_interval.shape == (2, 4)
    report = [line for line in out.splitlines() if line.startswith("report ")][0].removeprefix("report ")
    page = open(report).read()
    assert page.count("<img") == 6 and "hierarchical model's exact reference" in page


def test_validate_prints_each_fits_own_figure_before_its_difference_from_the_reference(capsys):
    """Printed once as 'em -4.407' where -4.407 was EM's difference from the reference (EM itself: -14.194)."""
    import arviz as az
    import xarray as xr

    from tutorduel.fit_report import print_population_fits

    attrs = {"reference_healthy": 1, "reference_sampler": "gibbs", "reference_seconds": 5.0,
             "log_density_reference_mean": -9.5, "components_reference": 3.2, "components_reference_90": "2-4",
             "log_pred_reference_mean": -14.0, "co_clustering_em_vs_reference_mean_abs": 0.1}
    for k, own in (("em", -14.25), ("online", -12.0)):
        attrs |= {f"log_density_{k}_mean": own, f"log_density_{k}_vs_reference_mean": own + 9.5,
                  f"log_density_{k}_vs_reference_mean_abs": abs(own + 9.5), f"log_pred_{k}_mean": -13.75,
                  f"log_pred_{k}_vs_reference": 0.25, f"log_pred_{k}_vs_reference_ci95": 0.125,
                  f"components_{k}": 4}
    group = xr.Dataset({"test_points": (("test_point", "dim"), np.zeros((3, 2))),
                        "x": (("train_user",), np.zeros(5))}, attrs=attrs)
    print_population_fits(az.InferenceData(population_fits=group))
    out = capsys.readouterr().out
    assert "reference -9.500; em -14.250 (-4.750 against it" in out and "online -12.000 (-2.500 against it" in out
    assert "em -13.750 (+0.250 +- 0.125 against it)" in out and "on the first 5 arrivals" in out


def test_validate_needs_a_policy_that_records_beliefs(env_dirs, capsys):
    rc = main(["validate", "--world", "dev", "--policy", "no-transfer", "--arrivals", "3", "--users", "2",
               "--chains", "2", "--warmup", "10", "--draws", "10"])
    assert rc != 0
    assert "'no-transfer' does not record its online beliefs" in capsys.readouterr().err
    rc = main(["validate", "--world", "dev", "--policy", "coduel", "--arrivals", "3", "--users", "2", "--rounds", "24"])
    assert rc != 0 and "rounds must lie in 1..23" in capsys.readouterr().err
    rc = main(["validate", "--world", "dev", "--policy", "coduel", "--arrivals", "3", "--users", "2",
               "--population-reference"])
    assert rc != 0 and "give --holdout N as well" in capsys.readouterr().err


def test_leaderboard_runs_resumes_and_compares_with_the_published_scores(env_dirs, capsys):
    from diagnostics.leaderboard_report import leaderboard_policies
    from online.registry import canonical_spec

    out_dir = env_dirs / "lb"
    rucb = leaderboard_policies()["rucb"]                               # the settings chosen on dev
    argv = ["leaderboard", "--rosters", "dev", "--seeds", "0-1", "--policies", f"random,no-transfer,{rucb}",
            "--out", str(out_dir)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "dev: 6 cells computed, 0 already stored" in out
    timing = [x for x in out.splitlines() if x.startswith("time: ")]
    assert len(timing) == 1 and "for 6 cells (6 computed, 0 already stored, 0 failed; 1 worker process(es)" in timing[0]
    parts = timing[0].split("in all: ")[1].split(", ")                 # every computed policy, with its time
    assert sorted(x.split()[0] for x in parts) == sorted(["no-transfer", "random", canonical_spec(rucb)])
    md = (out_dir / "leaderboard.md").read_text()
    assert "| rucb |" in md and "(37)" in md and "(29)" in md          # published dev scores beside ours
    assert "*per-user linear oracle*" in md and "(85)" in md
    assert "per-user linear oracle" in md.split("## Findings")[1]
    assert (out_dir / "curves-dev.png").stat().st_size > 1000
    page = (out_dir / "leaderboard.html").read_text()
    assert "<img" in page and "rucb" in page
    assert main(argv) == 0                                              # resumes: nothing recomputed
    out = capsys.readouterr().out
    assert "dev: 0 cells computed, 6 already stored" in out
    assert "time: " in out and "(0 computed, 6 already stored, 0 failed;" in out and "in all" not in out
    rc = main(["leaderboard", "--rosters", "dev,composite", "--seeds", "0", "--out", str(out_dir)])
    assert rc != 0 and "need --allow-test" in capsys.readouterr().err


def _exit_code(argv) -> int:
    try:
        return main(argv)
    except SystemExit as e:                 # refused by the parser
        return e.code


def test_the_leaderboard_stress_section_has_segments_and_the_robustness_rule(env_dirs, capsys):
    assert main(["worlds", "stress", "--name", "tiny-drift", "--arrivals", "24", "--block-length", "8"]) == 0
    assert main(["worlds", "stress", "--name", "tiny-steady", "--arrivals", "24"]) == 0
    assert main(["worlds", "stress", "--name", "tiny-base", "--arrivals", "24"]) == 0    # the roster: a short world
    out_dir = env_dirs / "lb"
    assert main(["leaderboard", "--rosters", "tiny-base", "--seeds", "0-2", "--policies", "no-transfer,coduel",
                 "--stress", "tiny-drift,tiny-steady", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "tiny-drift: 6 cells computed" in out and "tiny-steady: 6 cells computed" in out
    assert "seed10" not in out                           # no policy beyond the paper's: no fresh worlds
    md = (out_dir / "leaderboard.md").read_text()
    stress = md.split("## Stress worlds")[1].split("## Code")[0]
    assert "| policy | tiny-drift (seeds) | tiny-steady (seeds) |" in stress
    assert "### tiny-drift: per segment (2 switches)" in stress and "tiny-steady: per segment" not in stress
    assert "paired against no-transfer" in stress
    assert "Per block, against no-transfer:" in stress and "coduel minus no-transfer, paired over 3 seed(s)" in stress
    assert "Per block, against coduel:" in stress and "| 16 |" in stress          # the third block, 8 arrivals
    assert "arrivals 2-5 at least -10 and arrivals 6 on at least -2" in stress
    rule = stress.split("### The robustness rule")[1]
    assert "No policy beyond the paper's was run" in rule
    assert "## Beyond the paper" not in md
    # recovery after a change: no-transfer's and CODuel's score by arrival within a block, on the segmented world only
    assert "![tiny-drift: recovery after a change](recovery-tiny-drift.png)" in stress
    assert (out_dir / "recovery-tiny-drift.png").stat().st_size > 0 and not (out_dir / "recovery-tiny-steady.png").exists()
    assert "alt='tiny-drift: recovery after a change' src='data:image/png;base64," in (out_dir / "leaderboard.html").read_text()
    assert main(["leaderboard", "--rosters", "tiny-base", "--seeds", "0-1", "--policies", "coduel,coduel-greedy",
                 "--stress", "tiny-drift", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    # the policy beyond the paper's and CODuel on four fresh worlds of the stress world's knobs (world seeds 10-13)
    assert all(f"tiny-drift-seed{k}: 4 cells computed" in out for k in range(10, 14))
    rule = (out_dir / "leaderboard.md").read_text().split("### The robustness rule")[1].split("## Code")[0]
    judged = [line.split(" | ")[0] for line in rule.splitlines() if line.startswith("| coduel")]
    assert judged == ["| coduel[lookahead=false]"] * 2                  # only the policy beyond the paper's is judged
    assert "| coduel[lookahead=false] | tiny-base (1) |" in rule and "over 2 pairs" in rule
    assert "| coduel[lookahead=false] | tiny-drift (4) |" in rule and "over 8 pairs" in rule    # four worlds pooled
    assert "tiny-drift-seed13" in rule and "- coduel[lookahead=false]:" in rule
    beyond = (out_dir / "leaderboard.md").read_text().split("## Beyond the paper, against CODuel")[1].split("##")[0]
    assert "| coduel[lookahead=false] | tiny-base | " in beyond and " | 2 | " in beyond         # paired over seeds 0-1
    page = (out_dir / "leaderboard.html").read_text()
    assert "<h2>Stress worlds</h2>" in page and "<h3>The robustness rule</h3>" in page
    capsys.readouterr()
    assert main(["leaderboard", "--rosters", "dev", "--seeds", "3", "--stress", "no-such-world",
                 "--out", str(out_dir)]) != 0
    assert "no world 'no-such-world'" in capsys.readouterr().err and not (out_dir / "curves-x.png").exists()
    assert main(["leaderboard", "--rosters", "dev", "--seeds", "3", "--stress", "composite", "--allow-test",
                 "--out", str(out_dir)]) == 2
    out = capsys.readouterr()
    assert "a held-out world" in out.err and "cells computed" not in out.out      # refused before any cell
    for bad, said in ((["--stress", "tiny-drift", "--world-seeds", "0"], "--world-seeds: '0'"),
                      (["--stress", "no-such-preset"], "no world 'no-such-preset'"),
                      (["--stress", "dev", "--policies", "coduel,coduel-greedy"], "not a stress world")):
        assert _exit_code(["leaderboard", "--rosters", "dev", "--seeds", "3", *bad, "--out", str(out_dir)]) == 2, bad
        out = capsys.readouterr()
        assert said in out.err and "cells computed" not in out.out, (bad, out.err)


def test_stats_reads_the_robustness_rule_over_the_worlds_of_one_stress_family(env_dirs, capsys):
    """Worlds of the same knobs are one family, whatever their names; stats pools their pairs."""
    for name, seed in (("fam-a", "0"), ("other-name", "3")):
        assert main(["worlds", "stress", "--name", name, "--arrivals", "24", "--seed", seed]) == 0
    assert main(["worlds", "stress", "--name", "fam-c", "--arrivals", "24", "--types", "2"]) == 0   # other knobs
    assert main(["replay", "--world", "fam-a,other-name,fam-c", "--seeds", "0-1", "--policies",
                 "coduel,coduel-greedy"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "fam-a,other-name,fam-c"]) == 0
    out = capsys.readouterr().out.split("the robustness rule against coduel over each stress family")[1]
    rows = [line for line in out.splitlines() if line.startswith("| coduel[lookahead=false]")]
    assert len(rows) == 2 and "| fam-a (2) |" in rows[0] and "over 4 pairs" in rows[0] and "fam-a " in rows[0]
    assert "other-name " in rows[0] and "2 of the 4 worlds it needs" in rows[0] and "| fam-c (1) |" in rows[1]
    assert main(["stats", "--world", "fam-a,fam-c"]) == 0           # no family of two worlds: no rule printed
    assert "the robustness rule" not in capsys.readouterr().out


def test_the_leaderboard_sets_a_real_session_roster_and_its_curves_beside_the_papers(env_dirs, capsys, sample_path,
                                                                                     curves_path):
    """Real-session rosters join the default rosters once the sample is imported; with the published curves
    imported, the curves are drawn beside ours and each plateau is set beside the published one."""
    import json

    assert main(["worlds", "import-sample", str(sample_path), "--resamples", "0"]) == 0
    assert main(["worlds", "import-curves", str(curves_path)]) == 0
    assert main(["worlds", "import-curves", str(curves_path)]) == 0            # the same content: kept
    bad = json.loads(curves_path.read_text())
    bad["curves"]["U"]["rucb"]["mean"][3] = float("nan")
    (env_dirs / "bad.json").write_text(json.dumps(bad))
    assert main(["worlds", "import-curves", str(env_dirs / "bad.json")]) == 2
    assert "curves.U.rucb.mean" in capsys.readouterr().err
    del bad["curves"]["U"]["rucb"]
    (env_dirs / "other.json").write_text(json.dumps(bad))
    assert main(["worlds", "import-curves", str(env_dirs / "other.json")]) == 2
    assert "--force" in capsys.readouterr().err
    from diagnostics.leaderboard_report import leaderboard_policies

    out_dir = env_dirs / "lb"
    assert main(["leaderboard", "--rosters", "real-sessions-0", "--allow-test", "--seeds", "0-1", "--policies",
                 f"no-transfer,{leaderboard_policies()['rucb']},random", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "| rucb | " in out and "(17)" in out and "(30)" in out               # the held-out profiles' column
    assert "real-sessions-0: sharing methods below no-transfer" in out
    assert "real-sessions-0: gaps to no-transfer (published): rucb " in out and "(-13)" in out
    assert "real-sessions-0: plateaus, excess per user over arrivals 251-350 (published): no-transfer " in out
    assert "(5.28)" in out                                                      # RUCB's published plateau
    page = (out_dir / "leaderboard.html").read_text()
    assert "published: rucb" in page
    capsys.readouterr()
    assert main(["leaderboard", "--seeds", "0", "--policies", "random", "--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert "real-sessions-0, real-sessions-1 left out" in out and "dev: 1 cells computed" in out


def test_the_leaderboard_time_line_names_where_the_cells_ran():
    from tutorduel.leaderboard import time_summary

    line = time_summary(12.0, 3, 1, 1, {"coduel": 3.0, "random": 1.0}, "a local Dask cluster of 2 workers, 2 cores")
    assert line.startswith("time: 12 s wall for 5 cells (3 computed, 1 already stored, 1 failed; a local Dask")
    assert line.endswith("4 s in all: coduel 3 s (75%), random 1 s (25%)")


def test_stats_prints_final_quarter_and_writes_curves(env_dirs, capsys):
    assert main(["replay", "--world", "dev", "--seeds", "0-2", "--policies", "random,no-transfer",
                 "--arrivals", "40"]) == 0
    capsys.readouterr()
    assert main(["stats", "--world", "dev", "--arrivals", "40", "--against", "random",
                 "--curves", str(env_dirs / "c")]) == 0
    out = capsys.readouterr().out
    assert "final quarter (last 10 arrivals)" in out and "no-transfer:" in out and "against random" in out
    assert (env_dirs / "c" / "curves-dev.png").exists()


def test_prefdisco_prints_the_three_conditions(capsys, tmp_path):
    assert main(["prefdisco", "--seeds", "0-1", "--questions", "2", "--scenarios", "150", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| answer-now | " in out and "| 0.0 ± 0.0 |" in out and "| ask-bayes minus |" in out
    assert "| ask-top-weight | " in out and "NormAlign by domain" in out
    import xarray as xr
    with xr.open_dataset(tmp_path / "prefdisco-q2.nc", engine="h5netcdf") as ds:
        assert ds.sizes == {"policy": 4, "seed": 2, "scenario": 150}
        assert float(abs(ds["norm_align"].sel(policy="answer-now")).max()) == 0.0
    assert main(["prefdisco", "--seeds", "0", "--policies", "ask-all"]) == 2
    for bad in (["--questions", "6"], ["--cost", "-1"]):
        with pytest.raises(SystemExit) as exc:
            main(["prefdisco", "--seeds", "0", *bad])
        assert exc.value.code == 2


def test_prefdisco_curve_and_plot(capsys, tmp_path):
    assert main(["prefdisco", "--seeds", "0-1", "--scenarios", "40", "--policies", "ask-top-weight,ask-bayes",
                 "--curve", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| at most 0 |" in out and "| at most 5 |" in out
    assert (tmp_path / "prefdisco-curve.png").stat().st_size > 1000


def test_combined_mode_cli(capsys):
    assert main(["combined", "--seeds", "0-1", "--arrivals", "15", "--policies", "no-transfer,coduel-ask"]) == 0
    out = capsys.readouterr().out
    assert "| coduel-ask |" in out and "paired against no-transfer" in out and "questions per user" in out
    assert main(["combined", "--world", "composite", "--seeds", "0"]) == 2          # held out without --allow-test
    assert main(["combined", "--seeds", "0", "--policies", "nope"]) == 2


@pytest.mark.slow
def test_prefdisco_validate_cli(capsys, tmp_path):
    assert main(["prefdisco-validate", "--seed", "3", "--scenarios", "2", "--truth-scenarios", "100",
                 "--warmup", "200", "--draws", "200", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "belief vs NUTS" in out and "90% interval coverage" in out
    import arviz as az
    idata = az.from_netcdf(tmp_path / "prefdisco-validate-seed-0003.nc")
    assert idata.checks.sizes["scenario"] == 2 and idata.truth.sizes["scenario"] == 100


@pytest.mark.slow
def test_fit_population_prints_and_stores_the_label_invariant_diagnostics(env_dirs, capsys):
    """A short fixed-length population fit (--max-minutes 0) cannot be healthy on co-clustering and the
    rest; the CLI says so, stores the label_invariant group, and --strict fails it (exit 1)."""
    import arviz as az

    from inference.model_fits import stored_label_invariant

    argv = ["fit", "--world", "dev", "--seed", "0", "--policy", "no-transfer", "--model", "population",
            "--arrivals", "6", "--chains", "2", "--warmup", "30", "--draws", "30", "--max-minutes", "0",
            "--jobs", "1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "label-invariant diagnostics, 2 chains x 30 draws:" in out
    for name in ("theta", "log_density", "co_clustering", "occupied", "log_lik"):
        assert f"  {name} " in out
    idata = az.from_netcdf(out.strip().splitlines()[-1].removeprefix("wrote "))
    li = stored_label_invariant(idata)
    assert not li.ok and idata["label_invariant"]["co_clustering"].shape == (2, 30, 15)
    assert idata["label_invariant"]["test_points"].shape == (6, 7)
    assert main(argv + ["--strict"]) == 1


def test_a_missing_store_is_named_by_stats_and_export_and_held_out_rows_need_allow_test(env_dirs, capsys):
    """A mistyped --store had given an empty export and 'no stored runs' with exit 0; export had written
    held-out rows without --allow-test."""
    missing = str(env_dirs / "nosuch")
    for argv in (["stats", "--store", missing], ["export", str(env_dirs / "x.csv"), "--store", missing]):
        assert main(argv) == 2
        assert "no such folder" in capsys.readouterr().err
    assert main(["replay", "--world", "test_profiles", "--allow-test", "--seeds", "0", "--arrivals", "2",
                 "--policies", "random"]) == 0
    assert main(["replay", "--world", "dev", "--seeds", "0", "--arrivals", "2", "--policies", "random"]) == 0
    capsys.readouterr()
    assert main(["export", str(env_dirs / "x.csv")]) == 0
    assert "1 held-out world(s) left out" in capsys.readouterr().err
    assert "test_profiles" not in (env_dirs / "x.csv").read_text()
    assert main(["export", str(env_dirs / "y.csv"), "--allow-test"]) == 0
    assert "test_profiles" in (env_dirs / "y.csv").read_text()
