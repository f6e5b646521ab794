"""The cluster at a glance: identity, controller, brokers and partition health, in three requests."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from broker.connection import ClusterConnection


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

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}" if self.host else "not registered"


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
            "controller": self.controller,
            "version": self.version,
            "brokers": [
                {
                    "id": b.id,
                    "host": b.host,
                    "port": b.port,
                    "rack": b.rack,
                    "alive": b.alive,
                    "answering": b.answering,
                    "is_controller": b.is_controller,
                }
                for b in self.brokers
            ],
            "topics": self.topics,
            "internal_topics": self.internal_topics,
            "partitions": self.partitions,
            "under_replicated_partitions": self.under_replicated,
            "offline_partitions": self.offline,
            "fetched_at": self.fetched_at_ms,
        }


def get_overview(conn: ClusterConnection) -> ClusterOverview:
    """Describe the cluster, its topics' partitions (one metadata request for all topics) and the
    controller's protocol version. Raises ClusterUnavailable when the cluster does not answer."""

    def fetch(admin: KafkaAdminClient) -> tuple[dict[str, Any], list[dict[str, Any]], str | None]:
        cluster = admin.describe_cluster()
        topics = admin.describe_topics()
        return cluster, topics, _protocol_version(admin, conn, cluster.get("controller_id"))

    def answer() -> ClusterOverview:
        cluster, topics, version = conn.call(fetch, "overview", requests=3, retry=True)
        return build_overview(conn, cluster, topics, version)

    return conn.reads.get(("overview",), answer)


def _protocol_version(admin: KafkaAdminClient, conn: ClusterConnection, controller: int | None) -> str | None:
    """The controller's ``inter.broker.protocol.version`` (e.g. "3.9-IV0"), None when not told or when
    the controller does not answer (it is then noted as silent)."""
    if controller is None or controller < 0 or conn.is_silent(controller):
        return None
    resource = ConfigResource(ConfigResourceType.BROKER, str(controller), ["inter.broker.protocol.version"])
    try:
        described = admin.describe_configs([resource], config_filter="all")
    except (kafka.errors.RequestTimedOutError, kafka.errors.KafkaTimeoutError, kafka.errors.KafkaConnectionError):
        conn.mark_silent(controller)
        return None
    entry = described.get("broker", {}).get(str(controller), {}).get("inter.broker.protocol.version")
    value = entry.get("value") if isinstance(entry, dict) else entry
    return str(value) if value else None


def build_overview(
    conn: ClusterConnection, cluster: dict[str, Any], topics: list[dict[str, Any]], version: str | None
) -> ClusterOverview:
    """Pure assembly of the overview from the raw answers (kept apart so it is testable without Kafka)."""
    controller = cluster.get("controller_id")
    controller = controller if isinstance(controller, int) and controller >= 0 else None
    alive: dict[int, tuple[str, int, str | None]] = {
        b["broker_id"]: (b["host"], b["port"], b.get("rack")) for b in cluster.get("brokers", [])
    }
    conn.known_brokers.update(alive)

    partitions = under_replicated = offline = internal = 0
    referenced: set[int] = set()
    for topic in topics:
        if topic.get("is_internal"):
            internal += 1
        for p in topic.get("partitions", []):
            partitions += 1
            replicas = p.get("replica_nodes") or []
            referenced.update(replicas)
            if p.get("leader_id", -1) < 0:
                offline += 1
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
                is_controller=broker_id == controller,
                answering=broker_id in alive and broker_id not in silent,
            )
        )
    return ClusterOverview(
        name=conn.config.name,
        cluster_id=cluster.get("cluster_id"),
        controller=controller,
        version=version,
        brokers=brokers,
        topics=len(topics) - internal,
        internal_topics=internal,
        partitions=partitions,
        under_replicated=under_replicated,
        offline=offline,
    )
