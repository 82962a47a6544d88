"""Node faults: a process crashes, restarts, shuts down cleanly, loses power or a disk.

Contract: `ACTIONS` holds `crash`, `restart`, `controlled_shutdown`, `power_loss` and
`log_dir_failure` as `FaultAction`s (see `sim.kafka.faults.action`); `CONTROLLED_SHUTDOWN_US`
is how long after its controlled shutdown a broker stops by default, read by the cluster,
explore and the shrinker alike; `shut_down_when_allowed(cluster, broker)` is the shutdown a
broker runs when it waits for the controller's leave (`stop = "when_allowed"`, and each broker
of a `rolling_restart`).
"""

from __future__ import annotations

from sim.kafka.faults.action import (
    OPTIONAL,
    FaultAction,
    choice,
    number,
    pair,
    same_target,
    target_words,
)

# A controlled shutdown stops the broker this long after it asked the controller to move its
# leaderships away (`stop = "after"`, the default: an operator who does not wait).
CONTROLLED_SHUTDOWN_US = 500_000
# `stop = "when_allowed"`: the broker stops once the controller lets it, as Kafka's does.
STOP_MODES = ("after", "when_allowed")
# ZooKeeper mode: the ControlledShutdown round trip; a broker whose request failed, or whose
# answer still lists partitions it leads, asks again after controlled.shutdown.retry.backoff.ms;
# controlled.shutdown.max.retries counts every attempt, the first included, and after the last
# it stops anyway (`KafkaServer.controlledShutdown` at 3.7.0)
ZK_ANSWER_US = 1_000
ZK_SHUTDOWN_ATTEMPTS, ZK_SHUTDOWN_BACKOFF_US = 3, 5_000_000
# KRaft: `BrokerServer.shutdown` waits this long for a heartbeat answer with ShouldShutDown,
# then stops anyway
KRAFT_SHUTDOWN_WAIT_US = 300_000_000
# How a power loss decides what a log had on disk (`power_loss`'s flush).
FLUSH_MODES = ("age", "writeback")
UNFLUSHED_MS = (30_000, 5_000, 1_000, 100)  # power_loss windows explore draws, the default first
# When a `log_dir_failure` strikes, and what a restart finds on the directory.
LOG_DIR_WHEN = ("now", "next_delete")
LOG_DIR_DATA = ("lost", "kept")


def restart_outcome(world, name: str) -> str | None:
    """Start node `name` again; None when it runs, else why not: it runs already, or it
    could not start (a ZooKeeper-mode broker whose previous session still holds its
    registration exits at once, `Broker._fail_start`)."""
    if not world.restart(name):
        return "already up"
    if not world.is_alive(name):
        return "failed to start: NODEEXISTS, its old ZooKeeper session holds its registration"
    return None


def _draw_crash(pick, space, start):
    target = pick.one(space.brokers + space.roles() + space.producers + space.consumers)
    return pair(start, "crash", target, space.restart_at(start, pick.duration_ms(), target),
                "restart")


def _draw_power_loss(pick, space, start):
    """A broker loses power, and with it what its OS had not yet written back (KIP-101's
    second case needs two such losses: two episodes)."""
    target = pick.one(space.brokers + space.roles())
    params = {"unflushed_ms": pick.one(UNFLUSHED_MS)}
    return pair(start, "power_loss", target, space.restart_at(start, pick.duration_ms(), target),
                "restart", params)


def _draw_controlled_shutdown(pick, space, start):
    target = pick.one(space.brokers + space.roles())
    stop_ms = CONTROLLED_SHUTDOWN_US // 1000
    start = space.latest(start, stop_ms + 2 * space.slot_ms)
    # the broker stops stop_ms later; restart only after that
    back = space.undo_at(start, pick.duration_ms(lo_slots=stop_ms // space.slot_ms + 2))
    return pair(start, "controlled_shutdown", target, back, "restart")


def controlled_shutdown(cluster, broker, target: str):
    """The broker asks the active controller to move its leaderships away (Kafka's
    ControlledShutdown request); returns the controller's outcome. It stops
    `CONTROLLED_SHUTDOWN_US` later, which the caller schedules."""
    if cluster.options.kraft:  # it asks in its heartbeats (`BrokerLifecycleManager`)
        if not broker.alive:
            return "already down"
        broker.begin_shutdown()
        return None
    if broker.alive:
        broker.begin_shutdown()  # the broker asked to shut down; a restart clears it
    controller = cluster.active_controller()
    if controller is None:
        return "no active controller"
    return controller.controlled_shutdown(int(target[1:]), broker.controlled_shutdown_broker_epoch())


def _controlled_shutdown(cluster, target, params):
    broker = cluster.brokers[int(target[1:])]
    if params.get("stop") == "when_allowed":
        return shut_down_when_allowed(cluster, broker)
    outcome = controlled_shutdown(cluster, broker, target)
    cluster.kernel.call_later(CONTROLLED_SHUTDOWN_US, broker.stop_cleanly)
    return outcome


def shut_down_when_allowed(cluster, broker) -> str | None:
    """A controlled shutdown that stops the broker once the controller lets it go, as Kafka's
    broker does: in KRaft mode on the heartbeat answer that says ShouldShutDown (the broker
    model stops itself), or after `KRAFT_SHUTDOWN_WAIT_US`; in ZooKeeper mode once a
    ControlledShutdown answer lists no partition it still leads, or after its last attempt.
    Returns the first attempt's outcome."""
    incarnation = broker.incarnation
    if cluster.options.kraft:
        outcome = controlled_shutdown(cluster, broker, broker.name)
        cluster.kernel.call_later(KRAFT_SHUTDOWN_WAIT_US, _stop_if, broker, incarnation)
        return outcome
    return _zk_attempt(cluster, broker, incarnation, ZK_SHUTDOWN_ATTEMPTS)


def _zk_attempt(cluster, broker, incarnation: int, attempts_left: int) -> str | None:
    """One ControlledShutdown round trip: the broker stops when it succeeded or was the last
    attempt, and otherwise tries again after the backoff."""
    if not (broker.alive and broker.incarnation == incarnation):
        return "already down"
    outcome = controlled_shutdown(cluster, broker, broker.name)
    # the answer lists the partitions it still leads (`partitionLeadersOnBroker`); an answered
    # attempt (outcome None) had an active controller
    if (outcome is None and not cluster.active_controller().leads_after_shutdown(broker.id)) \
            or attempts_left <= 1:
        cluster.kernel.call_later(ZK_ANSWER_US, _stop_if, broker, incarnation)
    else:
        cluster.kernel.call_later(ZK_SHUTDOWN_BACKOFF_US, _zk_attempt, cluster, broker,
                                  incarnation, attempts_left - 1)
    return outcome


def _stop_if(broker, incarnation: int) -> None:
    """Stop the broker cleanly unless it stopped (and perhaps started again) meanwhile."""
    if broker.alive and broker.incarnation == incarnation:
        broker.stop_cleanly()


def _power_loss(cluster, target, params):
    """The broker's machine loses power: its unflushed batches go, and it is down (if it
    was already, its OS still held them in memory until now)."""
    cluster.brokers[int(target[1:])].lose_unflushed(int(params["unflushed_ms"] * 1000),
                                                    params.get("flush") == "writeback")
    return None if cluster.world.crash(target) else "already down"


def _power_loss_words(target, params) -> str:
    lost = (f"each log's writes since the kernel last wrote it back (pages expire after "
            f"{params['unflushed_ms'] / 1000:g} s)" if params.get("flush") == "writeback"
            else f"what reached its logs in the last {params['unflushed_ms'] / 1000:g} s")
    return f"power loss on {target_words(target)}: it stops and loses {lost}"


def _log_dir(value, key, checks):
    """A log directory index of the scenario's brokers (`cluster.log_dirs`)."""
    n = checks.names.log_dirs
    checks.int(value, key, 0)
    if value >= n:
        checks.fail(key, f"log dir {value} does not exist: cluster.log_dirs = {n} gives each "
                         f"broker {'dir 0' if n == 1 else f'dirs 0..{n - 1}'}",
                    "name a dir below cluster.log_dirs, or raise cluster.log_dirs")
    return value


def _log_dir_failure(cluster, target, params):
    """A log directory of the broker fails now, or at its next log deletion."""
    broker = cluster.brokers[int(target[1:])]
    if not broker.alive:
        return "already down"
    d, data = params.get("dir", 0), params.get("data", "lost")
    if params.get("when", "now") == "next_delete":
        return broker.arm_failing_delete(d, data)
    return broker.fail_log_dir(d, data)


def _log_dir_failure_words(target, params) -> str:
    d = params.get("dir", 0)
    back = ("with its logs" if params.get("data") == "kept"
            else "empty (a new disk)")
    what = (f"the next log deletion in log dir {d} of {target_words(target)} fails with an I/O "
            f"error, taking the dir offline" if params.get("when") == "next_delete"
            else f"log dir {d} of {target_words(target)} fails")
    return f"{what}: its partitions go offline until a restart brings the dir back {back}"


ACTIONS = {a.name: a for a in (
    FaultAction(
        "crash", "node",
        apply=lambda cluster, t, p: None if cluster.world.crash(t) else "already down",
        sentence=lambda t, p: f"crash {target_words(t)}",
        default_undo="restart", window="down", mark_colour="black",
        draws={"crash": _draw_crash}),
    FaultAction(
        "restart", "node",
        apply=lambda cluster, t, p: restart_outcome(cluster.world, t),
        sentence=lambda t, p: f"restart {target_words(t)}",
        undoes=("crash", "controlled_shutdown", "power_loss", "log_dir_failure",
                "stop_controller"),
        pairs=same_target,
        ends="down", mark_colour="tab:green"),
    FaultAction(
        "controlled_shutdown", "broker", apply=_controlled_shutdown,
        params={"stop": (choice(STOP_MODES), OPTIONAL)},
        sentence=lambda t, p: (f"controlled shutdown of {target_words(t)} (it stops "
                               + ("once the controller lets it)" if p.get("stop") == "when_allowed"
                                  else f"{CONTROLLED_SHUTDOWN_US / 1e6:g} s later)")),
        # a restart must come after the broker stopped (and a slot more), or it finds it up
        undo_after_us=CONTROLLED_SHUTDOWN_US + 100_000, mark_colour="tab:red",
        draws={"controlled_shutdown": _draw_controlled_shutdown}),
    # a crash that also loses what the OS had not written to disk: the batches appended in
    # the last unflushed_ms (30 s: Linux writes a dirty page back once it is
    # vm.dirty_expire_centisecs = 3000 old), or with flush = "writeback" what each log got
    # since the kernel's flusher last wrote it back, unflushed_ms being that expiry
    FaultAction(
        "power_loss", "broker", apply=_power_loss, sentence=_power_loss_words,
        params={"unflushed_ms": (number(lo=0), UNFLUSHED_MS[0]),
                "flush": (choice(FLUSH_MODES), OPTIONAL)},
        default_undo="restart", window="down", draws={"power_loss": _draw_power_loss}),
    # a broker's log directory fails (an I/O error: `LogDirFailureChannel`): with several
    # (`cluster.log_dirs`) it goes on without the partitions in it, and the controller moves
    # their leaders away; with none left it halts. A restart brings the directory back, so a
    # live broker needs a crash (or controlled_shutdown) first: `restart` is no default undo
    FaultAction(
        "log_dir_failure", "broker", apply=_log_dir_failure, sentence=_log_dir_failure_words,
        params={"dir": (_log_dir, 0), "when": (choice(LOG_DIR_WHEN), "now"),
                "data": (choice(LOG_DIR_DATA), "lost")},
        mark_colour="tab:brown"),
)}
