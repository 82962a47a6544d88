"""A broker's answer to a producer's InitProducerId, as a probe step.

Contract: `PRODUCER_KINDS` (joined into `sim.kafka.probe.wire.KINDS`) holds
`InitProducerIdResponse` (`producer_id`, `producer_epoch` (0), `error`, `corr`: by default the
producer's last InitProducerId to the sender), the answer Kafka's SenderTest gives with
`prepareAndReceiveInitProducerId` (`Producer.on_init_producer_id_response`).
`check_init_producer_id(f, key)` refuses, as the scenario loads, an answer without error whose
id or epoch no producer could have.
"""

from __future__ import annotations

from sim.kafka import messages as M
from sim.kafka.probe.fields import Field, FieldProblem
from sim.kafka.probe.kind import Kind

PRODUCER = ("producer",)
INIT_PRODUCER_ID_ANSWER = (Field("corr", "int", 0), Field("producer_id", "int", -1),
                           Field("producer_epoch", "int", 0), Field("error", "error", 0))


def _init_producer_id_response(f: dict, ctx) -> M.InitProducerIdResponse:
    corr = f["corr"] or ctx.corr("InitProducerId")
    return M.InitProducerIdResponse(corr, f["producer_id"], f["producer_epoch"], f["error"])


def check_init_producer_id(f: dict, key: str) -> None:
    """An answer without error gives an id (0 or more) and an epoch (0..32767, a short)."""
    if f["error"] == 0 and (f["producer_id"] < 0 or not 0 <= f["producer_epoch"] <= 32767):
        raise FieldProblem(key, "an answer without error gives a producer id of 0 or more and "
                           "an epoch 0..32767", "give producer_id (and producer_epoch), or an error")


PRODUCER_KINDS = {
    "InitProducerIdResponse": Kind(
        PRODUCER, INIT_PRODUCER_ID_ANSWER, _init_producer_id_response,
        "a broker's answer to the producer's InitProducerId (a new producer id and epoch)", True),
}
