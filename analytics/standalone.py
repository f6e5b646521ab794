"""A small Spark cluster on this machine: Spark's standalone master and one worker, from PySpark's own distribution
(its ``bin/spark-class``), on 127.0.0.1 only. The tests run reports on it (the same rows as ``local``), and it is a
way to try a ``spark://`` deployment without containers::

    python -m analytics.standalone up [--data var/spark-standalone] [--port 7077] [--cores 2] [--memory 2g]
    python -m analytics.standalone down|status [--data var/spark-standalone]

The master listens on ``port`` (``spark://127.0.0.1:PORT``), its web UI on ``port + 1``; the worker on ``port + 2``,
its web UI on ``port + 3``. Every one of them binds 127.0.0.1 (``SPARK_LOCAL_IP`` and ``--host``), so nothing here is
reachable from other machines; executors the worker starts inherit that, and the worker's environment. Python steps
(the Protobuf decoding of analytics.formats) run in the executors' Python workers with the Python the driver names
(its ``PYSPARK_PYTHON``: a Spark Connect server's own, analytics.server gives it this Python), which finds the
project in its own site-packages (``make install`` installs it into the venv); the worker adds its ``PYTHONPATH``
(the project here) for a Python that does not have it. An application gets ``app_cores`` of the worker's cores
unless it asks for more (``spark.deploy.defaultCores``), so two applications (the warm Spark and a job's own Spark)
share the worker instead of the first taking every core and the second waiting for ever. Its data folder holds::

    spark-standalone.json   the running master and worker: ports, pids, how long they took to start
    logs/master.log         what the master prints
    logs/worker.log         what the worker prints
    work/                   the executors' folders (the jars they fetched, their output)
    log4j2.properties       Spark's logging (warnings and errors; the master's and worker's own notes)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analytics.server import REPO, answers, spark_home
from analytics.spark import SparkUnavailable, check_spark
from broker.processes import running

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DEFAULT_PORT = 7077
STATE_FILE = "spark-standalone.json"
LOGS = Path("logs")
LOGGING = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.master.name = org.apache.spark.deploy.master.Master
logger.master.level = info
logger.worker.name = org.apache.spark.deploy.worker.Worker
logger.worker.level = info
logger.runner.name = org.apache.spark.deploy.worker.ExecutorRunner
logger.runner.level = info
"""


class StandaloneError(SparkUnavailable):
    """The standalone master or worker could not be started; the message says why (with the end of its log)."""


@dataclass
class StandaloneState:
    """What ``<data>/spark-standalone.json`` keeps about the master and worker started there."""

    port: int = DEFAULT_PORT
    master_pid: int | None = None
    worker_pid: int | None = None
    cores: int = 2
    memory: str = "2g"
    app_cores: int = 1
    started_in: dict[str, float] = field(default_factory=dict)  # seconds from spawn to ready, per part

    @property
    def url(self) -> str:
        """The master's address, what ``--master`` and KAZAMI_SPARK_MASTER take."""
        return f"spark://127.0.0.1:{self.port}"

    @property
    def ui_port(self) -> int:
        return self.port + 1

    @property
    def worker_port(self) -> int:
        return self.port + 2

    @property
    def worker_ui_port(self) -> int:
        return self.port + 3

    @staticmethod
    def path(root: Path) -> Path:
        return root / STATE_FILE

    @classmethod
    def load(cls, root: Path) -> StandaloneState | None:
        try:
            raw = json.loads(cls.path(root).read_text())
        except (OSError, ValueError):
            return None
        keys = ("port", "master_pid", "worker_pid", "cores", "memory", "app_cores", "started_in")
        return cls(**{k: raw[k] for k in keys if k in raw})

    def save(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        tmp = self.path(root).with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.path(root))


def master_alive(pid: int | None) -> bool:
    return running(pid, MASTER_CLASS.encode())


def worker_alive(pid: int | None) -> bool:
    return running(pid, WORKER_CLASS.encode())


def environment(root: Path, app_cores: int) -> dict[str, str]:
    """What the master and worker run with, and what the worker's executors inherit."""
    java_opts = f"-Dlog4j2.configurationFile=file:{root / 'log4j2.properties'}"
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        # The master's and worker's own heap: they only keep track of applications.
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": java_opts,
        "SPARK_MASTER_OPTS": f"-Dspark.deploy.defaultCores={app_cores}",
        # Python steps of a job (the Protobuf decoding of analytics.formats) run in the executors' Python workers,
        # with the Python the driver names; this one for a driver that names none, and the project on the path.
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    }
    # Nothing of a developer's own Spark configuration, nor a Spark Connect mode this process may be in.
    for key in ("SPARK_CONF_DIR", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_MASTER_HOST"):
        env.pop(key, None)
    return env


def master_command(state: StandaloneState) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        MASTER_CLASS,
        "--host",
        "127.0.0.1",
        "--port",
        str(state.port),
        "--webui-port",
        str(state.ui_port),
    ]


def worker_command(state: StandaloneState, root: Path) -> list[str]:
    return [
        str(spark_home() / "bin" / "spark-class"),
        WORKER_CLASS,
        "--host",
        "127.0.0.1",
        "--port",
        str(state.worker_port),
        "--webui-port",
        str(state.worker_ui_port),
        "--cores",
        str(state.cores),
        "--memory",
        state.memory,
        "--work-dir",
        str(root / "work"),
        state.url,
    ]


def start(
    data: str | Path,
    port: int = DEFAULT_PORT,
    cores: int = 2,
    memory: str = "2g",
    app_cores: int = 1,
    echo: Callable[[str], None] = print,
    timeout: float = 120,
) -> StandaloneState:
    """Start the master and worker of ``data`` unless they run, and wait until the master lists the worker as
    alive. ``cores`` and ``memory``: what the worker offers; ``app_cores``: what an application gets unless it
    sets ``spark.cores.max``. Raises StandaloneError (and SparkUnavailable: PySpark or Java missing)."""
    root = Path(data).resolve()
    state = StandaloneState.load(root)
    if state is not None and master_alive(state.master_pid) and worker_alive(state.worker_pid):
        _wait_worker(state, root, timeout)
        echo(f"Spark master {state.url}  pids {state.master_pid}, {state.worker_pid} (already running)")
        return state
    if state is not None:  # one of the two died: start both again
        stop(root, echo=lambda _: None)
    check_spark()
    state = StandaloneState(port=port, cores=cores, memory=memory, app_cores=app_cores)
    for what, taken in (
        ("master", state.port),
        ("master's web UI", state.ui_port),
        ("worker", state.worker_port),
        ("worker's web UI", state.worker_ui_port),
    ):
        if answers(taken, 0.5):
            raise StandaloneError(
                f"Port {taken} on 127.0.0.1 (the {what}'s) is already in use by another program: the Spark "
                f"standalone cluster needs ports {port} to {port + 3} (another one? a --port elsewhere)."
            )
    (root / LOGS).mkdir(parents=True, exist_ok=True)
    (root / "work").mkdir(exist_ok=True)
    (root / "log4j2.properties").write_text(LOGGING)
    env = environment(root, app_cores)
    began = time.monotonic()
    state.master_pid = _spawn(master_command(state), root / LOGS / "master.log", root, env)
    state.save(root)
    try:
        _wait_master(state, root, timeout)
        state.started_in["master"] = round(time.monotonic() - began, 1)
        began = time.monotonic()
        state.worker_pid = _spawn(worker_command(state, root), root / LOGS / "worker.log", root, env)
        state.save(root)
        _wait_worker(state, root, timeout)
        state.started_in["worker"] = round(time.monotonic() - began, 1)
    except StandaloneError:
        stop(root, echo=lambda _: None)
        raise
    state.save(root)
    echo(
        f"Spark master {state.url}  (web UI http://127.0.0.1:{state.ui_port}; a worker of {cores} cores and "
        f"{memory}, ready in {sum(state.started_in.values()):.0f} s)"
    )
    return state


def _spawn(args: list[str], log_path: Path, root: Path, env: dict[str, str]) -> int:
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            args,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(root),
            env=env,
        )
    return proc.pid


def overview(state: StandaloneState, timeout: float = 2.0) -> dict[str, Any] | None:
    """What the master's web UI says of itself as JSON (url, status, workers, applications), None when it does
    not answer."""
    url = f"http://127.0.0.1:{state.ui_port}/json/"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:
            found = json.load(answer)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def workers(state: StandaloneState, timeout: float = 2.0) -> list[dict[str, Any]]:
    """The workers the master lists (id, host, port, state, cores, memory), [] when it does not answer."""
    listed = (overview(state, timeout) or {}).get("workers") or []
    return [w for w in listed if isinstance(w, dict)]


def _wait_master(state: StandaloneState, root: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        # Its web UI's answer, not a probe of its RPC port (each such probe is a line in its log).
        if (overview(state, 1.0) or {}).get("status") == "ALIVE":
            return
        if not master_alive(state.master_pid):
            raise StandaloneError(f"The Spark master exited during start; {_tail_of(root, 'master')}")
        time.sleep(0.25)
    raise StandaloneError(
        f"Timed out after {timeout:.0f} s waiting for the Spark master on port {state.port}; {_tail_of(root, 'master')}"
    )


def _wait_worker(state: StandaloneState, root: Path, timeout: float) -> None:
    """Until the master lists a worker on our worker port as ALIVE (the worker registered)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(w.get("port") == state.worker_port and w.get("state") == "ALIVE" for w in workers(state)):
            return
        if not worker_alive(state.worker_pid):
            raise StandaloneError(f"The Spark worker exited during start; {_tail_of(root, 'worker')}")
        if not master_alive(state.master_pid):
            raise StandaloneError(f"The Spark master exited; {_tail_of(root, 'master')}")
        time.sleep(0.25)
    raise StandaloneError(
        f"Timed out after {timeout:.0f} s waiting for the Spark worker to register with {state.url}; "
        f"{_tail_of(root, 'worker')}"
    )


def tail(root: Path, part: str, lines: int = 12) -> str:
    """The last ``lines`` of the master's or worker's log (``part``: master or worker)."""
    path = root / LOGS / f"{part}.log"
    try:
        text = path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return f"(no log at {path})"
    return "\n".join(f"  | {line}" for line in text) or f"(empty log at {path})"


def _tail_of(root: Path, part: str) -> str:
    return f"the end of {root / LOGS / part}.log:\n{tail(root, part)}"


def stop(data: str | Path, echo: Callable[[str], None] = print, timeout: float = 20) -> bool:
    """Stop the worker (and with it its executors), then the master: SIGTERM to each one's process group, SIGKILL
    after ``timeout``. False when neither ran."""
    root = Path(data).resolve()
    state = StandaloneState.load(root)
    if state is None:
        return False
    stopped = False
    for pid, alive in ((state.worker_pid, worker_alive), (state.master_pid, master_alive)):
        if not alive(pid):
            continue
        assert pid is not None
        _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while alive(pid):
            if time.monotonic() > deadline:
                _signal(pid, signal.SIGKILL)
                deadline = float("inf")
            time.sleep(0.1)
        stopped = True
    if stopped:
        echo("Spark master and worker stopped.")
    return stopped


def _signal(pid: int, sig: int) -> None:
    """``sig`` to the process group started with ``pid`` (a worker's executors too), or to ``pid`` alone."""
    try:
        os.killpg(pid, sig)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def status(data: str | Path) -> dict[str, Any] | None:
    """The master's address, pids, whether each runs, the workers the master lists; None when none was ever
    started in ``data``."""
    root = Path(data).resolve()
    state = StandaloneState.load(root)
    if state is None:
        return None
    master = master_alive(state.master_pid)
    return {
        "master": state.url,
        "ui": f"http://127.0.0.1:{state.ui_port}",
        "master_pid": state.master_pid,
        "master_alive": master,
        "worker_pid": state.worker_pid,
        "worker_alive": worker_alive(state.worker_pid),
        "workers": workers(state) if master else [],
        "started_in": state.started_in,
        "logs": str(root / LOGS),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analytics.standalone", description="A Spark master and worker on 127.0.0.1."
    )
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--data", default="var/spark-standalone", help="its folder: state, logs, executors' work")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="the master's port (it uses the 3 after it)")
    parser.add_argument("--cores", type=int, default=2, help="the worker's cores")
    parser.add_argument("--memory", default="2g", help="the worker's memory for executors")
    parser.add_argument("--app-cores", type=int, default=1, help="an application's cores unless it asks for more")
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            start(args.data, port=args.port, cores=args.cores, memory=args.memory, app_cores=args.app_cores)
        elif args.action == "down":
            if not stop(args.data):
                print("No Spark master or worker was running.")
        else:
            print(json.dumps(status(args.data), indent=2))
    except SparkUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
