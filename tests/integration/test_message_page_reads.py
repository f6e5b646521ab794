"""Pages of messages read as broker/messages/read.py reads them now, checked against an independent client
(kafka-python's consumer) on the real cluster: pages whose records need more than the first, small fetch;
pages read from a partition whose leader the connection guessed wrong; and a read whose shared client
another call dropped under it (that call's own time-out), which is asked again rather than failed."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.local import launcher
from broker.messages import read
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


def test_a_page_read_at_a_wrongly_guessed_leader_is_read_again_from_the_leader(conn: ClusterConnection) -> None:
    topic = create_topic(unique("pages-leader"), partitions=1, replication=1)
    produce(topic, [(b"k%d" % i, b"value %d" % i) for i in range(120)], partition=0)
    first = read.get_page(conn, topic, 0, offset=30, limit=20)  # the connection learns the leader
    leader = next(p.leader for p in first.partitions if p.partition == 0)
    for wrong in sorted({0, 1, 2, 7} - {leader}):  # other brokers, and one that does not exist
        read._note_leader(conn, topic, 0, wrong)
        assert read.get_page(conn, topic, 0, offset=30, limit=20) == first
        assert read._leader_guess(conn, topic, 0) == leader


def test_a_read_whose_shared_client_another_call_dropped_is_asked_again(conn: ClusterConnection) -> None:
    topic = create_topic(unique("pages-dropped"), partitions=1, replication=1)
    conn.call(lambda admin: admin.describe_topics([topic]))
    attempts: list[Any] = []

    def slow_read(admin: Any) -> str:
        attempts.append(admin)
        if len(attempts) == 1:
            time.sleep(0.6)  # waits behind another caller's long answer...
        return str(admin.describe_topics([topic])[0]["name"])

    def other_gives_up() -> None:
        time.sleep(0.3)
        conn.reset(attempts[0])  # ...whose time-out drops the client both used

    dropper = threading.Thread(target=other_gives_up)
    dropper.start()
    assert conn.call(slow_read, "read", retry=True) == topic
    dropper.join()
    assert len(attempts) == 2
    assert attempts[0] is not attempts[1]  # the second on a new client
