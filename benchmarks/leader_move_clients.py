"""Study (not a test): how long each client takes to write to a moved leader, on one scenario.

The scenario is `scenarios/live/librdkafka-leader-move-fresh-hint.toml`: three brokers, the
leader of t-0 moves from b1 to b2 at 1.0 s while b1's and b3's metadata caches lag 1.5 s; one
idempotent producer sends 100 records/s over two partitions. Each row runs it with one client:
- librdkafka (confluent-kafka) and kafka-python live (`epochsim serve`), with the brokers'
  KIP-951 hint from their replica state (fresh) or from their metadata cache (stale), `--repeat`
  times each (a live run is not replayable);
- aiokafka inside the simulation (Mode A; it sends no KIP-951 request version) and the model's
  own 3.7 client in each `leader_discovery` mode (kip951, metadata, refresh_no_backoff), seeds
  1..`--repeat`; the model's brokers hint from their replica state.
It prints one markdown row per client and mode: the median and range of the time from the move
to the new leader's first acknowledgement of t-0, the Metadata requests and refused Produces
in between (medians), and how many runs held every invariant.

    python -m benchmarks.leader_move_clients [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import tomllib

import tomli_w

from epochsim.live.moves import leader_move, read_events
from epochsim.live.serve import serve
from epochsim.runner import run_scenario
from scenarios.schema import load_scenario

SCENARIO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "scenarios", "live", "librdkafka-leader-move-fresh-hint.toml")


def live_rows(kind: str, hint: str, repeat: int, tmp: str) -> dict:
    overrides = {"live.hint": hint, "live_clients.0.kind": kind}
    runs = []
    for i in range(repeat):
        out = os.path.join(tmp, f"{kind}-{hint}-{i}")
        verdict = serve(load_scenario(SCENARIO, overrides), out)
        move = leader_move(read_events(os.path.join(out, "trace.jsonl")), "rd1", "t-0")
        runs.append((move, verdict["expectation_met"]))
    return summarise(runs)


def simulated_rows(client: str, discovery: str, repeat: int, tmp: str) -> dict:
    with open(SCENARIO, "rb") as fh:
        data = tomllib.load(fh)
    data.pop("live")
    data.pop("live_clients")
    data["protocol"]["leader_discovery"] = discovery
    data["producers"] = [{"name": "p1", "client": client, "topic": "t",
                          "enable_idempotence": "required", "records_per_sec": 100,
                          "linger_ms": 5, "start_ms": 300, "stop_ms": 1800}]
    path = os.path.join(tmp, f"{client}-{discovery}.toml")
    with open(path, "wb") as fh:
        fh.write(tomli_w.dumps(data).encode())
    runs = []
    for seed in range(1, repeat + 1):
        out = os.path.join(tmp, f"{client}-{discovery}-{seed}")
        verdict = run_scenario(load_scenario(path), seed, out)
        move = leader_move(read_events(os.path.join(out, "trace.jsonl")), "p1", "t-0")
        runs.append((move, verdict["expectation_met"]))
    return summarise(runs)


def summarise(runs: list) -> dict:
    lat = [m["latency_ms"] for m, _ in runs if m["latency_ms"] is not None]
    return {"latency": statistics.median(lat) if lat else None,
            "range": (min(lat), max(lat)) if lat else None,
            "metadata": statistics.median(m["metadata_requests"] for m, _ in runs),
            "refused": statistics.median(m["errors"] for m, _ in runs),
            "held": sum(1 for _, ok in runs if ok), "runs": len(runs)}


def row(client: str, mode: str, s: dict) -> str:
    lat = "never" if s["latency"] is None else \
        f"{s['latency']:.0f} ms ({s['range'][0]:.0f}-{s['range'][1]:.0f})"
    return (f"| {client} | {mode} | {lat} | {s['metadata']:g} | {s['refused']:g} | "
            f"{s['held']}/{s['runs']} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    a = p.parse_args()
    print("| client | KIP-951 mode | move to first ack on b2 (median, range) | Metadata "
          "requests | refused Produces | runs holding |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="leader-move-") as tmp:
        for kind, name in (("confluent-kafka", "librdkafka 2.16"), ("kafka-python", "kafka-python 3.0")):
            for hint in ("replica", "cache"):
                mode = "fresh hint (replica state)" if hint == "replica" else "stale hint (cache)"
                print(row(f"{name} (live)", mode, live_rows(kind, hint, a.repeat, tmp)), flush=True)
        print(row("aiokafka 0.14 (simulated)", "none (Produce v7)",
                  simulated_rows("aiokafka", "kip951", a.repeat, tmp)), flush=True)
        for discovery in ("kip951", "metadata", "refresh_no_backoff"):
            print(row("model 3.7 client (simulated)", f"leader_discovery = {discovery}",
                      simulated_rows("model", discovery, a.repeat, tmp)), flush=True)


if __name__ == "__main__":
    main()
