"""Which offsets of which partitions hold the records of a time range: what a batch job reads.

Kafka answers "the first offset whose timestamp is at or after T" per partition (ListOffsets by
timestamp), so a range [from, to) of record times becomes, per partition, the offsets from the
first record at or after ``from`` to the first at or after ``to``. Record times within a partition
are not always in order (a producer may set any timestamp), so a reader still filters on the
record time; the offsets only bound what it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetTimestamp

from broker.connection import ClusterConnection
from broker.errors import PartitionUnavailable
from broker.topics import get_topic_partitions


@dataclass(frozen=True)
class PartitionRange:
    """Offsets [start, end) of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def records(self) -> int:
        return max(0, self.end - self.start)


@dataclass(frozen=True)
class TopicRanges:
    partitions: list[PartitionRange]
    # The earliest record time at or after ``from`` over the partitions read (None when they hold none):
    # where the range really starts when it was open at the start.
    first_time_ms: int | None

    @property
    def records(self) -> int:
        return sum(p.records for p in self.partitions)

    def starting(self) -> dict[str, dict[str, int]]:
        """Spark's Kafka source ``startingOffsets`` JSON shape: {topic: {partition: offset}}."""
        return _by_topic(self.partitions, lambda p: p.start)

    def ending(self) -> dict[str, dict[str, int]]:
        return _by_topic(self.partitions, lambda p: p.end)


def _by_topic(parts: list[PartitionRange], pick: Callable[[PartitionRange], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in parts:
        out.setdefault(p.topic, {})[str(p.partition)] = pick(p)
    return out


def get_ranges(conn: ClusterConnection, topics: list[str], from_ms: int | None, to_ms: int | None) -> TopicRanges:
    """The offsets of ``topics`` whose records fall in [from_ms, to_ms) (None: open on that side).

    One metadata read per topic, then one ListOffsets request per bound for all partitions. Raises
    TopicNotFound for an unknown topic, PartitionUnavailable when a partition has no leader (its
    records could not be read, so a result would silently leave them out), ClusterUnavailable.
    """
    parts: list[tuple[str, int, int, int]] = []
    for topic in topics:
        for p in get_topic_partitions(conn, topic):
            if p.start_offset is None or p.end_offset is None:
                raise PartitionUnavailable(
                    f"Partition {p.partition} of {topic!r} has no leader or did not answer: its records cannot be read."
                )
            parts.append((topic, p.partition, p.start_offset, p.end_offset))
    tps = [TopicPartition(t, p) for t, p, _, _ in parts]

    def lookup(admin: KafkaAdminClient) -> tuple[dict[TopicPartition, tuple[int, int]], dict[TopicPartition, int]]:
        # The first record at or after `from` (or the first record), with its time: where the range begins.
        begin_spec = OffsetTimestamp(from_ms) if from_ms is not None else OffsetTimestamp(0)
        begins = admin.list_partition_offsets(dict.fromkeys(tps, begin_spec)) if tps else {}
        ends = {}
        if to_ms is not None and tps:
            answer = admin.list_partition_offsets(dict.fromkeys(tps, OffsetTimestamp(to_ms)))
            ends = {tp: o.offset for tp, o in answer.items()}
        return {tp: (o.offset, o.timestamp) for tp, o in begins.items()}, ends

    begins, ends = conn.call(lookup, "offsets by time", requests=2, retry=True) if tps else ({}, {})
    ranges: list[PartitionRange] = []
    first: int | None = None
    for topic, partition, low, high in parts:
        tp = TopicPartition(topic, partition)
        begin, begin_ts = begins.get(tp, (-1, -1))
        # -1: no record at or after the time, so the range starts at the end of the partition.
        start = high if begin < 0 else max(begin, low)
        end_at = ends.get(tp, -1) if to_ms is not None else high
        end = high if end_at < 0 else min(end_at, high)
        ranges.append(PartitionRange(topic, partition, start, max(start, end)))
        if begin >= 0 and begin_ts >= 0 and start < end:
            first = begin_ts if first is None else min(first, begin_ts)
    return TopicRanges(ranges, first)
