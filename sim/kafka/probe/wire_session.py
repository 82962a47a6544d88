"""A probe's Fetch in a fetch session (KIP-227, Fetch v7+, 1.1): the FetchMetadata fields,
and those of a Fetch answer to a fetching client.

Contract: `SESSION_FIELDS` are the Fetch fields a probe may set for its session:
`session_epoch` (-1 FINAL_EPOCH: a full Fetch that opens no session, what the model's senders
without one send; 0 INITIAL_EPOCH: a full Fetch whose answer opens one; above 0: an
incremental Fetch in the session), `session_id` (default: for an incremental Fetch, the last
session a Fetch answer of the node to the sender carried, 0 when none did; for a full one, 0;
or an id written out, e.g. one no session has, or the session a full Fetch closes) and `forgotten` (the partitions the
session stops fetching, Fetch's ForgottenTopicsData). `session(f, ctx)` is the keywords of
`sim.kafka.messages.Fetch` they make. A profile before 1.1 sends no session
(`sim.kafka.probe.gates`). The node numbers its sessions 1, 2, ... in the order it opens them
(Kafka draws each id at random), so a check names a session by that number.
`ANSWER` are the fields of a Fetch answer (to a consumer or a follower under test) of its own:
its top-level `error` (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, or another such as
3.x's UNKNOWN_TOPIC_ID) and the `session_id` it opened or continued (0: none, the default);
`answer(f)` is the keywords of `sim.kafka.messages.FetchResponse` they make.
"""

from __future__ import annotations

from sim.kafka.probe.fields import Field
from sim.kafka.rules.fetch_session import FINAL_EPOCH, INVALID_SESSION_ID, is_full

LAST = -1  # `session_id` unset: the last session the node's answers to the sender carried

SESSION_FIELDS = (Field("session_epoch", "int", FINAL_EPOCH), Field("session_id", "int", LAST),
                  Field("forgotten", "strs", ()))
ANSWER = (Field("error", "error", 0), Field("session_id", "int", INVALID_SESSION_ID))


def session(f: dict, ctx) -> dict:
    """The Fetch keywords of the probe's session fields (see the module contract)."""
    session_id = f["session_id"]
    if session_id == LAST:  # a full Fetch names no session unless written out
        session_id = INVALID_SESSION_ID if is_full(f["session_epoch"]) else ctx.last_session_id()
    return {"session_id": session_id, "session_epoch": f["session_epoch"],
            "forgotten": tuple(f["forgotten"])}


def answer(f: dict) -> dict:
    """The FetchResponse keywords of an answer's session fields (see the module contract)."""
    return {"error": f["error"], "session_id": f["session_id"]}
