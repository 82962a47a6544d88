"""A producer's InitProducerId and its answer, and a broker's block of producer ids, as probe steps.

Contract: `PRODUCER_KINDS` (joined into `sim.kafka.probe.wire.KINDS`) holds
`InitProducerIdResponse` (`producer_id`, `producer_epoch` (0), `error`, `corr`: by default the
producer's last InitProducerId to the sender), the answer Kafka's SenderTest gives with
`prepareAndReceiveInitProducerId` (`Producer.on_init_producer_id_response`); `InitProducerId`
(`corr`), a producer's request to a broker (`ProducerIdManager.on_init_producer_id`); and
`AllocateProducerIdsResponse` (`error`, `start`, `length` (1000), `corr`: by default the
broker's last AllocateProducerIds), the quorum controller's answer to a KRaft broker; and
`AllocateProducerIds` (`broker`, `broker_epoch`: by default the sender's and its registered
epoch), a KRaft broker's request to the controller.
`check_init_producer_id(f, key)` refuses, as the scenario loads, an answer without error whose
id or epoch no producer could have.
"""

from __future__ import annotations

from sim.kafka import kraft_messages as K
from sim.kafka import messages as M
from sim.kafka.probe.fields import Field, FieldProblem
from sim.kafka.probe.kind import Kind

PRODUCER = ("producer",)
BROKER = ("broker",)
CONTROLLER = ("controller",)
INIT_PRODUCER_ID_ANSWER = (Field("corr", "int", 0), Field("producer_id", "int", -1),
                           Field("producer_epoch", "int", 0), Field("error", "error", 0))


def _init_producer_id_response(f: dict, ctx) -> M.InitProducerIdResponse:
    corr = f["corr"] or ctx.corr("InitProducerId")
    return M.InitProducerIdResponse(corr, f["producer_id"], f["producer_epoch"], f["error"])


def _init_producer_id(f: dict, ctx) -> M.InitProducerId:
    return M.InitProducerId(f["corr"] or ctx.corr("InitProducerId"))


def _allocate_producer_ids_response(f: dict, ctx) -> K.AllocateProducerIdsResponse:
    corr = f["corr"] or ctx.corr("AllocateProducerIds")
    return K.AllocateProducerIdsResponse(corr, f["error"], f["start"], f["length"])


def _allocate_producer_ids(f: dict, ctx) -> K.AllocateProducerIds:
    """A broker's AllocateProducerIds; its id and epoch left out: the sender's, as the
    controller's image registers it."""
    broker = f["broker"] if f["broker"] is not None else int(ctx.src[1:])
    epoch = ctx.registered_epoch(broker) if f["broker_epoch"] is None else f["broker_epoch"]
    return K.AllocateProducerIds(f["corr"] or ctx.corr("AllocateProducerIds"), broker, epoch)


def check_init_producer_id(f: dict, key: str) -> None:
    """An answer without error gives an id (0 or more) and an epoch (0..32767, a short)."""
    if f["error"] == 0 and (f["producer_id"] < 0 or not 0 <= f["producer_epoch"] <= 32767):
        raise FieldProblem(key, "an answer without error gives a producer id of 0 or more and "
                           "an epoch 0..32767", "give producer_id (and producer_epoch), or an error")


PRODUCER_KINDS = {
    "InitProducerIdResponse": Kind(
        PRODUCER, INIT_PRODUCER_ID_ANSWER, _init_producer_id_response,
        "a broker's answer to the producer's InitProducerId (a new producer id and epoch)", True),
    "InitProducerId": Kind(BROKER, (Field("corr", "int", 0),), _init_producer_id,
                           "a producer's InitProducerId (no transactional id)"),
    "AllocateProducerIdsResponse": Kind(
        BROKER, (Field("corr", "int", 0), Field("error", "error", 0), Field("start", "int", -1),
                 Field("length", "int", 1000)), _allocate_producer_ids_response,
        "the quorum controller's answer to a KRaft broker's AllocateProducerIds (KIP-730)",
        mode="kraft"),
    "AllocateProducerIds": Kind(
        CONTROLLER, (Field("corr", "int", 0), Field("broker", "int", None),
                     Field("broker_epoch", "int", None)), _allocate_producer_ids,
        "a KRaft broker's request for a block of producer ids (KIP-730)", True),
}
