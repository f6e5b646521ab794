"""What a cluster runs on (ZooKeeper or KRaft), its finalized features and, on KRaft, its metadata quorum.

The mode is learnt from the cluster itself: a KRaft broker answers DescribeQuorum (it forwards it to the
active controller), a ZooKeeper-mode broker does not list that request among its API versions. On KRaft
the release comes from the finalized ``metadata.version`` feature level (Kafka 4 has no
``inter.broker.protocol.version``), and the active controller is the quorum's leader: DescribeCluster
answered by a KRaft broker names a random broker as controller, so it is never used for that.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient

from broker.client.connection import DESCRIBE_QUORUM_KEY, ClusterConnection
from broker.errors import NotSupported

ZOOKEEPER = "zookeeper"
KRAFT = "kraft"
METADATA_TOPIC = "__cluster_metadata"
# A replica whose last fetch is this much older than the newest one the leader saw has stopped fetching
# (voters and observers fetch the metadata log every few hundred milliseconds).
SILENT_MS = 5_000

# metadata.version feature levels and the release each names (Kafka's MetadataVersion). A level past the
# table is named by the last release known plus "or later".
METADATA_VERSIONS: dict[int, str] = {
    1: "3.0-IV1",
    2: "3.1-IV0",
    3: "3.2-IV0",
    4: "3.3-IV0",
    5: "3.3-IV1",
    6: "3.3-IV2",
    7: "3.3-IV3",
    8: "3.4-IV0",
    9: "3.5-IV0",
    10: "3.5-IV1",
    11: "3.5-IV2",
    12: "3.6-IV0",
    13: "3.6-IV1",
    14: "3.6-IV2",
    15: "3.7-IV0",
    16: "3.7-IV1",
    17: "3.7-IV2",
    18: "3.7-IV3",
    19: "3.7-IV4",
    20: "3.8-IV0",
    21: "3.9-IV0",
    22: "4.0-IV0",
    23: "4.0-IV1",
    24: "4.0-IV2",
    25: "4.0-IV3",
    26: "4.1-IV0",
    27: "4.1-IV1",
    28: "4.2-IV0",
    29: "4.2-IV1",
    30: "4.3-IV0",
    31: "4.4-IV0",
}


class NotKRaft(NotSupported):
    """The cluster runs on ZooKeeper: it has no metadata quorum."""


def mode_of(api_keys: set[int]) -> str:
    """``kraft`` when the broker's API versions include DescribeQuorum, else ``zookeeper``."""
    return KRAFT if DESCRIBE_QUORUM_KEY in api_keys else ZOOKEEPER


def metadata_version_name(level: int | None) -> str | None:
    """The ``metadata.version`` level as Kafka names it ("4.3-IV0"), None for none."""
    if level is None or level <= 0:
        return None
    if level in METADATA_VERSIONS:
        return METADATA_VERSIONS[level]
    return f"{METADATA_VERSIONS[max(METADATA_VERSIONS)].split('-')[0]} or later (metadata.version {level})"


def release_of(version: str | None) -> str | None:
    """The release part of a protocol or metadata version: "3.9-IV0" -> "3.9"."""
    if not version:
        return None
    return version.split("-", 1)[0].split(" ", 1)[0]


def finalized_features(admin: KafkaAdminClient) -> dict[str, int]:
    """{feature: finalized max level} from one ApiVersions request (v3+); empty when none are finalized."""
    described = admin.describe_features()
    return {
        name: int(info["finalized"][1])
        for name, info in sorted(described.items())
        if isinstance(info, dict) and info.get("finalized")
    }


@dataclass(frozen=True)
class QuorumReplica:
    """A voter or observer of the metadata log, as the quorum leader sees it."""

    id: int
    log_end_offset: int | None
    lag: int | None  # records behind the leader's high watermark
    last_fetch: int | None  # ms since the epoch; None when never
    last_caught_up: int | None
    directory_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "log_end_offset": self.log_end_offset,
            "lag": self.lag,
            "last_fetch": self.last_fetch,
            "last_caught_up": self.last_caught_up,
            "directory_id": self.directory_id,
        }


@dataclass(frozen=True)
class QuorumNode:
    """A controller's endpoints (DescribeQuorum v2, Kafka 3.8 and later)."""

    id: int
    endpoints: list[tuple[str, str, int]]  # (listener, host, port)

    @property
    def address(self) -> str:
        return ", ".join(f"{host}:{port}" for _, host, port in self.endpoints) or "unknown"


@dataclass(frozen=True)
class Quorum:
    """The KRaft metadata quorum (``kafka-metadata-quorum describe --status --replication``)."""

    leader_id: int | None
    leader_epoch: int
    high_watermark: int
    voters: list[QuorumReplica]
    observers: list[QuorumReplica]
    nodes: list[QuorumNode] = field(default_factory=list)
    broker_ids: frozenset[int] = frozenset()
    # Brokers' client addresses by id (DescribeCluster), for the observers that are brokers.
    broker_addresses: dict[int, str] = field(default_factory=dict)

    def silent(self, replica: QuorumReplica) -> bool:
        """A replica the leader has not heard from lately: never since it was elected, or more than
        SILENT_MS before the most recent fetch it saw (a stopped controller or broker)."""
        if replica.id == self.leader_id:
            return False
        latest = max((r.last_fetch or 0 for r in self.voters + self.observers), default=0)
        return replica.last_fetch is None or latest - replica.last_fetch > SILENT_MS

    def address_of(self, replica_id: int) -> str | None:
        node = self.node(replica_id)
        return node.address if node else self.broker_addresses.get(replica_id)

    @property
    def leader_is_broker(self) -> bool:
        """Whether the active controller is a broker as well (a combined node)."""
        return self.leader_id is not None and self.leader_id in self.broker_ids

    @property
    def max_lag(self) -> int:
        return max((r.lag or 0 for r in self.voters + self.observers), default=0)

    def role_of(self, replica_id: int) -> str:
        if replica_id == self.leader_id:
            return "leader"
        if any(v.id == replica_id for v in self.voters):
            return "follower"
        return "observer"

    def node(self, replica_id: int) -> QuorumNode | None:
        return next((n for n in self.nodes if n.id == replica_id), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "leader_id": self.leader_id,
            "leader_epoch": self.leader_epoch,
            "leader_is_broker": self.leader_is_broker,
            "high_watermark": self.high_watermark,
            "voters": [r.as_dict() for r in self.voters],
            "observers": [r.as_dict() for r in self.observers],
            "nodes": [
                {"id": n.id, "endpoints": [{"listener": name, "host": h, "port": p} for name, h, p in n.endpoints]}
                for n in self.nodes
            ],
        }


def parse_quorum(
    answer: dict[str, Any], broker_ids: set[int], broker_addresses: dict[int, str] | None = None
) -> Quorum:
    """The quorum from kafka-python's ``describe_metadata_quorum`` answer (pure, testable without Kafka)."""
    partition = next(
        (p for t in answer.get("topics") or [] if t.get("topic_name") == METADATA_TOPIC for p in t["partitions"]),
        None,
    )
    if partition is None:
        raise NotKRaft("The cluster's answer describes no metadata log.")
    if partition.get("error"):
        raise NotKRaft(f"The quorum could not be described: {partition['error']}")
    high_watermark = int(partition.get("high_watermark") or 0)

    def replica(r: dict[str, Any]) -> QuorumReplica:
        leo = r.get("log_end_offset")
        leo = int(leo) if leo is not None and leo >= 0 else None

        def stamp(key: str) -> int | None:
            value = r.get(key)
            return int(value) if value is not None and value >= 0 else None

        return QuorumReplica(
            id=int(r["replica_id"]),
            log_end_offset=leo,
            lag=max(0, high_watermark - leo) if leo is not None else None,
            last_fetch=stamp("last_fetch_timestamp"),
            last_caught_up=stamp("last_caught_up_timestamp"),
            directory_id=str(r["replica_directory_id"]) if r.get("replica_directory_id") else None,
        )

    leader = partition.get("leader_id")
    nodes = [
        QuorumNode(
            id=int(n["node_id"]),
            endpoints=[(str(e["name"]), str(e["host"]), int(e["port"])) for e in n.get("listeners") or []],
        )
        for n in answer.get("nodes") or []
    ]
    return Quorum(
        leader_id=int(leader) if leader is not None and leader >= 0 else None,
        leader_epoch=int(partition.get("leader_epoch") or 0),
        high_watermark=high_watermark,
        voters=sorted((replica(r) for r in partition.get("current_voters") or []), key=lambda r: r.id),
        observers=sorted((replica(r) for r in partition.get("observers") or []), key=lambda r: r.id),
        nodes=sorted(nodes, key=lambda n: n.id),
        broker_ids=frozenset(broker_ids),
        broker_addresses=dict(broker_addresses or {}),
    )


def describe_quorum(
    admin: KafkaAdminClient, broker_ids: set[int], broker_addresses: dict[int, str] | None = None
) -> Quorum:
    """One DescribeQuorum (a broker forwards it to the active controller)."""
    return parse_quorum(admin.describe_metadata_quorum(), broker_ids, broker_addresses)


def get_quorum(conn: ClusterConnection) -> Quorum:
    """The cluster's metadata quorum. Raises NotKRaft on a ZooKeeper-mode cluster, ClusterUnavailable."""
    if conn.mode() == ZOOKEEPER:
        raise NotKRaft(
            f"Cluster {conn.config.name!r} runs in ZooKeeper mode: it has no KRaft metadata quorum (KRaft mode "
            "brings one: production-ready since Kafka 3.3, the only mode from Kafka 4.0). Its controller is "
            "elected through ZooKeeper (see the overview)."
        )

    def fetch(admin: KafkaAdminClient) -> Quorum:
        brokers = {b["broker_id"]: f"{b['host']}:{b['port']}" for b in admin.describe_cluster()["brokers"]}
        return describe_quorum(admin, set(brokers), brokers)

    return conn.reads.get(("quorum",), lambda: conn.call(fetch, "quorum description", requests=2, retry=True))
