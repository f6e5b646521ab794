"""Offset ranges of a time range (broker/messages/ranges.py) on a real cluster, with record times out of order."""

from __future__ import annotations

import time
from typing import Any

import pytest

from broker.client.config import ClusterConfig, split_servers
from broker.client.connection import ClusterConnection
from broker.errors import TopicNotFound
from broker.messages.ranges import get_ranges
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = pytest.mark.kafka

T = (int(time.time() * 1000) // 1000 - 3600) * 1000  # an hour ago: well within retention


@pytest.fixture(scope="module")
def conn(kafka_cluster: Any) -> Any:
    connection = ClusterConnection(ClusterConfig(name="t", bootstrap_servers=split_servers(BOOTSTRAP), timeout=10))
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def shuffled(kafka_cluster: Any) -> str:
    """One partition whose record times go back and forth: T+100, T+200, T+300, T+150, T+250."""
    topic = create_topic(unique("ranges"), partitions=1, replication=1)
    produce_timed(topic, [(b"k", b"v", T + ms) for ms in (100, 200, 300, 150, 250)])
    return topic


def test_a_range_starts_at_the_first_record_at_or_after_from_and_reads_to_the_end(conn: Any, shuffled: str) -> None:
    found = get_ranges(conn, [shuffled], T + 200, T + 260)
    (part,) = found.partitions
    # Offset 1 (T+200) is the first at or after `from`; offsets 3 and 4 (T+150, T+250) come after a
    # record past `to` (T+300), and T+250 is still in range: the range reads to the end.
    assert (part.start, part.end) == (1, 5)
    assert found.records == 4
    assert found.first_time_ms == T + 200
    assert found.starting() == {shuffled: {"0": 1}}
    assert found.ending() == {shuffled: {"0": 5}}


def test_an_open_start_reads_every_record(conn: Any, shuffled: str) -> None:
    found = get_ranges(conn, [shuffled], None, None)
    assert (found.partitions[0].start, found.partitions[0].end, found.first_time_ms) == (0, 5, T + 100)


def test_a_start_after_every_record_reads_nothing(conn: Any, shuffled: str) -> None:
    found = get_ranges(conn, [shuffled], T + 301, None)
    assert found.records == 0
    assert found.first_time_ms is None


def test_a_range_ending_before_its_first_record_has_no_first_time(conn: Any, shuffled: str) -> None:
    assert get_ranges(conn, [shuffled], T + 200, T + 150).first_time_ms is None


def test_an_unknown_topic_is_named(conn: Any, shuffled: str) -> None:
    with pytest.raises(TopicNotFound, match="no-such-topic"):
        get_ranges(conn, [shuffled, "no-such-topic"], None, None)
