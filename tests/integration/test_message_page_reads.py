"""Pages of messages read as broker/messages/read.py reads them (offsets from the fetch answers, a first fetch
of 64 KiB and larger ones after it), checked against an independent client (kafka-python's consumer) on the
real cluster: pages whose records are larger than the first fetch, and pages that span several fetches."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, TopicPartition

from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.local import launcher
from broker.messages import read
from broker.messages.log import PartitionLog
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = pytest.mark.kafka


@pytest.fixture
def conn(kafka_cluster: launcher.ClusterLayout) -> Iterator[ClusterConnection]:
    connection = ClusterConnection(
        ClusterConfig(name="pages", bootstrap_servers=tuple(BOOTSTRAP.split(",")), max_age=0)
    )
    yield connection
    connection.close()


def consumed(topic: str, partition: int) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record of the partition as kafka-python's consumer reads it: (offset, key, value)."""
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), enable_auto_commit=False)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        found: list[tuple[int, bytes | None, bytes | None]] = []
        deadline = time.monotonic() + 60
        while consumer.position(tp) < end and time.monotonic() < deadline:
            for record in consumer.poll(timeout_ms=1000, max_records=500).get(tp, []):
                found.append((record.offset, record.key, record.value))
        return found
    finally:
        consumer.close()


def check_pages(conn: ClusterConnection, topic: str, limit: int, offsets: list[int]) -> None:
    """Each page from ``offset`` holds the consumer's next ``limit`` records from there, and says where
    the pages before and after it start."""
    records = consumed(topic, 0)
    by_offset = [r[0] for r in records]
    for offset in offsets:
        page = read.get_page(conn, topic, 0, offset=offset, limit=limit)
        at = by_offset.index(offset)
        want = records[at : at + limit]
        assert [(m.offset, m.key, m.value) for m in page.messages] == want, offset
        assert page.start_offset == by_offset[0]
        assert page.end_offset == by_offset[-1] + 1
        assert page.next_offset == (by_offset[at + limit] if at + limit < len(records) else None)
        assert page.prev_offset == (by_offset[max(0, at - limit)] if at > 0 else None)
        assert page.notes == []


def test_pages_of_records_larger_than_the_first_fetch_hold_them_all(conn: ClusterConnection) -> None:
    # The first fetch of a page asks for 64 KiB; records of 1 B to 300 kB, uncompressed and lz4.
    rng = random.Random(27)
    for compression in (None, "lz4"):
        topic = create_topic(
            unique("pages-large"), partitions=1, replication=1, configs={"max.message.bytes": "400000"}
        )
        sizes = [rng.choice([1, 200, 5_000, 70_000, 150_000, 300_000]) for _ in range(40)]
        values = [bytes(rng.getrandbits(8) for _ in range(64)) * (size // 64 + 1) for size in sizes]
        produce(
            topic,
            [(b"k%d" % i, value[:size]) for i, (value, size) in enumerate(zip(values, sizes, strict=True))],
            partition=0,
            compression=compression,
        )
        check_pages(conn, topic, 7, [0, 1, 6, 7, 13, 20, 33, 39])


def test_a_page_of_small_records_spanning_several_fetches(conn: ClusterConnection) -> None:
    topic = create_topic(unique("pages-spanning"), partitions=1, replication=1)
    produce(topic, [(None, b"v%05d" % i + b"." * 3_000) for i in range(400)], partition=0)
    check_pages(conn, topic, 50, [0, 49, 50, 51, 175, 349, 350, 399])


def test_a_page_fetched_beside_its_metadata_uses_that_fetch_only_when_the_leader_was_guessed_right(
    conn: ClusterConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A page's first fetch goes to the leader the last metadata named, while the page's own metadata request
    # is answered; it is used only if that request names the same leader. Guesses of another broker, of a
    # broker the cluster does not have, and a right one: every page exactly as the consumer reads it.
    topic = create_topic(unique("pages-guess"), partitions=1, replication=1, assignments={0: [1]})
    produce(topic, [(b"k%d" % i, b"v%05d" % i) for i in range(120)], partition=0)
    records = consumed(topic, 0)
    asked_as_usual: list[int] = []
    usual = PartitionLog._fetch

    def counted(self: PartitionLog, offset: int, isolation: int) -> object:
        asked_as_usual.append(offset)
        return usual(self, offset, isolation)

    monkeypatch.setattr(PartitionLog, "_fetch", counted)
    key = (conn.config.name, topic, 0)
    for hint, guessed_right in ((None, False), (1, True), (0, False), (2, False), (99, False), (1, True)):
        if hint is None:
            read._LEADER_HINTS.pop(key, None)
        else:
            read._LEADER_HINTS[key] = hint
        asked_as_usual.clear()
        page = read.get_page(conn, topic, 0, offset=60, limit=20)
        assert [(m.offset, m.key, m.value) for m in page.messages] == records[60:80], hint
        assert (page.start_offset, page.end_offset, page.next_offset, page.prev_offset) == (0, 120, 80, 40), hint
        # Right: the guessed fetch was the page's only one; wrong or none: the page fetched from the leader.
        assert (asked_as_usual == []) == guessed_right, (hint, asked_as_usual)
        assert read._LEADER_HINTS[key] == 1  # what the page's metadata said, for the next page
