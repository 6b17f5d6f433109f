import math

import pytest

from diagnostics.play_page import play_data, play_in_terminal, session_score
from tutorduel.cli import main


@pytest.fixture(scope="module")
def data(dev_world):
    return play_data(dev_world, 2, sessions=3)


def test_the_page_data_are_the_runs_own_schedule_clicks_and_policy_figures(dev_world, data):
    from online.replay import replay_logged

    row, log = replay_logged(dev_world, 2, "no-transfer")
    item = data["arrivals"][0]
    pairs = list(zip(log.first[0].tolist(), log.second[0].tolist()))
    score, clicks = session_score(data, 0, pairs)
    assert clicks == log.outcome[0].tolist()                      # common random numbers: the policy's own clicks
    assert item["policies"]["no-transfer"]["regret"] == row["per_user"]["regret"][0]
    assert math.isclose(score, item["policies"]["no-transfer"]["score"], rel_tol=1e-12)


def test_the_terminal_session_scores_like_the_page_and_asks_again_on_bad_input(data):
    pairs = [(t % 6, (t + 3) % 6) for t in range(24)]
    answers = iter(["7 1", "2 2", "x", "1,1"] + [f"{i + 1} {j + 1}" for i, j in pairs])
    said = []
    got = play_in_terminal(data, 1, ask=lambda prompt: next(answers), say=said.append)
    assert got == session_score(data, 1, pairs)[0]
    assert sum("two different numbers" in x for x in said) == 4
    assert f"your score {got:.2f}" in said[-1]


def test_the_terminal_session_stops_on_q_or_end_of_input(data):
    answers = iter(["1 2", "q"])
    assert math.isnan(play_in_terminal(data, 0, ask=lambda prompt: next(answers), say=lambda x: None))

    def eof(prompt):
        raise EOFError
    said = []
    assert math.isnan(play_in_terminal(data, 0, ask=eof, say=said.append))
    assert said[-1] == "stopped after 0 of 24 rounds"


def test_play_and_watch_commands_write_pages_and_refuse_bad_input(env_dirs, capsys):
    out = env_dirs / "p.html"
    assert main(["play", "--sessions", "2", "--no-compare", "--out", str(out)]) == 0
    assert out.read_text().count('"questions"') == 2 and "dev" in capsys.readouterr().out
    assert main(["watch", "--arrivals", "3", "--curve-seeds", "2", "--out", str(env_dirs / "w.html")]) == 0
    assert (env_dirs / "w.html").stat().st_size > 0
    assert main(["play", "--world", "test_profiles", "--out", str(out)]) == 2
    assert "held out" in capsys.readouterr().err
    assert main(["play", "--terminal", "--arrival", "301"]) == 2
    assert "has 300 arrivals" in capsys.readouterr().err
    (env_dirs / "afile").write_text("x")                      # a file where a folder should be
    for argv, words in ((["play", "--out", str(env_dirs)], "is a folder"), (["watch", "--out", str(env_dirs)], "is a folder"),
                        (["play", "--no-compare", "--sessions", "1", "--out", str(env_dirs / "afile" / "p.html")],
                         "is a file, not a folder")):
        with pytest.raises(SystemExit) as exc:               # refused while the arguments are parsed
            main(argv)
        assert exc.value.code == 2 and words in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["play", "--sessions", "0"])
    assert exc.value.code == 2


def test_play_defaults_to_the_real_sample_once_imported(env_dirs, sample_path, capsys):
    from tutorduel.pages import default_world

    assert default_world() == "dev"
    assert main(["worlds", "import-sample", str(sample_path)]) == 0
    assert default_world() == "sample"
    out = env_dirs / "s.html"
    assert main(["play", "--sessions", "2", "--out", str(out)]) == 0
    assert "sessions of 'sample'" in capsys.readouterr().out
    page = out.read_text()
    assert '"world":"sample"' in page and '"coduel"' in page
