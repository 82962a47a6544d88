"""Result tables: aligned columns on stdout, whole lines however wide, no colour codes."""

from __future__ import annotations

from epochsim.tables import column_lines


def test_columns_line_up_and_named_ones_align_right():
    lines = column_lines(["scenario", "met", "note"],
                         [["a-long-scenario-name", "10/10", ""], ["b", "1/2", "see x"]],
                         right=("met",))
    assert lines[0].index("met") + len("met") == lines[1].index("10/10") + len("10/10")
    assert lines[2].index("1/2") + 3 == lines[1].index("10/10") + 5  # right-aligned
    assert lines[1].startswith("a-long-scenario-name  ") and lines[2].endswith("see x")


def test_a_row_wider_than_any_terminal_is_one_line_without_escape_codes():
    long = "repro: epochsim run " + "x" * 400
    lines = column_lines(["scenario", "first failing seed"], [["s", long]])
    assert len(lines) == 2 and lines[1].endswith(long) and "\x1b" not in "".join(lines)
