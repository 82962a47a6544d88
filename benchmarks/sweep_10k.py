"""Scaling check for `epochsim sweep`: a 10,000-run sweep keeps the driver's memory flat, and a
sweep killed with SIGKILL and resumed ends with exactly one row per run.

Run: python -m benchmarks.sweep_10k [--seeds N] [--seeds-per-task K] [--master URL] [--keep DIR]

It writes a fast scenario (1 s simulated, random leader moves under delayed LeaderAndIsr) and a
two-cell spec into a work directory, then:
1. runs `epochsim sweep` (2 x N runs, default N = 5000) as a child process and samples the
   resident memory of the driver (the Python process) and of its JVM once a second, with the
   runs finished so far (chunk files on disk);
2. starts the same sweep into a second directory, kills the driver with SIGKILL once half the
   chunks are on disk, reruns it with --resume, and checks with pyarrow.dataset that every
   (cell, seed) has exactly one row and that no half-written file is left.
Prints the samples and a verdict line for each check; exit 1 if a check fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCENARIO = """
name = "scale"
description = "fast: leader moves under delayed LeaderAndIsr, 1 s simulated"
expect = "pass"

[run]
duration_ms = 1000
settle_ms = 300

[protocol]
profile = "3.7"

[[topics]]
name = "t"
replication_factor = 2

[[producers]]
topic = "t"
acks = 1
records_per_sec = 100
linger_ms = 20
metadata_max_age_ms = 100
enable_idempotence = false

[[mix]]
action = "rule"
every_ms = 200
params = { rule = "delay", kind = "LeaderAndIsr", delay_ms = 300 }
duration_ms = 100

[[mix]]
action = "move_leader"
every_ms = 100
targets = ["t-0"]
"""

SPEC = """
name = "scale"
scenarios = ["scale.toml"]
[grid]
"protocol.produce_epoch_check" = [false, true]
"""


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def children(pid: int) -> list[int]:
    """Direct children of `pid` (the driver's JVM is one)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                    fields = fh.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def chunk_files(out: str) -> int:
    rows = os.path.join(out, "rows")
    return sum(1 for _d, _s, files in os.walk(rows) for f in files
               if f.endswith(".parquet") and not f.startswith("."))


def sweep_cmd(spec: str, out: str, args, resume: bool = False) -> list[str]:
    cmd = [sys.executable, "-m", "epochsim", "sweep", spec, "--out", out, "--seeds",
           str(args.seeds), "--jobs-per-task", str(args.seeds_per_task), "--master", args.master]
    return cmd + (["--resume"] if resume else [])


def start(cmd: list[str], log: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    with open(log, "w") as fh:
        # its own session: the cleanup below can end this sweep's whole group, and only it
        return subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, cwd=ROOT,
                                start_new_session=True)


def stop_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def memory_check(spec: str, out: str, args, chunks_total: int) -> bool:
    proc = start(sweep_cmd(spec, out, args), out + ".log")
    samples = []
    t0 = time.monotonic()
    try:
        while proc.poll() is None:
            jvm = max((rss_mb(c) or 0 for c in children(proc.pid)), default=0)
            samples.append((time.monotonic() - t0, chunk_files(out), rss_mb(proc.pid), jvm))
            time.sleep(1.0)
    finally:
        if proc.poll() is None:
            stop_group(proc)
    runs_total = chunks_total * args.seeds_per_task
    print(f"\n1. memory over a {runs_total}-run sweep (exit {proc.returncode}, "
          f"{time.monotonic() - t0:.0f} s)")
    print(f"{'t (s)':>7}{'runs done':>11}{'driver MB':>11}{'JVM MB':>9}")
    running = [s for s in samples if 0 < s[1] < chunks_total and s[2]]
    step = max(1, len(running) // 10)
    for t, files, drv, jvm in running[::step] + running[-1:]:
        print(f"{t:7.0f}{files * args.seeds_per_task:11d}{drv:11.1f}{jvm:9.0f}")
    if len(running) < 4:
        print("too few samples while running to judge")
        return proc.returncode == 0
    first, last = running[len(running) // 10][2], running[-1][2]
    growth = last - first
    flat = growth < 50
    print(f"driver RSS from 10% to the end of the run: {first:.1f} -> {last:.1f} MB "
          f"({growth:+.1f} MB): {'flat' if flat else 'GROWS'}")
    return proc.returncode == 0 and flat


def kill_and_resume_check(spec: str, out: str, args, chunks_total: int) -> bool:
    import pyarrow.dataset as ds

    proc = start(sweep_cmd(spec, out, args), out + ".log")
    try:
        while proc.poll() is None and chunk_files(out) < chunks_total // 2:
            time.sleep(0.2)
        jvm = children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the driver only, as `kill -9` would
        proc.wait()
        time.sleep(3)  # the JVM exits on its own when the driver's pipe closes
        orphans = [p for p in jvm if os.path.exists(f"/proc/{p}")]
    finally:
        stop_group(proc)
    killed_at = chunk_files(out)
    print(f"\n2. killed the driver with SIGKILL at {killed_at}/{chunks_total} chunks; "
          f"JVM left running afterwards: {'yes' if orphans else 'no'}")
    resumed = subprocess.run(sweep_cmd(spec, out, args, resume=True), capture_output=True,
                             text=True, cwd=ROOT,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    table = ds.dataset(os.path.join(out, "rows"), format="parquet",
                       partitioning="hive").to_table(columns=["cell", "seed"])
    keys = list(zip(table.column("cell").to_pylist(), table.column("seed").to_pylist()))
    expected = chunks_total * args.seeds_per_task
    leftovers = [f for _d, _s, files in os.walk(os.path.join(out, "rows")) for f in files
                 if f.startswith(".")]
    ok = (resumed.returncode == 0 and len(keys) == expected == len(set(keys))
          and not leftovers)
    print(f"resume exit {resumed.returncode}: {len(keys)} rows, {len(set(keys))} distinct runs, "
          f"{expected} planned, {len(leftovers)} temp files left: "
          f"{'exactly one row per run' if ok else 'FAILED'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5000, help="seeds per cell (2 cells)")
    parser.add_argument("--seeds-per-task", type=int, default=50)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--keep", metavar="DIR", help="work here and keep the outputs")
    args = parser.parse_args(argv)
    if args.seeds % args.seeds_per_task:
        parser.error("--seeds must be a multiple of --seeds-per-task")
    work = args.keep or tempfile.mkdtemp(prefix="epochsim-sweep10k-")
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "scale.toml"), "w", encoding="utf-8") as fh:
        fh.write(SCENARIO)
    spec = os.path.join(work, "scale-sweep.toml")
    with open(spec, "w", encoding="utf-8") as fh:
        fh.write(SPEC)
    chunks_total = 2 * args.seeds // args.seeds_per_task
    try:
        ok = memory_check(spec, os.path.join(work, "memory"), args, chunks_total)
        ok = kill_and_resume_check(spec, os.path.join(work, "resume"), args, chunks_total) and ok
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
