"""Shared helpers of the probe tests: run a probe's text, and check a refused one."""

from __future__ import annotations

import json

import pytest

from epochsim.runner import run_scenario
from scenarios.schema import ScenarioError, parse_scenario


def probe_checks(text: str, by_step: bool = False) -> dict:
    """`check` (or `step:check`) -> (Kafka's value, the model's) of the probe `text`, run."""
    verdict = run_scenario(parse_scenario(text, "probe.toml"), 1)
    return {(f"{c['step']}:{c['check']}" if by_step else c["check"]): (c["kafka"], c["model"])
            for c in verdict["probe"]}


def assert_refused(text: str, key: str) -> str:
    """The probe `text` is refused when it loads, in one line naming `key`; returns the line."""
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "probe.toml")
    message = str(err.value)
    assert "\n" not in message and key in message, message
    return message


def broker_probe(test: str, node: str, brokers: int, profile: str = "3.7") -> str:
    """The head of a probe of broker `node` in a cluster of `brokers`, up to its state."""
    return (f'name = "probe"\n[protocol]\nprofile = "{profile}"\n[cluster]\nbrokers = {brokers}\n'
            f'[probe]\nkafka_test = "{test}"\nkafka_tag = "3.7.0"\nnode = "{node}"\n')


def kraft_controller_probe(test: str, brokers: int, profile: str = "3.7") -> str:
    """The head of a probe of the active KRaft controller c1 (a quorum of one) in a cluster of
    `brokers`, up to its state."""
    return (f'[protocol]\nprofile = "{profile}"\n[cluster]\nmode = "kraft"\nbrokers = {brokers}\n'
            f'controllers = 1\n[probe]\nkafka_test = "{test}"\nkafka_tag = "{profile}.0"\n'
            'node = "c1"\n')


def consumer_probe(test: str, profile: str = "3.7", partitions: int = 1,
                   reset: str = "latest") -> str:
    """The head of a probe of consumer k1 of topic t (one broker), up to `[probe.state]`."""
    tables = [("protocol", {"profile": profile}), ("cluster", {"brokers": 1}),
              ("[topics]", {"name": "t", "partitions": partitions, "replication_factor": 1}),
              ("[consumers]", {"name": "k1", "topic": "t", "auto_offset_reset": reset}),
              ("probe", {"kafka_test": test, "kafka_tag": f"{profile}.0", "node": "k1"})]
    lines = []
    for name, table in tables:
        lines.append(f"[{name}]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


APP_STEP = """[[probe.steps]]
deliver = "{deliver}"
from = "{frm}"
wait_ms = 50
body = {body}
expect = {expect}
"""


def with_steps(head: str, *steps) -> str:
    """`head` (a probe up to its steps) and one 50 ms step per (deliver, from, body, expect)."""
    return head + "".join(APP_STEP.format(deliver=d, frm=f, body=b, expect=e)
                          for d, f, b, e in steps)


def assert_agrees(text: str) -> None:
    """Every check of the probe `text`, run, agrees with Kafka."""
    checks = probe_checks(text, by_step=True)
    assert all(kafka == model for kafka, model in checks.values()), checks


def partition_state(tp: str, **fields) -> str:
    """A `[[probe.state.partitions]]` table of `tp` with `fields` (values written as JSON,
    which TOML reads alike for numbers, strings, booleans and lists)."""
    lines = ["[[probe.state.partitions]]", f"tp = {json.dumps(tp)}"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"
