"""The web traffic generator against the real cluster: a backfill (one writer or two), the command line,
the live mode and the demo seed, read back by kafka-python's consumer and by Kafka's own."""

from __future__ import annotations

import subprocess
import time
from collections import Counter
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition

from broker.demo import web
from broker.demo.__main__ import main
from broker.demo.seed import DemoTopic, seed
from broker.local import launcher
from broker.messages.partitioners import murmur2_partition
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import admin, create_topic, unique
from tests.unit.test_web_events import check_event

pytestmark = pytest.mark.kafka
SERVERS = BOOTSTRAP.split(",")
HOUR_MS = 3600 * 1000


def read_all(topic: str, expected: int, timeout: float = 60) -> list[Any]:
    """Every record of ``topic`` (at least ``expected`` of them), read with kafka-python from the start."""
    consumer = KafkaConsumer(bootstrap_servers=SERVERS, enable_auto_commit=False, auto_offset_reset="earliest")
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or [])]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        records: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records += batch
        records += [r for batch in consumer.poll(timeout_ms=500).values() for r in batch]  # nothing more
        return records
    finally:
        consumer.close()


def check_records(records: list[Any], partitions: int) -> list[dict[str, Any]]:
    """Each record as its event, after checking key, timestamp, schema, partition and time order."""
    bodies = []
    last: dict[int, int] = {}
    for record in records:
        assert record.timestamp_type == 0  # CreateTime: the event's own time
        event = web.WebEvent(key=record.key, value=record.value, timestamp_ms=record.timestamp)
        bodies.append(check_event(event))  # key == user_id, timestamp == ts, the schema of its type
        assert record.partition == murmur2_partition(record.key, partitions)
        assert record.timestamp >= last.get(record.partition, 0)  # one writer a partition, oldest first
        last[record.partition] = record.timestamp
    return bodies


@pytest.mark.parametrize("workers", [1, 2])
def test_a_backfill_is_read_back_whole(kafka_cluster: launcher.ClusterLayout, workers: int) -> None:
    topic = create_topic(unique("web-backfill"), partitions=6)
    end = int(time.time() * 1000)
    written = web.backfill(SERVERS, topic, 4_000, 24 * HOUR_MS, end_ms=end, seed=1, users=500, workers=workers)
    assert written.events == 4_000
    records = read_all(topic, 4_000)
    assert len(records) == 4_000
    bodies = check_records(records, 6)
    assert all(end - 24 * HOUR_MS <= b["ts"] < end for b in bodies)
    assert set(Counter(b["type"] for b in bodies)) == {"page_view", "impression", "click", "share"}
    for name in ("session_id", "impression_id"):  # ids are unique across the writers
        owners: dict[str, set[str]] = {}
        for body in bodies:
            if name in body and body["type"] != "click":
                owners.setdefault(body[name], set()).add(body["user_id"])
        assert all(len(users) == 1 for users in owners.values()), name
    impressions = {b["impression_id"] for b in bodies if b["type"] == "impression"}
    assert all(b["impression_id"] in impressions for b in bodies if b["type"] == "click")


def test_kafkas_own_consumer_reads_the_events(kafka_cluster: launcher.ClusterLayout) -> None:
    topic = create_topic(unique("web-java"), partitions=1)
    web.backfill(SERVERS, topic, 300, HOUR_MS, seed=2, users=50)
    result = subprocess.run(
        [
            launcher.check_java(),
            "-cp",
            launcher.classpath(),
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            BOOTSTRAP,
            "--topic",
            topic,
            "--from-beginning",
            "--max-messages",
            "300",
            "--timeout-ms",
            "30000",
            "--property",
            "print.key=true",
            "--property",
            "print.timestamp=true",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("CreateTime:")]
    assert len(lines) == 300
    for line in lines:
        stamp, key, value = line.split("\t", 2)
        check_event(web.WebEvent(key=key.encode(), value=value.encode(), timestamp_ms=int(stamp.split(":")[1])))


def test_the_command_line_creates_the_topic_and_backfills(
    kafka_cluster: launcher.ClusterLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = unique("web-cli")
    code = main(["web", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--backfill", "2500", "--span", "2h"])
    assert code == 0
    out = capsys.readouterr().out
    assert f"Topic {topic}: created" in out
    assert "2,500 events in" in out
    assert "events/s" in out
    client = admin()
    try:
        (described,) = client.describe_topics([topic])
    finally:
        client.close()
    assert len(described["partitions"]) == 6
    assert {len(p["replica_nodes"]) for p in described["partitions"]} == {3}
    records = read_all(topic, 2_500)
    assert len(records) == 2_500
    now = time.time() * 1000
    assert all(now - 2 * HOUR_MS - 60_000 <= r.timestamp <= now for r in records)
    check_records(records, 6)
    # a second run adds to the topic that is there
    assert main(["web", "--topic", topic, "--bootstrap-servers", BOOTSTRAP, "--backfill", "10", "--span", "1m"]) == 0
    assert f"Topic {topic}: exists" in capsys.readouterr().out


def test_the_command_line_refuses_a_duration_without_a_rate(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["web", "--rate", "5", "--backfill", "5"])
    assert main(["web", "--backfill", "5", "--duration", "5s", "--bootstrap-servers", "127.0.0.1:1"]) == 2
    assert "--duration goes with --rate" in capsys.readouterr().err


def test_live_writes_at_the_rate_with_timestamps_of_now(kafka_cluster: launcher.ClusterLayout) -> None:
    topic = create_topic(unique("web-live"), partitions=6)
    started = time.time() * 1000
    written = web.live(SERVERS, topic, rate=400, duration_s=3, seed=5, users=300)
    ended = time.time() * 1000
    assert 0.8 * 1200 <= written.events <= 1.1 * 1200
    records = read_all(topic, written.events)
    assert len(records) == written.events
    assert all(started - 1000 <= r.timestamp <= ended for r in records)
    check_records(records, 6)


def test_seed_fills_the_demo_topic_once(kafka_cluster: launcher.ClusterLayout) -> None:
    topic = DemoTopic(unique("web-seed"), partitions=6, replication=3, configs={}, messages=1_500, users=100)
    messages: list[str] = []
    assert seed(BOOTSTRAP, echo=messages.append, topics=[topic]) == {topic.name: 1_500}
    assert seed(BOOTSTRAP, echo=messages.append, topics=[topic]) == {topic.name: 0}
    assert "left as it is" in messages[-1]
    bodies = check_records(read_all(topic.name, 1_500), 6)
    assert len(bodies) == 1_500
    assert len({b["user_id"] for b in bodies}) <= 100
