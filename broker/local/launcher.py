"""Start, stop and inspect the embedded cluster: ZooKeeper plus N Apache Kafka brokers.

The brokers and ZooKeeper are plain JVM processes started from the jars that
``pom.xml`` names (copied into ``broker/local/jars/`` by Maven). Each process runs
in its own session so it outlives the command that started it; its pid is kept in
the data folder, so every later command finds it again.

Layout of the data folder (``var/`` by default)::

    cluster.json              what was started: ports, broker ids, pids
    config/zookeeper.properties, config/server-N.properties, config/log4j.properties
    zookeeper/                ZooKeeper's data
    kafka-logs-N/             broker N's log.dirs
    logs/zookeeper.out, logs/broker-N.out and the log4j files under logs/
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from broker.errors import KazamiError

HERE = Path(__file__).resolve().parent
JARS = HERE / "jars"
POM = HERE / "pom.xml"
REPO_ROOT = HERE.parent.parent
DEFAULT_DATA = REPO_ROOT / "var" / "cluster"

BROKER_HEAP = "-Xmx384m -Xms128m"
ZOOKEEPER_HEAP = "-Xmx128m -Xms64m"
# Fast JVM start and a small footprint: several brokers share two cores here.
JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Djava.awt.headless=true"


class LauncherError(KazamiError):
    """A prerequisite is missing or the cluster could not be started; the message says what to do."""


@dataclass
class ClusterLayout:
    """Where the embedded cluster lives and which ports it uses; saved as cluster.json."""

    data: str
    brokers: int = 3
    zookeeper_port: int = 2181
    base_port: int = 9092
    pids: dict[str, int] = field(default_factory=dict)

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.brokers))

    def broker_port(self, broker_id: int) -> int:
        return self.base_port + broker_id

    @property
    def zookeeper_connect(self) -> str:
        return f"127.0.0.1:{self.zookeeper_port}"

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.broker_port(b)}" for b in self.broker_ids)

    @property
    def root(self) -> Path:
        return Path(self.data)

    def save(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.root / "cluster.json.tmp"
        tmp.write_text(json.dumps(asdict(self), indent=2))
        tmp.replace(self.root / "cluster.json")

    @classmethod
    def load(cls, data: str | Path) -> ClusterLayout | None:
        """The layout saved in ``data``, or None when no cluster was ever started there."""
        path = Path(data) / "cluster.json"
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        return cls(**raw)


# ---------------------------------------------------------------- prerequisites


def check_java() -> str:
    """Path of a Java 17+ ``java``; raises LauncherError saying what to install otherwise."""
    java = shutil.which("java")
    if java is None:
        raise LauncherError(
            "Java 17 or newer is needed to run Kafka: install it (e.g. `apt-get install openjdk-17-jre-headless`)."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    version = _java_major(out)
    if version is not None and version < 17:
        raise LauncherError(f"Java {version} found at {java}; Kafka here needs Java 17 or newer.")
    return java


def _java_major(version_output: str) -> int | None:
    for token in version_output.split('"')[1:2]:
        head = token.split(".")[0]
        if head == "1":  # 1.8.0_x
            return int(token.split(".")[1])
        if head.isdigit():
            return int(head)
    return None


def jars_ready() -> bool:
    return (JARS / ".complete").exists()


def fetch_jars(echo: Callable[[str], None] = print) -> None:
    """Copy the Kafka jars from Maven Central into broker/local/jars/ once; later calls do nothing."""
    if jars_ready():
        return
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LauncherError("Maven is needed once to fetch the Kafka jars: install it (e.g. `apt-get install maven`).")
    echo("Fetching the Apache Kafka jars from Maven Central (once)...")
    result = subprocess.run(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(POM),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={JARS}",
            "-DincludeScope=runtime",
        ],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    if result.returncode != 0:
        tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
        raise LauncherError("Maven could not fetch the Kafka jars: " + " | ".join(tail))
    (JARS / ".complete").write_text("ok\n")


def classpath() -> str:
    return str(JARS / "*")


# ---------------------------------------------------------------- configuration files


def zookeeper_properties(layout: ClusterLayout) -> str:
    return "\n".join(
        [
            f"dataDir={layout.root / 'zookeeper'}",
            f"clientPort={layout.zookeeper_port}",
            "clientPortAddress=127.0.0.1",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,stat,srvr,mntr",
            "",
        ]
    )


def broker_properties(layout: ClusterLayout, broker_id: int) -> str:
    """server-N.properties for one broker, sized for a single small machine."""
    port = layout.broker_port(broker_id)
    replicas = min(3, layout.brokers)
    return "\n".join(
        [
            f"broker.id={broker_id}",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
            f"log.dirs={layout.root / f'kafka-logs-{broker_id}'}",
            f"zookeeper.connect={layout.zookeeper_connect}",
            "zookeeper.connection.timeout.ms=18000",
            "num.network.threads=2",
            "num.io.threads=2",
            "num.partitions=3",
            f"default.replication.factor={replicas}",
            f"offsets.topic.replication.factor={replicas}",
            "offsets.topic.num.partitions=12",
            f"transaction.state.log.replication.factor={replicas}",
            f"transaction.state.log.min.isr={min(2, replicas)}",
            "transaction.state.log.num.partitions=4",
            "group.initial.rebalance.delay.ms=0",
            "auto.create.topics.enable=false",
            "delete.topic.enable=true",
            # Small segments so the segment browser has several files to show.
            "log.segment.bytes=16777216",
            "log.retention.hours=168",
            "controlled.shutdown.enable=true",
            "controlled.shutdown.max.retries=1",
            "controlled.shutdown.retry.backoff.ms=1000",
            "",
        ]
    )


def log4j_properties(log_dir: Path) -> str:
    """One log file per process (``kafka.logs.dir`` is set per process at start)."""
    return "\n".join(
        [
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.RollingFileAppender",
            "log4j.appender.file.File=${kafka.logs.dir}/server.log",
            "log4j.appender.file.MaxFileSize=20MB",
            "log4j.appender.file.MaxBackupIndex=3",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
            "log4j.logger.kafka.request.logger=WARN",
            "log4j.logger.state.change.logger=WARN",
            "log4j.logger.org.apache.zookeeper=WARN",
            "",
        ]
    )


def write_configs(layout: ClusterLayout) -> None:
    config = layout.root / "config"
    config.mkdir(parents=True, exist_ok=True)
    (layout.root / "logs").mkdir(exist_ok=True)
    (config / "zookeeper.properties").write_text(zookeeper_properties(layout))
    (config / "log4j.properties").write_text(log4j_properties(layout.root / "logs"))
    for b in layout.broker_ids:
        (config / f"server-{b}.properties").write_text(broker_properties(layout, b))


# ---------------------------------------------------------------- processes


def pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of this very process still answers kill(0): reap it.
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    return _is_our_java(pid)


def _is_our_java(pid: int) -> bool:
    """True when pid is a JVM started from our jars (a recycled pid is not ours)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    # Empty while the Java launcher re-executes itself at start: still ours.
    return not cmdline or str(JARS).encode() in cmdline


def port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def port_open(port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


def zookeeper_serving(port: int, timeout: float = 1.0) -> bool:
    """True when ZooKeeper answers the ``srvr`` command as a serving server (not merely listening)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"srvr")
            s.settimeout(timeout)
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
    except OSError:
        return False
    return b"Mode:" in reply


def broker_answers(port: int, timeout: float = 1.0) -> bool:
    """True when the broker on ``port`` answers a Kafka request (ApiVersions v0), not merely accepts
    connections: a broker registers in ZooKeeper before it starts serving requests."""
    client_id = b"kazami-probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client_id)) + client_id
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.settimeout(timeout)
            s.sendall(struct.pack(">i", len(body)) + body)
            header = s.recv(8)
    except OSError:
        return False
    return len(header) == 8 and struct.unpack(">ii", header)[1] == 1


def _spawn(layout: ClusterLayout, name: str, main_class: str, props: Path, heap: str) -> int:
    java = check_java()
    log_dir = layout.root / "logs" / name
    log_dir.mkdir(parents=True, exist_ok=True)
    cmd = [
        java,
        *heap.split(),
        *JVM_FLAGS.split(),
        f"-Dkafka.logs.dir={log_dir}",
        f"-Dlog4j.configuration=file:{layout.root / 'config' / 'log4j.properties'}",
        "-cp",
        classpath(),
        main_class,
        str(props),
    ]
    out = open(layout.root / "logs" / f"{name}.out", "ab")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(
        cmd,
        stdout=out,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        cwd=str(layout.root),
    )
    out.close()
    return proc.pid


def _stop_pid(pid: int | None, timeout: float) -> None:
    if not pid_alive(pid):
        return
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    while pid_alive(pid):
        time.sleep(0.05)


def _wait(predicate: Callable[[], bool], timeout: float, what: str, layout: ClusterLayout) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise LauncherError(f"Timed out after {timeout:.0f} s waiting for {what}; see the logs in {layout.root / 'logs'}.")


# ---------------------------------------------------------------- ZooKeeper view of the cluster


@contextmanager
def _zookeeper(layout: ClusterLayout) -> Iterator[KazooClient | None]:
    """A short-lived ZooKeeper session, or None when ZooKeeper does not answer."""
    if not zookeeper_serving(layout.zookeeper_port):
        yield None
        return
    zk = KazooClient(hosts=layout.zookeeper_connect, timeout=3.0, connection_retry={"max_tries": 1})
    try:
        zk.start(timeout=3.0)
    except KazooTimeoutError:
        yield None
        return
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def registrations(layout: ClusterLayout) -> tuple[dict[int, float], int | None]:
    """({broker id: registration time in epoch seconds}, controller id or None) as ZooKeeper has them;
    empty when ZooKeeper is down."""
    with _zookeeper(layout) as zk:
        if zk is None:
            return {}, None
        found: dict[int, float] = {}
        try:
            for child in zk.get_children("/brokers/ids"):
                try:
                    _, stat = zk.get(f"/brokers/ids/{child}")
                    found[int(child)] = stat.ctime / 1000
                except NoNodeError:
                    continue
        except NoNodeError:
            pass
        try:
            raw, _ = zk.get("/controller")
            controller: int | None = int(json.loads(raw)["brokerid"])
        except NoNodeError:
            controller = None
        return found, controller


def registered_brokers(layout: ClusterLayout) -> tuple[set[int], int | None]:
    """(broker ids registered in ZooKeeper, controller id or None); empty when ZooKeeper is down."""
    found, controller = registrations(layout)
    return set(found), controller


def _clear_stale_registrations(layout: ClusterLayout, broker_ids: list[int]) -> None:
    """Delete the registrations of our brokers that are not running.

    A ZooKeeper restarted from its snapshot keeps the ephemeral nodes of the sessions it
    knew until they expire; a broker starting meanwhile fails with NodeExists. The ids are
    this cluster's own and their processes are gone, so those nodes are stale by definition.
    """
    with _zookeeper(layout) as zk:
        if zk is None:
            return
        for b in broker_ids:
            with suppress(NoNodeError):
                zk.delete(f"/brokers/ids/{b}")
        try:
            raw, _ = zk.get("/controller")
            if int(json.loads(raw)["brokerid"]) in broker_ids:
                zk.delete("/controller")
        except NoNodeError:
            pass


# ---------------------------------------------------------------- commands


def _resolve_layout(data: str | Path | None, brokers: int, zookeeper_port: int, base_port: int) -> ClusterLayout:
    root = str(Path(data or DEFAULT_DATA).resolve())
    saved = ClusterLayout.load(root)
    if saved is not None:
        return saved
    return ClusterLayout(data=root, brokers=brokers, zookeeper_port=zookeeper_port, base_port=base_port)


def up(
    data: str | Path | None = None,
    brokers: int = 3,
    zookeeper_port: int = 2181,
    base_port: int = 9092,
    echo: Callable[[str], None] = print,
    timeout: float = 180,
) -> ClusterLayout:
    """Start ZooKeeper and every broker that is not already running, then wait until all are
    registered and a controller is elected. Returns the layout; raises LauncherError."""
    layout = _resolve_layout(data, brokers, zookeeper_port, base_port)
    if (layout.brokers, layout.zookeeper_port, layout.base_port) != (brokers, zookeeper_port, base_port):
        echo(
            f"Note: {layout.data} already holds a cluster of {layout.brokers} brokers on ports "
            f"{layout.base_port}+ (ZooKeeper {layout.zookeeper_port}); using it as it is."
        )
    check_java()
    fetch_jars(echo)

    zk_alive = pid_alive(layout.pids.get("zookeeper"))
    brokers_alive = {b: pid_alive(layout.pids.get(f"broker-{b}")) for b in layout.broker_ids}
    if zk_alive and all(brokers_alive.values()):
        ids, controller = registered_brokers(layout)
        if ids >= set(layout.broker_ids) and controller is not None:
            echo(f"The cluster in {layout.data} is already up: nothing to do.")
            return layout

    # Ports we are about to bind must be free (ours are running, so they are skipped).
    wanted = [] if zk_alive else [layout.zookeeper_port]
    wanted += [layout.broker_port(b) for b, alive in brokers_alive.items() if not alive]
    for port in wanted:
        if port_in_use(port):
            raise LauncherError(
                f"Port {port} on 127.0.0.1 is already in use by another program; stop it or choose other "
                f"ports (--zookeeper-port, --base-port, with a new --data folder)."
            )

    write_configs(layout)
    config = layout.root / "config"
    if not zk_alive:
        layout.pids["zookeeper"] = _spawn(
            layout,
            "zookeeper",
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            config / "zookeeper.properties",
            ZOOKEEPER_HEAP,
        )
        layout.save()
        _wait(
            lambda: zookeeper_serving(layout.zookeeper_port), 60, f"ZooKeeper on port {layout.zookeeper_port}", layout
        )
        echo(f"ZooKeeper    127.0.0.1:{layout.zookeeper_port}  pid {layout.pids['zookeeper']}")
    starting = [b for b, alive in brokers_alive.items() if not alive]
    _clear_stale_registrations(layout, starting)
    started_at = time.time() - 1.0
    for b in starting:
        layout.pids[f"broker-{b}"] = _spawn(
            layout, f"broker-{b}", "kafka.Kafka", config / f"server-{b}.properties", BROKER_HEAP
        )
        layout.save()
    _wait(
        lambda: _all_registered(layout, starting, started_at),
        timeout,
        "every broker to register and a controller to be elected",
        layout,
    )
    for b in layout.broker_ids:
        echo(f"Broker {b}     127.0.0.1:{layout.broker_port(b)}  pid {layout.pids[f'broker-{b}']}")
    _, controller = registered_brokers(layout)
    echo(f"Controller   broker {controller}")
    echo(f"Data and logs in {layout.data}")
    return layout


def _all_registered(layout: ClusterLayout, starting: list[int], started_at: float) -> bool:
    """Every broker registered (those just started, by a registration newer than their start)."""
    for b in layout.broker_ids:
        if not pid_alive(layout.pids.get(f"broker-{b}")):
            raise LauncherError(f"Broker {b} exited during start; see {layout.root / 'logs' / f'broker-{b}'}.")
    found, controller = registrations(layout)
    fresh = all(b in found and found[b] >= started_at for b in starting)
    registered = fresh and set(found) >= set(layout.broker_ids) and controller is not None
    if not (registered and all(broker_answers(layout.broker_port(b)) for b in layout.broker_ids)):
        return False
    return metadata_lists_every_broker(layout)


def metadata_lists_every_broker(layout: ClusterLayout) -> bool:
    """True when the cluster's metadata lists every broker: the controller has taken them all in, so a
    topic can be created with their full replication factor (registration alone is not enough)."""
    from kafka import KafkaAdminClient

    try:
        admin = KafkaAdminClient(
            bootstrap_servers=layout.bootstrap_servers.split(","), bootstrap_timeout_ms=3000, request_timeout_ms=3000
        )
    except Exception:  # noqa: BLE001 - not ready yet; asked again
        return False
    try:
        seen = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
    except Exception:  # noqa: BLE001 - not ready yet; asked again
        return False
    finally:
        admin.close()
    return seen >= set(layout.broker_ids)


def _require_layout(data: str | Path | None) -> ClusterLayout:
    layout = ClusterLayout.load(Path(data or DEFAULT_DATA).resolve())
    if layout is None:
        raise LauncherError(f"No cluster in {Path(data or DEFAULT_DATA)}: start one with `python -m broker.local up`.")
    return layout


def status(data: str | Path | None = None) -> dict[str, object]:
    """What runs now: ZooKeeper and each broker (address, pid, alive, registered) and the controller."""
    layout = _require_layout(data)
    ids, controller = registered_brokers(layout)
    zk_pid = layout.pids.get("zookeeper")
    return {
        "data": layout.data,
        "zookeeper": {"address": layout.zookeeper_connect, "pid": zk_pid, "alive": pid_alive(zk_pid)},
        "bootstrap_servers": layout.bootstrap_servers,
        "brokers": [
            {
                "id": b,
                "address": f"127.0.0.1:{layout.broker_port(b)}",
                "pid": layout.pids.get(f"broker-{b}"),
                "alive": pid_alive(layout.pids.get(f"broker-{b}")),
                "registered": b in ids,
            }
            for b in layout.broker_ids
        ],
        "controller": controller,
    }


def _check_broker_id(layout: ClusterLayout, broker_id: int) -> None:
    if broker_id not in layout.broker_ids:
        raise LauncherError(f"No broker {broker_id}: this cluster has brokers {layout.broker_ids}.")


def stop_broker(broker_id: int, data: str | Path | None = None, echo: Callable[[str], None] = print) -> None:
    """Stop one broker (a clean, controlled shutdown; killed after 60 s) and wait until it is gone."""
    layout = _require_layout(data)
    _check_broker_id(layout, broker_id)
    pid = layout.pids.get(f"broker-{broker_id}")
    if not pid_alive(pid):
        echo(f"Broker {broker_id} is not running.")
        return
    _stop_pid(pid, timeout=60)
    echo(f"Broker {broker_id} stopped.")


def start_broker(
    broker_id: int, data: str | Path | None = None, echo: Callable[[str], None] = print, timeout: float = 120
) -> None:
    """Start one broker again and wait until it is registered in ZooKeeper."""
    layout = _require_layout(data)
    _check_broker_id(layout, broker_id)
    if pid_alive(layout.pids.get(f"broker-{broker_id}")):
        echo(f"Broker {broker_id} is already running.")
        return
    if not pid_alive(layout.pids.get("zookeeper")):
        raise LauncherError("ZooKeeper is not running: start the whole cluster with `python -m broker.local up`.")
    port = layout.broker_port(broker_id)
    if port_in_use(port):
        raise LauncherError(f"Port {port} on 127.0.0.1 is already in use by another program.")
    write_configs(layout)
    _clear_stale_registrations(layout, [broker_id])
    started_at = time.time() - 1.0
    layout.pids[f"broker-{broker_id}"] = _spawn(
        layout,
        f"broker-{broker_id}",
        "kafka.Kafka",
        layout.root / "config" / f"server-{broker_id}.properties",
        BROKER_HEAP,
    )
    layout.save()
    _wait(lambda: _all_registered(layout, [broker_id], started_at), timeout, f"broker {broker_id} to register", layout)
    echo(f"Broker {broker_id} started on 127.0.0.1:{port}.")


def down(data: str | Path | None = None, echo: Callable[[str], None] = print) -> None:
    """Stop every broker, then ZooKeeper. Data stays in the data folder for the next `up`."""
    layout = ClusterLayout.load(Path(data or DEFAULT_DATA).resolve())
    if layout is None:
        echo("No cluster to stop.")
        return
    running = [b for b in layout.broker_ids if pid_alive(layout.pids.get(f"broker-{b}"))]
    # All brokers get SIGTERM at once; the last ones skip the leader hand-over that has nowhere to go.
    for b in running:
        os.kill(layout.pids[f"broker-{b}"], signal.SIGTERM)
    for b in running:
        _stop_pid(layout.pids.get(f"broker-{b}"), timeout=30)
        echo(f"Broker {b} stopped.")
    zookeeper_running = pid_alive(layout.pids.get("zookeeper"))
    if zookeeper_running:
        _stop_pid(layout.pids.get("zookeeper"), timeout=15)
        echo("ZooKeeper stopped.")
    if not running and not zookeeper_running:
        echo("Nothing was running.")
    echo(f"Data kept in {layout.data}.")
