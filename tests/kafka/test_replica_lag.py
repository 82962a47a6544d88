"""When a leader counts a follower as caught up (`Replica.updateFetchStateOrThrow`): a Fetch
from the leader's log end offset makes it caught up now; a Fetch from at least the log end
offset the leader had at the follower's previous Fetch makes it caught up as of that Fetch. A
follower that trails by one round trip under steady load therefore stays in the ISR, and one
that stops fetching, or falls behind, leaves it after replica.lag.time.max.ms."""

from __future__ import annotations

from types import SimpleNamespace

from epochsim.runner import run_scenario
from scenarios.schema import parse_scenario
from sim.kafka.log import Log
from sim.kafka.partition import NEVER_US, Partition, Replica

STEADY_LOAD = """
name = "steady-load-isr"
expect = "pass"
seed = 1
[run]
duration_ms = 6000
settle_ms = 1000
[protocol]
profile = "3.7"
[cluster]
replica_lag_time_max_ms = 1000
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 6000
linger_ms = 1
[[producers]]
topic = "t"
records_per_sec = 6000
linger_ms = 1
"""


def test_a_fetch_from_the_leaders_log_end_is_caught_up_now():
    r = Replica()
    r.reset(leader_leo=10, now_us=0, in_sync=True, new_leader=False)
    r.fetched(10, leader_leo=10, now_us=500)
    assert r.caught_up_us == 500


def test_a_fetch_from_the_log_end_of_the_previous_fetch_is_caught_up_as_of_then():
    r = Replica()
    r.reset(leader_leo=0, now_us=0, in_sync=True, new_leader=False)
    r.fetched(0, leader_leo=10, now_us=100)  # the leader had 10 by now: caught up as of 0 only
    assert r.caught_up_us == 0
    r.fetched(10, leader_leo=20, now_us=200)  # reached what the leader had at 100
    assert r.caught_up_us == 100
    r.fetched(15, leader_leo=30, now_us=300)  # short of the 20 the leader had at 200
    assert r.caught_up_us == 100


def _state(epoch: int, isr: tuple) -> SimpleNamespace:
    return SimpleNamespace(leader_epoch=epoch, partition_epoch=epoch, replicas=(1, 2, 3), isr=isr)


def test_a_new_leader_epoch_makes_isr_members_caught_up_now_and_others_never():
    """`Replica.resetReplicaState`: lastCaughtUpTimeMs is now for a member of the new ISR and
    0 (never) for the rest, so a follower outside the ISR does not hold the HW back as
    caught up (`Partition.makeLeader`, 3.7.0)."""
    p = Partition("t-0", 1, Log(), 1)
    p.make_leader(_state(1, (1, 2)), 5_000)
    assert p.followers[2].caught_up_us == 5_000
    assert p.followers[3].caught_up_us == NEVER_US


def test_a_leader_re_elected_at_a_new_epoch_keeps_its_followers_log_ends():
    """`resetReplicaState` with isNewLeader false keeps the follower's log end; a broker that
    becomes leader forgets it (UNKNOWN_OFFSET_METADATA), so the HW waits for a Fetch."""
    p = Partition("t-0", 1, Log(), 1)
    p.make_leader(_state(1, (1, 2, 3)), 0)
    p.followers[2].fetched(0, leader_leo=0, now_us=10)
    p.make_leader(_state(2, (1, 2)), 20)
    assert p.followers[2].leo == 0 and p.followers[3].leo == -1
    p.make_follower(SimpleNamespace(leader=2, leader_epoch=3, partition_epoch=3,
                                    replicas=(1, 2, 3), isr=(1, 2, 3)))
    p.make_leader(_state(4, (1, 2, 3)), 30)
    assert p.followers[2].leo == -1


def test_a_follower_one_round_trip_behind_under_steady_load_stays_in_the_isr():
    """Two producers append every millisecond, so a follower's Fetch never finds the leader's
    log end where it asks; the leader shrank such an ISR after replica.lag.time.max.ms."""
    verdict = run_scenario(parse_scenario(STEADY_LOAD, "steady.toml"), 1, keep_events=True)
    isrs = [e["isr"] for e in verdict["_events"] if e["kind"] == "partition_state"]
    assert isrs == [[1, 2, 3]] and verdict["violated"] == []
    assert verdict["metrics"]["acked"] > 1000


def test_a_follower_that_stops_fetching_still_leaves_the_isr():
    cut = STEADY_LOAD + '[[faults]]\nat_ms = 1000\naction = "isolate"\ntarget = "b3"\n'
    verdict = run_scenario(parse_scenario(cut, "cut.toml"), 1, keep_events=True)
    isrs = [e["isr"] for e in verdict["_events"] if e["kind"] == "partition_state"]
    assert [1, 2] in isrs


def test_a_leader_and_isr_at_the_same_epoch_drops_an_isr_change_in_flight():
    """`Partition.makeLeader` commits the state it is given (`updateAssignmentAndIsr`), so a
    pending AlterPartition is dropped even when the leader epoch does not change (a partition
    epoch bump, as KRaft-style ISR removals make); its answer is then ignored."""
    from types import SimpleNamespace

    from sim.kafka.log import Log
    from sim.kafka.partition import Partition
    p = Partition("t-0", 1, Log(), 1)
    state = SimpleNamespace(leader_epoch=1, partition_epoch=1, replicas=(1, 2, 3), isr=(1, 2, 3))
    p.make_leader(state, 0)
    p.pending_isr, p.alter_request = (1, 2), object()
    p.make_leader(SimpleNamespace(leader_epoch=1, partition_epoch=2, replicas=(1, 2, 3),
                                  isr=(1, 2)), 10)
    assert p.pending_isr is None and p.alter_request is None and p.isr == (1, 2)


def _joins_isr(isr_epoch_start_check: bool, fetch_offset: int) -> bool:
    """Whether a leader with HW 5 and epoch start 10 proposes follower 3 (out of the ISR, live)
    for the ISR after a Fetch from `fetch_offset`."""
    from sim.kafka.profiles import Protocol
    from sim.kafka.rules.replication import follower_joins_isr
    protocol = Protocol(isr_epoch_start_check=isr_epoch_start_check)
    return follower_joins_isr(protocol, False, False, fetch_offset, 5, 10, True)


def test_a_follower_joins_the_isr_only_past_the_leaders_epoch_start_from_kafka_7128():
    """KAFKA-7128 (2.1): reaching a new leader's HW, which can trail its log end, is not
    enough; the follower must also reach the start of the leader's epoch. Before, it joined
    at the HW, without batches the old leader had acknowledged."""
    assert _joins_isr(False, 5) and not _joins_isr(True, 5)
    assert _joins_isr(True, 10) and not _joins_isr(False, 4)


IDLE = """
name = "idle-isr"
expect = "pass"
seed = 1
[run]
duration_ms = 8000
settle_ms = 1000
[protocol]
profile = "{profile}"
[cluster]
replica_lag_time_max_ms = 1000
[[topics]]
name = "t"
assignment = [[1, 2, 3]]
[[producers]]
topic = "t"
records_per_sec = 100
stop_ms = 1000
[[faults]]          # b3 stops fetching after the last write has reached it
at_ms = 2000
action = "block"
target = "b3"
dst = "b1"
"""


def test_a_follower_at_the_leaders_log_end_stays_in_sync_from_kafka_7152():
    """KAFKA-7152 (2.1): nobody writes to t-0 any more, so b3, which has every record, is not
    out of sync however long it goes without fetching; 1.0 judged by time alone and dropped it
    after replica.lag.time.max.ms."""
    for profile, shrunk in (("1.0", True), ("2.4", False)):
        verdict = run_scenario(parse_scenario(IDLE.format(profile=profile), "idle.toml"), 1,
                               keep_events=True)
        isrs = [e["isr"] for e in verdict["_events"] if e["kind"] == "partition_state"]
        assert (isrs[-1] == [1, 2]) is shrunk and (isrs[-1] == [1, 2, 3]) is not shrunk, \
            (profile, isrs)
