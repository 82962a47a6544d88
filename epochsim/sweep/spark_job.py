"""The quiet Spark session a sweep runs on, and the executor that runs chunks as Spark jobs.

Contract:
- `start_session(master, ui)` returns `(spark, started)`: an existing active session is reused
  (`started` False: the caller must not stop it); otherwise a new one on `master` (default
  `local[*]`, every core) with workers on this interpreter, errors-only logging and no console
  progress bar. In local mode the project's packages reach the workers through PYTHONPATH; on
  a cluster master they are shipped as a zip (the workers need the same dependencies). A
  Spark that cannot start (nothing at the master URL, yarn without Hadoop's configuration)
  raises `UsageError` naming --master and Spark's reason, in one line: what the JVM says on
  stderr while it starts is held back, and printed only once Spark has started.
- `ChunkExecutor(spark, cells).run(chunks, on_result)` runs each chunk as one single-task Spark
  job, several in flight so every core stays busy, and calls `on_result(ChunkResult)` on the
  calling thread as each finishes, so the caller writes the chunk's file and reports progress
  while the rest run. Ctrl-C cancels the Spark jobs and re-raises KeyboardInterrupt; a failing
  task raises `ChunkFailed` naming its chunk. Chunks finished before either are already handed
  to `on_result`.
Why single-task jobs rather than one job of many partitions: results then stream back per chunk
in any order (a long job returns only when its last task ends; `toLocalIterator` runs one
partition at a time), and cancelling stops only unfinished chunks.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path

from epochsim import budget
from epochsim.errors import UsageError

INSTALL_HINT = "pyspark is not installed; install it with `pip install 'pyspark==4.3.0' pyarrow 'pandas<3'`"
LOG4J_FILE = Path(__file__).resolve().parent.parent / "spark_log4j2.properties"
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("epochsim", "sim", "invariants", "scenarios")
# Start-up notices no log4j setting reaches: the JVM's own, and the shell banner Spark prints
# because PySpark starts it as a "pyspark-shell".
JVM_NOISE = ("WARNING: Using incubator modules", "Setting default log level to",
             "To adjust logging level use sc.setLogLevel")


class ChunkFailed(Exception):
    """A Spark task raised: the chunk, and the last line of the worker's error."""


def _import_pyspark():
    try:
        import pyarrow  # noqa: F401 - the rows are written with pyarrow
        import pyspark  # noqa: F401
    except ImportError:
        raise UsageError(INSTALL_HINT) from None


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def _worker_environment(master: str) -> None:
    """Workers run this interpreter; in local mode they also find the project's packages."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if is_local(master):
        # Binding to loopback avoids the "hostname resolves to a loopback address" warning and
        # any firewall prompt; a cluster master must reach the driver, so leave it alone there.
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
        path = os.environ.get("PYTHONPATH", "")
        if str(PROJECT_ROOT) not in path.split(os.pathsep):
            os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PROJECT_ROOT), path) if p)


CONNECT_TIMEOUT_S = 5.0  # per standalone master address; Spark itself retries for a minute


def check_reachable(master: str) -> None:
    """Refuse a standalone master (`spark://HOST:PORT[,HOST:PORT...]`) none of whose addresses
    accepts a connection, before starting the JVM: Spark would retry for over a minute before
    saying so. Other masters (local, yarn, k8s) are left to Spark."""
    import socket

    if not master.startswith("spark://"):
        return
    problems = []
    for address in master.removeprefix("spark://").split(","):
        host, _, port = address.rpartition(":")
        if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"--master {master}: {address!r} is not HOST:PORT; write e.g. "
                             "spark://host:7077")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S):
                return
        except OSError as exc:
            problems.append(f"{address}: {exc.strerror or 'timed out'}")
    raise UsageError(f"--master {master}: cannot connect to the Spark master ({'; '.join(problems)}); "
                     "check that it runs and that this machine can reach it")


def spark_conf(master: str, ui: bool):
    from pyspark import SparkConf

    conf = SparkConf().setMaster(master).setAppName("epochsim-sweep")
    conf.set("spark.ui.enabled", "true" if ui else "false")
    conf.set("spark.ui.showConsoleProgress", "false")
    conf.set("spark.sql.shuffle.partitions", "4")  # aggregates are small
    conf.set("spark.python.worker.reuse", "true")  # one import of the model per worker
    conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    for name in (budget.ENV_TIME, budget.ENV_MEMORY):  # --time-budget, --memory-budget
        if name in os.environ:
            conf.set(f"spark.executorEnv.{name}", os.environ[name])
    if LOG4J_FILE.is_file():
        conf.set("spark.driver.extraJavaOptions",
                 f"-Dlog4j.configurationFile={LOG4J_FILE.as_uri()}")
    return conf


def start_session(master: str = "local[*]", ui: bool = False):
    """A quiet Spark session; see the module contract."""
    _import_pyspark()
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is not None:
        return SparkSession.builder.getOrCreate(), False
    check_reachable(master)
    _worker_environment(master)
    conf = spark_conf(master, ui)
    held = _HeldLines()
    sc = None
    try:
        sc = SparkContext(conf=conf, gateway=_quiet_gateway(conf, held))
        sc.setLogLevel("ERROR")
        if not is_local(master):
            sc.addPyFile(_code_zip())
        # an unreachable standalone master gives up only here, after a minute of retries
        session = SparkSession(sc)
    except Exception as exc:  # PySpark and Py4J raise many kinds; all mean this
        if sc is not None:
            with contextlib.suppress(Exception):
                sc.stop()
        raise UsageError(f"--master {master}: Spark could not start "
                         f"({held.last() or _first_words(exc)}); check the master URL, and "
                         "that this machine can reach it") from None
    held.release()
    return session, True


def _first_words(exc: Exception) -> str:
    """The telling line of a PySpark or Py4J error: the Java exception's own line if there is
    one (a Py4JJavaError carries the whole stack), else the first line; at most 200 chars."""
    lines = [ln.strip(" :\t") for ln in str(exc).splitlines() if ln.strip(" :\t")]
    told = next((ln for ln in lines if "Exception:" in ln or "Error:" in ln), None)
    text = told or (lines[0] if lines else type(exc).__name__)
    return text if len(text) <= 200 else text[:197] + "..."


class _HeldLines:
    """What the JVM writes to stderr while Spark starts: held back, then printed once it has
    started (`release`), or its last line used as the reason it did not (`last`)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.lines: list[str] | None = []  # None once released

    def write(self, line: str) -> None:
        with self.lock:
            if self.lines is not None:
                self.lines.append(line)
                return
        sys.stderr.write(line)
        sys.stderr.flush()

    def release(self) -> None:
        with self.lock:
            lines, self.lines = self.lines or [], None
        sys.stderr.write("".join(lines))
        sys.stderr.flush()

    def last(self) -> str | None:
        with self.lock:
            lines = [ln.strip() for ln in self.lines or [] if ln.strip()]
        return _first_words(Exception(lines[-1])) if lines else None


def _quiet_gateway(conf, held: _HeldLines):
    """Launch the JVM with its stderr piped through a filter that drops known start-up noise
    and holds the rest in `held` until Spark has started."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    proc = getattr(gateway, "proc", None)
    if proc is not None and proc.stderr is not None:
        threading.Thread(target=_forward_stderr, args=(proc.stderr, held), daemon=True,
                         name="spark-stderr").start()
    return gateway


def _forward_stderr(pipe, held: _HeldLines) -> None:
    for raw in iter(pipe.readline, b""):
        line = raw.decode("utf-8", "replace")
        if not line.startswith(JVM_NOISE):
            held.write(line)


def _code_zip() -> str:
    """The project's packages as one zip for cluster workers (sc.addPyFile)."""
    path = os.path.join(tempfile.mkdtemp(prefix="epochsim-code-"), "epochsim_code.zip")
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in PACKAGES:
            for file in sorted((PROJECT_ROOT / package).rglob("*")):
                if file.suffix in (".py", ".toml", ".properties") and "__pycache__" not in file.parts:
                    zf.write(file, file.relative_to(PROJECT_ROOT).as_posix())
    return path


def _run_task(cells, chunks):
    """The Spark task: runs on a worker, so it imports the runner there."""
    from epochsim.sweep.worker import run_chunk

    table = cells.value
    for chunk in chunks:
        yield run_chunk(chunk, table[f"{chunk.scenario}-{chunk.cell}"])


class ChunkExecutor:
    def __init__(self, spark, cells: list, in_flight: int | None = None):
        self.sc = spark.sparkContext
        self.cells = self.sc.broadcast({c.key: c for c in cells})
        # One job more than there are task slots: when a task ends, the next is already
        # queued in the scheduler, so no core waits for a driver round trip.
        self.in_flight = in_flight or self.sc.defaultParallelism + 1

    def _job(self, chunk):
        from functools import partial

        rdd = self.sc.parallelize([chunk], 1)
        return rdd.mapPartitions(partial(_run_task, self.cells)).collect()[0]

    def run(self, chunks: list, on_result) -> None:
        """Run every chunk; see the module contract."""
        todo = iter(chunks)
        pool = ThreadPoolExecutor(max_workers=self.in_flight, thread_name_prefix="sweep-job")
        running: dict = {}
        try:
            self._top_up(pool, todo, running)
            while running:
                finished, _ = wait(running, timeout=0.5, return_when=FIRST_COMPLETED)
                for future in finished:
                    chunk = running.pop(future)
                    on_result(self._result(future, chunk))
                self._top_up(pool, todo, running)
        except BaseException:
            for future in running:
                future.cancel()
            self.sc.cancelAllJobs()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            self.cells.unpersist()  # a long-lived session (tests, benchmarks) runs many sweeps

    def _top_up(self, pool, todo, running: dict) -> None:
        while len(running) < self.in_flight:
            chunk = next(todo, None)
            if chunk is None:
                return
            running[pool.submit(self._job, chunk)] = chunk

    @staticmethod
    def _result(future, chunk):
        try:
            return future.result()
        except Exception as exc:  # a Py4J/Python error from the task
            if "KeyboardInterrupt" in str(exc):
                # Ctrl-C reaches the Python workers too (same process group): a task that
                # died of it is the user's interrupt, not a failing chunk.
                raise KeyboardInterrupt from None
            raise ChunkFailed(f"chunk {chunk.id} failed: {_last_line(exc)}") from exc


def _last_line(exc: Exception) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("at ", "File ", "..."))]
    return (useful or lines or [type(exc).__name__])[-1][:300]
