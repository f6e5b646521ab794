"""Messages and bytes written per second, per topic, per broker and for the cluster, from two looks at the
partitions' end offsets and their leaders' replica sizes a few seconds apart (no JMX: what any client may ask).

A look costs what a topics listing costs: one metadata request, one ListOffsets request per leader and one
DescribeLogDirs request per broker. A partition counts toward the broker that leads it at the second look:
that broker took the writes. Its bytes are the growth of the leader's replica; an interval in which it shrank
(a segment deleted by retention, a compaction) or changed leader gives its bytes as unknown rather than wrong.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, field

from kafka import KafkaAdminClient

from broker.client.connection import ClusterConnection
from broker.topics.read import ends_and_sizes


@dataclass(frozen=True)
class Look:
    """The partitions' end offsets, leaders and leader replica sizes at one moment (epoch ms)."""

    at_ms: int
    ends: dict[tuple[str, int], int]
    leaders: dict[tuple[str, int], int]
    sizes: dict[tuple[str, int], int] = field(default_factory=dict)
    disk: dict[int, int] = field(default_factory=dict)  # broker -> bytes of every replica in its log dirs


def look(conn: ClusterConnection) -> Look:
    """Every non-internal partition's end offset, leader and leader replica size now. Raises ClusterUnavailable.
    Partitions without a leader, or whose leader did not answer, are left out."""

    def fetch(admin: KafkaAdminClient) -> Look:
        topics = [t for t in admin.describe_topics() if not t.get("is_internal")]
        at_ms = int(time.time() * 1000)
        leaders, _, ends, sizes = ends_and_sizes(admin, conn, topics)
        disk: dict[int, int] = defaultdict(int)
        for (_, _, broker), size in sizes.items():
            disk[broker] += size
        return Look(
            at_ms=at_ms,
            ends={(tp.topic, tp.partition): end for tp, end in ends.items()},
            leaders={(tp.topic, tp.partition): leader for tp, leader in leaders.items() if leader >= 0},
            sizes={
                (tp.topic, tp.partition): sizes[(tp.topic, tp.partition, leader)]
                for tp, leader in leaders.items()
                if (tp.topic, tp.partition, leader) in sizes
            },
            disk=dict(disk),
        )

    return conn.call(fetch, "throughput look", requests=6, retry=True)


@dataclass(frozen=True)
class Rate:
    messages_per_s: float
    bytes_per_s: float | None  # None when a partition's bytes in the interval are not known
    disk_bytes: int | None = None  # a broker's: what its replicas hold at the second look


@dataclass(frozen=True)
class Rates:
    """What was written between two looks."""

    seconds: float
    total: Rate
    topics: dict[str, Rate]
    brokers: dict[int, Rate]


def rates(before: Look, after: Look) -> Rates | None:
    """The rates between ``before`` and ``after`` (None when they are not in order). A partition new since the
    first look, or whose end went back (its topic deleted and made again), is left out."""
    seconds = (after.at_ms - before.at_ms) / 1000
    if seconds <= 0:
        return None
    messages: dict[str, int] = defaultdict(int)
    by_broker: dict[int, int] = defaultdict(int)
    topic_bytes: dict[str, int] = defaultdict(int)
    broker_bytes: dict[int, int] = defaultdict(int)
    unknown_topics: set[str] = set()
    unknown_brokers: set[int] = set()
    for where, end in after.ends.items():
        topic = where[0]
        previous = before.ends.get(where)
        if previous is None or end < previous:
            continue
        leader = after.leaders.get(where, -1)
        messages[topic] += end - previous
        by_broker[leader] += end - previous
        grown = _grown(before, after, where)
        if grown is None:
            unknown_topics.add(topic)
            unknown_brokers.add(leader)
        else:
            topic_bytes[topic] += grown
            broker_bytes[leader] += grown
    topics = {
        t: Rate(n / seconds, None if t in unknown_topics else topic_bytes[t] / seconds) for t, n in messages.items()
    }
    brokers = {
        b: Rate(
            by_broker.get(b, 0) / seconds,
            None if b in unknown_brokers else broker_bytes.get(b, 0) / seconds,
            after.disk.get(b),
        )
        for b in sorted(set(by_broker) | set(after.disk))
        if b >= 0
    }
    total_bytes = None if unknown_topics else sum(topic_bytes.values()) / seconds
    total = Rate(sum(messages.values()) / seconds, total_bytes)
    return Rates(seconds=seconds, total=total, topics=topics, brokers=brokers)


def _grown(before: Look, after: Look, where: tuple[str, int]) -> int | None:
    """How many bytes the partition's leader replica grew by; None when not known (no size at either look,
    another leader, or a replica that shrank)."""
    if before.leaders.get(where) != after.leaders.get(where):
        return None
    first, second = before.sizes.get(where), after.sizes.get(where)
    if first is None or second is None or second < first:
        return None
    return second - first
