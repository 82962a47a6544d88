"""One run of one scenario at one seed: trace, invariants, verdict.

Contract: `run_scenario(scenario, seed, out_dir)` materialises the scenario's random fault mixes
into a concrete schedule from the seed (one stream per mix), records the header (scenario, seed,
resolved options, the schedule that ran, invariants, harness version), runs the cluster with the
invariants watching online under the run's time and memory budget (`epochsim.budget`), and
returns the verdict dict; with `out_dir` it writes `trace.jsonl` and `verdict.json` there, each
through a temporary file renamed into place (the old verdict removed first, so none describes
another trace), and an output it cannot write raises `RunWriteError` naming it. The same
(scenario, seed) gives the same trace digest on any machine and under any PYTHONHASHSEED (a
budget never changes a run it does not stop). `stop_at_first` ends the run at the first
safety violation (used by searches; the verdict then says `stopped_early`). Without `out_dir`,
`sink` (a text stream, such as io.StringIO) receives the trace's lines, the same bytes
`trace.jsonl` would hold (the Python API keeps a run's trace so).
`draw_timeline(out_dir)` draws the run's `timeline.png` and writes its interactive
`timeline.html` next to its trace, best effort: a missing plotting library or a drawing error
is a note on stderr, never a failure of the run; it returns the files it wrote.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import contextmanager
from typing import IO

from epochsim.budget import STOP_REASONS, Budget, watcher
from epochsim.budget import current as current_budget
from epochsim.budget import describe as describe_budget
from epochsim.version import __version__
from invariants.registry import Monitor
from scenarios.schema import Scenario
from sim.core.faults import materialise_mix, sorted_schedule
from sim.core.files import atomic_write, discard, temp_path
from sim.core.rng import Streams
from sim.core.trace import Trace
from sim.kafka.cluster import Cluster
from sim.kafka.faults import CUT_ACTIONS


class StopRun(Exception):
    """Raised from the trace observer to end a run at its first violation."""


def schedule_for(scenario: Scenario, seed: int) -> list:
    """The concrete fault schedule this (scenario, seed) runs: scripted steps plus mixes."""
    steps = list(scenario.steps)
    until_us = scenario.options.run.duration_ms * 1000
    streams = Streams(seed)
    for i, mix in enumerate(scenario.mixes):
        steps += materialise_mix(mix, streams.get(f"nemesis/mix/{i}"), until_us, i, CUT_ACTIONS)
    return sorted_schedule(steps)


def header_for(scenario: Scenario, seed: int, schedule: list) -> dict:
    header = {"scenario": scenario.name, "seed": seed, "options": scenario.options.to_json(),
              "schedule": [s.to_json() for s in schedule],
              "invariants": list(scenario.invariants), "expect": scenario.expect,
              "harness_version": __version__}
    if scenario.probe is not None:
        header["probe"] = scenario.probe.to_json()
    return header


def run_scenario(scenario: Scenario, seed: int, out_dir: str | None = None,
                 stop_at_first: bool = False, schedule: list | None = None,
                 keep_events: bool = False, budget: Budget | None = None,
                 sink: IO[str] | None = None) -> dict:
    budget = budget or current_budget()
    watch = watcher(budget)  # the time budget counts from here (a huge mix takes a while)
    schedule = schedule_for(scenario, seed) if schedule is None else sorted_schedule(schedule)
    header = header_for(scenario, seed, schedule)
    if out_dir is None:
        trace, monitor, run_info, found = _run(scenario, seed, header, schedule, sink,
                                               stop_at_first, keep_events, watch)
    else:
        os.makedirs(out_dir, exist_ok=True)
        _remove_old_verdict(os.path.join(out_dir, "verdict.json"))
        with _trace_file(os.path.join(out_dir, "trace.jsonl")) as sink:
            trace, monitor, run_info, found = _run(scenario, seed, header, schedule, sink,
                                                   stop_at_first, keep_events, watch)
    violations, metrics = found
    run_info["trace_events"] = trace.seq  # the count `epochsim check` gives for the trace
    verdict = make_verdict(scenario, seed, trace.digest(), violations, metrics, run_info, budget)
    if scenario.probe is not None:
        add_probe_checks(verdict, run_info.pop("probe_checks"))
    verdict["stopped_early"] = run_info["stopped_by"] == "violation"
    verdict["liveness"] = monitor.liveness
    if keep_events:
        verdict["_events"] = trace.events
    if out_dir is not None:
        write_verdict(out_dir, verdict)
    return verdict


def _remove_old_verdict(path: str) -> None:
    """The verdict of an earlier run here belongs to the trace about to be replaced: remove it
    first, so no kill leaves it beside a new trace; one that cannot be removed (immutable)
    could not be replaced either, so say so before the run, not after it."""
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise _write_error(path, exc) from None


@contextmanager
def _trace_file(path: str):
    """The trace's sink: a temporary file renamed to `path` when the run ends, or on Ctrl-C or
    a model error (what was recorded is a true prefix of the run, without its `end`, as
    `check` and `plot` say); on a write that fails (a full disk) the temporary file is
    removed and a RunWriteError raised."""
    tmp = temp_path(path)
    try:
        sink = open(tmp, "w", encoding="utf-8", buffering=1 << 20)  # noqa: SIM115
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        try:
            yield sink
        finally:
            sink.close()
        os.replace(tmp, path)
    except OSError as exc:  # the file may end mid-line
        discard(tmp)
        raise _write_error(path, exc) from None
    except BaseException:  # Ctrl-C, a model error: whole lines, a true prefix of the run
        _keep_partial(tmp, path)
        raise


def _keep_partial(tmp: str, path: str) -> None:
    try:
        os.replace(tmp, path)
    except OSError:
        discard(tmp)


class RunWriteError(OSError):
    """A run's output file could not be written (full disk, read-only or immutable file):
    `RunWriteError(errno, strerror, path)`, as OSError takes them (so it pickles)."""


def _write_error(path: str, cause: OSError) -> RunWriteError:
    return RunWriteError(cause.errno, cause.strerror or str(cause), path)


def _run(scenario, seed, header, schedule, sink, stop_at_first, keep_events, watch):
    """Build and run the cluster with the invariants watching: (trace, monitor, run_info,
    (violations, metrics))."""
    trace = Trace(header, sink, keep=keep_events)
    monitor = Monitor(trace.header, scenario.invariants)
    trace.observe(monitor.step, monitor.kinds)
    if stop_at_first:  # only an event the monitor folds can make it fail
        trace.observe(lambda ev: _stop_if_failed(monitor), monitor.kinds)
    try:
        if scenario.probe is not None:
            return trace, monitor, _run_probe(scenario, seed, trace), monitor.finish()
        cluster = Cluster(scenario.options, schedule, seed, trace)
        cluster.kernel.watch = watch
        try:
            outcome = cluster.run()
            run_info = {"end_us": outcome.end_us, "events": outcome.events,
                        "stopped_by": outcome.stopped_by}
        except StopRun:
            run_info = {"end_us": cluster.kernel.now_us, "events": cluster.kernel.events,
                        "stopped_by": "violation"}
        found = monitor.finish()
    finally:
        if sink is not None:
            trace.flush()  # also on Ctrl-C: what was recorded reaches the file
    return trace, monitor, run_info, found


def _run_probe(scenario: Scenario, seed: int, trace) -> dict:
    """Run a probe (`sim.kafka.probe`): run_info, with its checks under `probe_checks`."""
    from sim.kafka.probe.run import run_probe
    outcome = run_probe(scenario.options, scenario.probe, seed, trace)
    run = outcome.run
    trace.emit(run.end_us, "harness", "end", {"end_us": run.end_us, "events": run.events,
                                             "stopped_by": run.stopped_by, "settled": True})
    return {"end_us": run.end_us, "events": run.events, "stopped_by": run.stopped_by,
            "probe_checks": outcome.checks}


def add_probe_checks(verdict: dict, checks: list) -> None:
    """A probe's verdict: its checks, met when every one agrees with Kafka, and the first
    disagreement in words."""
    verdict["probe"] = checks
    wrong = [c for c in checks if not c["agree"]]
    verdict["expectation_met"] = not wrong and verdict["run"]["stopped_by"] in ("until", "idle")
    if wrong:
        c = wrong[0]
        verdict["expectation_note"] = (f"step {c['step']} {c['check']}: Kafka {c['kafka']}, "
                                       f"model {c['model']}"
                                       + (f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""))


def _stop_if_failed(monitor) -> None:
    if monitor.failed:
        raise StopRun()


def make_verdict(scenario: Scenario, seed: int, digest: str, violations, metrics, run_info,
                 budget: Budget | None = None) -> dict:
    names = sorted({v.invariant for v in violations})
    cut = cut_short(scenario, run_info, budget)
    verdict = {
        "scenario": scenario.name, "scenario_path": scenario.path, "seed": seed,
        "trace_digest": digest, "invariants": list(scenario.invariants),
        "violations": [v.to_json() for v in violations], "violated": names,
        "expect": scenario.expect,
        "expectation_met": expectation_met(scenario.expect, names, cut is not None),
        "run": run_info, "metrics": metrics, "harness_version": __version__,
    }
    if cut is not None and scenario.expect == "pass":
        verdict["expectation_note"] = cut  # why a run without violations missed its pass
    return verdict


def expectation_met(expect: str, violated: list[str], cut: bool = False) -> bool:
    """Did the run show what `expect` says? A pass needs the whole run: one cut short by
    run.max_events never checked the rest (nor the end-of-run rules), so it proves nothing."""
    if expect == "pass":
        return not violated and not cut
    if expect == "agree":  # a probe: its checks decide (`add_probe_checks`)
        return not cut
    return expect.split(":", 1)[1] in violated


def cut_short(scenario: Scenario, run_info: dict, budget: Budget | None = None) -> str | None:
    """Why the run ended before run.duration_ms without a reason of its own (the event cap, a
    time or memory budget), in words with the fix; None when it ran its course (or stopped at
    a violation on purpose)."""
    run = scenario.options.run
    if run_info["stopped_by"] in STOP_REASONS:
        what, fix = describe_budget(run_info["stopped_by"], budget)
        return (f"stopped at {what} after {run_info['end_us'] / 1e6:.3f}s of "
                f"{run.duration_ms / 1000:.3f}s simulated ({run_info['events']:,} events), "
                f"so the rest was never checked; {fix}")
    if run_info["stopped_by"] != "max_events":
        return None
    return (f"the run stopped at run.max_events = {run.max_events:,} after "
            f"{run_info['end_us'] / 1e6:.3f}s of {run.duration_ms / 1000:.3f}s simulated, so "
            "the rest was never checked; raise run.max_events, or look for what makes so many "
            "events (a timeout or wait of 0 ms, a link without latency)")


def write_verdict(out_dir: str, verdict: dict) -> None:
    """Write OUT/verdict.json whole or not at all (a RunWriteError naming it if not)."""
    public = {k: v for k, v in verdict.items() if not k.startswith("_")}
    path = os.path.join(out_dir, "verdict.json")
    try:
        with atomic_write(path) as fh:
            json.dump(public, fh, indent=2, sort_keys=True)
            fh.write("\n")
    except OSError as exc:
        raise _write_error(path, exc) from None


def draw_timeline(out_dir: str) -> list[str]:
    """Best effort: the timelines are a convenience next to the trace, never a reason to fail.
    Returns the paths written (the picture, the interactive page)."""
    trace = os.path.join(out_dir, "trace.jsonl")
    written = []
    try:
        from reports.interactive import write_interactive

        written.append(write_interactive(trace, os.path.join(out_dir, "timeline.html")))
    except Exception as exc:  # report and carry on; the verdict stands
        print(f"note: interactive timeline not written ({type(exc).__name__}: {exc})",
              file=sys.stderr)
    try:
        from reports.timeline import plot_trace
    except ImportError:
        return written
    try:
        written.insert(0, plot_trace(trace, os.path.join(out_dir, "timeline.png")))
    except Exception as exc:  # report and carry on; the verdict stands
        print(f"note: timeline not drawn ({type(exc).__name__}: {exc})", file=sys.stderr)
    return written
