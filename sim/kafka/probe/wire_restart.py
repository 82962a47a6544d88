"""The operator's restart of a broker under test, as a probe step.

Contract: `RESTART_KINDS` (joined into `sim.kafka.probe.wire.KINDS`) holds `Restart`, from
`operator`, to a ZooKeeper-mode broker: it stops the broker, cleanly (`clean = true`, the
default: `KafkaServer.shutdown`, so each log is flushed and takes a producer-state snapshot at
its end) or not (a crash: the process's memory is lost, nothing more is written), and starts it
again at once, as a test that closes a log and opens it again does. ZooKeeper is taken to have
ended the stopped process's session first (a clean shutdown closes it; after a crash the
restart stands for one after the session expired), so the broker registers again. What the
restarted broker has is what a restart leaves (`Broker.on_restart`): its logs, each with the
HW from its checkpoint and the producer state of its last kept snapshot and the log above it
(`sim.kafka.idempotence.reload_producer_state`); no partition, metadata or controller epoch
until the controller's requests give them again.
"""

from __future__ import annotations

from sim.kafka.probe.fields import Field
from sim.kafka.probe.kind import Kind


def restart_broker(broker, _src: str, f: dict) -> None:
    """Stop `broker` (cleanly or by a crash, `f["clean"]`) and start it again."""
    if f["clean"]:
        broker.stop_cleanly()
    else:
        broker.exit_process()
        broker.store.close_session(broker.id, broker.session_epoch)  # ZooKeeper expired it
    broker.world.restart(broker.name)


RESTART_KINDS = {
    "Restart": Kind(("broker",), (Field("clean", "bool", True),), lambda f, ctx: None,
                    "the operator stops the broker, cleanly or not (`clean`), and starts it "
                    "again: no message", mode="zk", act=restart_broker),
}
