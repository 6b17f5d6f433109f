from diagnostics.leaderboard_report import findings


def _lines(**scores):
    return [{"name": n, "kind": "policy", "score": (v, 0.1)} for n, v in scores.items()]


def test_coduel_first_is_judged_among_the_papers_policies_and_ours_are_reported_beside_it():
    lines = {"dev": _lines(**{"coduel": 55.8, "no-transfer": 38.9, "rucb": 38.1, "tempered-kg": 58.6, "random": 0.0})}
    out = findings(lines)
    assert "dev: CODuel first among the paper's policies: yes (CODuel 55.8)" in out
    assert "dev: policies beyond the paper's, against CODuel: tempered-kg 58.6 (+2.8)" in out
    out = findings({"dev": _lines(coduel=55.8, rucb=60.0)})
    assert "dev: CODuel first among the paper's policies: no (rucb 60.0) (CODuel 55.8)" in out
    assert not any("beyond the paper" in x for x in out)


def test_pages_link_to_the_pages_beside_them(tmp_path):
    from diagnostics.leaderboard_report import nav

    for name in ("leaderboard.html", "watch.html", "validation-dev.html"):
        (tmp_path / name).write_text("<html></html>")
    links = nav(tmp_path / "leaderboard.html")
    assert "href='watch.html'" in links and "href='validation-dev.html'" in links
    assert "leaderboard.html" not in links and "play.html" not in links
    assert nav(tmp_path / "nowhere" / "page.html") == ""
