"""The offset ranges a job reads (broker/messages/ranges.py), without a cluster: records counted, Spark's offset
shapes, and one topic's slice of a range over several."""

from __future__ import annotations

from broker.messages.ranges import PartitionRange, TopicRanges

RANGES = TopicRanges(
    [PartitionRange("a", 0, 5, 10), PartitionRange("b", 0, 0, 3), PartitionRange("a", 1, 7, 7)], 1_700_000_000_000
)


def test_records_and_spark_offsets() -> None:
    assert RANGES.records == 8
    assert RANGES.starting() == {"a": {"0": 5, "1": 7}, "b": {"0": 0}}
    assert RANGES.ending() == {"a": {"0": 10, "1": 7}, "b": {"0": 3}}


def test_one_topics_slice() -> None:
    only_a = RANGES.only("a")
    assert [(p.topic, p.partition) for p in only_a.partitions] == [("a", 0), ("a", 1)]
    assert (only_a.records, only_a.first_time_ms) == (5, 1_700_000_000_000)
    assert RANGES.only("c").partitions == []
