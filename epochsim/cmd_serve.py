"""`epochsim serve`: the simulated cluster live on loopback, for real Kafka clients."""

from __future__ import annotations

import argparse

from epochsim.common import add_override_args, load, parse_sets, prepare_out_dir, seed_arg
from epochsim.errors import UsageError
from epochsim.runstore import new_run_dir, refuse_held_run

HELP = """\
Run SCENARIO's simulated cluster live: paced by the wall clock (one simulated second takes
--slowdown wall seconds; raise it to widen race windows), each broker behind a TCP listener on
127.0.0.1 that speaks Kafka's wire protocol (Metadata answers advertise those ports), the
scenario's scripted faults included. Real clients connect there: the ones the scenario's
[[live_clients]] name (confluent-kafka/librdkafka or kafka-python, started here with a bounded
run time, killed at the end, their output in DIR/client-NAME.log), or your own (the ports are
printed when the listeners are up). When the run ends it writes DIR/trace.jsonl and
DIR/verdict.json (the same invariants as `epochsim run`) and judges what each client saw
(DIR/history-NAME.jsonl: sends, acknowledgements with offsets, errors, records read) for a
lost acknowledged write, a duplicate, records out of order, a record read that was never
written and a client going back to an older leader epoch. Ctrl-C writes what it has.
A live run is not replayable (frames arrive when the wall clock says); --seed still fixes the
model's own randomness and fault mixes.
Exit 0 when the invariants hold, the histories show no anomaly and every client finished;
1 otherwise; 2 on bad input.

  epochsim serve scenarios/live/librdkafka-leader-move-fresh-hint.toml
  epochsim serve scenarios/live/librdkafka-leader-move-fresh-hint.toml --slowdown 3
  epochsim serve SCENARIO --no-clients --slowdown 10   # point your own client at the ports"""


def register(subs) -> None:
    p = subs.add_parser("serve", help="run a scenario live on loopback for real Kafka clients",
                        description=HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", metavar="SCENARIO.toml")
    p.add_argument("--seed", type=seed_arg, help="random seed (default: the scenario's `seed`)")
    p.add_argument("-o", "--out", metavar="DIR",
                   help="output directory (default: a new runs/<scenario>/<time>-seed-<N>)")
    p.add_argument("--force", action="store_true",
                   help="let --out replace the run a directory already holds")
    p.add_argument("--slowdown", type=_slowdown, metavar="X",
                   help="wall seconds per simulated second, 0.1-100 (default: the scenario's "
                        "[live] slowdown, else 1)")
    p.add_argument("--no-clients", action="store_true",
                   help="start no client process: serve the ports for clients of your own")
    add_override_args(p)
    p.set_defaults(func=main)


def _slowdown(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not a number") from None
    if not 0.1 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{value}: must be between 0.1 and 100")
    return value


def main(args) -> int:
    from epochsim.live import procs
    from epochsim.live.serve import serve
    overrides = parse_sets(args.sets, args.profile)
    scenario = load(args.scenario, overrides)
    seed = scenario.seed if args.seed is None else args.seed
    clients = scenario.live.clients if scenario.live is not None else ()
    if not args.no_clients:
        for c in clients:
            absent = procs.missing(c.kind)
            if absent:
                raise UsageError(f"{args.scenario}: live_clients {c.name!r} needs the Python "
                                 f"package {absent}, which is not installed; pip install {absent}"
                                 ", or serve with --no-clients")
    allowed = {"history.jsonl"} | {f"client-{c.name}.log" for c in clients} \
        | {f"history-{c.name}.jsonl" for c in clients}
    if args.out:
        refuse_held_run(args.out, args.force)
        out = prepare_out_dir(args.out, _own(allowed))
    else:
        out = prepare_out_dir(new_run_dir("runs", scenario.name, seed), _own(allowed))
    verdict = serve(scenario, out, seed, args.slowdown, not args.no_clients, _ready)
    print_summary(verdict, out)
    return 0 if verdict["expectation_met"] and not verdict["violations"] else 1


def _own(extra: set) -> set:
    from epochsim.common import OWN_OUTPUTS
    return set(OWN_OUTPUTS) | extra


def _ready(endpoints: dict) -> None:
    ports = "  ".join(f"b{b} {h}:{p}" for b, (h, p) in sorted(endpoints.items()))
    print(f"serving {ports}", flush=True)


def print_summary(verdict: dict, out: str) -> None:
    run, live = verdict["run"], verdict["live"]
    status = "VIOLATED" if verdict["violations"] else "ok"
    print(f"{verdict['scenario']} (live, slowdown {live['slowdown']}): {status}  "
          f"({run['end_us'] / 1e6:.3f}s simulated, stopped by {run['stopped_by']})")
    for v in verdict["violations"][:5]:
        print(f"  VIOLATION {v['invariant']} at {v['t_us'] / 1e6:.6f}s: {v['message']}")
    s = live["summary"]
    print(f"  clients saw: {s['send']} sends, {s['ack']} acks, {s['error']} errors, "
          f"{s['read']} records read" + (f"; never read to the end: {', '.join(s['unread_partitions'])}"
                                         if s["unread_partitions"] else ""))
    for c in live["clients"]:
        how = "killed" if c["killed"] else f"exit {c['exit']}"
        print(f"  client {c['name']} ({c['kind']}): {how}, output {out}/{c['log']}")
    for a in live["anomalies"][:5]:
        print(f"  ANOMALY {a['check']}: {a['message']}")
    exp = "met" if verdict["expectation_met"] else "NOT met"
    print(f"  expectation {verdict['expect']!r}: {exp}")
    print(f"  wrote {out}/trace.jsonl, {out}/verdict.json, {out}/history.jsonl")
