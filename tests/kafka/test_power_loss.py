"""What a power loss takes from a log: what the OS had not written to disk, never what Kafka
flushed itself (a clean shutdown flushes every log) or what an earlier power loss's recovery
kept; with `flush = "writeback"`, each log's writes since the kernel's flusher last wrote that
log back (Linux: a file goes out at the first 5 s flusher tick after its oldest dirty page is
`unflushed_ms` old)."""

from __future__ import annotations

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.log import Log
from tests.cli.test_bad_input_edges import one_line_error

S = 1_000_000


def _log(times_s: list[float]) -> Log:
    log = Log()
    for t in times_s:
        log.append(1, 0, None, int(t * S))
    return log


@pytest.mark.parametrize("now_s, durable", [
    (30.9, 0),   # the first append (at 1 s) expires at 31 s: nothing written yet
    (35.0, 4),   # written back at the 35 s tick: the appends at 1, 2, 10 and 34 s
    (69.9, 4),   # dirtied again at 36 s, expires at 66 s, the next tick is 70 s
    (70.0, 6),   # ... and at 70 s the appends at 36 and 50 s go out
])
def test_writeback_writes_a_log_at_the_tick_after_its_oldest_dirty_page_expires(now_s, durable):
    log = _log([1, 2, 10, 34, 36, 50, 71])
    assert log.written_back(int(now_s * S), 30 * S, 5 * S) == durable


def test_writeback_and_age_never_undo_a_flush():
    log = _log([1, 2, 3])
    log.flush()
    log.append(1, 0, None, 4 * S)
    assert log.written_back(5 * S, 30 * S, 5 * S) == 3
    assert log.unflushed_from(0) == 3  # everything is younger than 30 s, but three are flushed
    log.truncate_to(2)  # a truncation below the flushed point takes it down with the log
    assert log.flushed == 2 and log.unflushed_from(0) == 2


SCENARIO = """
name = "power-loss-after-flush"
expect = "pass"
seed = 1
[run]
duration_ms = 10000
settle_ms = 2000
[protocol]
profile = "proposed"
[cluster]
brokers = 3
[[topics]]
name = "t"
partitions = 4
replication_factor = 3
[[producers]]
topic = "t"
acks = "all"
records_per_sec = 400
{faults}
"""

FAULT = '[[faults]]\nat_ms = {at}\naction = "{action}"\ntarget = "b2"\n{extra}\n'


def _power_cuts(faults: str, session_ms: int = 6000) -> list[dict]:
    text = SCENARIO.format(faults=faults).replace(
        "brokers = 3", f"brokers = 3\nbroker_session_timeout_ms = {session_ms}")
    verdict = run_scenario(parse_scenario(text, "p.toml"), 1, keep_events=True)
    return [e for e in verdict["_events"] if e["node"] == "b2" and e["kind"] == "truncate"
            and e["reason"] == "power_loss"]


def test_a_power_loss_after_a_clean_shutdown_loses_nothing():
    """`LogManager.shutdown` flushes every log before the broker stops, so a power cut while it
    is down finds everything on disk (a plain crash, by contrast, leaves the page cache)."""
    after_crash = _power_cuts(FAULT.format(at=3000, action="crash", extra="")
                              + FAULT.format(at=4000, action="power_loss", extra=""))
    after_shutdown = _power_cuts(FAULT.format(at=3000, action="controlled_shutdown", extra="")
                                 + FAULT.format(at=4000, action="power_loss", extra=""))
    assert len(after_crash) == 4 and after_shutdown == []


def test_a_second_power_loss_keeps_what_the_first_left_on_disk():
    """b2 restarts once ZooKeeper expired the session of its first life (before, the old
    registration fails the start) and loses power again 1.4 s later."""
    twice = _power_cuts(FAULT.format(at=3000, action="power_loss", extra="")
                        + FAULT.format(at=4100, action="restart", extra="")
                        + FAULT.format(at=5500, action="power_loss", extra=""), session_ms=1000)
    first = {e["tp"]: e["to_offset"] for e in twice if e["t"] == 3 * S}
    second = {e["tp"]: e["to_offset"] for e in twice if e["t"] == 5.5 * S}
    assert first and all(second.get(tp, first[tp]) >= first[tp] for tp in first)
    assert len(second) == 4  # what it got after the restart is lost again


def test_writeback_gives_each_log_its_own_cut():
    """With 2 s page expiry, every log is first written back at the 5 s tick (its oldest page
    expired at about 2 s), and dirtied again at once; the next write-back would be at 10 s. So
    a power loss at 6 s keeps each log up to its last append before 5 s, where losing the last
    2 s by age keeps it up to 4 s."""
    extra = 'unflushed_ms = 2000\nflush = "writeback"'
    cuts = _power_cuts(FAULT.format(at=6000, action="power_loss", extra=extra))
    age = _power_cuts(FAULT.format(at=6000, action="power_loss", extra="unflushed_ms = 2000"))
    assert len(cuts) == 4 and len(age) == 4
    # writeback kept everything appended up to the 5 s tick; age, up to 4 s
    assert all(w["to_offset"] > a["to_offset"] for w, a in zip(cuts, age, strict=True))


def test_an_unknown_flush_mode_is_a_one_line_error(capsys, tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(SCENARIO.format(faults=FAULT.format(at=3000, action="power_loss",
                                                        extra='flush = "fsync"')))
    one_line_error(capsys, ["run", path, "--out", tmp_path / "o"], "faults[0].flush",
                   "unknown value 'fsync'")
