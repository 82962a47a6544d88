"""A broker whose metadata Fetch is answered FENCED_LEADER_EPOCH by the quorum leader, which
names itself in a newer epoch, fetches from that leader next.

Kafka's observer takes the newer epoch (`maybeHandleCommonResponse` -> `transitionToFollower`:
a new `FollowerState`, its fetch timer started then) and fetches from the leader it names. The
model once took such an answer, from a broker that had never been answered without an error,
for a resigned leader's (its fetch timeout long past) and asked the next voter instead, one
that was down, and waited out a Fetch timeout before asking again: its brokers stayed fenced
seconds longer. Found with the story of `test_kraft_topic_creation_fenced`.
"""

from __future__ import annotations

from epochsim.runner import run_scenario
from scenarios.schema import load_scenario
from tests.kafka.test_kraft_topic_creation_fenced import STORY

FENCED_LEADER_EPOCH = 74


def _next_fetch_dst(events: list[dict], broker: str, after_seq: int) -> str:
    return next(e["dst"] for e in events if e["seq"] > after_seq and e["node"] == broker
                and e["kind"] == "send" and e.get("msg") == "QuorumFetch")


def test_a_fenced_epoch_answer_from_the_leader_is_followed(tmp_path):
    path = tmp_path / "story.toml"
    path.write_text(STORY, encoding="utf-8")
    events = run_scenario(load_scenario(str(path)), 62539, keep_events=True)["_events"]
    leaders = sorted({e["node"] for e in events if e["kind"] == "quorum_leader"})
    assert leaders == ["c2"]  # one quorum leader all run: a FENCED answer of its names it
    fenced = [e for e in events if e["kind"] == "send" and e.get("msg") == "QuorumFetchResponse"
              and e.get("error") == FENCED_LEADER_EPOCH and e["node"] == "c2"
              and e["dst"].startswith("b")]
    assert fenced  # the brokers asked at epoch 0 once the quorum had its first leader
    for answer in fenced:
        assert _next_fetch_dst(events, answer["dst"], answer["seq"]) == answer["node"]
