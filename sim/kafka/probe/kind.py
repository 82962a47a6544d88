"""What a deliverable message is to a probe: its `Kind`, and the `Context` its builder reads.

Contract: a `Kind` names the node roles that take a message, the fields a probe may set
(`sim.kafka.probe.fields`), the builder that makes the model's message body from the checked
fields and a `Context` (which fills what a unit test leaves to the harness: correlation ids,
topic ids, the sender), and who may send it. `sim.kafka.probe.wire` and
`sim.kafka.probe.wire_raft` hold the kinds themselves (`KINDS`). `NO` (-1) is a field's "not
given".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

NO = -1


class Context(Protocol):
    src: str

    def corr(self, kind: str) -> int: ...
    def metadata_offset(self) -> int: ...
    def quorum_voters(self) -> tuple: ...
    def metadata_image(self) -> Any: ...
    def topic_id(self, tp: str) -> int: ...
    def alter_partition_topic_id(self, tp: str) -> int: ...
    def alive(self) -> tuple: ...
    def batch_id(self) -> str: ...
    def registered_epoch(self, broker: int) -> int: ...
    def sends_broker_epoch(self) -> bool: ...
    def set_registrations(self, brokers: list) -> None: ...
    def set_controller_znode(self, controller: str, epoch: int) -> str: ...
    def expire_controller_session(self) -> None: ...


@dataclass(frozen=True)
class Kind:
    roles: tuple  # "broker", "producer", "consumer", "controller", "zk_controller", "voter"
    fields: tuple
    build: Callable[[dict, Any], Any]
    doc: str
    # from a broker (an answer, or a broker's request to the controller): its receiver reads
    # the broker id from the sender's name, `b<id>`
    from_broker: bool = False
    # the control plane a broker must run to take it: "zk" (the ZooKeeper controller's
    # requests), "kraft" (the metadata log), or "" for either
    mode: str = ""
    # the model's message kind on the wire, when it is not the probe's name for it
    wire_kind: str = ""
    # an act on the node itself rather than a message (the operator's, the application's, a
    # connection that closes): called with the node, the step's sender and its checked fields
    # as the step begins, nothing is sent
    act: Callable[[Any, str, dict], None] | None = None
    # the roles to which a kind with an act is a message all the same, sent as any other
    # (an admin's ElectLeaders acts on a controller, and reaches a ZooKeeper-mode broker)
    message_to: tuple = ()
    # from a voter of the KRaft quorum (`c<n>`, n <= cluster.controllers), or with
    # `observer_too` also from a broker (an observer of the metadata log)
    from_voter: bool = False
    observer_too: bool = False
