"""benchmarks.search_power's arguments: a seed or a range, refused with exit 2 otherwise."""

import pytest

from benchmarks.search_power import main, seed_range


def test_a_seed_range_is_inclusive_and_a_single_seed_is_one():
    assert seed_range("1-3") == [1, 2, 3]
    assert seed_range("7") == [7]


@pytest.mark.parametrize("text", ["3-1", "a-b", "-2", ""])
def test_a_bad_range_is_refused(text):
    with pytest.raises(ValueError, match="--seeds"):
        seed_range(text)


def test_an_unknown_mutant_exits_2_naming_it(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--mutants", "no_such_bug", "--seeds", "1"])
    assert exc.value.code == 2
    assert "no_such_bug" in capsys.readouterr().err


def test_one_search_reports_the_run_that_found_the_bug(capsys):
    """hw_not_monotonic's search finds it within a few runs at seed 1."""
    assert main(["--mutants", "hw_not_monotonic", "--seeds", "1", "--jobs", "1"]) == 0
    line = capsys.readouterr().out.splitlines()[0].split()
    assert line[0] == "hw_not_monotonic" and line[1] == "1/1" and int(line[2]) <= 150
