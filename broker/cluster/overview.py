"""The cluster at a glance: identity, mode, version, controller, brokers and partition health, in four
requests (DescribeCluster, Metadata, ApiVersions for the finalized features, and DescribeQuorum on KRaft
or the controller's DescribeConfigs on ZooKeeper)."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from broker.client.connection import ClusterConnection
from broker.cluster.quorum import (
    KRAFT,
    NotKRaft,
    describe_quorum,
    finalized_features,
    metadata_version_name,
    release_of,
)


@dataclass(frozen=True)
class BrokerInfo:
    id: int
    host: str | None
    port: int | None
    rack: str | None
    alive: bool
    is_controller: bool = False
    # False for a registered broker that did not answer a request sent to it lately (frozen, cut off).
    answering: bool = True
    # KRaft: registered but fenced (stopped, or lost its session with the controller): not alive.
    fenced: bool = False
    # Leader balance: partitions it leads now, partitions it is the preferred leader of (first replica),
    # and replicas it holds (internal topics included).
    leaders: int = 0
    preferred: int = 0
    replicas: int = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}" if self.host else "not registered"


@dataclass(frozen=True)
class Identity:
    """What the cluster runs on and which release: learnt from the cluster, never from settings."""

    mode: str | None  # "zookeeper" or "kraft"; None when not known
    # As Kafka names the protocol it speaks: "3.9-IV0" (inter.broker.protocol.version) in ZooKeeper
    # mode, the finalized metadata.version ("4.3-IV0") on KRaft.
    protocol_version: str | None = None
    features: dict[str, int] = field(default_factory=dict)
    # KRaft: the active controller (the quorum's leader) and whether it is a broker as well.
    controller: int | None = None
    controller_is_broker: bool = False
    # ZooKeeper mode: the brokers' zookeeper.connect, as the controller has it.
    zookeeper: str | None = None


@dataclass(frozen=True)
class ClusterOverview:
    """What the overview page and ``GET /api/clusters/<name>/`` show."""

    name: str
    cluster_id: str | None
    controller: int | None
    version: str | None
    brokers: list[BrokerInfo]
    topics: int
    internal_topics: int
    partitions: int
    under_replicated: int
    offline: int
    fetched_at: float = field(default_factory=time.time)
    mode: str | None = None
    protocol_version: str | None = None
    features: dict[str, int] = field(default_factory=dict)
    controller_is_broker: bool = True
    # A ZooKeeper address configured for a cluster that turned out to run in KRaft mode (ignored).
    zookeeper_ignored: str | None = None
    # Partitions with a leader that is not their preferred one (a preferred election would move them back).
    not_preferred: int = 0

    @property
    def fetched_at_ms(self) -> int:
        return int(self.fetched_at * 1000)

    @property
    def brokers_up(self) -> int:
        return sum(1 for b in self.brokers if b.alive)

    @property
    def brokers_down(self) -> int:
        return sum(1 for b in self.brokers if not b.alive)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cluster_id": self.cluster_id,
            "mode": self.mode,
            "controller": {"id": self.controller, "is_broker": self.controller_is_broker}
            if self.controller is not None
            else None,
            "controller_id": self.controller,
            "version": self.version,
            "protocol_version": self.protocol_version,
            "features": self.features,
            "zookeeper_ignored": self.zookeeper_ignored,
            "brokers": [
                {
                    "id": b.id,
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack,
                    "alive": b.alive,
                    "answering": b.answering,
                    "fenced": b.fenced,
                    "is_controller": b.is_controller,
                    "leaders": b.leaders,
                    "preferred_leader_of": b.preferred,
                    "replicas": b.replicas,
                }
                for b in self.brokers
            ],
            "topics": self.topics,
            "internal_topics": self.internal_topics,
            "partitions": self.partitions,
            "under_replicated_partitions": self.under_replicated,
            "offline_partitions": self.offline,
            "not_on_preferred_leader": self.not_preferred,
            "fetched_at": self.fetched_at_ms,
        }


def get_overview(conn: ClusterConnection) -> ClusterOverview:
    """Describe the cluster, its topics' partitions (one metadata request for all topics) and the
    controller's protocol version. Raises ClusterUnavailable when the cluster does not answer."""

    def fetch(admin: KafkaAdminClient) -> tuple[dict[str, Any], list[dict[str, Any]], Identity]:
        cluster = admin.describe_cluster()
        topics = admin.describe_topics()
        return cluster, topics, identify(admin, conn, cluster)

    def answer() -> ClusterOverview:
        cluster, topics, identity = conn.call(fetch, "overview", requests=4, retry=True)
        return build_overview(conn, cluster, topics, identity)

    return conn.reads.get(("overview",), answer)


_SILENT = (kafka.errors.RequestTimedOutError, kafka.errors.KafkaTimeoutError, kafka.errors.KafkaConnectionError)


def identify(admin: KafkaAdminClient, conn: ClusterConnection, cluster: dict[str, Any]) -> Identity:
    """Mode, protocol version, finalized features and (KRaft) the active controller. What a silent broker
    or controller does not tell is left unknown rather than fail the overview."""
    mode = conn.mode()
    try:
        features = finalized_features(admin)
    except _SILENT:
        features = {}
    if mode == KRAFT:
        version = metadata_version_name(features.get("metadata.version"))
        brokers = {b["broker_id"] for b in cluster.get("brokers", [])}
        try:
            quorum = describe_quorum(admin, brokers)
        except (*_SILENT, NotKRaft):
            return Identity(mode, version, features)
        return Identity(mode, version, features, quorum.leader_id, quorum.leader_is_broker)
    controller = cluster.get("controller_id")
    version, zookeeper = _controller_settings(admin, conn, controller if isinstance(controller, int) else None)
    return Identity(mode, version, features, zookeeper=zookeeper)


def active_controller(admin: KafkaAdminClient, conn: ClusterConnection, cluster: dict[str, Any]) -> int | None:
    """The active controller's id, with no more requests than needed: the one DescribeCluster names in
    ZooKeeper mode, the quorum's leader on KRaft (DescribeQuorum; None when it does not answer)."""
    if conn.mode() == KRAFT:
        brokers = {b["broker_id"] for b in cluster.get("brokers", [])}
        try:
            return describe_quorum(admin, brokers).leader_id
        except (*_SILENT, NotKRaft):
            return None
    named = cluster.get("controller_id")
    return named if isinstance(named, int) and named >= 0 else None


def _controller_settings(
    admin: KafkaAdminClient, conn: ClusterConnection, controller: int | None
) -> tuple[str | None, str | None]:
    """The ZooKeeper-mode controller's ``inter.broker.protocol.version`` (e.g. "3.9-IV0") and
    ``zookeeper.connect``, None when not told or when the controller does not answer (it is then noted
    as silent)."""
    if controller is None or controller < 0 or conn.is_silent(controller):
        return None, None
    names = ["inter.broker.protocol.version", "zookeeper.connect"]
    resource = ConfigResource(ConfigResourceType.BROKER, str(controller), names)
    try:
        described = admin.describe_configs([resource], config_filter="all")
    except _SILENT:
        conn.mark_silent(controller)
        return None, None
    configs = described.get("broker", {}).get(str(controller), {})

    def value(name: str) -> str | None:
        entry = configs.get(name)
        found = entry.get("value") if isinstance(entry, dict) else entry
        return str(found) if found else None

    return value(names[0]), value(names[1])


def build_overview(
    conn: ClusterConnection, cluster: dict[str, Any], topics: list[dict[str, Any]], identity: Identity
) -> ClusterOverview:
    """Pure assembly of the overview from the raw answers (kept apart so it is testable without Kafka).
    On KRaft the controller is the quorum's leader (DescribeCluster names a random broker there); in
    ZooKeeper mode it is the broker DescribeCluster names."""
    if identity.mode == KRAFT:
        controller = identity.controller
    else:
        named = cluster.get("controller_id")
        controller = named if isinstance(named, int) and named >= 0 else None
    if identity.zookeeper:
        conn.learned_zookeeper = identity.zookeeper
    listed: dict[int, tuple[str, int, str | None]] = {
        b["broker_id"]: (b["host"], b["port"], b.get("rack")) for b in cluster.get("brokers", [])
    }
    conn.known_brokers.update(listed)
    # A KRaft broker that stopped stays registered, fenced, until it returns: down, not alive.
    fenced = {b["broker_id"] for b in cluster.get("brokers", []) if b.get("is_fenced")}
    alive = {b: where for b, where in listed.items() if b not in fenced}
    conn.note_alive(set(alive))

    partitions = under_replicated = offline = internal = not_preferred = 0
    referenced: set[int] = set()
    leads: Counter[int] = Counter()
    preferred: Counter[int] = Counter()
    held: Counter[int] = Counter()
    for topic in topics:
        if topic.get("is_internal"):
            internal += 1
        for p in topic.get("partitions", []):
            partitions += 1
            replicas = p.get("replica_nodes") or []
            referenced.update(replicas)
            held.update(replicas)
            leader = p.get("leader_id", -1)
            if replicas:
                preferred[replicas[0]] += 1
            if leader < 0:
                offline += 1
            else:
                leads[leader] += 1
                if replicas and leader != replicas[0]:
                    not_preferred += 1
            if len(p.get("isr_nodes") or []) < len(replicas):
                under_replicated += 1

    ids = sorted(set(alive) | set(conn.known_brokers) | referenced)
    silent = conn.silent_brokers()
    brokers = []
    for broker_id in ids:
        host, port, rack = alive.get(broker_id) or conn.known_brokers.get(broker_id) or (None, None, None)
        brokers.append(
            BrokerInfo(
                id=broker_id,
                host=host,
                port=port,
                rack=rack,
                alive=broker_id in alive,
                fenced=broker_id in fenced,
                is_controller=broker_id == controller and (identity.mode != KRAFT or identity.controller_is_broker),
                answering=broker_id in alive and broker_id not in silent,
                leaders=leads[broker_id],
                preferred=preferred[broker_id],
                replicas=held[broker_id],
            )
        )
    return ClusterOverview(
        name=conn.config.name,
        cluster_id=cluster.get("cluster_id"),
        controller=controller,
        version=release_of(identity.protocol_version),
        brokers=brokers,
        topics=len(topics) - internal,
        internal_topics=internal,
        partitions=partitions,
        under_replicated=under_replicated,
        offline=offline,
        mode=identity.mode,
        protocol_version=identity.protocol_version,
        features=identity.features,
        controller_is_broker=identity.controller_is_broker if identity.mode == KRAFT else controller is not None,
        zookeeper_ignored=conn.config.zookeeper_connect if identity.mode == KRAFT else None,
        not_preferred=not_preferred,
    )
