"""An admin client's requests to a KRaft controller under test, as probe steps.

Contract: `CONTROLLER_ADMIN_KINDS` (joined into `sim.kafka.probe.wire.KINDS`) holds
`CreateTopics`, `CreatePartitions`, `DeleteTopics`, `ElectLeaders` (PREFERRED or UNCLEAN, the
one a ZooKeeper-mode controller also takes), `AlterPartitionReassignments` and
`UnregisterBroker`, sent by the `admin` pseudo-sender: each is an act on the active
controller (and `DescribeQuorum`, on a Raft node of a larger quorum: its
`DescribeQuorumResponse` is the answer), as Kafka's controller tests call
`ReplicationControlManager.createTopics`,
`createPartitions`, `deleteTopics`, `electLeaders`, `alterPartitionReassignments` and
`unregisterBroker` directly, and calls the model's own methods, which write the records or
the partition states. The act's `AdminAnswer` is the step's answer: `error` (request level,
NONE) and `results`, the error per topic (by the name or, for `topic_ids`, the id as written)
or per partition, which the `result:<topic or partition>` check reads. ElectLeaders also
reaches a ZooKeeper-mode broker under test as a message (`Kind.message_to`): the broker hands
it to its controller, whose answer a step delivers as `ElectLeadersResult`
(`ELECTION_RESULT_KINDS`, from the controller), and the broker's `ElectLeadersResponse` is the
answer its checks read (`sim.kafka.broker_elect_leaders`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sim.kafka import errors as E
from sim.kafka.admin_messages import ElectLeadersRequest, ElectLeadersResult
from sim.kafka.probe.fields import ERROR_CODES, Field, FieldProblem
from sim.kafka.probe.kind import NO, Kind
from sim.kafka.rules import admin_elections as AE
from sim.kafka.rules import kraft_admin as admin_rules

ADMIN = ("controller",)
ASSIGNMENT = (Field("broker_ids", "ints"),)


@dataclass(frozen=True)
class AdminAnswer:
    """What an admin request's answer says: its request-level error and one per item."""

    error: int = E.NONE
    results: dict = field(default_factory=dict)


def outcome_error(outcome: str | None) -> int:
    """The error code a `KraftAdmin` outcome stands for: NONE for done (None) or for an outcome
    that is no Kafka error (a reassignment to the replicas a partition has: no record, no
    error), else the error its text starts with."""
    if outcome is None:
        return E.NONE
    return ERROR_CODES.get(outcome.partition(":")[0], E.NONE)


def _assignments(f: dict) -> list | None:
    tables = f["assignments"]
    return None if tables is None else [list(a["broker_ids"]) for a in tables]


def _create_topics(node, _src: str, f: dict) -> AdminAnswer:
    manual = _assignments(f)
    error = admin_rules.create_topic_request_error(manual is not None, f["num_partitions"],
                                                   f["replication_factor"])
    if error is None:
        count = 1 if f["num_partitions"] == NO else f["num_partitions"]
        error = node.create_topic(f["name"], count, f["replication_factor"], assignment=manual)
    return AdminAnswer(results={f["name"]: outcome_error(error)})


def _create_partitions(node, _src: str, f: dict) -> AdminAnswer:
    error = node.create_partitions(f["name"], f["count"], _assignments(f))
    return AdminAnswer(results={f["name"]: outcome_error(error)})


def _delete_topics(node, _src: str, f: dict) -> AdminAnswer:
    """By name (`findTopicIds` first: UNKNOWN_TOPIC_OR_PARTITION for a name it does not know)
    or by id (`deleteTopics`: UNKNOWN_TOPIC_ID)."""
    results = {name: outcome_error(node.delete_topic(name)) for name in f["topic_names"]}
    for topic_id in f["topic_ids"]:
        name = next((n for n, i in sorted(node.image.topics.items()) if i == topic_id), None)
        results[str(topic_id)] = (E.UNKNOWN_TOPIC_ID if name is None
                                  else outcome_error(node.delete_topic(name)))
    return AdminAnswer(results=results)


def _elect_leaders(node, _src: str, f: dict) -> AdminAnswer:
    """ElectLeaders to either controller: `partitions` left out names none, which asks for
    every partition (KIP-460's null TopicPartitions)."""
    tps = None if f["partitions"] is None else list(f["partitions"])
    return AdminAnswer(results=node.elect_leaders(tps, f["election_type"]))


def _elect_leaders_request(f: dict, ctx) -> ElectLeadersRequest:
    tps = None if f["partitions"] is None else tuple(f["partitions"])
    return ElectLeadersRequest(ctx.corr("ElectLeaders"), f["election_type"], tps, f["timeout_ms"])


RESULT = (Field("tp", "str"), Field("error", "error", E.NONE), Field("leader", "int", NO))


def _elect_leaders_result(f: dict, ctx) -> ElectLeadersResult:
    corr = f["corr"] or ctx.corr("ElectLeaders")
    return ElectLeadersResult(corr, tuple((r["tp"], r["error"], r["leader"])
                                          for r in f["results"]))


def check_elect_leaders(fields: dict, key: str, protocol) -> None:
    """Refuse an ElectLeaders step whose election type is no Kafka type, or which the node's
    release cannot be sent (`rules.admin_elections.refused`)."""
    if fields["election_type"] not in AE.ELECTION_TYPES:
        raise FieldProblem(f"{key}.election_type", f"no election type {fields['election_type']!r}",
                           "write PREFERRED or UNCLEAN")
    why = AE.refused(protocol.admin_elect_leaders, fields["election_type"]) if protocol else None
    if why:
        raise FieldProblem(key, why, "pick a later profile")


def _alter_reassignments(node, _src: str, f: dict) -> AdminAnswer:
    """Each partition in turn: `replicas` the target, or left out to cancel its reassignment."""
    results = {}
    for p in f["partitions"]:
        if p["tp"] not in node.image.parts:
            results[p["tp"]] = E.UNKNOWN_TOPIC_OR_PARTITION
        elif p["replicas"] is None:
            results[p["tp"]] = outcome_error(node.cancel_reassignment(p["tp"]))
        else:
            results[p["tp"]] = outcome_error(node.reassign(p["tp"], list(p["replicas"])))
    return AdminAnswer(results=results)


def _unregister_broker(node, _src: str, f: dict) -> AdminAnswer:
    return AdminAnswer(error=outcome_error(node.unregister_broker(f["broker_id"])))


def _act(fn):
    return dict(build=lambda f, ctx: None, act=fn)


CONTROLLER_ADMIN_KINDS = {
    "CreateTopics": Kind(
        ADMIN, (Field("name", "str"), Field("num_partitions", "int", NO),
                Field("replication_factor", "int", NO),
                Field("assignments", "tables", None, ASSIGNMENT)),
        doc="an admin client's CreateTopics, one topic: num_partitions (-1: 1) and "
        "replication_factor, or assignments (one { broker_ids } per partition)",
        **_act(_create_topics)),
    "CreatePartitions": Kind(
        ADMIN, (Field("name", "str"), Field("count", "int"),
                Field("assignments", "tables", None, ASSIGNMENT)),
        doc="an admin client's CreatePartitions, one topic grown to count partitions",
        **_act(_create_partitions)),
    "DeleteTopics": Kind(
        ADMIN, (Field("topic_names", "strs", ()), Field("topic_ids", "ints", ())),
        doc="an admin client's DeleteTopics, by name or by topic id", **_act(_delete_topics)),
    "ElectLeaders": Kind(
        ("controller", "zk_controller", "broker"),
        (Field("partitions", "strs", None), Field("election_type", "str", "PREFERRED"),
         Field("timeout_ms", "int", 60_000)),
        doc="an admin client's ElectLeaders, election_type PREFERRED or UNCLEAN (KIP-460, "
        "2.4; ElectPreferredLeaders 2.2-2.3), to either controller, or to a ZooKeeper-mode "
        "broker, which hands it to its controller and holds the answer (timeout_ms, the "
        "request's TimeoutMs); partitions left out: all",
        build=_elect_leaders_request, act=_elect_leaders, message_to=("broker",)),
    "AlterPartitionReassignments": Kind(
        ADMIN, (Field("partitions", "tables", sub=(Field("tp", "str"),
                                                   Field("replicas", "ints", None))),),
        doc="an admin client's AlterPartitionReassignments (replicas left out: cancel)",
        **_act(_alter_reassignments)),
    "UnregisterBroker": Kind(
        ADMIN, (Field("broker_id", "int"),),
        doc="an admin client's UnregisterBroker (KIP-631): its answer's error is the request's",
        **_act(_unregister_broker)),
    # to a Raft node of a larger quorum (`KafkaRaftClient.handleDescribeQuorumRequest`)
    "DescribeQuorum": Kind(
        ("voter",), (), doc="an admin client's DescribeQuorum of the metadata log (KIP-595)",
        **_act(lambda node, _src, _f: node.describe_quorum())),
}

# the controller's answer to a ZooKeeper-mode broker's hand-over of an admin's ElectLeaders
ELECTION_RESULT_KINDS = {
    "ElectLeadersResult": Kind(
        ("broker",), (Field("corr", "int", 0), Field("results", "tables", (), RESULT)),
        _elect_leaders_result, "the controller's answer to the broker's hand-over of an "
        "admin's ElectLeaders (Kafka's `ElectLeadersCallback`): per partition an error, or "
        "NONE with the leader elected (-1: none, as 2.2-2.3 answer one already led by its "
        "preferred replica)", mode="zk"),
}
