"""Leader side of Fetch, OffsetsForLeaderEpoch and ListOffsets.

Contract (mixin of `Broker`): a Fetch is checked per partition as `getLocalLog` does (the
`fetch_local_log` rule), a follower's is checked for KIP-320 divergence on its
`LastFetchedEpoch` as its `follower_truncation` asks and records the follower's progress
(`IsrManager`); with no data it parks until an append or `max_wait`. A consumer reads only
below the HW, from the leader, or from a follower when its Fetch carries ClientMetadata
(KIP-392, `fetch_only_from_leader`). A full Fetch names every partition (and at INITIAL_EPOCH
its answer opens a session); one in a session (KIP-227) is `LeaderSessions`'; a broker without
sessions (before 1.1) reads the Fetch as full and answers without one. OffsetsForLeaderEpoch
answers from the leader-epoch cache, ListOffsets as `Partition.fetchOffsetForTimestamp` does
(`sim.kafka.rules.offsets`). A partition that is not hosted online is answered as
`ReplicaManager.getPartitionOrError` says (`_not_hosted_error`).
"""

from __future__ import annotations

from sim.kafka import errors as E
from sim.kafka.messages import (
    EpochEndOffset,
    FetchPartitionData,
    FetchResponse,
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    OffsetsForLeaderEpochResponse,
)
from sim.kafka.rules.epochs import fetch_only_from_leader
from sim.kafka.rules.fetch_session import FINAL_EPOCH, INITIAL_EPOCH, INVALID_SESSION_ID
from sim.kafka.rules.offsets import LogView, fetch_offset_for_timestamp
from sim.kafka.rules.replication import follower_fetch_high_watermark, non_replica_fetch_error
from sim.kafka.rules.storage import epoch_lookup_not_hosted_error

MAX_BATCHES_PER_FETCH = 64


class LeaderFetch:
    def on_fetch(self, msg) -> None:
        req = msg.body
        if req.session_epoch == FINAL_EPOCH and req.session_id == INVALID_SESSION_ID \
                or not self.protocol.fetch_sessions:
            self.fetch_named(msg)  # before 1.1 no Fetch version carries a session
        else:
            self.on_session_fetch(msg)  # KIP-227 (`LeaderSessions`)

    def fetch_named(self, msg) -> None:
        """A full Fetch: read every partition it names; answer at once if any has records, an
        error or a divergence (or it names none, or may not wait), else park it on them."""
        req = msg.body
        touches_before = self.touch_seq
        datas = [self._read(fp, req.replica_id, client_metadata=req.client_metadata,
                            replica_epoch=req.replica_epoch)
                 for fp in req.partitions]
        self.flush_hw()
        ready = any(d.entries or d.error or d.diverging for d in datas)
        if ready or req.max_wait_us == 0 or not datas:
            self._answer_named(msg, datas, touches_before)
            return
        key = self.park_fetch(msg)
        for fp in req.partitions:
            self.parked_by_tp.setdefault(fp.tp, []).append(key)

    def park_fetch(self, msg):
        """Park a Fetch until something it waits on happens or its `max_wait` ends; its key."""
        key = (msg.src, msg.body.corr)
        self.parked[key] = msg
        self.parked_order[key] = self.parked_count
        self.parked_count += 1
        self.fetch_wait_deadlines.add(key, self.now_us + msg.body.max_wait_us)
        return key

    def _answer_named(self, msg, datas, touches_before: int | None) -> None:
        """Answer a full Fetch with every partition; one at INITIAL_EPOCH opens a session.
        `touches_before`: `datas` were read, recording the fetcher's progress, when
        `touch_seq` was this (None: read again after a wait)."""
        req = msg.body
        session_id = self.open_session(msg, datas, touches_before) \
            if req.session_epoch == INITIAL_EPOCH and self.protocol.fetch_sessions else 0
        self.send(msg.src, "FetchResponse", FetchResponse(
            req.corr, tuple(datas), self.node_endpoints(d.current_leader for d in datas),
            E.NONE, session_id))

    def answer_parked(self, key) -> None:
        """Answer a parked Fetch now (its wait is over, or something it waits on happened),
        reading again what it names without recording the fetcher's progress a second time."""
        msg = self.parked.pop(key, None)
        if msg is None:
            return
        del self.parked_order[key]
        self.fetch_wait_deadlines.cancel(key)
        parked_in = self.parked_sessions.pop(key, None)
        if parked_in is not None:
            parked_in[0].parked.remove(key)
            self.answer_session_fetch(msg, *parked_in)
            return
        req = msg.body
        self._answer_named(msg, [self._read(fp, req.replica_id, record=False,
                                            client_metadata=req.client_metadata)
                                 for fp in req.partitions], None)

    def _wake_parked(self, tp: str, who: str = "all") -> None:
        """Answer parked Fetches naming `tp` or in a session holding it: `followers` when the
        log grows, `consumers` when the HW does (a consumer reads only below it), `all` when
        leadership goes (the bytes a `DelayedFetch` counts end at the log end for a follower
        and at the HW for a consumer). They are answered in the order they were parked, as a
        purgatory key's watchers are."""
        wake = []
        keys = self.parked_by_tp.pop(tp, None)
        if keys:
            for key in keys:
                msg = self.parked.get(key)
                if msg is None:
                    continue
                if who != "all" and (msg.body.replica_id >= 0) != (who == "followers"):
                    self.parked_by_tp.setdefault(tp, []).append(key)  # not for this one: keep it
                    continue
                wake.append(key)
        sessions = self.fetch_sessions.by_tp.get(tp)
        if sessions:
            for s in sessions.values():
                if s.parked and (who == "all" or (s.replica_id >= 0) == (who == "followers")):
                    wake.extend(s.parked)
        if len(wake) > 1:
            wake.sort(key=self.parked_order.__getitem__)
        for key in wake:
            self.answer_parked(key)

    def _read(self, fp, replica_id: int, record: bool = True, client_metadata: bool = False,
              replica_epoch: int = -1) -> FetchPartitionData:
        p = self._hosted(fp.tp)
        if p is None:
            err = self._not_hosted_error(fp.tp)
            return FetchPartitionData(fp.tp, err, current_leader=self.leader_hint(fp.tp, err))
        err = self.rules.fetch_local_log(self.protocol, p.leader_epoch, p.is_leader,
                                         fp.current_leader_epoch,
                                         fetch_only_from_leader(self.protocol, replica_id,
                                                                client_metadata))
        if err:
            return FetchPartitionData(fp.tp, err, current_leader=self.leader_hint(fp.tp, err))
        log = p.log
        hw = log.hw  # read with the records, before this Fetch moves the follower's state
        if replica_id >= 0 and replica_id not in p.replicas:
            err = non_replica_fetch_error(self.protocol, fp.current_leader_epoch)
            if not err:  # before KAFKA-13837: no records
                return FetchPartitionData(fp.tp, E.NONE, log.hw, log.log_start_offset)
            return FetchPartitionData(fp.tp, err)
        if fp.last_fetched_epoch >= 0 and (
                replica_id >= 0 or self.replication.follower_truncation == "diverging_epoch"):
            # `Partition.readRecords` (2.7+, Fetch v12) checks any Fetch naming its last fetched
            # epoch, a consumer's too, before reading; before v12 only the model's follower
            # carries one (its OffsetsForLeaderEpoch round trip, folded into the Fetch)
            answer = self._divergence(fp, p, replica_id)
            if answer is not None:
                return answer
        if replica_id >= 0 and record:
            # KAFKA-15221 reads the broker epochs of a KRaft image: a ZooKeeper-mode leader,
            # on this per-partition path, asks nothing
            if self.kraft and self.rules.stale_follower_fetch(
                    self.protocol, True, replica_epoch, self.cached_broker_epoch(replica_id)):
                return FetchPartitionData(fp.tp, E.NOT_LEADER_OR_FOLLOWER)
            self._follower_progress(p, replica_id, fp.fetch_offset, replica_epoch,
                                    fp.log_start_offset)
            hw = follower_fetch_high_watermark(self.protocol, hw, log.hw)
        if fp.fetch_offset > log.leo or fp.fetch_offset < log.log_start_offset:
            return self._out_of_range_answer(fp, p)
        entries = log.read(fp.fetch_offset, MAX_BATCHES_PER_FETCH)
        if replica_id < 0:
            entries = tuple(e for e in entries if e[0] + e[1] <= hw)
        return FetchPartitionData(fp.tp, E.NONE, hw, log.log_start_offset, entries)

    def _divergence(self, fp, p, replica_id: int) -> FetchPartitionData | None:
        """Where a Fetch naming its last fetched epoch diverges from this replica's log, as the
        `follower_truncation` asks (see `fetcher`): a `diverging` answer, an out-of-range one,
        or None to read on. `diverging` is (epoch, end offset); an epoch of -1 is an answer
        without one (OffsetsForLeaderEpoch v0), an end offset of -1 no answer at all, which
        sends the follower back to its own HW."""
        mode, log = self.replication.follower_truncation, p.log  # the Fetch's version: the IBP's
        if mode == "kip101":
            end = log.end_offset_for_epoch_v0(fp.last_fetched_epoch)
            return self._diverging(fp.tp, log, -1, end) if end < fp.fetch_offset else None
        epoch, end = log.end_offset_for_epoch(fp.last_fetched_epoch)
        if epoch < 0:
            # Fetch v12's `readRecords` (ref §1.2): out of range; an OffsetsForLeaderEpoch
            # answer of UNDEFINED_EPOCH_OFFSET: back to the follower's initial offset, its HW
            return self._out_of_range_answer(fp, p) if mode == "diverging_epoch" \
                else self._diverging(fp.tp, log, -1, -1)
        if mode == "diverging_epoch" and fp.fetch_offset < log.log_start_offset:
            return self._out_of_range_answer(fp, p)
        if epoch < fp.last_fetched_epoch or end < fp.fetch_offset:
            return self._diverging(fp.tp, log, epoch, end)
        return None

    @staticmethod
    def _diverging(tp: str, log, epoch: int, end: int) -> FetchPartitionData:
        return FetchPartitionData(tp, E.NONE, log.hw, log.log_start_offset,
                                  diverging=(epoch, end))

    def on_offsets_for_leader_epoch(self, msg) -> None:
        """A consumer's OffsetsForLeaderEpoch (v3+, ref §1.2 table): per partition the same
        `getLocalLog` check as Fetch on `CurrentLeaderEpoch`, leadership required (a consumer
        reads from the leader), then the leader-epoch cache's answer for `LeaderEpoch`."""
        req = msg.body
        answers = []
        for part in req.partitions:
            p = self.partitions.get(part.tp)
            if p is None:
                err = epoch_lookup_not_hosted_error(self._not_hosted_error(part.tp),
                                                    self.protocol.fetch_epoch_check)
            else:
                err = self.rules.fetch_local_log(self.protocol, p.leader_epoch, p.is_leader,
                                                 part.current_leader_epoch)
            if err:
                answers.append(EpochEndOffset(part.tp, err))
            else:
                answers.append(EpochEndOffset(part.tp, E.NONE,
                                              *p.log.end_offset_for_epoch(part.leader_epoch)))
        self.send(msg.src, "OffsetsForLeaderEpochResponse",
                  OffsetsForLeaderEpochResponse(req.corr, tuple(answers)))

    def on_list_offsets(self, msg) -> None:
        """ListOffsets (v1+): per partition `getPartitionOrError`, then
        `Partition.fetchOffsetForTimestamp` (`sim.kafka.rules.offsets`)."""
        req = msg.body
        answers = []
        for part in req.partitions:
            p = self.partitions.get(part.tp)
            if p is None:
                answers.append(ListOffsetsPartitionResponse(part.tp, self._not_hosted_error(part.tp)))
                continue
            found = fetch_offset_for_timestamp(self.protocol, req.replica_id, part.timestamp,
                                               part.current_leader_epoch, self.log_view(p))
            answers.append(ListOffsetsPartitionResponse(part.tp, *found))
        self.send(msg.src, "ListOffsetsResponse", ListOffsetsResponse(req.corr, tuple(answers)))

    @staticmethod
    def log_view(p) -> LogView:
        """What `fetch_offset_for_timestamp` reads of replica `p`."""
        log = p.log
        return LogView(p.leader_epoch, p.is_leader, log.log_start_offset, log.leo, log.hw,
                       p.leader_epoch_start_offset if p.is_leader else -1,
                       log.epochs[0] if log.epochs else None, log.last_epoch(), log.entries)

    def _out_of_range_answer(self, fp, p) -> FetchPartitionData:
        """OFFSET_OUT_OF_RANGE with the HW and log start. A follower then asks where the log
        ends and starts with ListOffsets (`sim.kafka.fetcher_reset`), a consumer resets its
        position likewise (`sim.kafka.consumer_reset`)."""
        log = p.log
        return FetchPartitionData(fp.tp, E.OFFSET_OUT_OF_RANGE, log.hw, log.log_start_offset)
