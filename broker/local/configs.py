"""The configuration files of the embedded cluster's processes, written into ``<data>/config/``.

A broker's file is the same in both modes but for its identity and how it finds the cluster's metadata:
``zookeeper_mode_properties`` and ``kraft_mode_properties`` side by side below, on top of
``shared_broker_properties``. Logging: Kafka 3.x reads a log4j 1 properties file
(``-Dlog4j.configuration``), Kafka 4 a log4j2 one (``-Dlog4j2.configurationFile``); both send each
process's log to ``<data>/logs/<process>/server.log`` (``kafka.logs.dir`` is set per process).
"""

from __future__ import annotations

from pathlib import Path

from broker.local.certs import ensure_certs
from broker.local.layout import ClusterLayout
from broker.local.secure import SASL_MECHANISMS, SaslUser, ensure_sasl_users, write_private

# ---------------------------------------------------------------- ZooKeeper


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


# ---------------------------------------------------------------- brokers and controllers


def zookeeper_mode_properties(layout: ClusterLayout, broker_id: int) -> list[str]:
    """A ZooKeeper-mode broker: its id, ZooKeeper's address, and how hard a controlled shutdown tries
    (the controller is another broker, elected through ZooKeeper)."""
    return [
        f"broker.id={broker_id}",
        f"zookeeper.connect={layout.zookeeper_connect}",
        "zookeeper.connection.timeout.ms=18000",
        "controlled.shutdown.max.retries=1",
        "controlled.shutdown.retry.backoff.ms=1000",
    ]


def kraft_mode_properties(layout: ClusterLayout, node_id: int, roles: str) -> list[str]:
    """A KRaft node (``roles``: ``broker,controller``, ``broker`` or ``controller``): its node id and the
    static quorum of controllers every node reaches on their CONTROLLER listener. Static voters
    (``controller.quorum.voters``) work the same in 3.9 and 4.x and need no ``--initial-controllers`` at
    format time; the dynamic quorum of KIP-853 (``controller.quorum.bootstrap.servers``) is for adding and
    removing controllers, which the embedded cluster does not do."""
    return [
        f"process.roles={roles}",
        f"node.id={node_id}",
        f"controller.quorum.voters={layout.quorum_voters}",
        "controller.listener.names=CONTROLLER",
    ]


def shared_broker_properties(layout: ClusterLayout, broker_id: int) -> list[str]:
    """What every broker has in either mode, sized for a single small machine."""
    replicas = min(3, layout.brokers)
    lines = [
        f"log.dirs={layout.log_dir(broker_id)}",
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
    ]
    if layout.release.major >= 4:
        # Share groups (KIP-932) keep their state in a topic of their own (50 partitions, 3 replicas by default).
        lines += [
            "share.coordinator.state.topic.num.partitions=6",
            f"share.coordinator.state.topic.replication.factor={replicas}",
            f"share.coordinator.state.topic.min.isr={min(2, replicas)}",
        ]
    return lines


def broker_properties(layout: ClusterLayout, broker_id: int, users: list[SaslUser] | None = None) -> str:
    """server-N.properties for one broker (in combined KRaft mode also a controller). With a secure
    listener, ``users`` are the SASL users (the PLAIN ones are declared in the file itself)."""
    client = [f"PLAINTEXT://127.0.0.1:{layout.broker_port(broker_id)}"]
    protocols = ["PLAINTEXT:PLAINTEXT"]
    if layout.secure:
        client.append(f"SASL_SSL://127.0.0.1:{layout.sasl_ssl_port(broker_id)}")
        protocols.append("SASL_SSL:SASL_SSL")
    listeners = list(client)
    if layout.kraft:
        protocols.append("CONTROLLER:PLAINTEXT")
        if layout.combined:
            listeners.append(f"CONTROLLER://127.0.0.1:{layout.controller_port(broker_id)}")
    lines = [
        *(
            kraft_mode_properties(layout, broker_id, "broker,controller" if layout.combined else "broker")
            if layout.kraft
            else zookeeper_mode_properties(layout, broker_id)
        ),
        f"listeners={','.join(listeners)}",
        f"advertised.listeners={','.join(client)}",
    ]
    if layout.kraft or layout.secure:
        lines += [f"listener.security.protocol.map={','.join(protocols)}", "inter.broker.listener.name=PLAINTEXT"]
    if layout.secure:
        lines += secure_listener_properties(layout, users or [])
        lines += authorizer_properties(layout)
    return "\n".join([*lines, *shared_broker_properties(layout, broker_id), ""])


def controller_properties(layout: ClusterLayout, node_id: int) -> str:
    """server-N.properties for a controller running on its own (KRaft with separate controllers)."""
    return "\n".join(
        [
            *kraft_mode_properties(layout, node_id, "controller"),
            f"listeners=CONTROLLER://127.0.0.1:{layout.controller_port(node_id)}",
            "listener.security.protocol.map=CONTROLLER:PLAINTEXT",
            f"log.dirs={layout.log_dir(node_id)}",
            "num.network.threads=1",
            "num.io.threads=2",
            # The controllers decide ACL changes forwarded by the brokers: the same authorizer on them.
            *(authorizer_properties(layout) if layout.secure else []),
            "",
        ]
    )


def secure_listener_properties(layout: ClusterLayout, users: list[SaslUser]) -> list[str]:
    """The SASL_SSL listener's settings: PEM key and trust stores from ``layout.certs``, client
    certificates required (KIP-684: only listener-prefixed, so the PLAINTEXT listener is untouched),
    PLAIN users declared here, SCRAM credentials kept by the cluster (ZooKeeper or the metadata log)."""
    certs = layout.certs
    prefix = "listener.name.sasl_ssl"
    plain = " ".join(f'user_{u.name}="{u.password}"' for u in users if "PLAIN" in u.mechanisms)
    return [
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


# The principal of every PLAINTEXT connection (clients of the default listener, brokers among themselves,
# brokers to controllers): a super user, so everything but the secure listener works as without an authorizer.
PLAINTEXT_PRINCIPAL = "User:ANONYMOUS"
ZOOKEEPER_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
KRAFT_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def authorizer_properties(layout: ClusterLayout) -> list[str]:
    """Kafka's standard authorizer (ACLs in ZooKeeper, or in the metadata log on KRaft) for a cluster with a
    secure listener: the PLAINTEXT principal is the only super user and a resource without ACLs is closed, so
    the SASL users may do exactly what ACLs grant them (``secure.grant_secure_users`` gives the generated
    ones everything at ``up``)."""
    return [
        f"authorizer.class.name={KRAFT_AUTHORIZER if layout.kraft else ZOOKEEPER_AUTHORIZER}",
        f"super.users={PLAINTEXT_PRINCIPAL}",
        "allow.everyone.if.no.acl.found=false",
    ]


# ---------------------------------------------------------------- logging


QUIET_LOGGERS = ("kafka.request.logger", "state.change.logger", "org.apache.zookeeper")


def log4j_properties(log_dir: Path) -> str:
    """Kafka 3.x (log4j 1 through reload4j): one log file per process."""
    return "\n".join(
        [
            "log4j.rootLogger=INFO, file",
            "log4j.appender.file=org.apache.log4j.RollingFileAppender",
            "log4j.appender.file.File=${kafka.logs.dir}/server.log",
            "log4j.appender.file.MaxFileSize=20MB",
            "log4j.appender.file.MaxBackupIndex=3",
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout",
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n",
            *(f"log4j.logger.{name}=WARN" for name in QUIET_LOGGERS),
            "",
        ]
    )


def log4j2_properties() -> str:
    """Kafka 4 (log4j2, properties format: no YAML parser needed): the same file, size and pattern."""
    lines = [
        "status=warn",
        "appender.file.type=RollingFile",
        "appender.file.name=file",
        "appender.file.fileName=${sys:kafka.logs.dir}/server.log",
        "appender.file.filePattern=${sys:kafka.logs.dir}/server.log.%i",
        "appender.file.layout.type=PatternLayout",
        "appender.file.layout.pattern=[%d] %p %m (%c)%n",
        "appender.file.policies.type=Policies",
        "appender.file.policies.size.type=SizeBasedTriggeringPolicy",
        "appender.file.policies.size.size=20MB",
        "appender.file.strategy.type=DefaultRolloverStrategy",
        "appender.file.strategy.max=3",
        "rootLogger.level=INFO",
        "rootLogger.appenderRef.file.ref=file",
    ]
    for i, name in enumerate(QUIET_LOGGERS):
        lines += [f"logger.quiet{i}.name={name}", f"logger.quiet{i}.level=WARN"]
    return "\n".join([*lines, ""])


def logging_config(layout: ClusterLayout) -> Path:
    return layout.root / "config" / ("log4j2.properties" if layout.release.log4j2 else "log4j.properties")


def logging_flag(layout: ClusterLayout) -> str:
    """The JVM option that points the release's logging backend at the file ``write_configs`` wrote."""
    if layout.release.log4j2:
        return f"-Dlog4j2.configurationFile={logging_config(layout)}"
    return f"-Dlog4j.configuration=file:{logging_config(layout)}"


def write_configs(layout: ClusterLayout) -> None:
    """Write every process's configuration; with a secure listener, first the certificates and users
    (made once, kept afterwards), and the broker files readable by the owner only (they hold the PLAIN
    passwords)."""
    config = layout.root / "config"
    config.mkdir(parents=True, exist_ok=True)
    (layout.root / "logs").mkdir(exist_ok=True)
    if layout.kraft:
        for n in layout.separate_controller_ids:
            (config / f"server-{n}.properties").write_text(controller_properties(layout, n))
    else:
        (config / "zookeeper.properties").write_text(zookeeper_properties(layout))
    if layout.release.log4j2:
        logging_config(layout).write_text(log4j2_properties())
    else:
        logging_config(layout).write_text(log4j_properties(layout.root / "logs"))
    if not layout.secure:
        for b in layout.broker_ids:
            (config / f"server-{b}.properties").write_text(broker_properties(layout, b))
        return
    ensure_certs(layout.certs.folder)
    users = ensure_sasl_users(layout)
    for b in layout.broker_ids:
        write_private(config / f"server-{b}.properties", broker_properties(layout, b, users))
