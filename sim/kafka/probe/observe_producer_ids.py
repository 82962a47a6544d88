"""What a probe can check of a broker's producer ids (`sim.kafka.producer_ids`).

Contract: `PRODUCER_IDS` holds the broker observables `answer_producer_id` and
`answer_producer_epoch` (the step's InitProducerId answer: the id and epoch it gives, -1 with an
error, whose code is the step's `error`), `producer_id_block` ([first, last] of the block the
broker hands ids out of; [0, -1] for none), `next_producer_id` (the next id of it),
`next_producer_id_block` (a KRaft broker's block asked for ahead, none until an answer gives
it) and `latest_producer_id_block` (the /latest_producer_id_block znode, ZooKeeper mode).
"""

from __future__ import annotations

from typing import Any, Callable

from sim.kafka.probe.observable import NONE, Observable, Seen


def _answer(name: str) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, _arg: str) -> Any:
        return getattr(seen.answer, name, NONE) if seen.answer is not None else NONE
    return read


def _block(read_block: Callable[[Any], Any]) -> Callable[[Seen, str], Any]:
    def read(seen: Seen, _arg: str) -> Any:
        block = read_block(seen.node)
        return list(block) if block is not None else NONE
    return read


PRODUCER_IDS = {
    "answer_producer_id": Observable(False, _answer("producer_id"),
                                     "the producer id of the step's InitProducerId answer"),
    "answer_producer_epoch": Observable(False, _answer("producer_epoch"),
                                        "the epoch of the step's InitProducerId answer"),
    "producer_id_block": Observable(False, _block(lambda n: n.pid_block),
                                    "[first, last] of the block the broker hands ids out of"),
    "next_producer_id": Observable(False, lambda s, _a: s.node.next_pid,
                                   "the next producer id of the broker's block"),
    "next_producer_id_block": Observable(False, _block(lambda n: n.pid_next_block),
                                         "a KRaft broker's next block, asked for ahead"),
    "latest_producer_id_block": Observable(
        False, _block(lambda n: n.store.latest_producer_id_block),
        "the /latest_producer_id_block znode: the last block a broker took (ZooKeeper mode)"),
}
