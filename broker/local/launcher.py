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

With a secure listener (``up(..., sasl_ssl_port_offset=100)``, ``up --sasl-ssl``) each broker also
listens for SASL_SSL clients on its port + the offset (brokers still talk to each other in
PLAINTEXT), and the folder holds::

    certs/                    a throwaway CA, the broker's and a client's certificate (broker/local/certs.py)
    secrets.json              the generated SASL users and passwords, readable by the owner only
"""

from __future__ import annotations

import json
import os
import secrets
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
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from broker.config import ClusterConfig
from broker.errors import KazamiError
from broker.local.certs import CertFiles, ensure_certs
from broker.local.maven import copy_dependencies, jars_complete
from broker.processes import running

HERE = Path(__file__).resolve().parent
JARS = HERE / "jars"
POM = HERE / "pom.xml"
REPO_ROOT = HERE.parent.parent
DEFAULT_DATA = REPO_ROOT / "var" / "cluster"

BROKER_HEAP = "-Xmx384m -Xms128m"
ZOOKEEPER_HEAP = "-Xmx128m -Xms64m"
# Fast JVM start and a small footprint: several brokers share two cores here.
JVM_FLAGS = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xss512k -Djava.awt.headless=true"

# The secure listener's users: one for PLAIN, one with SCRAM-SHA-256 and SCRAM-SHA-512 credentials.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN_USER = "kazami-plain"
SCRAM_USER = "kazami-scram"
DEFAULT_SASL_SSL_OFFSET = 100


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
    # Each broker's SASL_SSL port is its PLAINTEXT port plus this; None: no secure listener.
    sasl_ssl_port_offset: int | None = None

    @property
    def broker_ids(self) -> list[int]:
        return list(range(self.brokers))

    def broker_port(self, broker_id: int) -> int:
        return self.base_port + broker_id

    @property
    def secure(self) -> bool:
        return self.sasl_ssl_port_offset is not None

    def sasl_ssl_port(self, broker_id: int) -> int:
        """Broker ``broker_id``'s SASL_SSL port; raises LauncherError when the cluster has no secure listener."""
        if self.sasl_ssl_port_offset is None:
            raise LauncherError(f"The cluster in {self.data} has no SASL_SSL listener (start it with --sasl-ssl).")
        return self.broker_port(broker_id) + self.sasl_ssl_port_offset

    @property
    def sasl_ssl_bootstrap_servers(self) -> str:
        return ",".join(f"127.0.0.1:{self.sasl_ssl_port(b)}" for b in self.broker_ids)

    @property
    def certs(self) -> CertFiles:
        return CertFiles(self.root / "certs")

    @property
    def secrets_path(self) -> Path:
        return self.root / "secrets.json"

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
    return jars_complete(JARS)


def fetch_jars(echo: Callable[[str], None] = print) -> None:
    """Copy the Kafka jars from Maven Central into broker/local/jars/ once; later calls do nothing."""
    copy_dependencies(POM, JARS, "the Apache Kafka jars", echo)


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


def broker_properties(layout: ClusterLayout, broker_id: int, users: list[SaslUser] | None = None) -> str:
    """server-N.properties for one broker, sized for a single small machine. With a secure listener,
    ``users`` are the SASL users (the PLAIN ones are declared in the file itself)."""
    port = layout.broker_port(broker_id)
    replicas = min(3, layout.brokers)
    listeners = f"PLAINTEXT://127.0.0.1:{port}"
    if layout.secure:
        listeners += f",SASL_SSL://127.0.0.1:{layout.sasl_ssl_port(broker_id)}"
    lines = [
        f"broker.id={broker_id}",
        f"listeners={listeners}",
        f"advertised.listeners={listeners}",
    ]
    if layout.secure:
        lines += secure_listener_properties(layout, users or [])
    return "\n".join(
        [
            *lines,
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


def secure_listener_properties(layout: ClusterLayout, users: list[SaslUser]) -> list[str]:
    """The SASL_SSL listener's settings: PEM key and trust stores from ``layout.certs``, client
    certificates required (KIP-684: only listener-prefixed, so the PLAINTEXT listener is untouched),
    PLAIN users declared here, SCRAM credentials kept in ZooKeeper."""
    certs = layout.certs
    prefix = "listener.name.sasl_ssl"
    plain = " ".join(f'user_{u.name}="{u.password}"' for u in users if "PLAIN" in u.mechanisms)
    return [
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "inter.broker.listener.name=PLAINTEXT",
        f"sasl.enabled.mechanisms={','.join(SASL_MECHANISMS)}",
        f"{prefix}.ssl.keystore.type=PEM",
        f"{prefix}.ssl.keystore.location={certs.broker}",
        f"{prefix}.ssl.truststore.type=PEM",
        f"{prefix}.ssl.truststore.location={certs.ca}",
        f"{prefix}.ssl.client.auth=required",
        f"{prefix}.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required {plain};",
        f"{prefix}.scram-sha-256.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
        f"{prefix}.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
    ]


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
    """Write every process's configuration; with a secure listener, first the certificates and users
    (made once, kept afterwards), and the broker files readable by the owner only (they hold the PLAIN
    passwords)."""
    config = layout.root / "config"
    config.mkdir(parents=True, exist_ok=True)
    (layout.root / "logs").mkdir(exist_ok=True)
    (config / "zookeeper.properties").write_text(zookeeper_properties(layout))
    (config / "log4j.properties").write_text(log4j_properties(layout.root / "logs"))
    if not layout.secure:
        for b in layout.broker_ids:
            (config / f"server-{b}.properties").write_text(broker_properties(layout, b))
        return
    ensure_certs(layout.certs.folder)
    users = ensure_sasl_users(layout)
    for b in layout.broker_ids:
        _write_private(config / f"server-{b}.properties", broker_properties(layout, b, users))


# ---------------------------------------------------------------- the secure listener's users


@dataclass(frozen=True)
class SaslUser:
    """A user of the secure listener; ``repr`` never shows the password."""

    name: str
    password: str = field(repr=False)
    mechanisms: tuple[str, ...]


@dataclass(frozen=True)
class SecureListener:
    """What a client needs to reach a local cluster's SASL_SSL listener."""

    bootstrap_servers: tuple[str, ...]
    ca: Path
    client_cert: Path
    client_key: Path
    secrets: Path
    users: tuple[SaslUser, ...]

    def user_for(self, mechanism: str) -> SaslUser:
        for user in self.users:
            if mechanism in user.mechanisms:
                return user
        raise LauncherError(f"No user of the secure listener has {mechanism} credentials.")

    def client_config(self, mechanism: str, name: str = "local-secure", **overrides: Any) -> ClusterConfig:
        """A ClusterConfig for this listener with ``mechanism``'s user, the CA, the client certificate and
        hostname check on; ``overrides`` replace any field (e.g. a wrong ``sasl_password`` in a test)."""
        user = self.user_for(mechanism)
        fields: dict[str, Any] = {
            "name": name,
            "bootstrap_servers": self.bootstrap_servers,
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": mechanism,
            "sasl_username": user.name,
            "sasl_password": user.password,
            "ssl_cafile": str(self.ca),
            "ssl_certfile": str(self.client_cert),
            "ssl_keyfile": str(self.client_key),
            "ssl_check_hostname": True,
        }
        fields.update(overrides)
        return ClusterConfig(**fields)


def ensure_sasl_users(layout: ClusterLayout) -> list[SaslUser]:
    """The secure listener's users from ``secrets.json``, generated (random passwords, file mode 0600)
    the first time."""
    path = layout.secrets_path
    if path.exists():
        raw = json.loads(path.read_text())
        return [SaslUser(u["name"], u["password"], tuple(u["mechanisms"])) for u in raw["users"]]
    users = [
        SaslUser(PLAIN_USER, secrets.token_urlsafe(18), ("PLAIN",)),
        SaslUser(SCRAM_USER, secrets.token_urlsafe(18), ("SCRAM-SHA-256", "SCRAM-SHA-512")),
    ]
    body = {"users": [{"name": u.name, "password": u.password, "mechanisms": list(u.mechanisms)} for u in users]}
    _write_private(path, json.dumps(body, indent=2) + "\n")
    return users


def secure_listener(layout: ClusterLayout) -> SecureListener:
    """How to reach ``layout``'s SASL_SSL listener; raises LauncherError when it has none (or was never
    started, so no users exist yet)."""
    if not layout.secure:
        raise LauncherError(f"The cluster in {layout.data} has no SASL_SSL listener (start it with --sasl-ssl).")
    if not layout.secrets_path.exists():
        raise LauncherError(f"The cluster in {layout.data} was never started: no users in {layout.secrets_path}.")
    from broker.connection import keep_out_of_logs

    certs = layout.certs
    users = tuple(ensure_sasl_users(layout))
    keep_out_of_logs(*(u.password for u in users))
    return SecureListener(
        bootstrap_servers=tuple(layout.sasl_ssl_bootstrap_servers.split(",")),
        ca=certs.ca,
        client_cert=certs.client_cert,
        client_key=certs.client_key,
        secrets=layout.secrets_path,
        users=users,
    )


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable and writable by the owner only from the first byte."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    tmp.replace(path)


def _create_scram_credentials(layout: ClusterLayout, users: list[SaslUser]) -> None:
    """Store the SCRAM users' credentials in the cluster (AlterUserScramCredentials over the PLAINTEXT
    listener; the broker keeps them in ZooKeeper). Doing it again replaces them with the same password."""
    from kafka import KafkaAdminClient
    from kafka.admin import UserScramCredentialUpsertion

    upserts = [
        UserScramCredentialUpsertion(u.name, mechanism, u.password)
        for u in users
        for mechanism in u.mechanisms
        if mechanism.startswith("SCRAM-")
    ]
    admin = KafkaAdminClient(
        bootstrap_servers=layout.bootstrap_servers.split(","), bootstrap_timeout_ms=10_000, request_timeout_ms=10_000
    )
    try:
        failed = {user: error for user, error in admin.alter_user_scram_credentials(upserts).items() if error}
    finally:
        admin.close()
    if failed:
        raise LauncherError(f"Kafka refused the SCRAM credentials: {failed}.")


def _secure_listener_accepts(layout: ClusterLayout, listener: SecureListener) -> bool:
    """True when every broker's SASL_SSL listener accepts the SCRAM user (credentials reach each broker
    through a ZooKeeper notification, a moment after they are stored)."""
    from kafka import KafkaAdminClient

    for b in layout.broker_ids:
        config = listener.client_config("SCRAM-SHA-512", bootstrap_servers=(f"127.0.0.1:{layout.sasl_ssl_port(b)}",))
        try:
            admin = KafkaAdminClient(bootstrap_timeout_ms=3000, **config.client_options())
        except Exception:  # noqa: BLE001 - not ready yet; asked again
            return False
        admin.close()
    return True


# ---------------------------------------------------------------- processes


def pid_alive(pid: int | None) -> bool:
    """True when ``pid`` is a JVM started from our jars that still runs (a recycled pid is not ours)."""
    return running(pid, str(JARS).encode())


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


def _resolve_layout(
    data: str | Path | None, brokers: int, zookeeper_port: int, base_port: int, sasl_ssl_port_offset: int | None
) -> ClusterLayout:
    root = str(Path(data or DEFAULT_DATA).resolve())
    saved = ClusterLayout.load(root)
    if saved is not None:
        return saved
    return ClusterLayout(
        data=root,
        brokers=brokers,
        zookeeper_port=zookeeper_port,
        base_port=base_port,
        sasl_ssl_port_offset=sasl_ssl_port_offset,
    )


def up(
    data: str | Path | None = None,
    brokers: int = 3,
    zookeeper_port: int = 2181,
    base_port: int = 9092,
    echo: Callable[[str], None] = print,
    timeout: float = 180,
    sasl_ssl_port_offset: int | None = None,
) -> ClusterLayout:
    """Start ZooKeeper and every broker that is not already running, then wait until all are
    registered and a controller is elected. With ``sasl_ssl_port_offset``, each broker also gets a
    SASL_SSL listener on its port + the offset, with generated certificates and users, and ``up``
    waits until that listener accepts them. Returns the layout; raises LauncherError."""
    layout = _resolve_layout(data, brokers, zookeeper_port, base_port, sasl_ssl_port_offset)
    if (layout.brokers, layout.zookeeper_port, layout.base_port) != (brokers, zookeeper_port, base_port):
        echo(
            f"Note: {layout.data} already holds a cluster of {layout.brokers} brokers on ports "
            f"{layout.base_port}+ (ZooKeeper {layout.zookeeper_port}); using it as it is."
        )
    elif layout.sasl_ssl_port_offset != sasl_ssl_port_offset:
        has = "a" if layout.secure else "no"
        echo(f"Note: {layout.data} already holds a cluster with {has} SASL_SSL listener; using it as it is.")
    if layout.sasl_ssl_port_offset is not None and layout.sasl_ssl_port_offset < layout.brokers:
        raise LauncherError(
            f"The SASL_SSL port offset ({layout.sasl_ssl_port_offset}) must be at least the number of brokers "
            f"({layout.brokers}), or the ports of two brokers' listeners would be the same."
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
    wanted += [port for b, alive in brokers_alive.items() if not alive for port in _broker_ports(layout, b)]
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
    if layout.secure:
        listener = secure_listener(layout)
        _create_scram_credentials(layout, list(listener.users))
        _wait(
            lambda: _secure_listener_accepts(layout, listener),
            60,
            "the SASL_SSL listeners to accept the generated users",
            layout,
        )
    for b in layout.broker_ids:
        echo(f"Broker {b}     127.0.0.1:{layout.broker_port(b)}  pid {layout.pids[f'broker-{b}']}")
    _, controller = registered_brokers(layout)
    echo(f"Controller   broker {controller}")
    if layout.secure:
        _echo_secure(layout, echo)
    echo(f"Data and logs in {layout.data}")
    return layout


def _broker_ports(layout: ClusterLayout, broker_id: int) -> list[int]:
    ports = [layout.broker_port(broker_id)]
    if layout.secure:
        ports.append(layout.sasl_ssl_port(broker_id))
    return ports


def _echo_secure(layout: ClusterLayout, echo: Callable[[str], None]) -> None:
    """Where the secure listener is and where its secrets are, never the secrets themselves."""
    listener = secure_listener(layout)
    echo(f"SASL_SSL     {layout.sasl_ssl_bootstrap_servers}  (client certificate required, inter-broker PLAINTEXT)")
    for user in listener.users:
        echo(f"  user {user.name}: {', '.join(user.mechanisms)}")
    echo(f"  CA {listener.ca}, client {listener.client_cert} + {listener.client_key.name}")
    echo(f"  passwords in {listener.secrets} (readable by you only); `python -m broker.local secure-env` prints")
    echo("  the console's KAFKA_* settings for it")


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
    found: dict[str, object] = {
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
    if layout.secure:
        certs = layout.certs
        found["sasl_ssl"] = {
            "bootstrap_servers": layout.sasl_ssl_bootstrap_servers,
            "ca": str(certs.ca),
            "client_cert": str(certs.client_cert),
            "client_key": str(certs.client_key),
            "secrets": str(layout.secrets_path),
        }
    return found


def secure_env(data: str | Path | None = None, mechanism: str = "SCRAM-SHA-512") -> dict[str, str]:
    """The console's environment variables for the cluster's SASL_SSL listener with ``mechanism``'s user,
    password included (for ``eval "$(python -m broker.local secure-env)"``). Raises LauncherError."""
    layout = _require_layout(data)
    listener = secure_listener(layout)
    user = listener.user_for(mechanism)
    return {
        "KAFKA_BOOTSTRAP_SERVERS": layout.sasl_ssl_bootstrap_servers,
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL",
        "KAFKA_SASL_MECHANISM": mechanism,
        "KAFKA_SASL_USERNAME": user.name,
        "KAFKA_SASL_PASSWORD": user.password,
        "KAFKA_SSL_CAFILE": str(listener.ca),
        "KAFKA_SSL_CERTFILE": str(listener.client_cert),
        "KAFKA_SSL_KEYFILE": str(listener.client_key),
        "ZOOKEEPER_CONNECT": layout.zookeeper_connect,
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
    for taken in _broker_ports(layout, broker_id):
        if port_in_use(taken):
            raise LauncherError(f"Port {taken} on 127.0.0.1 is already in use by another program.")
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


def stop_zookeeper(data: str | Path | None = None, echo: Callable[[str], None] = print) -> None:
    """Stop ZooKeeper alone and wait until it is gone. The brokers keep running and serve clients from
    the metadata they hold; what needs ZooKeeper (new topics, leader elections) waits until it is back."""
    layout = _require_layout(data)
    pid = layout.pids.get("zookeeper")
    if not pid_alive(pid):
        echo("ZooKeeper is not running.")
        return
    _stop_pid(pid, timeout=15)
    echo("ZooKeeper stopped.")


def start_zookeeper(data: str | Path | None = None, echo: Callable[[str], None] = print, timeout: float = 60) -> None:
    """Start ZooKeeper again and wait until it serves, every running broker is registered in it and a
    controller is elected (a broker whose session expired meanwhile registers anew)."""
    layout = _require_layout(data)
    if pid_alive(layout.pids.get("zookeeper")):
        echo("ZooKeeper is already running.")
        return
    if port_in_use(layout.zookeeper_port):
        raise LauncherError(f"Port {layout.zookeeper_port} on 127.0.0.1 is already in use by another program.")
    layout.pids["zookeeper"] = _spawn(
        layout,
        "zookeeper",
        "org.apache.zookeeper.server.quorum.QuorumPeerMain",
        layout.root / "config" / "zookeeper.properties",
        ZOOKEEPER_HEAP,
    )
    layout.save()
    _wait(
        lambda: zookeeper_serving(layout.zookeeper_port), timeout, f"ZooKeeper on port {layout.zookeeper_port}", layout
    )
    running = {b for b in layout.broker_ids if pid_alive(layout.pids.get(f"broker-{b}"))}

    def registered() -> bool:
        ids, controller = registered_brokers(layout)
        return ids >= running and controller is not None

    _wait(registered, timeout, "the running brokers to register in ZooKeeper again", layout)
    echo(f"ZooKeeper started on 127.0.0.1:{layout.zookeeper_port}; brokers {sorted(running)} are registered.")
