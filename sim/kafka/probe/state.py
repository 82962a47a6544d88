"""A probe's starting state: set a node's state directly, as a unit test does.

Contract: `BROKER_STATE`, `PRODUCER_STATE`, `CONTROLLER_STATE` (KRaft) and
`ZK_CONTROLLER_STATE` (a consumer's: `consumer_state.py`) are the fields a probe's `[probe.state]` table may hold for each role
(`sim.kafka.probe.fields`); `set_controller` and `set_zk_controller` say what a controller's
state means. `set_broker(broker, state, ctx)` gives a broker
its controller epoch, metadata cache and partitions: each with its log (batches at contiguous
offsets from the log start, or at the offsets given), HW, leader-epoch cache (derived from the
batches unless given), producer state (rebuilt from the batches, with a snapshot at each
offset of `producer_snapshots`, and the recovery point a restart recovers from), and, when hosted, its replica
state (leader, epochs, ISR, replicas, the leader's view of each follower's log end, a follower's
fetcher; by default the partition is in the broker's metadata cache too). `set_producer(producer, state, ctx)` gives a producer its id (-1: none, so no epoch either), epoch, metadata cache,
sequences, batches queued or in flight (each in flight under a correlation id the probe's
answers then name by default, drained under the cached leader epoch), and optionally a Metadata
request in flight (`metadata_in_flight_to`); `set_client_metadata` and `metadata_in_flight`
serve a consumer's state too. Nothing is sent while
state is set, except a follower's first Fetch, which the fetcher sends at once as Kafka's
does, and a consumer's first requests, which it sends as soon as it has its state.
"""

from __future__ import annotations

from dataclasses import replace

from sim.kafka.idempotence import record_append, take_snapshot
from sim.kafka.log import Log
from sim.kafka.messages import Batch, MetadataResponse, PartitionState
from sim.kafka.partition import Partition, Replica
from sim.kafka.pending_batch import PendingBatch
from sim.kafka.probe.fields import Field, FieldProblem
from sim.kafka.probe.metadata_records import RECORD as METADATA_RECORD
from sim.kafka.probe.metadata_records import build_records
from sim.kafka.probe.wire import NO, RECORD

LOG_RECORD = (Field("base_offset", "int", NO),) + RECORD[1:]
FOLLOWER = (Field("id", "int"), Field("log_end_offset", "int", NO))
PARTITION = (
    Field("tp", "str"), Field("topic_id", "int", NO), Field("hosted", "bool", True),
    Field("leader", "int", NO), Field("leader_epoch", "int", NO),
    Field("partition_epoch", "int", NO), Field("isr", "ints", None), Field("replicas", "ints", ()),
    Field("log", "tables", (), LOG_RECORD), Field("log_start_offset", "int", 0),
    Field("high_watermark", "int", NO), Field("epoch_cache", "pairs", None),
    Field("followers", "tables", (), FOLLOWER), Field("fetching", "bool", True),
    Field("truncating", "bool", False), Field("in_metadata", "bool", True),
    Field("offline", "bool", False), Field("producer_snapshots", "ints", ()),
    Field("recovery_point", "int", NO))
METADATA = (Field("tp", "str"), Field("topic_id", "int", NO), Field("leader", "int"),
            Field("leader_epoch", "int"))
BROKER_STATE = (Field("name", "str"), Field("controller_epoch", "int", NO),
                Field("broker_epoch", "int", NO), Field("partitions", "tables", (), PARTITION),
                Field("metadata", "tables", (), METADATA), Field("alive", "ints", None),
                Field("producer_id_block", "ints", None), Field("next_producer_id", "int", NO),
                Field("latest_producer_id_block", "ints", None))
SEQUENCES = (Field("tp", "str"), Field("next_sequence", "int", 0),
             Field("last_acked_sequence", "int", NO), Field("last_acked_offset", "int", NO),
             Field("producer_epoch", "int", NO))
BATCH = (Field("batch_id", "str"), Field("tp", "str"), Field("record_count", "int", 1),
         Field("base_sequence", "int", NO), Field("producer_epoch", "int", NO),
         Field("in_flight_to", "int", NO), Field("corr", "int", 1), Field("attempts", "int", 0),
         Field("created_ms", "int", 0))
CONTROLLER_STATE = (Field("name", "str"), Field("records", "tables", (), METADATA_RECORD))
ZK_PARTITION = (Field("tp", "str"), Field("leader", "int", None), Field("leader_epoch", "int", NO),
                Field("partition_epoch", "int", NO), Field("isr", "ints", None),
                Field("replicas", "ints", None))
LIVE_BROKER = (Field("id", "int"), Field("epoch", "int", NO))
ZK_CONTROLLER_STATE = (Field("name", "str"), Field("controller_epoch", "int", NO),
                       Field("partitions", "tables", (), ZK_PARTITION),
                       Field("live_brokers", "tables", None, LIVE_BROKER),
                       Field("shutting_down", "ints", ()),
                       Field("active_controller", "str", ""))
PRODUCER_STATE = (Field("name", "str"), Field("producer_id", "int", None),
                  Field("producer_epoch", "int", 0), Field("metadata", "tables", (), METADATA),
                  Field("brokers", "ints", None), Field("sequences", "tables", (), SEQUENCES),
                  Field("batches", "tables", (), BATCH),
                  Field("metadata_in_flight_to", "int", NO))


# -- broker -------------------------------------------------------------------------------
def set_broker(broker, state: dict, ctx) -> None:
    if state["controller_epoch"] != NO:
        broker.controller_epoch = state["controller_epoch"]
    if state["broker_epoch"] != NO:
        broker.broker_epoch = state["broker_epoch"]
    for m in state["metadata"]:
        broker.metadata[m["tp"]] = (_tid(m, ctx), m["leader"], m["leader_epoch"])
    broker.alive_brokers = ctx.alive() if state["alive"] is None else state["alive"]
    _set_producer_ids(broker, state)
    for i, part in enumerate(state["partitions"]):
        _set_partition(broker, part, ctx, f"node.partitions[{i}]")
    if broker.kraft:  # a running broker: unfenced, serving; the image its log would have built
        broker.serve()
        broker.controller = broker.controller or broker.voters[0]  # the active one it knows
        for p in broker.partitions.values():
            broker.image.parts[p.tp] = PartitionState(p.tp, p.topic_id, p.leader, p.leader_epoch,
                                                      p.partition_epoch, p.isr, p.replicas)
            broker.image.topics[p.tp.rpartition("-")[0]] = p.topic_id


def _set_producer_ids(broker, state: dict) -> None:
    """The broker's block of producer ids ([first, last]) and the next it hands out (default
    its first), and the /latest_producer_id_block znode (ZooKeeper mode)."""
    block, latest = state["producer_id_block"], state["latest_producer_id_block"]
    for key, value in (("producer_id_block", block), ("latest_producer_id_block", latest)):
        if value is not None and (len(value) != 2 or not 0 <= value[0] <= value[1]):
            raise FieldProblem(f"node.{key}", f"{list(value)} is no block of ids",
                               "give [first, last], 0 <= first <= last")
    if block is not None:
        broker.pid_block = tuple(block)
        broker.next_pid = block[0] if state["next_producer_id"] == NO else \
            state["next_producer_id"]
    if latest is not None:
        broker.store.latest_producer_id_block = tuple(latest)


def _tid(part: dict, ctx) -> int:
    return part["topic_id"] if part["topic_id"] != NO else ctx.topic_id(part["tp"])


def _set_partition(broker, part: dict, ctx, key: str) -> None:
    tp, topic_id = part["tp"], _tid(part, ctx)
    log = _log(part, ctx, key, broker.protocol.idempotent_batches,
               broker.protocol.epoch_cached_on_election)
    broker.logs[tp] = (topic_id, log)
    if part["offline"]:
        broker.mark_offline(tp)  # a test's `markPartitionOffline`
    if part["offline"] or not part["hosted"]:
        return
    p = Partition(tp, topic_id, log, broker.id)
    p.leader, p.leader_epoch = part["leader"], part["leader_epoch"]
    p.partition_epoch = part["leader_epoch"] if part["partition_epoch"] == NO else part["partition_epoch"]
    p.replicas = part["replicas"]
    broker.partitions[tp] = p
    if part["in_metadata"] and tp not in broker.metadata:
        # a broker serving a partition has it in its metadata cache too (UpdateMetadata), which
        # KafkaApis checks before ReplicaManager sees a Produce or Fetch
        broker.metadata[tp] = (topic_id, p.leader, p.leader_epoch)
    if p.is_leader:
        p.isr = part["replicas"] if part["isr"] is None else part["isr"]
        p.leader_epoch_start_offset = _epoch_start(log, p.leader_epoch)
        p.followers = {r: Replica() for r in p.replicas if r != broker.id}
        for f in part["followers"]:
            if f["id"] not in p.followers:
                raise FieldProblem(f"{key}.followers", f"broker {f['id']} is not a follower",
                                   "list only replicas other than the leader")
            p.followers[f["id"]].leo = f["log_end_offset"]
    elif p.leader >= 0 and part["fetching"]:
        broker.add_to_fetcher(tp, p.leader, leader_changed=False, new_epoch=False)
        if part["truncating"]:
            broker.truncating.add(tp)


def _epoch_start(log: Log, epoch: int) -> int:
    for e, start in log.epochs:
        if e == epoch:
            return start
    return log.leo


def _log(part: dict, ctx, key: str, retain: int, resolves_epoch_conflicts: bool) -> Log:
    log = Log(resolves_epoch_conflicts)
    log.truncate_fully_and_start_at(part["log_start_offset"])
    for i, r in enumerate(part["log"]):
        base = log.leo if r["base_offset"] == NO else r["base_offset"]
        if base != log.leo:
            raise FieldProblem(f"{key}.log[{i}].base_offset", f"{base} leaves a gap or overlap: "
                               f"the log ends at {log.leo} there", "give contiguous batches")
        batch = Batch(r["batch_id"] or ctx.batch_id(), "", r["record_count"],
                      r["timestamp"] * 1000, r["producer_id"], r["producer_epoch"],
                      r["base_sequence"])
        log.append_entry((base, r["record_count"], r["leader_epoch"], batch), 0)
        record_append(log, batch, base, 0, retain)
        if log.leo in part["producer_snapshots"]:
            take_snapshot(log)
    if part["epoch_cache"] is not None:
        log.epochs = [tuple(pair) for pair in part["epoch_cache"]]
    hw = log.leo if part["high_watermark"] == NO else part["high_watermark"]
    if not log.log_start_offset <= hw <= log.leo:
        raise FieldProblem(f"{key}.high_watermark", f"{hw} is outside the log "
                           f"[{log.log_start_offset}, {log.leo}]", "give a HW within the log")
    log.set_hw(hw)
    log.checkpointed_hw = hw
    log.flush()
    _snapshots_and_recovery_point(log, part, key)
    return log


def _snapshots_and_recovery_point(log: Log, part: dict, key: str) -> None:
    """Check that each producer-state snapshot asked for was taken (at a batch's end, above
    the log start, in increasing order), and set the recovery point (the log end unless given)."""
    taken = [offset for offset, _ in log.snapshots]
    if taken != list(part["producer_snapshots"]):
        raise FieldProblem(f"{key}.producer_snapshots", f"{list(part['producer_snapshots'])} "
                           f"are not all batch ends above the log start, in order",
                           "name offsets where a batch of the log ends, lowest first (a log keeps "
                           "its last two)")
    rp = part["recovery_point"]
    if rp != NO:
        if not log.log_start_offset <= rp <= log.leo:
            raise FieldProblem(f"{key}.recovery_point", f"{rp} is outside the log",
                               "give an offset within the log")
        log.recovery_point = rp


# -- producer -----------------------------------------------------------------------------
def set_producer(producer, state: dict, ctx) -> None:
    producer.pid = producer.default_pid  # a probe's producer has an id unless it says not
    if state["producer_id"] is not None:
        if state["producer_id"] < -1:
            raise FieldProblem("node.producer_id", f"{state['producer_id']} is no producer id",
                               "give 0 or more, or -1 for none yet")
        producer.pid = state["producer_id"]
    # -1: no id yet, and so no epoch (`ProducerIdAndEpoch.NONE`): the Sender asks for one
    producer.producer_epoch = -1 if producer.pid < 0 else state["producer_epoch"]
    set_client_metadata(producer, state["metadata"], state["brokers"], ctx)
    for s in state["sequences"]:
        _known_tp(producer, s["tp"], "node.sequences")
        tp = s["tp"]
        producer.next_seq[tp] = s["next_sequence"]
        producer.last_acked_seq[tp] = s["last_acked_sequence"]
        producer.last_acked_offset[tp] = s["last_acked_offset"]
        producer.part_epoch[tp] = (producer.producer_epoch if s["producer_epoch"] == NO
                                   else s["producer_epoch"])
    for i, b in enumerate(state["batches"]):
        _known_tp(producer, b["tp"], f"node.batches[{i}].tp")
        _add_batch(producer, b)
    if state["metadata_in_flight_to"] != NO:
        metadata_in_flight(producer, state["metadata_in_flight_to"], ctx)


# -- KRaft controller ---------------------------------------------------------------------
def set_controller(controller, state: dict, ctx) -> None:
    """A KRaft controller, the only voter of its quorum, made the active controller at once
    (its own vote wins; its LeaderChange record commits), with `records` written to its
    metadata log and image as its own, committed. It creates none of the scenario's topics
    itself (a probe's records say what exists), and the brokers its records register have
    just heartbeated. Its records reach the log as it writes them and it writes no NoOpRecord:
    Kafka's controller tests read what a request wrote (`ControllerResult.records`), with no
    raft client's linger or idle interval between."""
    without_controller_timers(controller)
    controller.start()
    controller._stand()
    for record in build_records(state["records"], controller.image, ctx, controller.end_offset):
        controller._write(record)
    controller.heartbeats = {b: controller.now_us for b in sorted(controller.image.brokers)}
    controller.reschedule_fence_check()


def without_controller_timers(controller) -> None:
    """A KRaft controller under test writes its records to the log as it writes them and no
    NoOpRecord, and creates none of the scenario's topics: Kafka's controller and raft tests
    read what a request wrote, with no raft client's linger or idle interval between."""
    cluster = replace(controller.cluster, quorum_append_linger_ms=0,
                      metadata_max_idle_interval_ms=0)
    controller.options = replace(controller.options, topics=(), cluster=cluster)
    controller.cluster = cluster


# -- ZooKeeper-mode controller -----------------------------------------------------------
def set_zk_controller(controller, state: dict, ctx) -> None:
    """A ZooKeeper-mode controller made the active one at once (at `controller_epoch`, default
    1), ZooKeeper holding the scenario's topics with each partition's state as `partitions`
    sets it (the rest as created: all replicas in the ISR, the first leading, epochs 0) and
    `live_brokers` registered (by default every broker; a broker epoch not given is its
    registration's zxid, 1, 2, ... in list order). It reads them as it becomes active (electing
    a leader for a partition whose leader is not live, as Kafka's does), the brokers take the
    requests it sends then, and their sessions outlast the probe. `shutting_down` brokers are
    in controlled shutdown (`shuttingDownBrokerIds`). With `active_controller` naming another
    controller or "none", it is a standby instead (`_standby`). It has no timer: it reads
    ZooKeeper only on the events the probe's steps deliver."""
    store = controller.store
    for i, part in enumerate(state["partitions"]):
        _set_zk_partition(store, part, f"node.partitions[{i}]")
    live = state["live_brokers"]
    live = [{"id": b, "epoch": NO} for b in ctx.alive()] if live is None else live
    for i, b in enumerate(live):
        _known_broker(b["id"], ctx, f"node.live_brokers[{i}].id")
        if b["id"] in store.brokers:
            raise FieldProblem(f"node.live_brokers[{i}].id", f"broker {b['id']} is listed twice",
                               "list each live broker once")
        store.register_broker(b["id"], 0, controller.cluster.broker_session_timeout_ms * 1000)
        if b["epoch"] != NO:
            store.brokers[b["id"]].epoch = b["epoch"]
    controller.ticks = False  # it acts on the probe's events only
    if _standby(controller, state, ctx):
        return
    if state["controller_epoch"] != NO:
        store.controller_epoch = state["controller_epoch"] - 1
    # the brokers took what it sent on becoming active: none of it reaches the probe's steps
    send, controller.send = controller.send, lambda dst, kind, body: None
    controller._become_active()
    controller.send, controller.outstanding = send, {}
    for b in state["shutting_down"]:
        if b not in controller.live:
            raise FieldProblem("node.shutting_down", f"broker {b} is not live",
                               "list live brokers only")
    controller.shutting_down = set(state["shutting_down"])


def _standby(controller, state: dict, ctx) -> bool:
    """With `active_controller` naming another controller (or "none", /controller empty), the
    node is not the active one: ZooKeeper holds /controller_epoch at `controller_epoch`
    (default 1), and it takes over only when a step makes it (`Reelect`, `Startup`)."""
    holder = state["active_controller"]
    if holder in ("", controller.name):
        return False
    if holder != "none" and holder not in ctx.controllers():
        raise FieldProblem("node.active_controller", f"{holder!r} is not a controller",
                           f"name one of {', '.join(ctx.controllers())}, or \"none\"")
    if state["shutting_down"]:
        raise FieldProblem("node.shutting_down", "a standby controller holds no shutting-down "
                           "brokers", "leave shutting_down out")
    store = controller.store
    store.active = None if holder == "none" else holder
    store.controller_epoch = 1 if state["controller_epoch"] == NO else state["controller_epoch"]
    return True


def _set_zk_partition(store, part: dict, key: str) -> None:
    found = store.partition(part["tp"])
    if found is None:
        raise FieldProblem(f"{key}.tp", f"{part['tp']!r} is not a partition of the scenario's "
                           "topics", "name one of " + ", ".join(store.all_tps()))
    st = found[1]
    if part["leader"] is not None:  # -1: leaderless
        st.leader = part["leader"]
    for name in ("leader_epoch", "partition_epoch"):
        if part[name] != NO:
            setattr(st, name, part[name])
    for name in ("replicas", "isr"):
        if part[name] is not None:
            setattr(st, name, tuple(part[name]))
    if not set(st.isr) <= set(st.replicas) or st.leader not in (-1, *st.replicas):
        raise FieldProblem(key, f"leader {st.leader} and ISR {list(st.isr)} must be among the "
                           f"replicas {list(st.replicas)}", "give a leader (or -1) and an ISR "
                           "from the replicas")


def _known_broker(broker: int, ctx, key: str) -> None:
    if broker not in ctx.alive():
        raise FieldProblem(key, f"broker {broker} does not exist",
                           f"name one of {', '.join(str(b) for b in ctx.alive())}")


def set_client_metadata(client, metadata: tuple, brokers, ctx) -> None:
    brokers = ctx.alive() if brokers is None else brokers
    parts = tuple((m["tp"], _tid(m, ctx), m["leader"], m["leader_epoch"]) for m in metadata)
    client.meta.apply_response(MetadataResponse(0, brokers, parts), "probe")
    client.need_update = False  # so a probe sees what its answers make the client ask for


def metadata_in_flight(client, broker: int, ctx) -> None:
    """A Metadata request in flight to `broker`, as after `Metadata.requestUpdate`: its answer
    is the one the client takes (`MetadataResponse` names it by default)."""
    _known_broker(broker, ctx, "node.metadata_in_flight_to")
    client.corr += 1
    client.meta_inflight, client.meta_node = client.corr, broker
    client.connected.add(broker)


def _known_tp(producer, tp: str, key: str) -> None:
    if tp not in producer.queues:
        raise FieldProblem(key, f"{tp!r} is not a partition of {producer.name}'s topic",
                           f"use one of {', '.join(producer.tps)}")


def _add_batch(producer, b: dict) -> None:
    batch = Batch(b["batch_id"], producer.name, b["record_count"], b["created_ms"] * 1000)
    pb = PendingBatch(batch, b["tp"])
    if b["base_sequence"] != NO:
        epoch = producer.producer_epoch if b["producer_epoch"] == NO else b["producer_epoch"]
        pb.batch = batch.with_sequence(producer.pid, epoch, b["base_sequence"])
        pb.stamped = True
    pb.attempts = b["attempts"]
    producer.queues[b["tp"]].append(pb)
    if b["in_flight_to"] != NO:
        pb.in_flight, pb.sent_to = True, b["in_flight_to"]
        # drained under the leader epoch the client has cached (`ProducerBatch.currentLeaderEpoch`,
        # set at drain), so a retry sees a leader change only when a newer epoch arrives
        pb.current_leader_epoch = producer.meta.epoch(b["tp"])
        producer.inflight.setdefault(b["in_flight_to"], {}).setdefault(b["corr"], []).append(pb)
        producer.connected.add(b["in_flight_to"])  # a request in flight: its connection is open
        producer.corr = max(producer.corr, b["corr"])
