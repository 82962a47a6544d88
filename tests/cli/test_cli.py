"""CLI behaviour: exit codes, one-line errors for bad input, outputs written, nothing clobbered."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

import pytest

from tests.conftest import ROOT, scenario_path

GOOD = """
expect = "pass"
[run]
duration_ms = 3000
settle_ms = 1000
[[topics]]
name = "t"
[[producers]]
topic = "t"
records_per_sec = 100
linger_ms = 20
"""


def cli(*args, cwd=ROOT):
    proc = subprocess.run([sys.executable, "-m", "epochsim", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def write(tmp_path, text, name="s.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


BAD_INPUTS = {
    "invalid_toml": "expect = \n",
    "unknown_key": GOOD + "\nbogus = 1\n",
    "wrong_type": GOOD.replace("duration_ms = 3000", 'duration_ms = "long"'),
    "negative_delay": GOOD + '\n[[faults]]\nat_ms = 100\naction = "rule"\nrule = "delay"\ndelay_ms = -5\n',
    "missing_broker": GOOD + '\n[[faults]]\nat_ms = 100\naction = "crash"\ntarget = "b9"\n',
    "unknown_action": GOOD + '\n[[faults]]\nat_ms = 100\naction = "explode"\n',
    "bad_profile": GOOD + '\n[protocol]\nprofile = "9.9"\n',
    "bad_expect": GOOD.replace('expect = "pass"', 'expect = "violation:nope"'),
    "rf_too_big": GOOD.replace('name = "t"', 'name = "t"\nreplication_factor = 7'),
    "unknown_topic": GOOD.replace('topic = "t"', 'topic = "zz"'),
    "bool_as_int": GOOD.replace("duration_ms = 3000", "duration_ms = true"),
    "fault_after_end": GOOD + '\n[[faults]]\nat_ms = 99999\naction = "crash"\ntarget = "b1"\n',
    "nested_too_deep": GOOD + "\nnotes = " + "[" * 3000 + "]" * 3000 + "\n",
    "jitter_beyond_a_day": GOOD + "\n[network]\njitter_ms = 1e308\n",
    "lognormal_sigma_huge": GOOD + '\n[network]\nlatency = { dist = "lognormal", median_ms = 1, sigma = 1e300 }\n',
    "name_not_a_directory": 'name = "../x"\n' + GOOD,
    "name_like_an_output": 'name = "suite.json"\n' + GOOD,
    "zero_request_timeout": GOOD.replace("linger_ms = 20", "linger_ms = 20\nrequest_timeout_ms = 0"),
    "non_ascii_partition": GOOD + '\n[[faults]]\nat_ms = 100\naction = "crash"\ntarget = "leader:t-\u00b2"\n',
    "mix_faster_than_a_ms": GOOD + '\n[[mix]]\naction = "heal"\nevery_ms = 1e-9\n',
}


@pytest.mark.parametrize("kind", sorted(BAD_INPUTS))
def test_bad_scenario_exits_2_with_one_line(tmp_path, kind):
    path = write(tmp_path, BAD_INPUTS[kind])
    code, out, err = cli("run", path, "--out", str(tmp_path / "o"), "--no-plot")
    assert code == 2
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1 and path in lines[0], err
    assert "Traceback" not in err


def test_missing_file_and_bad_flags(tmp_path):
    for args in (["run", str(tmp_path / "none.toml")], ["run", scenario_path("smoke"), "--seed", "x"],
                 ["run", scenario_path("smoke"), "--bogus"], ["check", str(tmp_path / "none.jsonl")],
                 ["run", scenario_path("smoke"), "--set", "novalue"],
                 ["run", scenario_path("smoke"), "--profile", "0.1"]):
        code, _, err = cli(*args)
        assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, (args, err)


def test_count_and_seed_flags_are_named_in_their_errors(capsys):
    from epochsim.cli import main
    cases = [(["suite", "x.toml", "--seeds", "0"], "--seeds", "positive"),
             (["suite", "x.toml", "--jobs", "x"], "--jobs", "not an integer"),
             (["run", "x.toml", "--seed", "-1"], "--seed", "between 0 and 2**53"),
             (["run", "x.toml", "--seed", str(2**53 + 1)], "--seed", "between 0 and 2**53"),
             (["explore", "x.toml", "--budget", "0"], "--budget", "positive")]
    for args, flag, words in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"argument {flag}: " in err and words in err, (args, err)


def test_run_writes_trace_and_verdict_and_exit_codes(tmp_path):
    out = tmp_path / "ok"
    code, stdout, _ = cli("run", write(tmp_path, GOOD), "--seed", "3", "--out", str(out), "--no-plot")
    assert code == 0
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["seed"] == 3 and verdict["violations"] == []
    assert {"scenario", "trace_digest", "invariants", "metrics", "liveness"} <= set(verdict)
    assert "repro: epochsim run" in stdout and "--seed 3" in stdout
    # each after-heal rule, and stray_replica, says what it judged, in the verdict and on the
    # screen (the metrics count the after-heal rules' judgements)
    assert set(verdict["metrics"]["liveness_judged"]) == {
        "under_replicated_after_heal", "produce_stalled_after_heal", "consume_stalled_after_heal"}
    assert set(verdict["liveness"]) == {"stray_replica", *verdict["metrics"]["liveness_judged"]}
    for name, note in verdict["liveness"].items():
        assert f"  liveness {name}: {note}" in stdout
    bad = tmp_path / "bad"
    code, stdout, _ = cli("run", scenario_path("kip570-stop-replica-reorder-legacy"), "--out", str(bad), "--no-plot")
    assert code == 1 and "stop_replica_out_of_order" in stdout
    v = json.loads((bad / "verdict.json").read_text())["violations"][0]
    assert {"invariant", "t_us", "message", "seqs"} <= set(v) and v["seqs"]


def test_check_agrees_with_run_and_rejects_corrupt_traces(tmp_path):
    out = tmp_path / "r"
    cli("run", scenario_path("kip570-stop-replica-reorder-legacy"), "--out", str(out), "--no-plot")
    trace = out / "trace.jsonl"
    code, stdout, _ = cli("check", str(trace))
    assert code == 1 and "stop_replica_out_of_order" in stdout
    # the same words on what the liveness rules judged as the run's verdict
    notes = json.loads((out / "verdict.json").read_text())["liveness"]
    assert notes and all(f"  liveness {k}: {v}" in stdout for k, v in notes.items())
    lines = trace.read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(lines[:1] + lines[2:]) + "\n")
    (tmp_path / "junk.jsonl").write_text(lines[0] + "\n{not json\n")
    (tmp_path / "nohead.jsonl").write_text("\n".join(lines[1:]) + "\n")
    for name in ("cut.jsonl", "junk.jsonl", "nohead.jsonl"):
        code, _, err = cli("check", str(tmp_path / name))
        assert code == 2 and len(err.strip().splitlines()) == 1, (name, err)


def test_out_dir_with_foreign_files_is_not_clobbered(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    code, _, err = cli("run", scenario_path("smoke"), "--out", str(out), "--no-plot")
    assert code == 2 and "notes.txt" in err
    assert (out / "notes.txt").read_text() == "mine"


def test_check_determinism_flag():
    code, stdout, _ = cli("run", scenario_path("kip359-stale-leader-legacy"), "--check-determinism")
    assert code == 0 and "deterministic" in stdout


def test_suite_exit_codes_and_table(tmp_path):
    code, stdout, _ = cli("suite", scenario_path("kip570-stop-replica-reorder-legacy"),
                          scenario_path("kip570-stop-replica-reorder-fixed"), "--seeds", "2",
                          "--out", str(tmp_path / "s"), "--jobs", "2")
    assert code == 0 and "2/2 scenarios met" in stdout
    code, stdout, _ = cli("suite", scenario_path("kip570-stop-replica-reorder-fixed"), "--seeds", "1",
                          "--profile", "2.5", "--out", str(tmp_path / "s2"))
    assert code == 1 and "repro: epochsim run" in stdout and "--set protocol.profile=2.5" in stdout
    rows = json.loads((tmp_path / "s2" / "suite.json").read_text())["rows"]
    assert rows[0]["first_failing_seed"] == 1
    # in how many runs each liveness rule judged something: in suite.json and in the table
    judged = rows[0]["liveness_judged"]
    assert set(judged) == {"under_replicated_after_heal", "produce_stalled_after_heal",
                           "consume_stalled_after_heal"} and set(judged.values()) <= {0, 1}
    line = next(line for line in stdout.splitlines() if line.startswith(rows[0]["scenario"]))
    summary = "/".join(str(judged[k]) for k in ("under_replicated_after_heal",
                                                "produce_stalled_after_heal",
                                                "consume_stalled_after_heal"))
    assert "judged U/P/C" in stdout and f"  {summary}  " in line, line


def test_a_release_between_the_old_profiles_runs_by_its_name(tmp_path):
    """`--profile 3.6` (once refused) runs, and the trace header names the profile."""
    out = tmp_path / "r"
    code, stdout, err = cli("run", scenario_path("smoke"), "--profile", "3.6", "--out", str(out),
                            "--no-plot")
    assert code == 0 and not err.strip(), err
    assert "--set protocol.profile=3.6" in stdout
    with open(out / "trace.jsonl", encoding="utf-8") as trace:
        header = json.loads(trace.readline())
    assert header["options"]["protocol"]["profile"] == "3.6"
    assert header["options"]["protocol"]["leader_discovery"] == "metadata"  # KIP-951 is 3.7


def test_a_profile_given_with_set_is_a_name_and_its_repro_line_replays(tmp_path):
    """`--set protocol.profile=2.5` reads 2.5 as a TOML float; a profile is a name."""
    code, stdout, err = cli("run", scenario_path("kip570-stop-replica-reorder-fixed"), "--seed", "1",
                            "--set", "protocol.profile=2.5", "--out", str(tmp_path / "a"), "--no-plot")
    assert code == 1 and not err.strip(), err  # 2.5 lacks KIP-570: the reorder breaks it
    repro = next(line for line in stdout.splitlines() if "repro:" in line).split("repro: ", 1)[1]
    args = shlex.split(repro)[1:] + ["--out", str(tmp_path / "b"), "--no-plot"]
    assert cli(*args)[0] == 1
    first, second = ((tmp_path / d / "verdict.json").read_text() for d in ("a", "b"))
    assert json.loads(first)["trace_digest"] == json.loads(second)["trace_digest"]


def test_help_teaches():
    code, stdout, _ = cli("--help")
    assert code == 0 and "epochsim run" in stdout and "Exit codes" in stdout
    code, stdout, _ = cli("run", "--help")
    assert code == 0 and "--seed" in stdout and "--check-determinism" in stdout


def _mangled_traces(trace_lines: list[str]) -> dict[str, bytes]:
    """Stored traces broken in the ways a file on disk can be: encoding, JSON, header, fields."""
    header, events = json.loads(trace_lines[0]), trace_lines[1:]
    first_replicate = next(i for i, ln in enumerate(events) if '"kind":"replicate"' in ln)

    def with_header(**changes) -> bytes:
        return "\n".join([json.dumps({**header, **changes})] + events).encode() + b"\n"

    def with_event(i: int, **changes) -> bytes:
        ev = json.loads(events[i])
        ev.update(changes)
        lines = [trace_lines[0]] + events[:i] + [json.dumps(ev)] + events[i + 1:]
        return "\n".join(lines).encode() + b"\n"

    whole = "\n".join(trace_lines).encode() + b"\n"
    return {
        "not_utf8": whole.replace(b'"kind"', b'"k\xffind"', 3),
        "deep_json": (trace_lines[0] + "\n" + "[" * 5000 + "]" * 5000 + "\n").encode(),
        "huge_number": (trace_lines[0] + '\n{"seq":' + "9" * 5000 + "}\n").encode(),
        "options_not_object": with_header(options=5),
        "options_missing": "\n".join([json.dumps({k: v for k, v in header.items() if k != "options"})]
                                     + events).encode() + b"\n",
        "brokers_missing": with_header(options={**header["options"], "cluster": {}}),
        "protocol_not_object": with_header(options={**header["options"], "protocol": "x"}),
        "unknown_invariant": with_header(invariants=["nope"]),
        "field_wrong_shape": with_event(first_replicate, batches="x"),
        "time_not_int": with_event(0, t="soon"),
    }


def test_check_and_report_reject_mangled_traces_with_one_line(tmp_path, capsys):
    from epochsim.cli import main

    out = tmp_path / "r"
    assert main(["run", scenario_path("smoke"), "--out", str(out), "--no-plot"]) == 0
    lines = (out / "trace.jsonl").read_text().splitlines()
    capsys.readouterr()
    for name, data in _mangled_traces(lines).items():
        path = tmp_path / name / "trace.jsonl"
        path.parent.mkdir()
        path.write_bytes(data)
        for command in (["check", str(path)], ["report", str(path.parent)]):
            code = main(command)
            err = capsys.readouterr().err
            assert code == 2, (name, command, err)
            assert len(err.strip().splitlines()) == 1 and str(path) in err, (name, command, err)


def test_every_reader_names_an_event_field_of_the_wrong_type(tmp_path, capsys):
    from epochsim.cli import main

    out = tmp_path / "r"
    assert main(["run", scenario_path("smoke"), "--out", str(out), "--no-plot"]) == 0
    lines = (out / "trace.jsonl").read_text().splitlines()
    i = next(i for i, ln in enumerate(lines) if '"kind":"send"' in ln)
    ev = json.loads(lines[i])
    ev["dst"] = [1]  # the invariants never read a send's dst; the docs say it is a string
    lines[i] = json.dumps(ev)
    (out / "trace.jsonl").write_text("\n".join(lines) + "\n")
    (out / "verdict.json").unlink()
    capsys.readouterr()
    for command in ("check", "report", "plot"):
        assert main([command, str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and f"trace.jsonl:{i + 1}: event seq {ev['seq']}: field dst of a " \
            "send is [1], not a string" in err, err


def test_out_dirs_that_cannot_be_used_are_refused_not_raised(tmp_path):
    (tmp_path / "file.txt").write_text("mine")
    taken = tmp_path / "taken"
    (taken / "trace.jsonl").mkdir(parents=True)  # a folder where the trace file would go
    for out in (tmp_path / "file.txt" / "sub", taken):
        code, _, err = cli("run", scenario_path("smoke"), "--out", str(out), "--no-plot")
        assert code == 2 and len(err.strip().splitlines()) == 1 and str(out) in err, err
    assert (tmp_path / "file.txt").read_text() == "mine" and (taken / "trace.jsonl").is_dir()


def test_report_refuses_an_edited_verdict_with_one_line(tmp_path, capsys):
    from epochsim.cli import main

    out = tmp_path / "r"
    assert main(["run", scenario_path("kip570-stop-replica-reorder-legacy"), "--out", str(out),
                 "--no-plot"]) == 1
    verdict = json.loads((out / "verdict.json").read_text())
    verdict["violations"] = [5]  # still the verdict of this trace: same digest
    (out / "verdict.json").write_text(json.dumps(verdict))
    capsys.readouterr()
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(out) in err, err


def test_outputs_never_replace_a_users_file(tmp_path, capsys):
    from epochsim.cli import main

    out = tmp_path / "r"
    assert main(["run", scenario_path("smoke"), "--out", str(out), "--no-plot"]) == 0
    mine_html, mine_png = tmp_path / "mine.html", tmp_path / "vacation.png"
    mine_html.write_text("MY PAGE")
    mine_png.write_text("MY PICTURE")
    capsys.readouterr()
    for command in (["report", str(out), "-o", str(mine_html)],
                    ["report", str(out), "-o", str(tmp_path / "notes.txt")],
                    ["plot", str(out / "trace.jsonl"), "-o", str(mine_png)]):
        assert main(command) == 2, command
        assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert mine_html.read_text() == "MY PAGE" and mine_png.read_text() == "MY PICTURE"
    assert main(["report", str(out), "-o", str(out / "report.html")]) == 0  # its own: replaced
    assert main(["report", str(out), "-o", str(out / "report.html")]) == 0


def test_suite_refuses_two_scenarios_with_one_name(tmp_path, capsys):
    from epochsim.cli import main

    a, b = write(tmp_path, 'name = "same"\n' + GOOD, "a.toml"), write(tmp_path, 'name = "same"\n' + GOOD, "b.toml")
    assert main(["suite", a, b, "--out", str(tmp_path / "o")]) == 2
    assert "same" in capsys.readouterr().err


def test_selftest_needs_at_least_one_mutant(capsys):
    from epochsim.cli import main

    for names, words in ((",", "name at least one mutant"), ("", "--mutants: '' is empty")):
        # an empty list is a mistake, not "all of them"
        assert main(["selftest", "--mutants", names]) == 2
        assert words in capsys.readouterr().err


def test_selftest_orders_tasks_costliest_first_and_reports_them_in_task_order(tmp_path):
    from epochsim.cmd_selftest import _cost
    from epochsim.explore.selftest import base_path, clean_task, mutant_task

    quick, long_ = "requested_as_required", "quorum_leader_never_resigns"  # 6 s and 30 s bases
    jobs = [(mutant_task, (quick,)), (mutant_task, (long_,)), (clean_task, (base_path(quick),))]
    order = sorted(range(3), key=lambda i: _cost(jobs[i]), reverse=True)
    assert order == [2, 1, 0]  # a correct-model base runs its whole budget: it goes first
    out = tmp_path / "st"
    code, _out, err = cli("selftest", "--mutants", f"{quick},client_keeps_first_leader",
                          "--no-clean", "--no-plot", "--jobs", "2", "--budget", "5", "--seed",
                          "1", "-o", str(out))
    assert code == 0, err
    rows = json.loads((out / "selftest.json").read_text())["mutants"]
    assert [r["mutant"] for r in rows] == [quick, "client_keeps_first_leader"]
    assert all(r["found"] for r in rows)


def test_selftest_shrinks_with_its_own_budget(tmp_path, monkeypatch):
    from epochsim.explore import search
    asked, real = [], search.explore

    def recorded(*args, **kwargs):
        asked.append(kwargs["max_shrink_runs"])
        return real(*args, **kwargs)

    monkeypatch.setattr(search, "explore", recorded)
    out = tmp_path / "st"
    from epochsim.cli import main
    code = main(["selftest", "--mutants", "requested_as_required", "--no-clean", "--no-plot",
                 "--jobs", "1", "--budget", "5", "--shrink-runs", "7", "-o", str(out)])
    assert code == 0
    assert asked == [7] and json.loads((out / "selftest.json").read_text())["shrink_runs"] == 7
    assert cli("selftest", "--shrink-runs", "0")[0] == 2


def test_selftest_searches_the_correct_model_of_each_distinct_story():
    """Bases that share options and invariants but not their scripted steps are searched
    apart: a story is every case's start. controller_reuses_leader_epoch's base shuts its
    leader down and restarts it; the others of its configuration script nothing."""
    from epochsim.explore.selftest import clean_bases

    groups = clean_bases(["no_stop_replica_epoch_check", "lai_accepts_older_epoch",
                          "controller_reuses_leader_epoch"])
    assert sorted(sorted(mutants) for _path, mutants in groups) == [
        ["controller_reuses_leader_epoch"], ["lai_accepts_older_epoch", "no_stop_replica_epoch_check"]]

