"""Replication health: who leads and follows what, which partitions are short of replicas, and what changed.

One snapshot costs three requests whatever the partition count: DescribeCluster (brokers, fenced ones
as down), Metadata for every topic (leader, replicas, ISR) and one DescribeConfigs for every topic's
``min.insync.replicas``. The active controller comes from the overview's identity (the quorum's leader
on KRaft). Two snapshots compared give the events of a timeline: brokers registered or gone, the
controller changing, leaders changing, ISRs shrinking and expanding, topics created and deleted.
Works alike in ZooKeeper mode and on KRaft: it asks only the brokers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient

from broker.client.connection import ClusterConnection
from broker.cluster.overview import active_controller
from broker.topics.read import min_isr_of


@dataclass(frozen=True)
class PartitionReplicas:
    topic: str
    partition: int
    leader: int | None  # None: offline
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int = 1

    @property
    def preferred_leader(self) -> int | None:
        return self.replicas[0] if self.replicas else None

    @property
    def offline(self) -> bool:
        return self.leader is None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.min_isr

    @property
    def not_preferred(self) -> bool:
        return self.leader is not None and self.leader != self.preferred_leader

    @property
    def healthy(self) -> bool:
        return not (self.offline or self.under_replicated or self.under_min_isr)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "preferred_leader": self.preferred_leader,
            "min_insync_replicas": self.min_isr,
            "offline": self.offline,
            "under_replicated": self.under_replicated,
            "under_min_isr": self.under_min_isr,
            "not_preferred_leader": self.not_preferred,
        }


@dataclass(frozen=True)
class BrokerLoad:
    id: int
    alive: bool
    leads: int
    follows: int  # replicas it holds but does not lead
    out_of_isr: int  # replicas it holds that are not in sync


@dataclass(frozen=True)
class Replication:
    """A snapshot of the cluster's replication."""

    brokers: dict[int, bool]  # id -> alive (registered and not fenced)
    controller: int | None
    partitions: list[PartitionReplicas]
    fetched_at_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    @property
    def troubled(self) -> list[PartitionReplicas]:
        return [p for p in self.partitions if not p.healthy]

    def counts(self) -> dict[str, int]:
        return {
            "partitions": len(self.partitions),
            "offline": sum(p.offline for p in self.partitions),
            "under_replicated": sum(p.under_replicated for p in self.partitions),
            "under_min_isr": sum(p.under_min_isr for p in self.partitions),
            "not_preferred_leader": sum(p.not_preferred for p in self.partitions),
        }

    def loads(self) -> list[BrokerLoad]:
        ids = sorted(set(self.brokers) | {r for p in self.partitions for r in p.replicas})
        return [
            BrokerLoad(
                id=b,
                alive=self.brokers.get(b, False),
                leads=sum(1 for p in self.partitions if p.leader == b),
                follows=sum(1 for p in self.partitions if b in p.replicas and p.leader != b),
                out_of_isr=sum(1 for p in self.partitions if b in p.replicas and b not in p.isr),
            )
            for b in ids
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            "controller": self.controller,
            "brokers": [
                {"id": b.id, "alive": b.alive, "leads": b.leads, "follows": b.follows, "out_of_isr": b.out_of_isr}
                for b in self.loads()
            ],
            "counts": self.counts(),
            "partitions": [p.as_dict() for p in self.partitions],
            "fetched_at": self.fetched_at_ms,
        }


def build_replication(
    cluster: dict[str, Any], topics: list[dict[str, Any]], min_isr: dict[str, int], controller: int | None
) -> Replication:
    """A snapshot from the raw answers (pure: testable without Kafka)."""
    brokers = {int(b["broker_id"]): not b.get("is_fenced") for b in cluster.get("brokers", [])}
    partitions = [
        PartitionReplicas(
            topic=t["name"],
            partition=int(p["partition_index"]),
            leader=p["leader_id"] if p.get("leader_id", -1) >= 0 else None,
            replicas=tuple(p.get("replica_nodes") or ()),
            isr=tuple(sorted(p.get("isr_nodes") or ())),
            min_isr=min_isr.get(t["name"], 1),
        )
        for t in topics
        for p in t.get("partitions") or []
    ]
    partitions.sort(key=lambda p: (p.topic, p.partition))
    return Replication(brokers=brokers, controller=controller, partitions=partitions)


def get_replication(conn: ClusterConnection) -> Replication:
    """The cluster's replication now. Raises ClusterUnavailable."""

    def fetch(admin: KafkaAdminClient) -> Replication:
        cluster = admin.describe_cluster()
        topics = [t for t in admin.describe_topics() if not t.get("error_code")]
        controller = active_controller(admin, conn, cluster)
        min_isr = min_isr_of(admin, conn, [t["name"] for t in topics])
        return build_replication(cluster, topics, min_isr, controller)

    return conn.reads.get(("replication",), lambda: conn.call(fetch, "replication", requests=5, retry=True))


# ---------------------------------------------------------------- events


EVENT_KINDS = (
    "broker_registered",
    "broker_gone",
    "controller_changed",
    "leader_changed",
    "isr_shrank",
    "isr_expanded",
    "topic_created",
    "topic_deleted",
)


@dataclass(frozen=True)
class Event:
    """One change between two snapshots."""

    at_ms: int
    kind: str  # one of EVENT_KINDS
    text: str
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at_ms,
            "kind": self.kind,
            "text": self.text,
            "topic": self.topic,
            "partition": self.partition,
            "broker": self.broker,
            "details": self.details,
        }


def _ids(ids: tuple[int, ...] | set[int]) -> str:
    return ", ".join(str(i) for i in sorted(ids)) or "none"


def diff(before: Replication, after: Replication) -> list[Event]:
    """What changed from ``before`` to ``after``, in a stable order: brokers, controller, topics, then
    partitions by topic and number."""
    at = after.fetched_at_ms
    events: list[Event] = []
    for b in sorted(set(before.brokers) | set(after.brokers)):
        was, now = before.brokers.get(b, False), after.brokers.get(b, False)
        if now and not was:
            events.append(Event(at, "broker_registered", f"Broker {b} registered", broker=b))
        elif was and not now:
            how = "fenced" if b in after.brokers else "gone"
            events.append(Event(at, "broker_gone", f"Broker {b} {how}", broker=b, details={"how": how}))
    if before.controller != after.controller:
        events.append(
            Event(
                at,
                "controller_changed",
                f"Controller {before.controller if before.controller is not None else 'none'} → "
                f"{after.controller if after.controller is not None else 'none'}",
                broker=after.controller,
                details={"from": before.controller, "to": after.controller},
            )
        )
    old = {(p.topic, p.partition): p for p in before.partitions}
    new = {(p.topic, p.partition): p for p in after.partitions}
    for topic in sorted({t for t, _ in new} - {t for t, _ in old}):
        count = sum(1 for t, _ in new if t == topic)
        plural = "s" if count != 1 else ""
        events.append(Event(at, "topic_created", f"Topic {topic} created ({count} partition{plural})", topic=topic))
    for topic in sorted({t for t, _ in old} - {t for t, _ in new}):
        events.append(Event(at, "topic_deleted", f"Topic {topic} deleted", topic=topic))
    for key in sorted(old.keys() & new.keys()):
        prior, later = old[key], new[key]
        name = f"{key[0]}-{key[1]}"
        if prior.leader != later.leader:
            text = (
                f"{name}: leader {prior.leader if prior.leader is not None else 'none'} → "
                f"{later.leader if later.leader is not None else 'none (offline)'}"
            )
            events.append(
                Event(
                    at,
                    "leader_changed",
                    text,
                    *key,
                    broker=later.leader,
                    details={"from": prior.leader, "to": later.leader},
                )
            )
        lost, gained = set(prior.isr) - set(later.isr), set(later.isr) - set(prior.isr)
        if lost:
            events.append(
                Event(
                    at,
                    "isr_shrank",
                    f"{name}: ISR shrank to [{_ids(later.isr)}] ({_ids(lost)} out)",
                    *key,
                    details={"isr": list(later.isr), "removed": sorted(lost)},
                )
            )
        if gained:
            events.append(
                Event(
                    at,
                    "isr_expanded",
                    f"{name}: ISR expanded to [{_ids(later.isr)}] ({_ids(gained)} back)",
                    *key,
                    details={"isr": list(later.isr), "added": sorted(gained)},
                )
            )
    return events
