"""The warm Spark: a Spark Connect server that the analytics jobs send their plans to, instead of each job starting
a Spark of its own (about 7 s of JVM and session start before the first record is read, and a cold Kafka client).

It is Spark's own server (``org.apache.spark.sql.connect.service.SparkConnectServer``, in PySpark's jars), run by
PySpark's ``spark-submit`` with the Kafka and Avro connectors of analytics/jars and the settings every job runs
with (analytics.spark.spark_conf). Each job opens a session of its own on it (its settings, views and temporary
state apart from the others'), tags its operations to cancel them, and follows their progress from the server's
reports. It listens on 127.0.0.1 only and takes only clients that present its token (a random secret kept in its
data folder, mode 0600): any other program on the machine could otherwise run code in it.

``make run`` starts one beside the embedded cluster (``python -m analytics server up``) and gives the console its
address as ``KAZAMI_SPARK_REMOTE``; a team's own Spark Connect server, which may run on a Spark cluster, is named
the same way (``sc://host:15002/;token=…``). Its data folder holds::

    spark-connect.json   the running server: port, pid, web UI, how long it took to start
    token                the secret clients present
    logs/server.log      what it prints
    log4j2.properties    Spark's logging (warnings and errors only)
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from analytics.spark import SparkSettings, SparkUnavailable, check_spark, spark_conf
from broker.processes import running

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
DEFAULT_PORT = 15002
STATE_FILE = "spark-connect.json"
TOKEN_FILE = "token"  # noqa: S105 - a file name, not the secret
LOG_FILE = Path("logs") / "server.log"
REPO = Path(__file__).resolve().parents[1]
LOGGING = """\
rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yyyy-MM-dd HH:mm:ss.SSS} %p %c{1}: %m%n%ex
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
"""


class ServerError(SparkUnavailable):
    """The Spark Connect server could not be started or reached; the message says why."""


@dataclass
class ServerState:
    """What ``<data>/spark-connect.json`` keeps about the server started there."""

    port: int = DEFAULT_PORT
    pid: int | None = None
    ui_port: int | None = None
    started_in: float | None = None  # seconds from spawn to its port answering, as last measured

    @staticmethod
    def path(root: Path) -> Path:
        return root / STATE_FILE

    @classmethod
    def load(cls, root: Path) -> ServerState | None:
        try:
            raw = json.loads(cls.path(root).read_text())
        except (OSError, ValueError):
            return None
        return cls(**{k: raw[k] for k in ("port", "pid", "ui_port", "started_in") if k in raw})

    def save(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        tmp = self.path(root).with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.path(root))

    def remote(self, root: Path) -> str:
        """The address clients connect to, with the token (what KAZAMI_SPARK_REMOTE holds)."""
        return f"sc://localhost:{self.port}/;token={token(root)}"

    @property
    def ui_url(self) -> str:
        return f"http://127.0.0.1:{self.ui_port}" if self.ui_port else ""


def token(root: Path) -> str:
    """The server's secret, made once (readable by this user only)."""
    path = root / TOKEN_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    root.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    return value


def spark_home() -> Path:
    """PySpark's own distribution (its bin/spark-submit and jars)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def alive(pid: int | None) -> bool:
    """True when ``pid`` is a Spark Connect server that still runs (a recycled pid is not one)."""
    return running(pid, SERVER_CLASS.encode())


def answers(port: int, timeout: float = 1.0) -> bool:
    """True when something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def command(settings: SparkSettings, port: int, ui_port: int, root: Path) -> list[str]:
    """``spark-submit`` starting the server with the jobs' settings, on loopback."""
    conf = {
        **spark_conf(settings),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        # A Spark cluster on other hosts reaches the driver at settings.driver_host (it then listens on every
        # interface of its host); otherwise the driver only talks to this machine.
        "spark.driver.host": settings.driver_host or "127.0.0.1",
        "spark.driver.bindAddress": "0.0.0.0" if settings.driver_host else "127.0.0.1",  # noqa: S104
        "spark.ui.port": str(ui_port),
        # Jobs share the server: a small report is not queued behind a long one.
        "spark.scheduler.mode": "FAIR",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{root / 'log4j2.properties'}",
    }
    jars = conf.pop("spark.jars")
    memory = conf.pop("spark.driver.memory")
    args = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", settings.master]
    args += ["--name", settings.app_name, "--driver-memory", memory, "--jars", jars]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    return args


def start(
    data: str | Path,
    port: int = DEFAULT_PORT,
    settings: SparkSettings | None = None,
    echo: Callable[[str], None] = print,
    timeout: float = 180,
) -> ServerState:
    """Start the server of ``data`` unless it runs, and wait until its port answers. Its web UI listens on
    ``port`` + 1 (``settings.ui``). Raises ServerError (and SparkUnavailable: PySpark, Java or jars missing)."""
    root = Path(data).resolve()
    settings = settings or SparkSettings(app_name="Kazami Spark Connect")
    state = ServerState.load(root)
    if state is not None and alive(state.pid):
        if state.port != port:
            echo(f"Note: the Spark Connect server of {root} runs on port {state.port}; kept.")
        _wait(state, root, timeout)
        echo(f"Spark        sc://localhost:{state.port}  pid {state.pid} (already running)")
        return state
    check_spark()
    if answers(port):
        raise ServerError(
            f"Port {port} on 127.0.0.1 is already in use by another program: the Spark Connect server cannot "
            "listen there (another one? `--port N` picks N)."
        )
    (root / LOG_FILE).parent.mkdir(parents=True, exist_ok=True)
    (root / "log4j2.properties").write_text(LOGGING)
    ui_port = port + 1
    env = {
        **os.environ,
        "SPARK_HOME": str(spark_home()),
        "SPARK_CONNECT_AUTHENTICATE_TOKEN": token(root),
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Python steps of a job (the Protobuf decoding of analytics.formats) run in the server's Python workers:
        # this Python, which has the project's packages, and the project on its path.
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p),
    }
    env.pop("SPARK_CONF_DIR", None)
    state = ServerState(port=port, ui_port=ui_port if settings.ui else None)
    started = time.monotonic()
    with open(root / LOG_FILE, "ab") as log:
        proc = subprocess.Popen(
            command(settings, port, ui_port, root),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(root),
            env=env,
        )
    state.pid = proc.pid
    state.save(root)
    _wait(state, root, timeout)
    state.started_in = round(time.monotonic() - started, 1)
    state.save(root)
    warmed = warm_up(state.remote(root))
    echo(
        f"Spark        sc://localhost:{port}  pid {state.pid}  (Spark Connect, ready in {state.started_in:.0f} s"
        f"{f', warmed up in {warmed:.0f} s' if warmed is not None else ''})"
    )
    return state


def warm_up(remote: str) -> float | None:
    """Run one small aggregation with a shuffle, as a report's, on the new server: its first query pays for
    loading and compiling Spark's code paths (about 4 s here), which would otherwise fall on the first person's
    first report. Seconds it took; None when it could not run (the server still serves)."""
    from analytics.spark import connect_session

    started = time.monotonic()
    # A Connect session puts this process in Spark Connect's mode (environment variables): put it back after, so
    # that a process that starts the server may still run a classic session of its own.
    saved = {k: os.environ.get(k) for k in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")}
    try:
        spark = connect_session(remote)
        try:
            spark.range(10_000).selectExpr("id % 7 AS k", "id").groupBy("k").count().collect()
        finally:
            spark.stop()
    except Exception:  # noqa: BLE001 - best effort: a server that cannot warm up still answers jobs
        return None
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return time.monotonic() - started


def _wait(state: ServerState, root: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if answers(state.port, 0.5):
            return
        if not alive(state.pid):
            raise ServerError(
                f"The Spark Connect server exited during start; the end of {root / LOG_FILE}:\n{tail(root)}"
            )
        time.sleep(0.25)
    raise ServerError(
        f"Timed out after {timeout:.0f} s waiting for the Spark Connect server on port {state.port}; the end of "
        f"{root / LOG_FILE}:\n{tail(root)}"
    )


def tail(root: Path, lines: int = 12) -> str:
    path = root / LOG_FILE
    try:
        text = path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return f"(no log at {path})"
    return "\n".join(f"  | {line}" for line in text) or f"(empty log at {path})"


def stop(data: str | Path, echo: Callable[[str], None] = print, timeout: float = 20) -> bool:
    """Stop the server of ``data`` (SIGTERM to its process group, SIGKILL after ``timeout``); False when none ran."""
    root = Path(data).resolve()
    state = ServerState.load(root)
    if state is None or not alive(state.pid):
        return False
    assert state.pid is not None
    _signal(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(state.pid):
        if time.monotonic() > deadline:
            _signal(state.pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.1)
    echo("Spark Connect server stopped.")
    return True


def _signal(pid: int, sig: int) -> None:
    """``sig`` to the server's process group (its Python workers too), or to the server alone."""
    try:
        os.killpg(pid, sig)
    except OSError:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def status(data: str | Path) -> dict[str, Any] | None:
    """The server's port, ``pid``, ``alive``, ``answers``, web UI and start time; None when none was ever started
    in ``data``."""
    root = Path(data).resolve()
    state = ServerState.load(root)
    if state is None:
        return None
    is_alive = alive(state.pid)
    return {
        "remote": f"sc://localhost:{state.port}",
        "port": state.port,
        "pid": state.pid,
        "alive": is_alive,
        "answers": is_alive and answers(state.port),
        "ui": state.ui_url,
        "started_in": state.started_in,
        "log": str(root / LOG_FILE),
    }
