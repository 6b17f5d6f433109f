"""The published curves file: read as published, bad files named where they are bad."""
import json

import numpy as np
import pytest

from diagnostics.published_curves import CurvesFormatError, load_curves, our_plateau, parse_curves


def test_the_published_file_reads_with_its_plateaus(curves_path):
    curves = load_curves(curves_path)
    assert set(curves) == {"test_profiles", "composite", "quirky"}
    assert all(len(by) == 9 for by in curves.values())
    assert curves["test_profiles"]["rucb"].seeds == 64 and curves["composite"]["rucb"].seeds == 32
    assert curves["test_profiles"]["no-transfer"].plateau == pytest.approx(4.647, abs=5e-4)
    assert curves["composite"]["rucb"].plateau == pytest.approx(4.026, abs=5e-4)
    # summed over the arrivals, a curve gives the published total (the table's CODuel on U: 1197.8)
    assert curves["test_profiles"]["coduel"].mean.sum() == pytest.approx(1197.8, rel=1e-3)


@pytest.mark.parametrize("edit, where", [
    (lambda c: c["curves"]["U"]["rucb"]["mean"].__setitem__(0, -1.0), "curves.U.rucb.mean"),
    (lambda c: c["curves"]["U"]["rucb"].__setitem__("lo", [0.0] * 3), "curves.U.rucb"),
    (lambda c: c["curves"]["U"]["rucb"].__setitem__("hi", c["curves"]["U"]["rucb"]["lo"]), "the band"),
    (lambda c: c["curves"]["U"]["rucb"].__setitem__("seeds", 0), "curves.U.rucb.seeds"),
    (lambda c: c["curves"]["U"]["rucb"].__setitem__("seeds", True), "curves.U.rucb.seeds"),
    (lambda c: c["curves"].__setitem__("X", {}), "curves.X"),
    (lambda c: c["curves"]["U"].__setitem__("mine", {}), "curves.U.mine"),
    (lambda c: c.__setitem__("curves", []), "curves: missing"),
])
def test_a_bad_file_is_named_where_it_is_bad(curves_path, edit, where):
    raw = json.loads(curves_path.read_text())
    edit(raw)
    with pytest.raises(CurvesFormatError, match=where.replace(".", r"\.")):
        parse_curves(raw, "x.json")


def test_unreadable_files_are_named(tmp_path):
    for name, content in (("empty.json", ""), ("list.json", "[1, 2]"), ("deep.json", "[" * 100000)):
        (tmp_path / name).write_text(content)
        with pytest.raises(CurvesFormatError, match=name):
            load_curves(tmp_path / name)
    with pytest.raises(CurvesFormatError, match="folder"):
        load_curves(tmp_path)


def test_our_plateau_needs_350_arrivals():
    assert our_plateau(np.ones((2, 300))) is None
    assert our_plateau(np.arange(350.0)[None].repeat(2, 0)) == pytest.approx(np.arange(250, 350).mean())
