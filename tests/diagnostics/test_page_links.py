"""A page links only to the toolkit's own pages beside it, with URLs that are file names and nothing else."""
import os

from diagnostics.page_links import GENERATOR_META, nav, page_href, save_page, written_by_us

OURS = f"<!doctype html><html><head><meta charset='utf-8'>{GENERATOR_META}<title>t</title></head></html>"


def test_pages_link_to_the_pages_beside_them(tmp_path):
    for name in ("leaderboard.html", "watch.html", "validation-dev.html"):
        save_page(tmp_path / name, OURS)
    links = nav(tmp_path / "leaderboard.html")
    assert "href='./watch.html'" in links and "href='./validation-dev.html'" in links
    assert "leaderboard.html" not in links and "play.html" not in links
    assert nav(tmp_path / "nowhere" / "page.html") == ""


def test_a_planted_file_is_never_linked(tmp_path):
    """Files the toolkit did not write (whatever their names: a script URL, a known page's name) and
    symlinks to its pages are left out."""
    (tmp_path / "javascript:alert(7).html").write_text("<html>hi</html>")
    (tmp_path / "play.html").write_text("<html>not ours</html>")
    save_page(tmp_path / "watch.html", OURS)
    (tmp_path / "link.html").symlink_to(tmp_path / "watch.html")
    os.mkfifo(tmp_path / "fifo.html")                       # never opened (a read would block)
    (tmp_path / "folder.html").mkdir()
    links = nav(tmp_path / "leaderboard.html")
    assert links == "<nav><a href='./watch.html'>watch CODuel learn</a></nav>"
    assert not written_by_us(tmp_path / "link.html") and not written_by_us(tmp_path / "fifo.html")


def test_even_a_page_of_ours_with_a_scheme_for_a_name_links_as_a_file(tmp_path):
    for name in ("javascript:alert(7).html", "a?b#c'd\".html", "<b>.html"):
        save_page(tmp_path / name, OURS)
    links = nav(tmp_path / "leaderboard.html")
    hrefs = [chunk.split("'")[0] for chunk in links.split("href='")[1:]]
    assert len(hrefs) == 3 and all(h.startswith("./") for h in hrefs)
    assert not any(c in h[2:] for h in hrefs for c in ":/?#'\"<>")
    assert page_href("javascript:alert(7).html") == "./javascript%3Aalert%287%29.html"
    assert "<b>" not in links


def test_a_planted_page_carrying_our_marker_is_never_linked(tmp_path):
    """A page with the toolkit's generator <meta> and a script had been offered in every page's navigation: the
    marker is anyone's to copy, so only a page whose content this toolkit recorded writing at that path is
    linked; one of ours edited since, or copied to another name, is not."""
    planted = OURS.replace("<title>t</title>", "<title>t</title><script>alert(7)</script>")
    (tmp_path / "results.html").write_text(planted)
    save_page(tmp_path / "watch.html", OURS)
    save_page(tmp_path / "play.html", OURS)
    (tmp_path / "play.html").write_text(planted)                     # ours, then replaced
    (tmp_path / "copy.html").write_bytes((tmp_path / "watch.html").read_bytes())
    assert nav(tmp_path / "leaderboard.html") == "<nav><a href='./watch.html'>watch CODuel learn</a></nav>"
    assert not any(written_by_us(tmp_path / n) for n in ("results.html", "play.html", "copy.html"))
