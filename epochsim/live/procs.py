"""The client processes a live run starts, and their end.

Contract: `start(clients, endpoints, partitions, out_dir, slowdown, duration_ms)` starts one
`epochsim.live.driver` process per `LiveClient` (its own session, so a Ctrl-C meant for the
server does not reach it first), its output in `OUT/client-<name>.log` and its history in
`OUT/history-<name>.jsonl`; its deadline is the run's end in wall seconds less a margin, so it
finishes while the cluster still answers. `stop(procs, grace_s)` waits up to `grace_s` for
them, then kills the ones still running (by their own pid) and returns each one's
`{"name", "kind", "exit", "killed", "log", "history"}`. `missing(kind)` names the client
library a kind needs when it is not installed (None when it is).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

MODULES = {"confluent-kafka": "confluent_kafka", "kafka-python": "kafka"}
# wall seconds a client stops before the run's end, so its last reads still get answers
MARGIN_S = 0.5


def missing(kind: str) -> str | None:
    need = [MODULES[kind], "kafka"]  # every client reads back with kafka-python's consumer
    for module in need:
        if importlib.util.find_spec(module) is None:
            return module.replace("_", "-") if module != "kafka" else "kafka-python"
    return None


def start(clients, endpoints: dict, partitions: dict, out_dir: str, slowdown: float,
          duration_ms: int) -> list:
    # the driver is this package's own, wherever the server was started from
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    bootstrap = ",".join(f"{h}:{p}" for _b, (h, p) in sorted(endpoints.items()))
    run_s = duration_ms / 1000 * slowdown
    procs = []
    for c in clients:
        log = os.path.join(out_dir, f"client-{c.name}.log")
        history = os.path.join(out_dir, f"history-{c.name}.jsonl")
        args = [sys.executable, "-m", "epochsim.live.driver", "--kind", c.kind, "--name", c.name,
                "--bootstrap", bootstrap, "--topic", c.topic,
                "--partitions", str(partitions[c.topic]), "--history", history,
                "--records", str(c.records), "--rate", str(c.records_per_sec / slowdown),
                "--start-delay", str(c.start_ms / 1000 * slowdown), "--acks", c.acks,
                "--idempotence", str(int(c.enable_idempotence)),
                "--linger-ms", str(c.linger_ms), "--read-back", str(int(c.read_back)),
                "--deadline", str(max(1.0, run_s - MARGIN_S))]
        with open(log, "w", encoding="utf-8") as out:
            proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path})
        procs.append((c, proc, log, history))
    return procs


def stop(procs: list, grace_s: float = 2.0) -> list[dict]:
    deadline = time.monotonic() + grace_s
    out = []
    for c, proc, log, history in procs:
        killed = False
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.terminate()  # the driver writes its threads' stacks to its log, then ends
            try:
                proc.wait(0.5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            killed = True
        out.append({"name": c.name, "kind": c.kind, "exit": proc.returncode, "killed": killed,
                    "log": os.path.basename(log), "history": os.path.basename(history)})
    return out
