"""A rolling restart: every broker in turn, as an operator runs one.

Contract: `ACTIONS` holds `rolling_restart` as a `FaultAction` (see `sim.kafka.faults.action`).
Kafka's operations guide restarts brokers "in a rolling fashion" with controlled shutdown on
(`controlled.shutdown.enable`, "Graceful shutdown") and gives UnderReplicatedPartitions a normal
value of 0; an operator waits for it to be 0 again before the next broker. So for each broker of
`brokers`, in order:
1. a controlled shutdown that stops the broker once the controller lets it go
   (`nodes.shut_down_when_allowed`, as `controlled_shutdown` with `stop = "when_allowed"`);
2. `down_ms` after the operator sees it stopped, a restart;
3. the next broker once the operator sees every partition's ISR whole again, as the controller
   knows it (`Cluster.under_replicated`).
The operator looks every `check_ms`. Each shutdown and restart is traced as a `fault` event of
its own action, with `part_of = "rolling_restart"` and the step's index, so timelines, reports
and the liveness rules' quiet clock see it as they see a scripted one. A broker already down
when its turn comes is only started again. A cluster that never becomes whole again (another
fault keeps a replica out) holds the rest of the restart back, as it would hold the operator.
"""

from __future__ import annotations

from sim.kafka.faults.action import FaultAction, number
from sim.kafka.faults.nodes import restart_outcome, shut_down_when_allowed

PART_OF = "rolling_restart"
DOWN_MS, CHECK_MS = 1000, 1000  # defaults: a quick process restart; an operator's script


def _brokers(value, key, checks):
    """Broker names, each once, in the order they are restarted."""
    checks.list(value, key)
    valid = checks.names.broker_names()
    for i, name in enumerate(value):
        if not isinstance(name, str) or name not in valid:
            checks.fail(f"{key}[{i}]", f"{checks.describe(name)} is not a broker of this "
                        f"scenario ({', '.join(valid)})", "name brokers such as \"b1\"")
        if name in value[:i]:
            checks.fail(f"{key}[{i}]", f"{name} is listed twice", "restart each broker once")
    return value


class RollingRestart:
    """One rolling restart in progress (see the module contract)."""

    def __init__(self, cluster, step: int, brokers: list[str], down_us: int, check_us: int):
        self.cluster, self.step = cluster, step
        self.queue = list(brokers)
        self.down_us, self.check_us = down_us, check_us

    def next_broker(self) -> None:
        """Shut the next broker down (or, if it is down already, start it again)."""
        if not self.queue:
            return
        name = self.queue.pop(0)
        broker = self.cluster.brokers[int(name[1:])]
        if not broker.alive:
            self._restart(name)
            return
        self.cluster.nemesis.fire_part(self.step, "controlled_shutdown", name,
                                       {"stop": "when_allowed"}, PART_OF,
                                       lambda: shut_down_when_allowed(self.cluster, broker))
        self._later(self._await_stop, name)

    def _await_stop(self, name: str) -> None:
        if self.cluster.world.is_alive(name):
            self._later(self._await_stop, name)
        else:
            self.cluster.kernel.call_later(self.down_us, self._restart, name)

    def _restart(self, name: str) -> None:
        world = self.cluster.world
        self.cluster.nemesis.fire_part(self.step, "restart", name, {}, PART_OF,
                                       lambda: restart_outcome(world, name))
        self._later(self._await_whole)

    def _await_whole(self) -> None:
        if self.cluster.under_replicated() == 0:
            self.next_broker()
        else:
            self._later(self._await_whole)

    def _later(self, fn, *args) -> None:
        self.cluster.kernel.call_later(self.check_us, fn, *args)


def _rolling_restart(cluster, target, params):
    names = params.get("brokers") or [f"b{i}" for i in sorted(cluster.brokers)]
    RollingRestart(cluster, cluster.nemesis.current_step, names,
                   int(params.get("down_ms", DOWN_MS) * 1000),
                   int(params.get("check_ms", CHECK_MS) * 1000)).next_broker()
    return None


def _words(target, params) -> str:
    names = params.get("brokers")
    which = ", ".join(names) if names else "every broker"
    return (f"rolling restart of {which}, one at a time: a controlled shutdown that waits for "
            f"the controller, a restart {params.get('down_ms', DOWN_MS):g} ms after it stopped, "
            f"the next broker once no partition is under-replicated (checked every "
            f"{params.get('check_ms', CHECK_MS):g} ms)")


ACTIONS = {a.name: a for a in (
    FaultAction(
        "rolling_restart", "none", apply=_rolling_restart, sentence=_words,
        params={"brokers": (_brokers, lambda names: names.broker_names()),
                "down_ms": (number(lo=0, hi=3_600_000), DOWN_MS),
                "check_ms": (number(lo=1, hi=3_600_000), CHECK_MS)},
        mark_colour="tab:olive"),
)}
