"""The Spark session the jobs run in, and the checks that say clearly when Spark cannot run.

Jobs get Spark's Kafka connector through ``spark.jars`` (local files fetched once by
``make install`` from analytics/pom.xml); nothing is downloaded at run time.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from broker.errors import KazamiError
from broker.local.maven import copy_dependencies, jars_complete

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HERE = Path(__file__).resolve().parent
JARS = HERE / "jars"
POM = HERE / "pom.xml"


class SparkUnavailable(KazamiError):
    """Spark cannot run here: PySpark, Java or the Kafka connector's jars are missing."""


@dataclass(frozen=True)
class SparkSettings:
    """Where and how big: ``local[*]`` on this machine, or ``spark://host:7077`` for a Spark cluster."""

    master: str = "local[*]"
    driver_memory: str = "1g"
    # Few shuffle partitions: the reports' groups are small, and on 2 cores 200 tiny tasks cost more
    # than the work they share.
    shuffle_partitions: int = 4
    ui: bool = True
    app_name: str = "kazami"
    # On a Spark cluster: the host name its executors reach the driver at (empty: Spark's own guess).
    driver_host: str = ""


def fetch_jars() -> None:
    """Copy Spark's Kafka connector and what it needs into analytics/jars/ once (Maven Central)."""
    copy_dependencies(POM, JARS, "Spark's Kafka connector jars")


def connector_jars() -> list[str]:
    return sorted(str(p) for p in JARS.glob("*.jar"))


def check_spark() -> None:
    """Raise SparkUnavailable saying what is missing (PySpark, Java 17+, the connector jars)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailable("PySpark is not installed: run `make install`.") from None
    java = shutil.which("java", path=_java_path())
    if java is None:
        raise SparkUnavailable(
            "Java is needed to run Spark jobs: install Java 17 (e.g. `apt-get install openjdk-17-jre-headless`)."
        )
    if not jars_complete(JARS) or not connector_jars():
        raise SparkUnavailable("Spark's Kafka connector jars are missing: run `make install` (it fetches them once).")


def check_jobs(remote: str = "") -> None:
    """Raise SparkUnavailable unless jobs can run: on the Spark Connect server at ``remote`` (its client installed
    and the server answering), else in a Spark of their own (check_spark)."""
    if not remote:
        check_spark()
        return
    try:
        import pyspark.sql.connect.session  # noqa: F401
    except ImportError as exc:
        raise SparkUnavailable(f"Spark Connect's client is not installed ({exc}): run `make install`.") from None
    _probe(remote, 2.0)


def _probe(remote: str, timeout: float) -> None:
    host, port = endpoint(remote)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise SparkUnavailable(
            f"No Spark Connect server answers at {shown(remote)} ({exc.strerror or exc}): start one with `make run` "
            "or `python -m analytics server up`, or correct KAZAMI_SPARK_REMOTE."
        ) from None


def _java_path() -> str | None:
    home = os.environ.get("JAVA_HOME")
    return os.pathsep.join([str(Path(home) / "bin"), os.environ.get("PATH", "")]) if home else None


def java_version() -> str:
    """The ``java -version`` line, for the analytics page (empty when Java is missing)."""
    java = shutil.which("java", path=_java_path())
    if java is None:
        return ""
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    return out.splitlines()[0] if out else ""


def spark_conf(settings: SparkSettings) -> dict[str, str]:
    """The Spark settings every session of the jobs runs with, in a job's own process or in the warm server
    (analytics.server), apart from where it runs (master, driver host)."""
    excluded = "org.apache.spark.sql.execution.adaptive.AQEPropagateEmptyRelation"
    return {
        "spark.jars": ",".join(connector_jars()),
        "spark.driver.memory": settings.driver_memory,
        "spark.sql.shuffle.partitions": str(settings.shuffle_partitions),
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": str(settings.ui).lower(),
        "spark.ui.showConsoleProgress": "false",
        # Kafka offsets are exact here: a partition that lost records (retention, compaction) is read as it is.
        "spark.sql.streaming.kafka.useDeprecatedOffsetFetching": "false",
        # When nothing of a report's kind is left after the filters, adaptive execution swaps the empty part
        # of the plan for an empty relation, and with it the node that collected the observed metrics (rows
        # read, malformed records): the job's counts would be lost. Keep that part of the plan.
        "spark.sql.adaptive.optimizer.excludedRules": excluded,
        # Kafka passwords sit in the source's options: keep them out of plans and the web UI.
        "spark.sql.redaction.options.regex": "(?i)url|jaas|password|secret|token",
    }


def start_session(settings: SparkSettings) -> SparkSession:
    """A Spark session for the jobs (the running one if this process has one). Raises SparkUnavailable."""
    check_spark()
    from pyspark.sql import SparkSession

    # A classic session in a process that inherited Spark Connect's mode (the variables PySpark sets in a process
    # with a Connect session, passed on to the processes it starts) would build Connect's columns: not this one.
    for key in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE"):
        os.environ.pop(key, None)
    local = settings.master.startswith("local")
    if local:
        # The machine's host name may resolve to an address other processes cannot reach; a local
        # driver only talks to itself.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        # Python steps (the Protobuf decoding of analytics.formats) run in Spark's Python workers: this
        # process's Python, with the project's packages, rather than whatever ``python3`` is on the PATH.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(settings.master).appName(settings.app_name)
    for key, value in spark_conf(settings).items():
        builder = builder.config(key, value)
    if local:
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    elif settings.driver_host:
        # Executors on other hosts connect to the driver: it listens on every interface of its container.
        everywhere = "0.0.0.0"  # noqa: S104
        builder = builder.config("spark.driver.host", settings.driver_host).config(
            "spark.driver.bindAddress", everywhere
        )
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # noqa: BLE001 - py4j and the launcher raise several kinds
        raise SparkUnavailable(f"Spark did not start: {first_line(exc)}") from None
    session.sparkContext.setLogLevel("WARN")
    # py4j says at INFO when each of its connections closes, also from finalizers at interpreter exit.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return session


def first_line(exc: BaseException) -> str:
    """The readable cause of a Spark or py4j error: the innermost Java exception's message, not its stack."""
    text = str(exc)
    java = getattr(exc, "java_exception", None)
    if java is not None:
        cause = java
        try:
            while cause.getCause() is not None:
                cause = cause.getCause()
            text = f"{cause.getClass().getSimpleName()}: {cause.getMessage()}"
        except Exception:  # noqa: BLE001, S110 - the JVM may be gone; keep the Python text
            pass
    found = re.search(r'status = StatusCode\.(\w+)\s+details = "([^"]*)"', text)
    if found:  # gRPC's own words (Spark Connect): the status and its details, not the RPC object
        return f"{found.group(1)}: {found.group(2)}"[:1000]
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    head = next((line for line in lines if not line.startswith(("at ", "File ", "Traceback", "JVM stacktrace"))), "")
    return head[:1000] or type(exc).__name__


def connect_session(remote: str, timeout: float = 5.0) -> SparkSession:
    """A session of its own on the Spark Connect server at ``remote`` (``sc://host:port/;token=…``, see
    analytics.server): its settings and views apart from other jobs'. Raises SparkUnavailable when Spark
    Connect's client is not installed or nothing answers at ``remote`` within ``timeout`` seconds."""
    try:
        from pyspark.sql import SparkSession as Session
        from pyspark.sql.connect.client.retries import RetryPolicy
    except ImportError as exc:
        raise SparkUnavailable(f"Spark Connect's client is not installed ({exc}): run `make install`.") from None
    _probe(remote, timeout)
    try:
        # Through PySpark's own entry: it puts this process in Spark Connect's mode, in which pyspark.sql.functions
        # build Connect's columns (a process runs either Connect sessions or a classic one).
        session: Any = Session.builder.remote(remote).create()
        # A server that goes away fails the job within seconds rather than after Spark's minutes of retries.
        session.client.set_retry_policies([RetryPolicy(max_retries=4, initial_backoff=200, max_backoff=2000)])
        session.conf.get("spark.sql.session.timeZone")  # the first call: the token is checked here
    except Exception as exc:  # noqa: BLE001 - gRPC and Spark raise several kinds
        raise SparkUnavailable(
            f"The Spark Connect server at {shown(remote)} refused a session: {first_line(exc)}"
        ) from None
    # The same API as a classic session's (pyspark.sql.SparkSession), as the jobs use it.
    return cast("SparkSession", session)


def endpoint(remote: str) -> tuple[str, int]:
    """The host and port of a ``sc://host:port/;…`` address (port 15002 when none is given)."""
    from urllib.parse import urlsplit

    parts = urlsplit(remote.split(";", 1)[0])
    if parts.scheme != "sc" or not parts.hostname:
        raise SparkUnavailable(f"{shown(remote)} is not a Spark Connect address: expected sc://host:port.")
    return parts.hostname, parts.port or 15002


def shown(remote: str) -> str:
    """``remote`` without its parameters (the token among them), to show."""
    return remote.split(";", 1)[0].rstrip("/")


def is_remote(spark: object) -> bool:
    """Whether ``spark`` is a Spark Connect session (else a classic one with its own JVM)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")
