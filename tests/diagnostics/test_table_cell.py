from hypothesis import given, strategies as st

from diagnostics.table_cell import cell


@given(st.text())
def test_a_cell_is_one_cell_of_one_row_whatever_its_text(text):
    row = f"| {cell(text)} | 1 |"
    assert "\n" not in row and "\r" not in row and "\u2028" not in row and "\u2029" not in row
    bare = row.replace("\\\\", "").replace("\\|", "")        # escaped backslashes, then escaped bars
    assert bare.count("|") == 3


def test_a_profile_table_keeps_a_forged_row_inside_its_cell():
    from diagnostics.profile_breakdown import format_profile_table

    table = format_profile_table([{"name": "coduel", "profile": "x\n| never-ran | p | 9 | 9.0 | 99.9 |", "n": 2,
                                   "arrivals": 3.0, "score": (50.0, 1.0)}])
    assert len(table.splitlines()) == 3 and "never-ran" in table.splitlines()[2]
