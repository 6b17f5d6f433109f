"""The pages in a real browser: headless Chromium (Debian's package) driven by Playwright.

Screenshots go to $TUTORDUEL_SCREENSHOTS when it is set (the README's come from there), else to
the test's own folder. Without Chromium or Playwright these tests skip, unless
TUTORDUEL_REQUIRE_BROWSER=1 (CI sets it: there a missing browser is a failure, not a skip).
"""
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from diagnostics.play_page import play_data, session_score, write_play_page
from diagnostics.watch_page import watch_data, write_watch_page
from online.replay import replay

CHROMIUM = os.environ.get("TUTORDUEL_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    missing = None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "the playwright package is not installed"
    if missing is None and not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        missing = f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
    if missing:
        if os.environ.get("TUTORDUEL_REQUIRE_BROWSER") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture()
def shots(tmp_path):
    d = Path(os.environ.get("TUTORDUEL_SCREENSHOTS", tmp_path))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _open(browser, path, fragment=""):
    page = browser.new_page(viewport={"width": 1200, "height": 860})
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))   # set before any script runs
    page.goto(Path(path).resolve().as_uri() + fragment)
    return page, errors


def _images_loaded(page):
    return page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")


@pytest.fixture(scope="module")
def play_world(dev_world, tmp_path_factory):
    data = play_data(dev_world, 0, sessions=48)
    path = write_play_page(tmp_path_factory.mktemp("play") / "play.html", data)
    return data, path


def test_a_session_played_by_clicking_scores_what_online_scoring_gives(browser, play_world, shots):
    data, path = play_world
    page, errors = _open(browser, path, "#arrival=40")
    pairs = [(t % 6, (t + 1 + t // 6) % 6) if (t + 1 + t // 6) % 6 != t % 6 else (t % 6, (t + 2) % 6) for t in range(24)]
    for t, (i, j) in enumerate(pairs):
        page.click(f"button.persona[data-persona='{i}']")
        page.click(f"button.persona[data-persona='{j}']")
        page.click("#show")
        if t == 4:
            page.screenshot(path=str(shots / "play.png"))
        page.click("#next")
    state = page.evaluate("window.tdState")
    want, clicks = session_score(data, 40, pairs)
    assert state["done"] and state["a"] == 40 and state["pairs"] == [list(p) for p in pairs]
    assert state["clicks"] == clicks and state["score"] == want               # exactly, not to rounding
    assert page.text_content("#final-score") == f"{want:.2f}"
    table = page.text_content("#final")
    for spec in ("no-transfer", "coduel"):
        assert f"{data['arrivals'][40]['policies'][spec]['score']:.2f}" in table
    page.screenshot(path=str(shots / "play-end.png"))
    assert not errors and _images_loaded(page)


def test_random_pairs_score_about_zero_and_the_two_best_score_100(browser, play_world):
    """Every one of 48 sessions played through the page's own controls: uniformly random distinct pairs
    average about 0 (within 3 standard errors), the two best personas every round give 100; each session's
    figure is exactly online.scoring's."""
    data, path = play_world
    page, errors = _open(browser, path)
    rng = np.random.default_rng(0)
    random_scores = []
    for a, item in enumerate(data["arrivals"]):
        pairs = [tuple(int(x) for x in rng.choice(6, 2, replace=False)) for _ in range(24)]
        best = [tuple(int(x) for x in np.argsort(-np.array(U), kind="stable")[:2]) for U in item["U"]]
        for kind, ps in (("random", pairs), ("best", best)):
            got = page.evaluate("""([a, ps]) => { start(a); for (const [i, j] of ps) { pick(i); pick(j); show(); next(); }
                                                  return window.tdState.score; }""", [a, ps])
            assert got == session_score(data, a, ps)[0]
            if kind == "best":          # 100 to rounding: online.scoring's 100 (Rr - R) / (Rr - G) with R == G
                assert abs(got - 100.0) < 1e-9
            else:
                random_scores.append(got)
    m, se = np.mean(random_scores), np.std(random_scores, ddof=1) / np.sqrt(len(random_scores))
    assert abs(m) < 3 * se, (m, se)
    assert not errors


def test_the_watch_page_steps_through_a_stored_coduel_run(browser, dev_world, tmp_path, shots):
    data = watch_data(dev_world, 0, arrivals=60, curve_seeds=2)
    path = write_watch_page(tmp_path / "watch.html", data)
    row = replay(dev_world, 0, "coduel", 60)
    page, errors = _open(browser, path)
    assert page.evaluate(f"[...Array({len(data['arrivals'])}).keys()].map(a => window.tdArrivalRegret(a))") \
        == row["per_user"]["regret"]
    page.click("#next-arrival")
    for _ in range(23):                     # through arrival 2's session, round by round
        page.click("#step")
    assert page.evaluate("[window.tdWatch.a, window.tdWatch.t]") == [1, 23]
    assert page.text_content("#user-regret") == f"{row['per_user']['regret'][1]:.6f}"
    page.click("#play")
    page.wait_for_timeout(400)
    page.click("#play")
    assert page.evaluate("window.tdWatch.a * 24 + window.tdWatch.t") > 47         # it played on, then paused
    page.evaluate("(() => { const s = document.getElementById('slider'); s.value = 44; s.dispatchEvent(new Event('input')); })()")
    for _ in range(5):
        page.click("#step")
    assert page.evaluate("[window.tdWatch.a, window.tdWatch.t]") == [44, 5]
    page.screenshot(path=str(shots / "watch.png"))
    assert not errors and page.locator("#curve svg").count() == 1


def test_the_leaderboard_page_sorts_marks_the_best_and_loads_its_images(browser, env_dirs, shots):
    from tutorduel.cli import main

    out = env_dirs / "lb"
    assert main(["leaderboard", "--seeds", "0-1", "--policies", "random,no-transfer", "--out", str(out)]) == 0
    page, errors = _open(browser, out / "leaderboard.html")
    first = lambda: page.evaluate("[...document.querySelectorAll('table.lb tbody tr')].map(r => r.cells[0].textContent)")
    assert first()[0] == "no-transfer"
    assert page.text_content("td.best").startswith(page.text_content("table.lb tbody tr:first-child td:nth-child(2)"))
    page.click("table.lb th:nth-child(2)")
    page.click("table.lb th:nth-child(2)")              # ascending: the weaker policy first, references still last
    rows = first()
    assert rows[0] == "random" and rows.index("no-transfer") < rows.index("floor G")
    page.locator("#pols input[data-p='random']").check()
    assert page.locator("#plot svg path[stroke]").count() == 2
    page.screenshot(path=str(shots / "leaderboard.png"))
    assert not errors and _images_loaded(page)


def test_the_validation_report_renders_with_its_images(browser, env_dirs, capsys, shots):
    from tutorduel.cli import main

    argv = ["validate", "--world", "dev", "--seed", "2", "--policy", "coduel", "--arrivals", "12", "--users", "3",
            "--chains", "2", "--warmup", "100", "--draws", "100", "--holdout", "3", "--beliefs", "laplace,adf"]
    assert main(argv) == 0
    report = [x for x in capsys.readouterr().out.splitlines() if x.startswith("report ")][0].removeprefix("report ")
    page, errors = _open(browser, report)
    assert page.locator("img").count() >= 4 + 7 and _images_loaded(page)   # and one figure per belief measure
    assert page.locator("table.users tr").count() == 1 + 3                # header and one row per user
    assert page.locator("table.beliefs tr").count() == 1 + 3 * 2           # each belief and the exact moments: a block, all
    assert "meaning" in page.locator("table.lb").first.inner_text()      # the summary, labelled
    page.screenshot(path=str(shots / "validation.png"))
    assert not errors


HOSTILE = "<img src=x onerror=\"window.__pwned=1\">"


def test_the_leaderboard_page_runs_no_script_from_a_name(browser, tmp_path):
    """Policy and roster names from specs, worlds and rows enter the page as text, never as markup."""
    from types import SimpleNamespace

    import numpy as np

    from diagnostics.leaderboard_report import write_page

    x = np.arange(10.0)
    curve = SimpleNamespace(arrival=x, mean=x, lo=x - 1, hi=x + 1)
    roster = f"dev{HOSTILE}"
    curves = {roster: {f"coduel[name=\"{HOSTILE}\"]": curve, "coduel": curve}}
    table = f"| policy | {roster} |\n|---|---|\n| {HOSTILE} | 50.0 ± 1.0 [4] |"
    extra = [f"## {HOSTILE}", f"### {HOSTILE}", f"a paragraph {HOSTILE}", "| policy | x |", "|---|---|",
             f"| {HOSTILE} | 1.0 |"]
    path = write_page(tmp_path / "leaderboard.html", table, [f"finding {HOSTILE}"], {}, curves, extra_md=extra)
    page, errors = _open(browser, path)
    page.locator("#pols input").first.check()
    _assert_no_script_ran(page, errors)
    assert page.locator("img").count() == 0                       # no element made from a name
    assert HOSTILE in page.text_content("#pols") and HOSTILE in page.text_content("#tabs")


def _assert_no_script_ran(page, errors):
    """No handler set by a hostile name ran (no dialog either), none is in the document, and the console
    stayed clean."""
    page.wait_for_timeout(200)
    assert page.evaluate("window.__pwned") is None and not errors
    assert page.evaluate("document.querySelectorAll('[onerror]').length") == 0


def _hostile_world(dev_world):
    """dev with every name and text a page shows replaced by markup that would run a script."""
    w = dev_world.copy(deep=True)
    names = [f"{HOSTILE}{k}" for k in range(w.sizes["persona"])]
    w = w.assign_coords(persona=names, first=names, second=names)
    w["question_text"] = ("question",), np.array([f"{HOSTILE} q{i}" for i in range(w.sizes["question"])])
    for v in ("student_profile", "student_traits", "student_quirks"):
        w[v] = ("student",), np.array([f"{HOSTILE}{v}{i}" for i in range(w.sizes["student"])])
    w.attrs["description"] = HOSTILE
    return w


@pytest.mark.parametrize("which", ["play", "watch"])
def test_the_play_and_watch_pages_run_no_script_from_world_metadata(browser, dev_world, tmp_path, which):
    """Persona names, question texts, student profiles and the description enter as text, never as markup."""
    from tdmodels.world import validate_world

    world = validate_world(_hostile_world(dev_world))
    if which == "play":
        path = write_play_page(tmp_path / "play.html", play_data(world, 0, sessions=2))
    else:
        path = write_watch_page(tmp_path / "watch.html", watch_data(world, 0, arrivals=6, curve_seeds=1))
    page, errors = _open(browser, path)
    for button in page.locator("button").all()[:8]:             # play a little: every view is rendered
        if button.is_visible() and button.is_enabled():
            button.click()
    _assert_no_script_ran(page, errors)
    assert HOSTILE in page.text_content("body")


def test_the_calibration_report_runs_no_script_from_a_posterior_file(browser, tmp_path):
    """A calibration folder received from someone else: figure and parameter names, and a sibling page's file
    name, enter the report as text."""
    import arviz as az

    from diagnostics.calibration_report import write_calibration_report

    idata = az.from_netcdf(Path(__file__).resolve().parents[2] / "calibration" / "posterior.nc")
    figures = [f"{HOSTILE}{f}" for f in idata.observed_data["figure"].values]
    idata.observed_data = idata.observed_data.assign_coords(figure=figures)
    names = [str(n) for n in idata.constant_data["parameter"].values]
    idata.posterior = idata.posterior.rename({n: f"{HOSTILE}{n}" for n in names})
    idata.constant_data = idata.constant_data.assign_coords(parameter=[f"{HOSTILE}{n}" for n in names])
    from diagnostics.page_links import GENERATOR_META, save_page

    save_page(tmp_path / f"{HOSTILE}.html", f"<head>{GENERATOR_META}</head><p>a sibling page of ours</p>")
    (tmp_path / "javascript:alert(7).html").write_text("<p>planted</p>")     # not ours: never linked
    page, errors = _open(browser, write_calibration_report(idata, tmp_path / "report.html"))
    _assert_no_script_ran(page, errors)
    assert HOSTILE in page.text_content("table") and HOSTILE in page.text_content("nav")
    assert page.locator("nav a").count() == 1
    page.locator("nav a").first.click()                # a file name, opened as a page: no script runs
    _assert_no_script_ran(page, errors)


def test_a_page_named_like_a_script_url_is_opened_as_a_file(browser, tmp_path):
    """Even a page of ours whose file name reads as a javascript: URL is linked as a relative file name:
    clicking it opens that file and runs nothing."""
    import arviz as az

    from diagnostics.calibration_report import write_calibration_report
    from diagnostics.page_links import GENERATOR_META, save_page

    name = "javascript:window.__pwned=7;void(0).html"
    save_page(tmp_path / name, f"<head>{GENERATOR_META}</head><p id='sib'>sibling</p>")
    idata = az.from_netcdf(Path(__file__).resolve().parents[2] / "calibration" / "posterior.nc")
    page, errors = _open(browser, write_calibration_report(idata, tmp_path / "report.html"))
    page.locator("nav a").first.click()
    page.wait_for_selector("#sib")
    assert page.url.startswith("file://") and page.url.endswith(".html")
    _assert_no_script_ran(page, errors)


def test_the_validation_report_runs_no_script_from_a_validation_file(browser, tmp_path):
    """A validation file's world, policy and check names enter the report as text."""
    import arviz as az
    import xarray as xr

    from diagnostics.validation_report import write_report

    rng = np.random.default_rng(0)
    U, d, C = 3, 7, 2
    post = az.from_dict(posterior={"theta": rng.normal(size=(2, 50, U, d))}, dims={"theta": ["user", "dim"]})
    post.posterior.attrs.update(world=HOSTILE, policy=f"coduel[x=\"{HOSTILE}\"]", seed=0,
                                reference_health=HOSTILE)
    online = xr.Dataset({"theta": (("draw", "user", "dim"), rng.normal(size=(50, U, d)))})
    checks = xr.Dataset({"khat": ("user", rng.uniform(0, 1, U)), "mean_error": (("user", "feature"), rng.normal(size=(U, d))),
                         "sd_ratio": (("user", "feature"), rng.uniform(0.8, 1.2, (U, d))),
                         "w1": (("user", "feature"), rng.uniform(0, 1, (U, d))),
                         "w1_floor": (("user", "feature"), np.ones((U, d))),
                         "weights_tv": ("user", rng.uniform(0, 1, U)),
                         "exact_weights": (("user", "component"), np.full((U, C), 0.5))},
                        attrs={HOSTILE: HOSTILE})
    S = 4
    beliefs = xr.Dataset({"khat": (("belief", "user"), rng.uniform(0, 1, (1, U))),
                          "khat_replicates": (("belief", "user", "replicate"), rng.uniform(0, 1, (1, U, 2))),
                          **{k: (("belief", "user", "dim"), rng.uniform(0.5, 1.5, (1, U, d)))
                             for k in ("mean_error", "sd_ratio", "w1", "w1_floor")},
                          "p_first": (("belief", "user", "round"), rng.uniform(0.1, 0.9, (1, U, S))),
                          "y": (("user", "round"), rng.integers(0, 2, (U, S)))},
                         coords={"belief": [HOSTILE], "user": np.arange(U)}, attrs={"block": 50})
    idata = post
    idata.add_groups({"online": online, "checks": checks, "beliefs": beliefs})
    page, errors = _open(browser, write_report(idata, tmp_path / "validation.html"))
    _assert_no_script_ran(page, errors)
    assert HOSTILE in page.text_content("h1") and HOSTILE in page.locator("table.lb").first.text_content()
    assert HOSTILE in page.locator("table.beliefs").text_content()
