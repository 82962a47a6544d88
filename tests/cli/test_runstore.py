"""`epochsim run` keeps every run: a new directory each time, `latest` pointing to the newest,
and an explicit --out holding another run refused unless --force."""

from __future__ import annotations

import os

from epochsim.cli import main
from epochsim.runstore import held_run, new_run_dir, point_latest


def test_two_runs_keep_both_and_latest_points_to_the_second(tmp_path, scenario, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):
        assert main(["run", str(scenario), "--no-plot"]) == 0
    store = tmp_path / "runs" / "edge"
    runs = sorted(p for p in os.listdir(store) if p != "latest")
    assert len(runs) == 2 and all(r.endswith("-seed-1") or "-seed-1-" in r for r in runs)
    for r in runs:
        assert (store / r / "trace.jsonl").is_file() and (store / r / "verdict.json").is_file()
    assert os.readlink(store / "latest") in runs
    newest = max(runs, key=lambda r: os.path.getmtime(store / r / "verdict.json"))
    assert os.readlink(store / "latest") == newest
    assert "latest: " in capsys.readouterr().out


def test_one_second_two_runs_get_two_directories(tmp_path, monkeypatch):
    monkeypatch.setattr("epochsim.runstore._stamp", lambda: "20260101T000000Z")
    first = new_run_dir(str(tmp_path), "s", 3)
    second = new_run_dir(str(tmp_path), "s", 3)
    assert first != second and second.endswith("-seed-3-2")
    assert point_latest(second) and os.readlink(tmp_path / "s" / "latest") == os.path.basename(second)


def test_an_out_holding_a_run_is_refused_without_force(a_run, scenario, capsys):
    before = (a_run / "trace.jsonl").read_bytes()
    assert main(["run", str(scenario), "--out", str(a_run), "--no-plot", "--seed", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "already holds the run of edge at seed 1" in err and "--force" in err and "\n" not in err
    assert (a_run / "trace.jsonl").read_bytes() == before  # nothing lost
    assert main(["run", str(scenario), "--out", str(a_run), "--no-plot", "--seed", "2", "--force"]) == 0
    assert "seed 2" in held_run(str(a_run))
