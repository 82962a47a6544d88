"""The client-history checker (epochsim.live.history): each anomaly caught in a hand-built
history, and a clean history passes."""

from __future__ import annotations

import json

from epochsim.live.history import check, load, summary


def _clean() -> list[dict]:
    """p1 sends 4 records round robin over t-0 and t-1; all acked, all read back to the end."""
    ops = []
    for i in range(4):
        ops.append({"client": "p1", "op": "send", "key": f"p1:{i}", "tp": f"t-{i % 2}"})
    for i in range(4):
        ops.append({"client": "p1", "op": "ack", "key": f"p1:{i}", "tp": f"t-{i % 2}",
                    "offset": i // 2})
    for i in range(4):
        ops.append({"client": "p1", "op": "read", "key": f"p1:{i}", "tp": f"t-{i % 2}",
                    "offset": i // 2})
    ops += [{"client": "p1", "op": "read_end", "tp": "t-0", "offset": 2},
            {"client": "p1", "op": "read_end", "tp": "t-1", "offset": 2}]
    return ops


def _checks(ops) -> list[str]:
    return [a["check"] for a in check(ops)]


def test_a_clean_history_has_no_anomaly():
    assert check(_clean()) == []


def test_an_acknowledged_write_never_read_is_lost():
    ops = [op for op in _clean() if not (op["op"] == "read" and op["key"] == "p1:2")]
    assert _checks(ops) == ["acked_write_lost"]
    assert "p1:2" in check(ops)[0]["message"]


def test_a_partition_never_read_to_its_end_judges_no_loss():
    ops = [op for op in _clean() if not (op["op"] == "read" and op["key"] == "p1:2")
           and not (op["op"] == "read_end" and op["tp"] == "t-0")]
    assert _checks(ops) == []
    assert summary(ops, ["t-0", "t-1"])["unread_partitions"] == ["t-0"]


def test_an_acknowledged_offset_holding_another_record_is_a_loss():
    ops = _clean()
    for op in ops:
        if op["op"] == "read" and op["key"] == "p1:2":
            op["offset"] = 5  # p1:2 read elsewhere; its acknowledged offset 1 holds nothing
        if op["op"] == "read" and op["key"] == "p1:0":
            op["offset"] = 1  # ...and offset 1 holds p1:0
    assert "acked_write_lost" in _checks(ops)


def test_a_record_read_at_two_offsets_is_a_duplicate():
    ops = _clean() + [{"client": "p1", "op": "read", "key": "p1:2", "tp": "t-0", "offset": 2}]
    assert _checks(ops) == ["duplicate"]


def test_records_read_out_of_send_order():
    ops = _clean()
    for op in ops:  # swap p1:0 and p1:2 on t-0, in both the reads and the acks
        if op["op"] in ("read", "ack") and op["key"] in ("p1:0", "p1:2"):
            op["offset"] = 1 - op["offset"]
    found = _checks(ops)
    assert found.count("out_of_order") == 2  # once as read, once as acknowledged
    assert set(found) == {"out_of_order"}


def test_a_record_read_that_was_never_sent():
    ops = _clean() + [{"client": "p1", "op": "read", "key": "p9:0", "tp": "t-1", "offset": 2}]
    assert _checks(ops) == ["phantom_read"]


def test_a_client_going_back_to_an_older_leader_epoch():
    ops = _clean() + [{"client": "p1", "op": "epoch", "tp": "t-0", "epoch": e, "api": 1}
                      for e in (0, 1, 1, 0)]
    assert _checks(ops) == ["epoch_regression"]
    other = _clean() + [{"client": c, "op": "epoch", "tp": "t-0", "epoch": e, "api": 1}
                        for c, e in (("p1", 1), ("p2", 0))]
    assert _checks(other) == []  # two clients, each on its own course


def test_load_skips_a_line_cut_short(tmp_path):
    path = tmp_path / "history-p1.jsonl"
    path.write_text("\n".join(json.dumps(op) for op in _clean()) + '\n{"client": "p1", "op"')
    assert load([str(path)]) == _clean()
