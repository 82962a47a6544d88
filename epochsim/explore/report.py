"""What explore and shrink print and write once the search is over.

Contract: `finish_explore(result, out, plot)` prints the coverage summary (with the target's
chain, when it has one: how many passing runs got through each step) and, when a
counterexample was found, writes it (`output.write_counterexample`) and prints the shrunk
schedule in plain words, one line a step; it always writes `explore.json`, and returns the
exit code (1 found, 0 not found). `shrink_run(run, target, progress)` minimises a recorded
failing run; `finish_shrink` writes and prints its result the same way. Output lines never
contain timings except the one summary line, so they can be compared across runs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from epochsim.errors import UsageError
from epochsim.explore.coverage import summary
from epochsim.explore.oracle import MODEL_ERROR, Oracle
from epochsim.explore.output import case_json, workload_words, write_counterexample, write_report
from epochsim.explore.shrink import minimise
from epochsim.explore.strategies import Case
from epochsim.explore.words import story


def explore_report(result) -> dict:
    report = {"scenario": result.scenario.name, "search_seed": result.seed,
              "budget": result.budget, "target": result.asked, "found": result.found,
              "fault_kinds": list(result.kinds),
              "invariant": result.invariant, "runs_generated": result.generated,
              "runs_total": result.runs, "runs_to_first_failure": result.runs_to_first,
              "violations_seen": dict(sorted(result.seen.items())),
              "also_broken_without_mutant": result.shared,
              "elapsed_s": round(result.elapsed_s, 3),
              "coverage": result.coverage.to_json(result.invariant or result.asked),
              "coverage_over_time": [list(p) for p in result.over_time],
              "corpus_size": result.corpus_size, "story_steps": result.story,
              "chain": result.chain}
    if result.found:
        report["counterexample"] = case_json(result.case)
        report["first_failure"] = case_json(result.first_case)
    return report


def finish_explore(result, out: str, plot: bool = True) -> int:
    sc = result.scenario
    print(f"explore {sc.name}: {result.generated} runs generated (budget {result.budget}, "
          f"search seed {result.seed}), {result.runs} runs in all, {result.elapsed_s:.1f}s")
    for line in summary(result.coverage, result.invariant or result.asked):
        print(line)
    print(over_time_line(result.over_time, result.corpus_size))
    for line in chain_lines(result.chain, result.asked):
        print(line)
    report = explore_report(result)
    if not result.found:
        what = result.asked or "every invariant"
        print(f"no counterexample: {what} held in all {result.generated} runs")
        write_report(out, report)
        _draw_coverage(out, plot)
        print(f"  wrote {out}/explore.json")
        return 0
    origin = f"Found by epochsim explore (search seed {result.seed})"
    verdict = write_counterexample(out, sc, result.case, result.invariant, origin, plot)
    report["replay"] = _replay_json(verdict)
    write_report(out, report)
    _draw_coverage(out, plot)
    print(f"COUNTEREXAMPLE: {result.invariant} breaks with {len(result.case.steps)} steps "
          f"(first failure at run {result.runs_to_first} with {len(result.first_case.steps)} "
          f"steps; {result.runs - result.runs_to_first} runs spent shrinking)")
    _print_case(result.case, result.invariant, verdict, out, result.error)
    return 1


def chain_lines(chain: list, target: str | None) -> list[str]:
    """How many passing runs got through each step of the target's chain (none without one)."""
    if not chain:
        return []
    lines = [f"  chain to {target} (passing runs that got this far):"]
    lines += [f"    {i}. {step}: {runs} runs" for i, (step, runs) in enumerate(chain, 1)]
    return lines


def over_time_line(points: list, corpus_size: int) -> str:
    """Coverage over time in one line: request situations / features reached after runs 1,
    2, 5, 10, 20, 50... and the last, and the corpus the search kept."""
    if not points:
        return "coverage over time: no run"
    marks, mark = [], 1
    while mark < points[-1][0]:
        marks.append(mark)
        mark = mark * 5 // 2 if str(mark)[0] == "2" else mark * 2
    marks.append(points[-1][0])
    parts = []
    for run in marks:
        reached = [p for p in points if p[0] <= run]
        if reached:
            parts.append(f"{run}: {reached[-1][1]}/{reached[-1][2]}")
    return (f"coverage over time (after run: request situations/features): {', '.join(parts)}; "
            f"{corpus_size} cases kept for reaching something new")


def _draw_coverage(out: str, plot: bool) -> None:
    """Best effort, like the timeline: coverage.png next to explore.json."""
    if not plot:
        return
    import os

    from reports.coverage_curve import plot_coverage
    try:
        plot_coverage(os.path.join(out, "explore.json"), os.path.join(out, "coverage.png"))
    except Exception as exc:  # noqa: BLE001 - a picture is never a reason to fail a search
        print(f"note: coverage curve not drawn ({type(exc).__name__}: {exc})", file=sys.stderr)


def _replay_json(verdict: dict | None) -> dict | None:
    if verdict is None:
        return None
    return {"violated": verdict["violated"], "trace_digest": verdict["trace_digest"],
            "expectation_met": verdict["expectation_met"]}


def _print_case(case, invariant: str, verdict: dict | None, out: str, error: str | None) -> None:
    for line in story(case.steps) or ["(no fault at all)"]:
        print(f"  {line}")
    for line in workload_words(case):
        print(f"  workload: {line}")
    print(f"  run seed {case.seed}")
    if invariant == MODEL_ERROR:
        print("  the model raised an exception:")
        print("    " + (error or "").strip().replace("\n", "\n    "))
    elif verdict is not None:
        first = next((v for v in verdict["violations"] if v["invariant"] == invariant), None)
        if first is None:
            print(f"warning: the replay of {out}/counterexample.toml did not break {invariant}; "
                  "please report this", file=sys.stderr)
        else:
            print(f"  violation at {first['t_us'] / 1e6:.6f}s: {first['message']}")
    print(f"  wrote {', '.join(_written(out))}")
    print(f"  replay: epochsim run {out}/counterexample.toml")


@dataclass
class ShrinkOutcome:
    run: object
    invariant: str
    original: Case
    case: Case
    runs: int


def shrink_run(run, target: str | None, progress) -> ShrinkOutcome:
    """Minimise `run`'s schedule while `target` (default: its first violation) still fails."""
    target = target or run.first_violated
    if target is not None and target not in run.scenario.invariants:
        raise UsageError(f"--target {target}: the run did not check it (it checked "
                         f"{', '.join(run.scenario.invariants)})")
    oracle = Oracle(run.scenario, target)
    original = Case(run.seed, run.steps)
    names = oracle.violated(original)
    if target is None:
        if not names:
            raise UsageError(f"{run.trace_path}: the recorded run breaks no invariant; "
                             "nothing to shrink")
        target = oracle.target = names[0]
    elif target not in names:
        seen = ", ".join(names) or "nothing"
        raise UsageError(f"{run.trace_path}: replaying the recorded schedule no longer breaks "
                         f"{target} (it breaks {seen}); was the run made by another version?")
    progress(f"{target} fails with {len(original.steps)} steps; minimising")
    case = minimise(oracle.fails, original, progress)
    return ShrinkOutcome(run, target, original, case, oracle.runs)


def finish_shrink(outcome: ShrinkOutcome, out: str, plot: bool = True) -> int:
    sc = outcome.run.scenario
    origin = f"Shrunk by epochsim shrink from a run of {sc.name} at seed {outcome.run.seed}"
    verdict = write_counterexample(out, sc, outcome.case, outcome.invariant, origin, plot)
    write_report(out, {"scenario": sc.name, "invariant": outcome.invariant,
                       "runs_total": outcome.runs, "original": case_json(outcome.original),
                       "counterexample": case_json(outcome.case),
                       "replay": _replay_json(verdict)})
    print(f"shrink {sc.name} seed {outcome.run.seed}: {outcome.invariant} still breaks with "
          f"{len(outcome.case.steps)} of {len(outcome.original.steps)} steps "
          f"({outcome.runs} runs)")
    _print_case(outcome.case, outcome.invariant, verdict, out, None)
    return 1


def _written(out: str) -> list[str]:
    """Every file of `out` an explore or shrink writes (counterexample, trace, verdict,
    explore.json and the pictures), as paths."""
    import os

    from epochsim.common import OWN_OUTPUTS
    return [os.path.join(out, f) for f in sorted(os.listdir(out)) if f in OWN_OUTPUTS]
