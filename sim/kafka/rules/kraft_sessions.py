"""The quorum controller's broker registrations and sessions: what a BrokerRegistration from
the registered incarnation writes, when a broker's session is stale, and what a heartbeat that
expired in the controller's queue does.

Contract: pure functions of plain values, named after the Kafka methods they model
(`metadata/.../controller/ClusterControlManager.java`, `BrokerHeartbeatManager.java`,
`ReplicationControlManager.java`, `QuorumController.java`, read at 3.3.0, 3.7.0, 3.8.0 and
3.9.0-rc3); they change nothing.
"""

from __future__ import annotations

from typing import NamedTuple


class Registration(NamedTuple):
    """The RegisterBrokerRecord a registration writes: its BrokerEpoch, Fenced and
    InControlledShutdown."""

    broker_epoch: int
    fenced: bool
    in_controlled_shutdown: bool


def registration_record(proto, existing, same_incarnation: bool,
                        next_write_offset: int) -> Registration:
    """`ClusterControlManager.registerBroker`'s RegisterBrokerRecord for a registration the
    controller accepts. `existing` is the broker's registration (epoch, fenced,
    in_controlled_shutdown) or None; `next_write_offset` is the offset of the first record the
    registration writes (`offsetControl.nextWriteOffset()`, which `QuorumController
    .registerBroker` passes as the new broker epoch: KIP-966's shutdown records, when written,
    come before the RegisterBrokerRecord, so the epoch can be below the record's own offset).

    A new broker or a new incarnation gets the new epoch, fenced. The same incarnation again
    (a retried registration) by `kraft_reregistration`: `new_epoch` (3.3.0-3.7.x) as a new
    one; `keeps_state` (KAFKA-16757, 3.8: "Amending registration") the new epoch with the
    registration's fenced and controlled-shutdown state; `keeps_epoch` (KAFKA-16952, 3.9.0)
    the registration's epoch and state both."""
    fresh = Registration(next_write_offset, True, False)
    if existing is None or not same_incarnation or proto.kraft_reregistration == "new_epoch":
        return fresh
    epoch = existing.epoch if proto.kraft_reregistration == "keeps_epoch" else next_write_offset
    return Registration(epoch, existing.fenced, existing.in_controlled_shutdown)


def registered_session_offset(session_fenced: bool | None, fenced: bool,
                              metadata_offset: int) -> int:
    """`BrokerHeartbeatManager.register`: the metadata offset a broker's session keeps when a
    registration (re)registers it as `fenced`. A new session (`session_fenced` None: no
    session, or the previous incarnation's removed) starts at -1; an existing one keeps its
    offset only if the registration changes its fenced state, else -1 (`register` passes
    `metadataOffset` only when `broker.fenced() != fenced`)."""
    if session_fenced is None or session_fenced == fenced:
        return -1
    return metadata_offset


def session_valid(last_contact_us: int, session_timeout_us: int, now_us: int) -> bool:
    """`BrokerHeartbeatManager.hasValidSession` for an unfenced broker: its last contact is
    within broker.session.timeout.ms (`lastContactNs + sessionTimeoutNs >= now`); stale only
    once that has passed."""
    return last_contact_us + session_timeout_us >= now_us


def next_check_us(unfenced_contacts: list[int], session_timeout_us: int) -> int | None:
    """`BrokerHeartbeatManager.nextCheckTimeNs`: when the broker heard from longest ago among
    the unfenced (the head of the list ordered by last contact) goes stale; None with no
    unfenced broker (`QuorumController.rescheduleMaybeFenceStaleBrokers` then cancels the
    check). The model checks one microsecond later, the first instant it is stale."""
    if not unfenced_contacts:
        return None
    return min(unfenced_contacts) + session_timeout_us + 1


def one_stale_broker(unfenced: list[tuple[int, int]], session_timeout_us: int,
                     now_us: int) -> int | None:
    """`BrokerHeartbeatManager.findOneStaleBroker`: of the unfenced brokers ((last contact,
    id), in the list's order: by last contact, a later touch going after an equal one), the
    first, if its session is no longer valid; None otherwise (if the first is not stale, none
    is)."""
    if not unfenced:
        return None
    contact, broker = unfenced[0]
    return None if session_valid(contact, session_timeout_us, now_us) else broker


def expired_heartbeat_renews(proto, registered_epoch: int | None, broker_epoch: int) -> bool:
    """`ReplicationControlManager.processExpiredBrokerHeartbeat` (KAFKA-15019, 3.6.0: called
    from `QuorumController.processBrokerHeartbeat` when the heartbeat timed out in the event
    queue): whether a heartbeat that expired renews its broker's session (last contact and
    metadata offset; no state change, no record). Only with `kraft_expired_heartbeat_touches`
    and for the registered broker epoch (`checkBrokerEpoch` throws otherwise, and nothing
    happens); before 3.6 an expired heartbeat did nothing."""
    return proto.kraft_expired_heartbeat_touches and registered_epoch == broker_epoch
