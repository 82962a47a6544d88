"""The ZooKeeper-mode controller's topic deletion: the replica states it moves a deleted topic's
replicas through, and what `TopicDeletionManager.resumeDeletions` decides for a topic.

Contract: pure functions of plain values. A replica's state is one of Kafka's
`ReplicaStateMachine` states that a deletion uses (`NewReplica` and `NonExistentReplica` left
out: a deleted topic's replicas exist, and leave with the topic). Read at 1.0.0, 2.4.0 and 3.7.0
(`ReplicaState.validPreviousStates`, `TopicDeletionManager`), the same in each.
"""

from __future__ import annotations

ONLINE = "OnlineReplica"
OFFLINE = "OfflineReplica"
STARTED = "ReplicaDeletionStarted"
SUCCESSFUL = "ReplicaDeletionSuccessful"
INELIGIBLE = "ReplicaDeletionIneligible"

# `validPreviousStates`: a transition from any other state is refused (Kafka logs it and leaves
# the replica as it was)
VALID_PREVIOUS = {
    ONLINE: frozenset((ONLINE, OFFLINE, INELIGIBLE)),
    OFFLINE: frozenset((ONLINE, OFFLINE, INELIGIBLE)),
    STARTED: frozenset((OFFLINE,)),
    SUCCESSFUL: frozenset((STARTED,)),
    INELIGIBLE: frozenset((OFFLINE, STARTED)),
}


def valid_transitions(states: dict, replicas, target: str) -> list:
    """The replicas of `replicas` (keys of `states`, in the given order) that may move to
    `target` from the state they are in (`ReplicaStateMachine.handleStateChanges` acts on
    these only)."""
    allowed = VALID_PREVIOUS[target]
    return [r for r in replicas if states.get(r) in allowed]


def resume_decision(states, ineligible: bool) -> str:
    """What `resumeDeletions` does for one topic queued for deletion, from its replicas'
    states and whether the topic is marked ineligible: "complete" when every replica was
    deleted (`completeDeleteTopic`); "retry" when none is being deleted and some failed, so the
    failed ones go back to OfflineReplica, and "retry+start" when the topic is also eligible;
    "start" when eligible (none being deleted, not ineligible: `onTopicDeletion`); else
    "wait"."""
    states = list(states)
    if states and all(s == SUCCESSFUL for s in states):
        return "complete"
    in_progress = STARTED in states
    retry = not in_progress and INELIGIBLE in states
    start = not in_progress and not ineligible
    return {(True, True): "retry+start", (True, False): "retry",
            (False, True): "start"}.get((retry, start), "wait")
