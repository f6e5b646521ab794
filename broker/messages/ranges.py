"""Which offsets of which partitions hold the records of a time range: what a batch job reads.

Kafka answers "the first offset whose timestamp is at or after T" per partition (ListOffsets by
timestamp). For the start of a range that bound is exact: every record before that offset is older
than T. It is not for the end: record times within a partition need not be in order (a producer
may set any timestamp), so a record after the first one at or past ``to`` may still be older than
``to``. A range therefore reads from the first record at or after ``from`` to the end of each
partition, and the reader filters on the record time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetTimestamp

from broker.client.connection import ClusterConnection
from broker.errors import InvalidInput, PartitionNotFound, PartitionUnavailable
from broker.topics.read import get_topic_partitions


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

    def only(self, topic: str) -> TopicRanges:
        """The ranges of ``topic`` alone (the first record time stays the whole range's)."""
        return TopicRanges([p for p in self.partitions if p.topic == topic], self.first_time_ms)


def _by_topic(parts: list[PartitionRange], pick: Callable[[PartitionRange], int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in parts:
        out.setdefault(p.topic, {})[str(p.partition)] = pick(p)
    return out


def get_ranges(conn: ClusterConnection, topics: list[str], from_ms: int | None, to_ms: int | None) -> TopicRanges:
    """The offsets of ``topics`` whose records fall in [from_ms, to_ms) (None: open on that side).

    The offsets run from the first record at or after ``from_ms`` to the end of each partition (see the
    module's docstring for why not to ``to_ms``). One metadata read per topic, then one ListOffsets
    request for all partitions. Raises
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

    def lookup(admin: KafkaAdminClient) -> dict[TopicPartition, tuple[int, int]]:
        # The first record at or after `from` (or the first record), with its time: where the range begins.
        begin_spec = OffsetTimestamp(from_ms) if from_ms is not None else OffsetTimestamp(0)
        begins = admin.list_partition_offsets(dict.fromkeys(tps, begin_spec))
        return {tp: (o.offset, o.timestamp) for tp, o in begins.items()}

    begins = conn.call(lookup, "offsets by time", requests=1, retry=True) if tps else {}
    ranges: list[PartitionRange] = []
    first: int | None = None
    for topic, partition, low, high in parts:
        tp = TopicPartition(topic, partition)
        begin, begin_ts = begins.get(tp, (-1, -1))
        # -1: no record at or after the time, so the range starts at the end of the partition.
        start = high if begin < 0 else min(max(begin, low), high)
        ranges.append(PartitionRange(topic, partition, start, high))
        if begin >= 0 and begin_ts >= 0 and start < high and (to_ms is None or begin_ts < to_ms):
            first = begin_ts if first is None else min(first, begin_ts)
    return TopicRanges(ranges, first)


def get_offset_ranges(conn: ClusterConnection, wanted: dict[tuple[str, int], tuple[int, int | None]]) -> TopicRanges:
    """The ranges of ``wanted`` ({(topic, partition): (start, end or None for the end)}), clamped to what
    each partition holds; partitions not named are not read. Raises TopicNotFound, PartitionNotFound,
    PartitionUnavailable (no leader), InvalidInput (an end before its start), ClusterUnavailable."""
    by_topic: dict[str, dict[int, tuple[int, int | None]]] = {}
    for (topic, partition), bounds in wanted.items():
        by_topic.setdefault(topic, {})[partition] = bounds
    ranges: list[PartitionRange] = []
    for topic, asked in by_topic.items():
        held = {p.partition: p for p in get_topic_partitions(conn, topic)}
        for partition, (start, end) in sorted(asked.items()):
            if partition not in held:
                raise PartitionNotFound(f"Topic {topic!r} has no partition {partition} (it has 0 to {len(held) - 1}).")
            p = held[partition]
            if p.start_offset is None or p.end_offset is None:
                raise PartitionUnavailable(f"Partition {partition} of {topic!r} has no leader: it cannot be read.")
            if end is not None and end < start:
                raise InvalidInput(f"Partition {partition} of {topic!r}: end offset {end} is before start {start}.")
            low = min(max(start, p.start_offset), p.end_offset)
            high = p.end_offset if end is None else min(max(end, low), p.end_offset)
            ranges.append(PartitionRange(topic, partition, low, high))
    return TopicRanges(ranges, None)
