"""The KIP-951 study on KRaft (`epochsim study --kraft`): the variant of a study scenario, a
tiny run of it with its table, and the flags' errors. The figures are the study's to report
(docs/kip-951-study.md); these tests check only that it runs and what it prints."""

from __future__ import annotations

import tomllib

import pytest

from epochsim import study
from epochsim.cli import main as cli_main
from epochsim.study_kraft import START_SHIFT_MS, KraftSettings, kraft_text, overrides, warmup_us
from scenarios.schema import ScenarioError
from tests.kafka.test_kip951 import TINY

LINKS = TINY + """
[[network.links]]
src = "c1"
dst = "b1"
latency = { dist = "constant", ms = 0.5 }
[[network.links]]
src = "b1"
dst = "b2"
latency = { dist = "constant", ms = 0.5 }
"""


def test_the_variant_is_a_shifted_kraft_cluster_without_controller_links():
    sc = kraft_text(LINKS, "tiny.toml", KraftSettings(apply_us=200, slow=("b2", 50)))
    assert sc.name == "tiny-move-kraft-apply-200us-slow-b2-50ms"
    c = sc.options.cluster
    assert (c.mode, c.controllers, c.metadata_apply_us) == ("kraft", 3, 200)
    assert sc.options.profile == "3.7"
    assert [(link.src, link.dst) for link in sc.options.network.links] == [("b1", "b2")]
    assert sc.options.run.duration_ms == 2300 + START_SHIFT_MS
    assert sc.options.producers[0].start_ms == 1000 + START_SHIFT_MS
    assert sc.options.producers[0].stop_ms == 2100 + START_SHIFT_MS
    assert [(s.at_us, s.action, s.target) for s in sc.steps[:2]] == [
        (0, "slow_metadata", "b2"), ((1700 + START_SHIFT_MS) * 1000, "move_leader", "t-0")]
    assert warmup_us(study.WARMUP_US) == study.WARMUP_US + START_SHIFT_MS * 1000


def test_a_later_release_names_its_variant_and_runs_with_its_switches():
    sc = kraft_text(LINKS, "tiny.toml", KraftSettings(profile="4.1"))
    assert sc.name == "tiny-move-kraft-4.1" and sc.options.profile == "4.1"
    assert sc.options.protocol.kraft_fetch_completes_on_hw
    assert not kraft_text(LINKS, "tiny.toml", KraftSettings()).options.protocol \
        .kraft_fetch_completes_on_hw


def test_a_bad_slow_broker_is_named_as_the_scenario_loader_names_it():
    with pytest.raises(ScenarioError, match="faults"):
        kraft_text(TINY, "tiny.toml", KraftSettings(slow=("b9", 50)))
    data = tomllib.loads(TINY)
    assert "network.links" not in overrides(data, "tiny-move", KraftSettings())


def test_the_kraft_study_runs_on_a_tiny_budget_and_prints_its_columns():
    sc = kraft_text(TINY, "tiny.toml", KraftSettings(slow=("b3", 50)))
    results = study.run_study(study.study_jobs([sc], 1, warmup_us=warmup_us(study.WARMUP_US)))
    assert [r["mode"] for r in results] == list(study.MODES)
    for r in results:
        assert r["warmup_us"] == study.WARMUP_US + START_SHIFT_MS * 1000
        assert sorted(r["kraft"]["apply_wait"]) == ["b1", "b2", "b3"]
        assert "stale_metadata" in r["kraft"]
    table = study.format_table(results)
    assert "tiny-move-kraft-slow-b3-50ms" in table
    assert f"batches created after {(study.WARMUP_US // 1000) + START_SHIFT_MS} ms" in table
    header = next(line for line in table.splitlines() if "stale_metadata" in line)
    assert header.split()[2:] == list(study.KRAFT_COLUMNS)
    rows = [line.split() for line in table.splitlines()[table.splitlines().index(header) + 1:]]
    assert [row[1] for row in rows] == list(study.MODES)


def test_a_zookeeper_mode_study_prints_no_kraft_table():
    from scenarios.schema import parse_scenario
    results = study.run_study(study.study_jobs([parse_scenario(TINY, "tiny.toml")], 1)[1:2])
    assert "kraft" not in results[0] and "warmup_us" not in results[0]
    assert "stale_metadata" not in study.format_table(results)


@pytest.mark.parametrize("args,words", [
    (["--slow-metadata", "b2:50"], "add --kraft"),
    (["--kraft", "--slow-metadata", "b2"], "BROKER:MS"),
    (["--kraft", "--slow-metadata", "b9:50"], "faults"),
    (["--kraft-profile", "4.1"], "add --kraft"),
    (["--kraft", "--kraft-profile", "3.6"], "name a release from 3.7 on"),
    (["--kraft", "--kraft-profile", "proposed"], "name a release from 3.7 on"),
])
def test_bad_kraft_flags_are_one_line_errors(tmp_path, capsys, args, words):
    path = tmp_path / "tiny.toml"
    path.write_text(TINY, encoding="utf-8")
    code = cli_main(["study", str(path), "--seeds", "1", "--out", str(tmp_path / "o"), *args])
    assert code == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err


def test_apply_waits_count_a_record_once_not_again_when_a_restart_replays_it():
    waits = study.ApplyWaits(warmup_us=10)
    waits.step({"kind": "metadata_commit", "t": 5, "records": [[0, 1, {}]]})  # before warm-up
    waits.step({"kind": "metadata_commit", "t": 20, "records": [[1, 1, {}], [2, 1, {}]]})
    waits.step({"kind": "metadata_apply", "t": 25, "node": "b1", "from_offset": 0,
                "to_offset": 3})
    waits.step({"kind": "metadata_apply", "t": 900, "node": "b1", "from_offset": 0,
                "to_offset": 3})  # replayed after a restart
    assert waits.result() == {"b1": {"p50_ms": 0.005, "max_ms": 0.005, "records": 2}}
