"""What a quorum leader knows of the replicas that fetch from it, and DescribeQuorum (KIP-595,
KIP-836; mixin of `RaftQuorum`, `LeaderState` and `KafkaRaftClient.handleDescribeQuorumRequest`
read at 3.7.0 and 3.9.0-rc3).

A leader keeps, for each replica whose Fetch it took in its epoch (a voter, or an observer:
any other node), its log end offset, when it last fetched and when it was last caught up
(`rules.raft_replica_fetch_state`); a new leadership starts afresh (a new `LeaderState`).
DescribeQuorum asks the leader for them: the voters in the voter set's order, the leader
itself at its log end, fetched and caught up now, a voter not heard from at -1; the observers
heard from within OBSERVER_SESSION_TIMEOUT_MS (5 minutes, `clearInactiveObservers`) by name
(Kafka lists both in its maps' order, which its tests do not fix). Times are the model clock's
milliseconds. A node that does not lead answers NOT_LEADER_OR_FOLLOWER. Not modelled: the
answer's directory ids and endpoints (KIP-853), and the leader's end offset lagging its log
until a flush ("the leader end offset hasn't been updated yet": the model's leader writes to
its log at once).

Contract: the host provides `voters`, `name`, `role`, `leader`, `quorum_epoch`, `end_offset`,
`_visible_hw`, `rules` and `now_us`.
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.kraft_messages import DescribeQuorumResponse

OBSERVER_SESSION_TIMEOUT_MS = 300_000  # `LeaderState.OBSERVER_SESSION_TIMEOUT_MS`
UNKNOWN = (-1, -1, -1, -1)  # a replica not heard from in this leadership


class RaftDescribe:
    def _reset_fetch_states(self) -> None:
        self.fetch_states: dict[str, tuple] = {}  # replica -> `rules.raft_replica_fetch_state`

    def _track_fetch(self, replica: str, fetch_offset: int) -> None:
        """`LeaderState.updateReplicaState`: a valid Fetch of `replica` from `fetch_offset`."""
        self.fetch_states[replica] = self.rules.raft_replica_fetch_state(
            self.fetch_states.get(replica, UNKNOWN), fetch_offset, self.end_offset,
            self.now_us // 1000)

    def describe_quorum(self) -> DescribeQuorumResponse:
        """`handleDescribeQuorumRequest`: the leader's view (see the module docstring)."""
        if self.role != "leader":
            return DescribeQuorumResponse(E.NOT_LEADER_OR_FOLLOWER)
        now_ms = self.now_us // 1000
        voters = tuple((self.name, self.end_offset, now_ms, now_ms) if v == self.name
                       else (v, *self.fetch_states.get(v, UNKNOWN)[:3]) for v in self.voters)
        observers = tuple((r, *s[:3]) for r, s in sorted(self.fetch_states.items())
                          if r not in self.voters and now_ms - s[1] < OBSERVER_SESSION_TIMEOUT_MS)
        return DescribeQuorumResponse(E.NONE, self.name, self.quorum_epoch, self._visible_hw(),
                                      voters, observers)
