"""The embedded cluster's Kafka Connect worker: one distributed-mode worker from the cluster's own Kafka jars.

``org.apache.kafka.connect.cli.ConnectDistributed`` (connect-runtime) runs with the file and MirrorMaker 2
connectors on its classpath (connect-file, connect-mirror from the poms), JSON converters without schemas,
its config, offset and status topics replicated as the cluster's size allows, and its REST API on
``127.0.0.1:<port>`` (8083 unless asked otherwise). What was started is kept in ``<data>/connect.json``
(port, pid), its configuration in ``<data>/config/connect-distributed.properties``, its log in
``<data>/logs/connect/server.log`` through the same log4j (3.x) or log4j2 (4.x) file as the brokers.

A worker is a JVM like the brokers: started in a session of its own so it outlives the command, known
again by its pid, stopped with SIGTERM (killed after a time-out).

Connectors run with the worker's rights, so the worker runs with as few as it can: its config lets no
connector override its client settings (``connector.client.config.override.policy=None``), and when the
launcher runs as root the worker runs as an unprivileged user (``KAZAMI_CONNECT_USER``, default ``nobody``;
empty: as root), which cannot read the console's own secrets in var/ (``admin-password`` and ``secret_key``
are mode 0600). Its log folder is given to that user; it reads the jars, its config and the data folder as
anyone may. Not root, or the user or a folder it needs is out of its reach: it runs as the current user, and
the launcher says so (``user`` in connect.json and the status).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from broker.local.jvm import check_java, pid_alive, port_in_use, spawn, stop_pid
from broker.local.layout import ClusterLayout, LauncherError
from broker.local.maven import copy_dependencies

DEFAULT_CONNECT_PORT = 8083
CONNECT_HEAP = "-Xmx320m -Xms96m"
MAIN_CLASS = "org.apache.kafka.connect.cli.ConnectDistributed"
GROUP_ID = "kazami-connect"
# The plugins the worker needs beyond what kafka-tools brings (connect-runtime itself comes with it).
PLUGIN_JARS = ("connect-file", "connect-mirror", "connect-mirror-client")
DEMO_CONNECTOR = "demo-file-source"
DEMO_TOPIC = "connect-demo-lines"
DEFAULT_WORKER_USER = "nobody"


@dataclass
class WorkerState:
    """What ``<data>/connect.json`` keeps: the REST port the worker was first started on, and its pid."""

    port: int = DEFAULT_CONNECT_PORT
    pid: int | None = None
    # The user the worker runs as, and why when it is not an unprivileged one.
    user: str | None = None
    user_note: str | None = None

    @staticmethod
    def path(layout: ClusterLayout) -> Path:
        return layout.root / "connect.json"

    @classmethod
    def load(cls, layout: ClusterLayout) -> WorkerState | None:
        path = cls.path(layout)
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(
            port=int(raw.get("port", DEFAULT_CONNECT_PORT)),
            pid=raw.get("pid"),
            user=raw.get("user"),
            user_note=raw.get("user_note"),
        )

    def save(self, layout: ClusterLayout) -> None:
        tmp = self.path(layout).with_suffix(".json.tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.path(layout))

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


# ---------------------------------------------------------------- jars


def plugins_present(layout: ClusterLayout) -> bool:
    jars = layout.release.jars
    return all((jars / f"{name}-{layout.kafka_version}.jar").exists() for name in PLUGIN_JARS)


def ensure_plugins(layout: ClusterLayout, echo: Callable[[str], None] = print) -> None:
    """Add the Connect plugin jars to a jars folder fetched before the poms named them. Maven copies the pom's
    dependencies into a scratch folder and only the jars missing here are moved in: running brokers keep the
    files they have open untouched. Raises MavenError."""
    if plugins_present(layout):
        return
    release = layout.release
    with tempfile.TemporaryDirectory(prefix="kazami-connect-jars-") as scratch:
        copy_dependencies(
            release.pom,
            Path(scratch),
            f"the Kafka Connect plugins of Kafka {release.version}",
            echo,
            properties={"kafka.version": release.version},
        )
        for jar in Path(scratch).glob("*.jar"):
            target = release.jars / jar.name
            if not target.exists():
                tmp = target.with_suffix(".jar.part")
                shutil.copyfile(jar, tmp)
                tmp.replace(target)


# ---------------------------------------------------------------- configuration


def worker_properties(layout: ClusterLayout, port: int) -> str:
    """connect-distributed.properties for the embedded cluster: internal topics replicated three times (or
    on every broker of a smaller cluster), few partitions, offsets flushed every second so a change shows
    at once, the REST API on loopback only."""
    replicas = min(3, layout.brokers)
    return "\n".join(
        [
            f"bootstrap.servers={layout.bootstrap_servers}",
            f"group.id={GROUP_ID}",
            "key.converter=org.apache.kafka.connect.json.JsonConverter",
            "value.converter=org.apache.kafka.connect.json.JsonConverter",
            "key.converter.schemas.enable=false",
            "value.converter.schemas.enable=false",
            "config.storage.topic=kazami-connect-configs",
            "offset.storage.topic=kazami-connect-offsets",
            "status.storage.topic=kazami-connect-status",
            f"config.storage.replication.factor={replicas}",
            f"offset.storage.replication.factor={replicas}",
            f"status.storage.replication.factor={replicas}",
            "offset.storage.partitions=5",
            "status.storage.partitions=3",
            "offset.flush.interval.ms=1000",
            f"listeners=http://127.0.0.1:{port}",
            "rest.advertised.host.name=127.0.0.1",
            f"rest.advertised.port={port}",
            # The plugins are on the classpath with their ServiceLoader manifests (KIP-898): no scan of every jar.
            "plugin.discovery=service_load",
            # Connectors may create the topics they write to (topic.creation.* in their config).
            "topic.creation.enable=true",
            # A connector's config may not override the worker's own producer, consumer and admin settings
            # (producer.override.*, consumer.override.*, admin.override.*): Kafka's default, All, would let
            # anyone who may create a connector point those clients anywhere, with any credentials.
            "connector.client.config.override.policy=None",
            "",
        ]
    )


# ---------------------------------------------------------------- probing


def rest_answers(port: int, timeout: float = 2.0) -> bool:
    """True when the worker on ``port`` lists its connectors: its REST server is up and it has joined its
    group (before that, /connectors is refused)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/connectors", timeout=timeout) as answer:
            return bool(answer.status == 200)
    except (OSError, urllib.error.URLError, ValueError):
        return False


def _require_layout(data: str | Path) -> ClusterLayout:
    layout = ClusterLayout.load(Path(data).resolve())
    if layout is None:
        raise LauncherError(f"No cluster in {data}: start one with `python -m broker.local up`.")
    return layout


# ---------------------------------------------------------------- commands


def start(
    data: str | Path,
    port: int | None = None,
    echo: Callable[[str], None] = print,
    timeout: float = 180,
) -> WorkerState:
    """Start the cluster's Connect worker unless it runs, and wait until its REST API lists connectors.
    ``port`` is used the first time (default 8083); later the saved one. Raises LauncherError (MavenError
    when the plugin jars cannot be fetched)."""
    layout = _require_layout(data)
    state = WorkerState.load(layout) or WorkerState(port=port or DEFAULT_CONNECT_PORT)
    if port is not None and port != state.port:
        echo(f"Note: the Connect worker of {layout.data} uses port {state.port}; keeping it.")
    if pid_alive(state.pid):
        if rest_answers(state.port):
            echo(f"Connect      {state.url}  pid {state.pid} (already running)")
            return state
        _wait(lambda: rest_answers(state.port), timeout, state, layout)
        return state
    if port_in_use(state.port):
        raise LauncherError(
            f"Port {state.port} on 127.0.0.1 is already in use by another program: the Connect worker cannot listen "
            "there (another worker? `up --connect-port N` on a new --data folder picks another)."
        )
    check_java()
    ensure_plugins(layout, echo)
    config = layout.root / "config"
    config.mkdir(parents=True, exist_ok=True)
    props = config / "connect-distributed.properties"
    props.write_text(worker_properties(layout, state.port))
    runs_as = worker_user(layout)
    state.user, state.user_note = runs_as.name, runs_as.note
    state.pid = _spawn_worker(layout, props, runs_as)
    state.save(layout)
    _wait(lambda: rest_answers(state.port), timeout, state, layout)
    echo(f"Connect      {state.url}  pid {state.pid}  as {runs_as.describe()}")
    return state


# ---------------------------------------------------------------- the worker's user


@dataclass(frozen=True)
class WorkerUser:
    """Who the worker runs as: ``uid``/``gid`` to switch to (None: stay the current user) and why not."""

    name: str
    uid: int | None = None
    gid: int | None = None
    note: str | None = None

    def describe(self) -> str:
        return self.name + (f" ({self.note})" if self.note else "")


def _current(note: str) -> WorkerUser:
    try:
        name = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        name = str(os.geteuid())
    return WorkerUser(name=name, note=note)


def _reachable(path: Path, uid: int, gid: int, mode: int) -> bool:
    """Whether a user (not root) has ``mode`` (read 4, write 2, search 1) on ``path`` by its bits."""
    try:
        st = path.stat()
    except OSError:
        return False
    if st.st_uid == uid:
        bits = (st.st_mode >> 6) & 7
    elif st.st_gid == gid:
        bits = (st.st_mode >> 3) & 7
    else:
        bits = st.st_mode & 7
    return bits & mode == mode


def _out_of_reach(paths: list[Path], uid: int, gid: int) -> Path | None:
    """The first folder on the way to ``paths`` (or file among them) the user cannot search or read."""
    for path in paths:
        for parent in reversed(path.resolve().parents):
            if not _reachable(parent, uid, gid, 1):
                return parent
        if not _reachable(path, uid, gid, 5 if path.is_dir() else 4):
            return path
    return None


def worker_user(layout: ClusterLayout) -> WorkerUser:
    """The user the worker will run as (see the module's docstring)."""
    if os.geteuid() != 0:
        return _current("not root: the worker runs as the launcher's user")
    wanted = os.environ.get("KAZAMI_CONNECT_USER", DEFAULT_WORKER_USER).strip()
    if not wanted or wanted == "root":
        return _current("KAZAMI_CONNECT_USER is empty: the worker runs as root and can read var/")
    try:
        entry = pwd.getpwnam(wanted)
    except KeyError:
        return _current(f"no user {wanted!r} on this machine: the worker runs as root and can read var/")
    jars = sorted(layout.release.jars.glob("*.jar"))[:1]
    blocked = _out_of_reach([layout.root, layout.release.jars, *jars], entry.pw_uid, entry.pw_gid)
    if blocked is not None:
        return _current(f"{wanted} cannot read {blocked}: the worker runs as root and can read var/")
    return WorkerUser(name=wanted, uid=entry.pw_uid, gid=entry.pw_gid)


def _spawn_worker(layout: ClusterLayout, props: Path, runs_as: WorkerUser) -> int:
    """Start the worker's JVM in a session of its own, as ``runs_as`` (its log folder that user's, its
    properties readable by it)."""
    uid, gid = runs_as.uid, runs_as.gid
    if uid is None or gid is None:
        return spawn(layout, "connect", MAIN_CLASS, props, CONNECT_HEAP)
    props.chmod(props.stat().st_mode | stat.S_IROTH)
    return spawn(layout, "connect", MAIN_CLASS, props, CONNECT_HEAP, run_as=(uid, gid))


def _wait(ready: Callable[[], bool], timeout: float, state: WorkerState, layout: ClusterLayout) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return
        if not pid_alive(state.pid):
            raise LauncherError(f"The Connect worker exited during start; see {layout.root / 'logs' / 'connect'}.")
        time.sleep(0.5)
    raise LauncherError(
        f"Timed out after {timeout:.0f} s waiting for the Connect worker's REST API on {state.url}; "
        f"see {layout.root / 'logs' / 'connect'}."
    )


def stop(data: str | Path, echo: Callable[[str], None] = print, timeout: float = 30) -> bool:
    """Stop the Connect worker (SIGTERM, killed after ``timeout``); False when it was not running."""
    layout = ClusterLayout.load(Path(data).resolve())
    state = WorkerState.load(layout) if layout else None
    if state is None or not pid_alive(state.pid):
        return False
    stop_pid(state.pid, timeout=timeout)
    echo("Connect worker stopped.")
    return True


def status(data: str | Path) -> dict[str, Any] | None:
    """The worker's ``url``, ``pid``, ``alive`` and ``answers`` (its REST API lists connectors); None when none
    was ever started in ``data``."""
    layout = ClusterLayout.load(Path(data).resolve())
    state = WorkerState.load(layout) if layout else None
    if state is None:
        return None
    alive = pid_alive(state.pid)
    return {
        "url": state.url,
        "pid": state.pid,
        "alive": alive,
        "answers": alive and rest_answers(state.port, 1.0),
        "user": state.user,
        "user_note": state.user_note,
    }


# ---------------------------------------------------------------- the demo connector


def demo_file(data: str | Path) -> Path:
    return Path(data).resolve() / "connect-demo" / "lines.txt"


def demo_config(data: str | Path) -> dict[str, str]:
    """A FileStreamSource reading the demo file into ``connect-demo-lines`` (created by the worker)."""
    return {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "tasks.max": "1",
        "file": str(demo_file(data)),
        "topic": DEMO_TOPIC,
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.default.partitions": "1",
    }


def create_demo_connector(data: str | Path, echo: Callable[[str], None] = print) -> None:
    """Create (or update) the demo connector on the running worker. Raises LauncherError."""
    layout = _require_layout(data)
    state = WorkerState.load(layout)
    if state is None or not rest_answers(state.port):
        raise LauncherError("The Connect worker does not run: start it with `python -m broker.local start-connect`.")
    demo_file(data).parent.mkdir(parents=True, exist_ok=True)
    demo_file(data).touch()
    body = json.dumps(demo_config(data)).encode()
    request = urllib.request.Request(  # noqa: S310 - our own loopback worker
        f"{state.url}/connectors/{DEMO_CONNECTOR}/config",
        data=body,
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30):  # noqa: S310
            pass
    except urllib.error.HTTPError as exc:
        raise LauncherError(f"The worker refused the demo connector: {exc.read().decode(errors='replace')}") from None
    except OSError as exc:
        raise LauncherError(f"The worker did not take the demo connector: {exc}") from None
    echo(f"Connector    {DEMO_CONNECTOR}: {demo_file(data)} -> topic {DEMO_TOPIC}")


def feed_demo(data: str | Path, every: float = 2.0, lines: int | None = None) -> None:
    """Append a line to the demo file every ``every`` seconds (``lines`` of them, or until interrupted)."""
    path = demo_file(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    while lines is None or count < lines:
        count += 1
        with path.open("a") as f:
            f.write(f"demo line {count} at {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
        time.sleep(every)
