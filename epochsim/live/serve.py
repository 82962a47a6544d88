"""One live run: the simulated cluster on the wall clock, behind loopback listeners.

Contract: `serve(scenario, out_dir, seed, slowdown, start_clients, on_ready)` binds one
listener per broker on 127.0.0.1, builds the scenario's cluster on a `PacedKernel` (one
simulated second takes `slowdown` wall seconds; the scenario's `[live] slowdown` unless given),
serving the live version table (`answers.SERVED_LIVE`) with Metadata and NodeEndpoints naming
the listeners, puts one `Gateway` per `[[live_clients]]` entry (and `live` for any other
client) on the simulated network, calls `on_ready(endpoints)`, starts the client processes
(unless `start_clients` is false), runs the scripted faults and the invariants as `epochsim run`
does, then stops the clients and writes `trace.jsonl`, `verdict.json` and `history.jsonl` (the
gateways' own operations) into `out_dir`. The verdict is the simulated run's, plus `live`:
the endpoints, each client's exit, the histories' summary and anomalies
(`epochsim.live.history`); its expectation holds only when the clients' histories show no
anomaly and every client finished. Ctrl-C ends the run where it is and writes what it has
(`run.stopped_by` "interrupted", expectation not met). Not replayable: frames arrive when
the wall clock says.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import threading

from epochsim.live import history
from epochsim.live.gateway import Gateway
from epochsim.live.pacing import PacedKernel
from epochsim.live.procs import start, stop
from epochsim.live.sockets import Hub
from epochsim.runner import (
    _remove_old_verdict,
    _trace_file,
    header_for,
    make_verdict,
    schedule_for,
    write_verdict,
)
from invariants.registry import Monitor
from scenarios.live import LiveOptions
from sim.core.trace import Trace
from sim.kafka.cluster import Cluster
from sim.kafka.wire.answers import SERVED_LIVE

DEFAULT_GATEWAY = "live"


def serve(scenario, out_dir: str, seed: int | None = None, slowdown: float | None = None,
          start_clients: bool = True, on_ready=None) -> dict:
    live = scenario.live or LiveOptions()
    seed = scenario.seed if seed is None else seed
    slowdown = live.slowdown if slowdown is None else slowdown
    options = scenario.options
    hub = Hub(list(range(1, options.cluster.brokers + 1)))
    os.makedirs(out_dir, exist_ok=True)
    _remove_old_verdict(os.path.join(out_dir, "verdict.json"))
    schedule = schedule_for(scenario, seed)
    header = header_for(scenario, seed, schedule)
    header["live"] = {**live.to_json(), "slowdown": slowdown,
                      "endpoints": {str(b): list(e) for b, e in sorted(hub.endpoints.items())}}
    procs, clients, gateways = [], [], {}
    try:
        with _trace_file(os.path.join(out_dir, "trace.jsonl")) as sink:
            trace = Trace(header, sink)
            monitor = Monitor(trace.header, scenario.invariants)
            trace.observe(monitor.step, monitor.kinds)
            kernel = PacedKernel(options.run.duration_ms * 1000, options.run.max_events,
                                 slowdown, hub.poll)
            cluster = Cluster(options, schedule, seed, trace, kernel=kernel)
            world = cluster.world
            world.wire_served = SERVED_LIVE
            world.wire_endpoints = dict(hub.endpoints)
            world.wire_hint = "cache" if live.hint == "cache" else "model"
            world.wire_empty_records = b""
            for c in live.clients:
                gateways[c.name] = Gateway(world, c.name, hub, _acks(c.acks),
                                           "required" if c.enable_idempotence else "off")
            default = Gateway(world, DEFAULT_GATEWAY, hub)
            hub.route = lambda client_id: gateways.get(_owner(client_id, gateways), default)
            hub.alive = world.is_alive
            restore = _interrupt_into(kernel)
            if on_ready is not None:
                on_ready(dict(hub.endpoints))
            if start_clients:
                partitions = {t.name: t.partitions for t in options.topics}
                procs = start(live.clients, hub.endpoints, partitions, out_dir, slowdown,
                              options.run.duration_ms)
            try:
                outcome = cluster.run()
            finally:
                restore()
                clients = stop(procs)
                hub.close_all()
                trace.flush()
            run_info = {"end_us": outcome.end_us, "events": outcome.events,
                        "stopped_by": outcome.stopped_by}
            violations, metrics = monitor.finish()
    except KeyboardInterrupt:  # outside the paced loop (starting up, stopping clients)
        stop(procs, 0)
        raise
    run_info["trace_events"] = trace.seq
    verdict = make_verdict(scenario, seed, trace.digest(), violations, metrics, run_info)
    verdict["liveness"] = monitor.liveness
    verdict["live"] = _judge(out_dir, gateways, default, clients, options, live, header["live"])
    if run_info["stopped_by"] == "interrupted" or verdict["live"]["anomalies"] \
            or not all(c["exit"] == 0 for c in clients):
        verdict["expectation_met"] = False
    write_verdict(out_dir, verdict)
    return verdict


def _interrupt_into(kernel):
    """From the moment the listeners are announced, a Ctrl-C (SIGINT) marks `kernel`
    interrupted instead of raising wherever the process happens to be; returns the undo.
    Only the main thread can take signals: elsewhere (a test's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def on_sigint(_signum, _frame):
        kernel.interrupted = True

    previous = signal.signal(signal.SIGINT, on_sigint)
    return lambda: signal.signal(signal.SIGINT, previous)


def _acks(acks: str):
    return "all" if acks in ("all", "-1") else int(acks)


def _owner(client_id: str | None, gateways: dict) -> str | None:
    """The scenario client a connection belongs to, by its client id (`NAME`, or `NAME-...`
    for its reader)."""
    if client_id is None:
        return None
    if client_id in gateways:
        return client_id
    head = client_id.rsplit("-", 1)[0]
    return head if head in gateways else None


def _judge(out_dir: str, gateways: dict, default, clients: list, options, live, info) -> dict:
    """The live part of the verdict: the gateways' operations written to history.jsonl, then
    every history judged."""
    wire_ops = [op for g in [*gateways.values(), default] for op in g.ops]
    with open(os.path.join(out_dir, "history.jsonl"), "w", encoding="utf-8") as fh:
        for op in wire_ops:
            fh.write(json.dumps(op, sort_keys=True) + "\n")
    files = sorted(glob.glob(os.path.join(out_dir, "history-*.jsonl")))
    ours = {f"history-{c.name}.jsonl" for c in live.clients}
    ops = history.load([f for f in files if os.path.basename(f) in ours]) + wire_ops
    partitions = [f"{t.name}-{p}" for t in options.topics for p in range(t.partitions)
                  if any(c.topic == t.name for c in live.clients)]
    return {**info, "clients": clients, "summary": history.summary(ops, partitions),
            "anomalies": history.check(ops)}
