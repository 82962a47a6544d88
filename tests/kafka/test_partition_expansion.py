"""Partitions added to a topic, and the offline replicas UpdateMetadata names, as Kafka's
ZooKeeper-mode controller does them (KafkaController at 3.7.0).

- `processPartitionModifications` creates only the partitions its context lacks, as a new
  topic's (`onNewPartitionCreation`): the first online replica leads at leader epoch 0, the
  online ones form the ISR, LeaderAndIsr goes to them and UpdateMetadata to every live broker.
  An existing partition keeps its replicas whatever the new assignment says; a topic queued
  for deletion gets no new partition.
- UpdateMetadata (v4+, IBP 1.0) names each partition's replicas that are not online: on a
  dead broker, a broker shutting down or a failed log directory
  (`ControllerBrokerRequestBatch.addUpdateMetadataRequestForBrokers`); LeaderAndIsr and older
  versions name none.
"""

from __future__ import annotations

from scenarios.schema import parse_scenario
from sim.core.trace import Trace
from sim.kafka.probe.run import ProbeRun

TEXT = """
[protocol]
profile = "{profile}"
[cluster]
brokers = 3
controllers = 1
[[topics]]
name = "t"
partitions = 1
replication_factor = 2
assignment = [[1, 2]]
[probe]
kafka_test = "ControllerIntegrationTest"
kafka_tag = "3.7.0"
node = "c1"
[probe.state]
{state}
[[probe.steps]]
deliver = "BrokerChange"
body = {{ live_brokers = [{{ id = 1 }}, {{ id = 2 }}, {{ id = 3 }}] }}
"""


def _controller(state: str = "", profile: str = "3.7"):
    """A ZooKeeper-mode controller made active on the state, its sends recorded in `.sent`."""
    scenario = parse_scenario(TEXT.format(profile=profile, state=state), "probe.toml")
    run = ProbeRun(scenario.options, scenario.probe, 1, Trace({}))
    run.prepare()
    c = run.node
    c.sent = []
    c.send = lambda dst, kind, body: c.sent.append((dst, kind, body))
    return c


def _sent(c, kind: str) -> dict:
    """dst -> the tps of the `kind` messages the controller sent it."""
    out: dict = {}
    for dst, k, body in c.sent:
        if k == kind:
            out.setdefault(dst, []).extend(p.tp for p in body.partitions)
    return out


def test_added_partitions_start_as_a_new_topics_and_are_sent():
    c = _controller('live_brokers = [{ id = 1 }, { id = 3 }]')
    assert c.add_partitions("t", [[1, 2], [2, 3], [2, 1]]) is None
    st1, st2 = c.store.partition("t-1")[1], c.store.partition("t-2")[1]
    assert (st1.leader, st1.isr, st1.leader_epoch, st1.partition_epoch) == (3, (3,), 0, 0)
    assert (st2.leader, st2.isr, st2.replicas) == (1, (1,), (2, 1))
    assert c.store.partition("t-1")[0].topic_id == c.store.partition("t-0")[0].topic_id
    assert _sent(c, "LeaderAndIsr") == {"b1": ["t-2"], "b3": ["t-1"]}
    assert _sent(c, "UpdateMetadata") == {"b1": ["t-1", "t-2"], "b3": ["t-1", "t-2"]}


def test_an_existing_partitions_new_replicas_are_not_read():
    """Only partitions missing from the controller's context are read: t-0 keeps [1, 2], not
    written, and with nothing new nothing is sent."""
    c = _controller()
    before = c.store.partition("t-0")[1]
    state = (before.replicas, before.isr, before.leader, before.leader_epoch,
             before.partition_epoch)
    assert c.add_partitions("t", [[3, 1]]) == "no new partition of t"
    after = c.store.partition("t-0")[1]
    assert (after.replicas, after.isr, after.leader, after.leader_epoch,
            after.partition_epoch) == state
    assert c.sent == []
    assert c.add_partitions("t", [[3, 1], [3, 1]]) is None  # t-1 is created, t-0 still kept
    assert c.store.partition("t-0")[1].replicas == (1, 2)
    assert c.store.partition("t-1")[1].replicas == (3, 1)


def test_a_topic_being_deleted_or_unknown_gets_no_partition():
    c = _controller()
    c.delete_topic("t")
    c.sent.clear()
    assert "being deleted" in c.add_partitions("t", [[1, 2], [1, 2]])
    assert c.store.partition("t-1") is None and c.sent == []
    assert c.add_partitions("u", [[1]]) == "no topic u"


def test_an_added_partition_with_no_online_replica_is_sent_to_nobody():
    c = _controller('live_brokers = [{ id = 1 }]')
    assert c.add_partitions("t", [[1, 2], [2, 3]]) is None
    st = c.store.partition("t-1")[1]
    assert (st.leader, st.isr) == (-1, (2, 3))
    assert c.sent == []


def test_update_metadata_names_replicas_not_online_and_leader_and_isr_none():
    """b2 shutting down and b3 dead are offline replicas; so is b1's replica of t-1 once its
    log directory failed. LeaderAndIsr carries no such list."""
    c = _controller('live_brokers = [{ id = 1 }, { id = 2 }]\nshutting_down = [2]')
    c.add_partitions("t", [[1, 2], [1, 3]])
    um = {p.tp: p.offline_replicas for _d, k, b in c.sent if k == "UpdateMetadata"
          for p in b.partitions}
    assert um == {"t-1": (3,)}
    assert all(p.offline_replicas == () for _d, k, b in c.sent if k == "LeaderAndIsr"
               for p in b.partitions)
    c.offline_replicas[1] = frozenset({"t-1"})
    c.sent.clear()
    c.send_update_metadata(["t-0", "t-1"])
    um = {p.tp: p.offline_replicas for _d, k, b in c.sent[:1] for p in b.partitions}
    assert um == {"t-0": (2,), "t-1": (1, 3)}


def test_update_metadata_before_ibp_1_0_names_no_offline_replica():
    """UpdateMetadata v4 (KIP-112) came with 1.0; a 0.11 controller sends v3."""
    c = _controller('live_brokers = [{ id = 1 }]', profile="0.11")
    c.send_update_metadata(["t-0"])
    assert [p.offline_replicas for _d, k, b in c.sent for p in b.partitions] == [()]
