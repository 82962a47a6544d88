"""A probe: one Kafka unit test posed to the model, read from a scenario's `[probe]` table.

Contract: `parse_probe(raw, brokers, controllers, producers, protocol, consumers, kraft,
protocol_of)` checks the `[probe]` table of a
scenario (the node under test, its starting state, the steps with the message each delivers
and what Kafka's test expects after it; a field the request or answer version
does not carry is refused (the version both ends know: with `protocol_of`, name -> switches,
the node's and the sender's releases, as ApiVersions agrees them; else the run's `protocol`), as are a broker id outside the cluster, a partition named twice in one
message, a broker's answer from a sender that is not a broker, a KRaft quorum message from a
node that is not a controller (a voter, or an observer when the state's `voters` leave it out;
nor, for a Fetch, a broker), and a step from a pseudo-sender
(`zk`, `operator`, `app`, `admin`) of a kind it does not send, or of its kind from anyone else) and returns a
`Probe`; any
problem raises `FieldProblem` with the key relative to `probe`. Whether the node can take the
starting state is checked by building it (`sim.kafka.probe.run.check_probe_state`). `Probe.to_json()` is what the trace header
records. The node's role is its kind of node: a KRaft controller is `controller` in a quorum
of one (the active controller at once) and `voter` in a larger one (a Raft voter,
`sim.kafka.probe.voter_state`). The format is taught in docs/scenarios.md ("Probes").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sim.kafka.probe import observe
from sim.kafka.probe.consumer_state import CONSUMER_STATE
from sim.kafka.probe.fields import Field, FieldProblem, error_code, read, suggest
from sim.kafka.probe.gates import bad_timestamp, off_the_wire
from sim.kafka.probe.kind import NO
from sim.kafka.probe.metadata_records import check_records
from sim.kafka.probe.state import (
    BROKER_STATE,
    CONTROLLER_STATE,
    PRODUCER_STATE,
    ZK_CONTROLLER_STATE,
)
from sim.kafka.probe.voter_state import VOTER_STATE
from sim.kafka.probe.wire import KINDS
from sim.kafka.probe.wire_app import APP_KINDS
from sim.kafka.probe.wire_controller_admin import CONTROLLER_ADMIN_KINDS, check_elect_leaders
from sim.kafka.probe.wire_raft import check_raft_body
from sim.kafka.probe.wire_voters import ADMIN_VOTER_KINDS
from sim.kafka.probe.wire_zk import ZNODE_KINDS

MAX_STEPS = 100
MAX_WAIT_MS = 3_600_000
_BROKER_NAME = re.compile(r"b[1-9][0-9]*")  # a broker node: b1, b2, ...
CONTROL_KINDS = ("LeaderAndIsr", "UpdateMetadata", "StopReplica")
# ZooKeeper's notifications, sent by the "zk" node
ZK_KINDS = ("BrokerChange", "TopicChange", "PartitionModifications", "PreferredReplicaElection",
            "PartitionReassignment", "TopicDeletion", "ControllerZnode", "ControllerChange",
            "Reelect", "Expire")
# what an operator does to the node itself (no message), "from" the "operator"
OPERATOR_KINDS = ("Shutdown", "Resign", "RaftShutdown", "Startup", "Restart")
# the senders that stand for no node of the cluster, and the only kinds each sends: the
# application calls a consumer's API (`wire_app`)
PSEUDO_SENDERS = {"zk": ZK_KINDS, "operator": OPERATOR_KINDS, "app": tuple(APP_KINDS),
                  "admin": (*CONTROLLER_ADMIN_KINDS, *ADMIN_VOTER_KINDS)}
STATE = {"broker": BROKER_STATE[1:], "producer": PRODUCER_STATE[1:],  # the node names itself
         "consumer": CONSUMER_STATE[1:], "controller": CONTROLLER_STATE[1:],
         "zk_controller": ZK_CONTROLLER_STATE[1:], "voter": VOTER_STATE[1:]}
TOP = (Field("kafka_test", "str"), Field("kafka_tag", "str"), Field("kafka_source", "str", ""),
       Field("node", "str"), Field("state", "any", None), Field("steps", "any"))
STEP = (Field("deliver", "str", ""), Field("from", "str", ""), Field("wait_ms", "int", 100),
        Field("body", "any", None), Field("expect", "any", None), Field("answer_to", "str", ""))


@dataclass(frozen=True)
class Step:
    kind: str
    src: str
    fields: dict
    wait_ms: int
    expect: tuple  # (key, Kafka's value as written)
    raw_body: dict
    # whose answer the `answer.*` and `error` checks read: "" for the step's sender (the answer
    # to this step's message), else another node (an answer to an earlier request, which this
    # step's message made the node send, e.g. a parked Fetch woken by a LeaderAndIsr)
    answer_to: str = ""


@dataclass(frozen=True)
class Probe:
    kafka_test: str
    kafka_tag: str
    kafka_source: str
    node: str
    role: str
    state: dict
    raw_state: dict
    steps: tuple

    def to_json(self) -> dict:
        return {"kafka_test": self.kafka_test, "kafka_tag": self.kafka_tag,
                "kafka_source": self.kafka_source, "node": self.node, "role": self.role,
                "state": self.raw_state,
                "steps": [_step_json(s) for s in self.steps]}


def _step_json(s: Step) -> dict:
    out = {"deliver": s.kind, "from": s.src, "wait_ms": s.wait_ms, "body": s.raw_body,
           "expect": dict(s.expect)}
    if s.answer_to:
        out["answer_to"] = s.answer_to
    return out


def _role(node: str, brokers: int, producers: list[str], consumers: list[str],
          controllers: int = 0, kraft: bool = False) -> str:
    if node[:1] == "b" and node[1:].isdigit() and 1 <= int(node[1:]) <= brokers:
        return "broker"
    if node[:1] == "c" and node[1:].isdigit() and 1 <= int(node[1:]) <= controllers:
        if not kraft:
            return "zk_controller"
        # a quorum of one is the active controller at once; a larger one's node is a voter
        return "controller" if controllers == 1 else "voter"
    if node in producers:
        return "producer"
    if node in consumers:
        return "consumer"
    choices = [f"b{i}" for i in range(1, brokers + 1)] + producers + consumers
    raise FieldProblem("probe.node", f"{node!r} is not a broker, producer or consumer of the "
                       "scenario", suggest(node, choices))


def parse_probe(raw: Any, brokers: int, controllers: int, producers: list[str],
                protocol=None, consumers: list[str] = (), kraft: bool = False,
                protocol_of=None) -> Probe:
    top = read(raw, TOP, "probe")
    role = _role(top["node"], brokers, producers, list(consumers), controllers, kraft)
    state_raw = top["state"] if top["state"] is not None else {}
    state = read(state_raw, STATE[role], "probe.state")
    check_message(state, "probe.state", brokers, once=False)  # a partition holds many batches
    state["name"] = top["node"]
    steps_raw = top["steps"]
    if not isinstance(steps_raw, list) or not steps_raw:
        raise FieldProblem("probe.steps", "no steps", "add at least one [[probe.steps]]")
    if len(steps_raw) > MAX_STEPS:
        raise FieldProblem("probe.steps", f"{len(steps_raw)} steps", f"keep to {MAX_STEPS}")
    steps = tuple(_step(s, f"probe.steps[{i}]", role, top["node"], protocol, brokers, kraft,
                        controllers, protocol_of) for i, s in enumerate(steps_raw))
    check_records(steps, state, lambda i: f"probe.steps[{i}]")
    return Probe(top["kafka_test"], top["kafka_tag"], top["kafka_source"], top["node"], role,
                 state, state_raw, steps)


def _step(raw: Any, key: str, role: str, node: str, protocol, brokers: int,
          kraft: bool = False, controllers: int = 0, protocol_of=None) -> Step:
    s = read(raw, STEP, key)
    kind = s["deliver"]
    if not kind:
        return _wait_step(s, key, role)
    if kind not in KINDS:
        raise FieldProblem(f"{key}.deliver", f"unknown message {kind!r}", suggest(kind, KINDS))
    if role not in KINDS[kind].roles:
        takes = sorted(k for k, v in KINDS.items() if role in v.roles)
        raise FieldProblem(f"{key}.deliver", f"a {role} does not take {kind}",
                           f"deliver one of: {', '.join(takes)}")
    mode = "kraft" if kraft else "zk"
    if (kind == "AlterPartition" and role == "zk_controller" and protocol is not None
            and not protocol.isr_change_stays_pending):
        raise FieldProblem(f"{key}.deliver", "a ZooKeeper-mode controller takes AlterPartition "
                           "from 2.7 (KIP-497); before, the leader wrote its ISR to ZooKeeper "
                           "itself", "pick a 2.7 or later profile")
    if KINDS[kind].mode not in ("", mode):
        raise FieldProblem(f"{key}.deliver", f"a {mode} broker does not take {kind}",
                           "KRaft brokers take MetadataFetchResponse, ZooKeeper-mode brokers "
                           "the controller's requests (cluster.mode)")
    if kind == "ElectLeaders" and role == "broker" and kraft:
        raise FieldProblem(f"{key}.deliver", "a KRaft broker forwards ElectLeaders to the "
                           "controller (KIP-590), which the model does not",
                           "send it to the controller: probe.node = \"c1\"")
    src = _sender(s["from"], kind, key)
    if not src:
        raise FieldProblem(f"{key}.from", "missing", f"name the node that sends {kind}, e.g. b2")
    if kind == "ElectLeadersResult" and src not in [f"c{i}" for i in range(1, controllers + 1)]:
        raise FieldProblem(f"{key}.from", f"{src!r} is not a controller: the answer comes "
                           "from the controller the broker handed the election to", "c1")
    if src == node:
        raise FieldProblem(f"{key}.from", f"{src!r} is the node under test",
                           "name another node as the sender")
    if KINDS[kind].from_broker and not _BROKER_NAME.fullmatch(src):
        raise FieldProblem(f"{key}.from", f"{src!r} is not a broker: {kind} comes from a broker",
                           "name the broker that sends it, e.g. b2")
    voters = [f"c{i}" for i in range(1, controllers + 1)]
    if KINDS[kind].from_voter:
        _check_voter_sender(src, kind, KINDS[kind].observer_too, voters, f"{key}.from")
    if not (1 <= s["wait_ms"] <= MAX_WAIT_MS):
        raise FieldProblem(f"{key}.wait_ms", f"{s['wait_ms']} is out of range",
                           f"give 1..{MAX_WAIT_MS}")
    body_raw = s["body"] if s["body"] is not None else {}
    fields = read(body_raw, KINDS[kind].fields, f"{key}.body")
    check_message(fields, f"{key}.body", brokers)
    if KINDS[kind].from_voter:
        check_raft_body(kind, fields, f"{key}.body", voters)
    if kind == "BrokerChange":
        _check_registrations(fields["live_brokers"], f"{key}.body.live_brokers", brokers)
    if kind in ("TopicChange", "PartitionModifications"):
        _check_assignment(fields, f"{key}.body")
    if kind in ZNODE_KINDS and fields["controller"] not in ("", "none", *voters):
        raise FieldProblem(f"{key}.body.controller", f"{fields['controller']!r} is not a "
                           "controller", f"name one of {', '.join(voters)}, or \"none\"")
    if (kind == "CreateTopics" and fields["assignments"] is None
            and fields["replication_factor"] == NO):
        raise FieldProblem(f"{key}.body.replication_factor", "missing: the broker's "
                           "default.replication.factor is not modelled",
                           "give replication_factor, or assignments")
    if kind == "ElectLeaders":
        check_elect_leaders(fields, f"{key}.body", protocol if protocol_of is None else protocol_of(node))
    if kind == "PartitionReassignment":
        for i, p in enumerate(fields["partitions"]):
            _check_replicas(p["replicas"], f"{key}.body.partitions[{i}].replicas")
    # a field goes on the wire only when both ends' versions have it: the node's, then its sender's
    _check_gates(kind, body_raw, protocol if protocol_of is None else protocol_of(node), key)
    if protocol_of is not None:
        _check_gates(kind, body_raw, protocol_of(src), key, f"{src} and {node}")
    expect = _expect(s["expect"], f"{key}.expect", role)
    if s["answer_to"] == node:
        raise FieldProblem(f"{key}.answer_to", f"{node!r} is the node under test",
                           "name the node whose answer the checks read")
    return Step(kind, src, fields, s["wait_ms"], expect, body_raw, s["answer_to"])


def _check_gates(kind: str, body_raw: dict, protocol, key: str, between: str = "") -> None:
    """Refuse a field or a ListOffsets timestamp the version `protocol`'s release sends cannot
    carry (`sim.kafka.probe.gates`), and a timestamp no version defines; `between` names the
    two ends whose releases the version is agreed between."""
    bad = bad_timestamp(kind, body_raw)
    if bad is not None:
        raise FieldProblem(f"{key}.body.partitions[{bad}].timestamp", "no ListOffsets timestamp",
                           "write a time in ms (at least 0), -1 LATEST, -2 EARLIEST, "
                           "-3 MAX_TIMESTAMP or -4 EARLIEST_LOCAL_TIMESTAMP")
    gated = off_the_wire(kind, body_raw, protocol) if protocol is not None else None
    if gated:
        fix = ("ask another timestamp" if gated[0].startswith("timestamp ")
               else f"leave {gated[0]} out (the wire's -1)")
        where = f"between {between}" if between else "on this profile"
        raise FieldProblem(f"{key}.body", f"{kind} carries no {gated[0]} {where}: it "
                           f"comes with {gated[1]}", f"{fix}, or pick a profile that sends it"
                           + (" at both ends" if between else ""))


def _wait_step(s: dict, key: str, role: str) -> Step:
    """A step that delivers nothing: `wait_ms` passes with the node's own timers running (a
    producer's Sender thread: `Producer.run_send_loop`), as a Kafka test's `time.sleep` then
    `sender.runOnce()`; it has no sender or body, and reads an answer only with `answer_to`
    (one its timers sent: a KIP-853 change expiring, answered to `admin`)."""
    for name in ("from", "body"):
        if s[name]:
            raise FieldProblem(f"{key}.{name}", "a step that delivers nothing has none",
                               f"leave {name} out, or name the message in deliver")
    if not (1 <= s["wait_ms"] <= MAX_WAIT_MS):
        raise FieldProblem(f"{key}.wait_ms", f"{s['wait_ms']} is out of range",
                           f"give 1..{MAX_WAIT_MS}")
    return Step("", "", {}, s["wait_ms"], _expect(s["expect"], f"{key}.expect", role), {},
                s["answer_to"])


def _check_voter_sender(src: str, kind: str, observer_too: bool, voters: list[str],
                        key: str) -> None:
    """A quorum message comes from a voter (c1..cN); a Fetch also from a broker, an observer."""
    if src in voters or (observer_too and _BROKER_NAME.fullmatch(src)):
        return
    who = "a voter of the quorum" + (" or a broker (an observer)" if observer_too else "")
    raise FieldProblem(key, f"{src!r} is not {who}: {kind} comes from one",
                       f"name one of {', '.join(voters)}" + (", or a broker" if observer_too
                                                            else ""))


def _sender(given: str, kind: str, key: str) -> str:
    """The step's sender: as given, or its kind's own default (c1 for a controller's
    request, zk or operator for theirs); a pseudo-sender sends its own kinds only."""
    own = next((name for name, kinds in PSEUDO_SENDERS.items() if kind in kinds), "")
    src = given or ("c1" if kind in CONTROL_KINDS else own)
    if src in PSEUDO_SENDERS and src != own:
        raise FieldProblem(f"{key}.from", f"{src!r} cannot send {kind}",
                           "name the node that sends it")
    if own and src != own:
        what = {"zk": "comes from ZooKeeper", "operator": "is the operator's act on the node",
                "app": "is the application's call on the client",
                "admin": "is an admin client's request"}[own]
        raise FieldProblem(f"{key}.from", f"{kind} {what}, not {src!r}", "leave `from` out")
    return src


def _check_registrations(live: list, key: str, brokers: int) -> None:
    """ZooKeeper holds one registration per broker of the cluster."""
    seen: set = set()
    for i, b in enumerate(live):
        if not 1 <= b["id"] <= brokers:
            raise FieldProblem(f"{key}[{i}].id", f"broker {b['id']} is not in the cluster "
                               f"(brokers 1-{brokers})", "name a broker of the cluster")
        if b["id"] in seen:
            raise FieldProblem(f"{key}[{i}].id", f"broker {b['id']} is listed twice",
                               "list each live broker once")
        seen.add(b["id"])


def _check_replicas(replicas: tuple, key: str) -> None:
    """A replica list names at least one broker, each once."""
    if not replicas or len(set(replicas)) != len(replicas):
        raise FieldProblem(key, "is empty" if not replicas else "names a broker twice",
                           "list each replica's broker once")


def _check_assignment(fields: dict, key: str) -> None:
    """What `AdminZkClient.validateTopicCreate` (and, for added partitions, `addPartitions`)
    refuses: a topic with no name or partition, an empty replica list, a broker listed twice
    in one, replica lists of different sizes."""
    if not fields["topic"]:
        raise FieldProblem(f"{key}.topic", "is empty", "name the topic")
    parts = fields["partitions"]
    if not parts:
        raise FieldProblem(f"{key}.partitions", "is empty", "list one table per partition")
    for i, p in enumerate(parts):
        replicas, where = p["replicas"], f"{key}.partitions[{i}].replicas"
        _check_replicas(replicas, where)
        if len(replicas) != len(parts[0]["replicas"]):
            raise FieldProblem(where, f"has {len(replicas)} replicas, partition 0 has "
                               f"{len(parts[0]['replicas'])}", "give every partition as many")


# the fields that name brokers by id: a leader (-1 for none), replica lists, the brokers an
# answer or a cache lists
BROKER_ID_FIELDS = ("leader", "replicas", "isr", "node_endpoints", "brokers", "alive")


def check_message(value: Any, key: str, brokers: int, once: bool = True) -> None:
    """What the node could not act on, in a state or a message as read: a broker id outside
    the cluster (its fetcher or client would reach for a node that does not exist), and, with
    `once` (a message), a partition listed twice in one list (an answer would settle one batch
    twice; a Kafka request or answer names each partition once)."""
    if isinstance(value, dict):
        for name, sub in value.items():
            if name in BROKER_ID_FIELDS:
                _check_ids(sub, f"{key}.{name}", brokers, name == "leader")
            else:
                check_message(sub, f"{key}.{name}", brokers, once)
    elif isinstance(value, (list, tuple)):
        tps = [v["tp"] for v in value if isinstance(v, dict) and isinstance(v.get("tp"), str)
               and v["tp"]]  # a metadata record that names no partition has tp ""
        twice = sorted({tp for tp in tps if tps.count(tp) > 1})
        if once and twice:
            raise FieldProblem(key, f"{twice[0]} is listed twice", "list each partition once")
        for i, sub in enumerate(value):
            check_message(sub, f"{key}[{i}]", brokers, once)


def _check_ids(value: Any, key: str, brokers: int, leader: bool) -> None:
    for broker in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(broker, int) and not (1 <= broker <= brokers or leader and broker == -1):
            none = ", or -1 for none" if leader else ""
            raise FieldProblem(key, f"broker {broker} is not in the cluster (brokers 1-{brokers})",
                               f"name a broker of the cluster{none}")


def _expect(raw: Any, key: str, role: str) -> tuple:
    if raw is None or raw == {}:
        return ()
    if not isinstance(raw, dict):
        raise FieldProblem(key, f"expected a table, got {raw!r}",
                           'write e.g. expect = {"error:t-0" = "FENCED_LEADER_EPOCH"}')
    for k, v in raw.items():
        problem = observe.check_key(role, k)
        if problem == "unknown":
            name = observe.split_key(k)[0]
            raise FieldProblem(f"{key}.{k}", f"unknown check for a {role}",
                               suggest(name, observe.names(role)))
        if problem:
            raise FieldProblem(f"{key}.{k}", problem, "see docs/scenarios.md, Probes")
        if isinstance(v, dict):
            raise FieldProblem(f"{key}.{k}", "a table is not a value to compare",
                               "write a number, string, boolean or list")
        if observe.is_error(role, k) and v != observe.NONE:  # "none": not in the answer
            error_code(v, f"{key}.{k}")  # a misspelled error name is refused, not compared
    return tuple(raw.items())
