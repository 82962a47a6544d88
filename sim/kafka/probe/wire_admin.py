"""An admin client's requests to a broker, as probe steps.

Contract: `ADMIN_KINDS` (joined into `sim.kafka.probe.wire.KINDS`) holds `DeleteRecords`
(`timeout_ms` (30000), `corr` (a fresh one by default), `partitions`: `tp` and `offset`, -1
meaning the HW), built as `sim.kafka.admin_messages.DeleteRecords` (KIP-107).
"""

from __future__ import annotations

from sim.kafka import admin_messages as AM
from sim.kafka.probe.fields import REQUIRED, Field
from sim.kafka.probe.kind import Kind

DELETE_PARTITION = (Field("tp", "str"), Field("offset", "int"))


def _delete_records(f: dict, ctx) -> AM.DeleteRecords:
    parts = tuple(AM.DeleteRecordsPartition(p["tp"], p["offset"]) for p in f["partitions"])
    return AM.DeleteRecords(f["corr"] or ctx.corr("DeleteRecords"), f["timeout_ms"] * 1000, parts)


ADMIN_KINDS = {
    "DeleteRecords": Kind(("broker",), (Field("timeout_ms", "int", 30000), Field("corr", "int", 0),
                                        Field("partitions", "tables", REQUIRED, DELETE_PARTITION)),
                          _delete_records, "an admin client's DeleteRecords (offset -1: the HW)"),
}
