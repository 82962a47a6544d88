"""The cluster path, run for real: a Spark standalone master and one worker on 127.0.0.1,
started with PySpark's own launcher (`spark-class`), a tiny sweep with `--master
spark://127.0.0.1:PORT`, and its rows compared with local mode's (the same digests, seed for
seed). Both processes are stopped, also when the test fails. The sweeps run in this
process, one after the other, on one driver JVM."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest

pyspark = pytest.importorskip("pyspark")
ds = pytest.importorskip("pyarrow.dataset")

from tests.sweep import TINY  # noqa: E402

SPEC = 'name = "cluster"\nscenarios = ["tiny.toml"]\nseeds = 3\nseeds_per_task = 2\n'
START_S = 90  # for the master to listen and the worker to register, on a busy machine


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spark_class() -> str:
    path = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    if not os.path.isfile(path) or not shutil.which("java"):
        pytest.skip("needs PySpark's spark-class and a java on PATH")
    return path


def spark_env(tmp_path) -> dict:
    return dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable,
                SPARK_LOG_DIR=str(tmp_path / "logs"), SPARK_WORKER_DIR=str(tmp_path / "work"),
                # no REST submission server: it would take the fixed port 6066
                SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
                PATH=os.pathsep.join([os.path.dirname(sys.executable), os.environ["PATH"]]))


@contextlib.contextmanager
def started(args: list[str], env: dict, log):
    """A Spark daemon in a session of its own, stopped with its children (the executors)."""
    proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        yield proc
    finally:
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(wait_s)
                break
            except subprocess.TimeoutExpired:
                continue


def wait_for(check, what: str, logs) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    tails = "\n".join(p.read_text(errors="replace")[-2000:] for p in logs if p.exists())
    pytest.fail(f"{what} within {START_S} s\n{tails}")


def listening(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
        return True
    return False


def sweep(tmp_path, master: str, out: str) -> list[tuple]:
    """The rows of the tiny sweep on `master`, in this process: one JVM serves both
    sessions, which saves its start-up and its warming up (a minute on a busy machine)."""
    from epochsim.sweep.driver import run_sweep
    from epochsim.sweep.spark_job import start_session

    spark, started = start_session(master)
    try:
        assert started and spark.sparkContext.master == master
        run_sweep(str(tmp_path / "spec.toml"), out, spark=spark, stream=io.StringIO())
    finally:
        if started:
            spark.stop()
    rows = ds.dataset(os.path.join(out, "rows"), format="parquet",
                      partitioning="hive").to_table().to_pylist()
    return sorted((r["scenario"], r["cell"], r["seed"], r["trace_digest"], r["n_violations"])
                  for r in rows)


def test_a_sweep_on_a_standalone_cluster_gives_local_modes_rows(tmp_path, monkeypatch):
    launcher = spark_class()
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # the driver too, if its JVM starts here
    (tmp_path / "tiny.toml").write_text(TINY)
    (tmp_path / "spec.toml").write_text(SPEC)
    (tmp_path / "work").mkdir()
    env = spark_env(tmp_path)
    port, ui, worker_ui = free_port(), free_port(), free_port()
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    master = f"spark://127.0.0.1:{port}"
    with open(master_log, "w") as mlog, open(worker_log, "w") as wlog, \
            started([launcher, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                     "--port", str(port), "--webui-port", str(ui)], env, mlog):
        wait_for(lambda: listening(port), "the master did not listen", [master_log])
        with started([launcher, "org.apache.spark.deploy.worker.Worker", master, "--host",
                      "127.0.0.1", "--cores", "2", "--memory", "1g", "--webui-port",
                      str(worker_ui), "--work-dir", str(tmp_path / "work")], env, wlog):
            wait_for(lambda: "Registering worker" in master_log.read_text(errors="replace"),
                     "the worker did not register", [master_log, worker_log])
            on_cluster = sweep(tmp_path, master, str(tmp_path / "cluster"))
    local = sweep(tmp_path, "local[2]", str(tmp_path / "local"))
    assert len(on_cluster) == 3 and on_cluster == local
