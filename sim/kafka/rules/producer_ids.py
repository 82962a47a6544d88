"""Producer id blocks: how brokers and the controller hand out producer ids without overlap.

Contract: pure functions of plain values (no switch differs between the releases the model
has here). A block is `(first, last)`, both included; `EMPTY_BLOCK` holds no id. Ids go out
in blocks of `PRODUCER_ID_BLOCK_SIZE` (`ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE`, 1000; 0.11-2.x
`ProducerIdManager.PidBlockSize`), the first block starting at id 0, each next one where the
last ended (ZooKeeper mode: the `/latest_producer_id_block` znode; KRaft: the controller's
ProducerIdsRecord). Read at 1.0.0, 2.4.0 and 3.9.0-rc3 (`ProducerIdManager.scala`,
`ProducerIdControlManager.java`).
"""

from __future__ import annotations

from sim.kafka import errors as E

PRODUCER_ID_BLOCK_SIZE = 1000
EMPTY_BLOCK = (0, -1)
# `ProducerIdManager.PidPrefetchThreshold`: a KRaft broker asks for its next block once it
# hands out the id this far into its current one (3.9.0-rc3: `nextProducerId == prefetchTarget`)
PREFETCH_PERCENT = 90


def next_zk_block(latest: tuple[int, int] | None) -> tuple[int, int]:
    """The block a ZooKeeper-mode broker writes to `/latest_producer_id_block` when it reads
    `latest` there (None: no znode yet): the 1000 ids after it, or 0-999
    (`ProducerIdManager.getNewProducerIdBlock`, 1.0.0-2.8; `ZkProducerIdManager`, 3.x)."""
    if latest is None:
        return 0, PRODUCER_ID_BLOCK_SIZE - 1
    return latest[1] + 1, latest[1] + PRODUCER_ID_BLOCK_SIZE


def allocate_producer_ids_error(registered_epoch: int | None, broker_epoch: int) -> int:
    """The quorum controller's answer to a broker's AllocateProducerIds
    (`ProducerIdControlManager.generateNextProducerId` calls
    `ClusterControlManager.checkBrokerEpoch`, 3.9.0-rc3): STALE_BROKER_EPOCH when the broker
    has no registration, or one of another epoch."""
    if registered_epoch is None or registered_epoch != broker_epoch:
        return E.STALE_BROKER_EPOCH
    return E.NONE


def prefetch_target(block: tuple[int, int]) -> int:
    """The id whose handing out makes a KRaft broker ask for its next block
    (`firstProducerId + (size * PidPrefetchThreshold).toLong`)."""
    first, last = block
    return first + (last - first + 1) * PREFETCH_PERCENT // 100


def usable_block(current: tuple[int, int], start: int, length: int) -> bool:
    """Whether a KRaft broker takes the block an AllocateProducerIds answer gave
    (`RPCProducerIdManager.handleAllocateProducerIdsResponse`): not one that starts below its
    current block's last id, nor an invalid range."""
    return start >= current[1] and start >= 0 and length >= 0
