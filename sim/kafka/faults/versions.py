"""Version faults: a rolling upgrade, one broker at a time, and the inter-broker protocol bump.

Contract: `ACTIONS` holds `upgrade` and `bump_ibp` as `FaultAction`s (see
`sim.kafka.faults.action`). Kafka's rolling upgrade (docs "Upgrading From Previous Versions")
has two passes: every broker in turn is restarted on the new code with
`inter.broker.protocol.version` pinned to the old release, then, once all run the new code,
the IBP is set to the new release and every broker is restarted again. `upgrade` is one
broker's restart of the first pass; `bump_ibp` stands for the whole second pass, applied at
once to the cluster-wide IBP the model keeps (`sim.kafka.store.Store.ibp`), since the
restarts of that pass change nothing else. Neither is drawn by explore.

A node never runs an IBP newer than its code: Kafka refuses to start a broker whose
`inter.broker.protocol.version` its release does not know (`ApiVersion.apply`). So an
`upgrade` to a profile older than the IBP, and a `bump_ibp` past the profile of a broker or of
the controllers (which run the scenario's profile), are refused: the step changes nothing and
its outcome says why. So is an `upgrade` to a release without the run's control plane (4.0 has
no ZooKeeper mode: its broker does not start from a ZooKeeper config), and both actions in KRaft
mode, where every broker runs the run's profile and no inter-broker protocol is kept (KRaft's
`metadata.version` is not modelled).
"""

from __future__ import annotations

from sim.kafka.faults.action import REQUIRED, FaultAction, target_words
from sim.kafka.faults.nodes import CONTROLLED_SHUTDOWN_US, controlled_shutdown
from sim.kafka.modes import KRAFT, modes
from sim.kafka.profiles import PROFILES, newer


def _profile(value, key, checks):
    if not isinstance(value, str) or value not in PROFILES:
        checks.fail(key, f"{checks.describe(value)} is not a profile",
                    f"use one of {', '.join(PROFILES)}, quoted (\"2.6\")")
    return value


def _upgrade(cluster, target, params):
    """Controlled shutdown of the broker, then, once it has stopped, it starts again on the
    new profile with the logs it left (a broker that is down just gets the new code, and
    runs it when it is restarted)."""
    broker = cluster.brokers[int(target[1:])]
    profile = params["profile"]
    refused = _kraft_refusal(cluster, "upgrade")
    if refused:
        return refused
    if cluster.options.cluster.mode not in modes(profile)[1]:
        return f"refused: {profile} has no ZooKeeper mode, so {target} would not start"
    if newer(cluster.store.ibp_profile, profile):
        return (f"refused: {profile} does not know inter-broker protocol "
                f"{cluster.store.ibp_profile}, so {target} would not start")
    protocol = cluster.options.protocol_on(profile)
    if not broker.alive:
        broker.run_profile(profile, protocol)
        return f"down: it runs {profile} once restarted"

    def restart_on_new_code():
        if broker.alive:  # a crash meanwhile leaves it down: install the code, start nothing
            broker.stop_cleanly()
            broker.run_profile(profile, protocol)
            cluster.world.restart(broker.name)
        else:
            broker.run_profile(profile, protocol)

    outcome = controlled_shutdown(cluster, broker, target)
    cluster.kernel.call_later(CONTROLLED_SHUTDOWN_US, restart_on_new_code)
    return outcome


def _kraft_refusal(cluster, action: str) -> str | None:
    """The outcome of a version action in a KRaft run, None in ZooKeeper mode."""
    if cluster.options.cluster.mode != KRAFT:
        return None
    return (f"refused: {action} is not modelled in KRaft mode (every broker runs the run's "
            "profile)")


def _bump_ibp(cluster, target, params):
    """Every broker and controller sends what inter-broker protocol `version` allows from now
    on: the second pass of a rolling upgrade, done at once."""
    version = params["version"]
    refused = _kraft_refusal(cluster, "bump_ibp")
    if refused:
        return refused
    behind = [f"{b.name} runs {b.profile}" for b in cluster.brokers.values()
              if newer(version, b.profile)]
    if newer(version, cluster.options.profile):
        behind.append(f"the controllers run {cluster.options.profile}")
    if behind:
        return f"refused: {behind[0]}, which does not know inter-broker protocol {version}"
    cluster.store.ibp_profile = version
    cluster.store.ibp = cluster.options.ibp_protocol(version)
    return None


ACTIONS = {a.name: a for a in (
    FaultAction(
        "upgrade", "broker", apply=_upgrade,
        params={"profile": (_profile, REQUIRED)},
        sentence=lambda t, p: (f"upgrade {target_words(t)} to {p['profile']}: a controlled "
                               f"shutdown, then it starts again on {p['profile']} with its logs"),
        mark_colour="tab:purple"),
    FaultAction(
        "bump_ibp", "none", apply=_bump_ibp,
        params={"version": (_profile, REQUIRED)},
        sentence=lambda t, p: (f"bump the inter-broker protocol to {p['version']} (every node "
                               "sends what it allows from now on)"),
        mark_colour="tab:purple"),
)}
