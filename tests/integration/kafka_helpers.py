"""Helpers for tests that need topics and messages on the test cluster."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from tests.conftest import BOOTSTRAP


def admin() -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=BOOTSTRAP.split(","), bootstrap_timeout_ms=10_000, request_timeout_ms=20_000
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def create_topic(
    name: str,
    partitions: int = 3,
    replication: int = 3,
    configs: dict[str, str] | None = None,
    assignments: dict[int, list[int]] | None = None,
) -> str:
    client = admin()
    try:
        if assignments:
            topic = NewTopic(name, -1, -1, replica_assignments=assignments, topic_configs=configs or {})
        else:
            topic = NewTopic(name, partitions, replication, topic_configs=configs or {})
        client.create_topics([topic])
        client.wait_for_topics([name], timeout_ms=30_000)
        wait_known_everywhere(client, [name])
    finally:
        client.close()
    return name


def wait_known_everywhere(client: KafkaAdminClient, topics: list[str], timeout: float = 30) -> None:
    """Wait until every broker's own metadata lists ``topics``: ``wait_for_topics`` asks only one, and
    the console may ask any."""
    from broker.topics.changes import settled_everywhere

    assert settled_everywhere(client, topics, timeout), f"not every broker learnt of {topics} in {timeout:.0f} s"


def produce(
    topic: str,
    records: Iterable[tuple[bytes | None, bytes | None]],
    partition: int | None = None,
    headers: list[tuple[str, bytes]] | None = None,
    compression: str | None = None,
) -> list[tuple[int, int]]:
    """Send records (acks=all); returns [(partition, offset)] in order."""
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all", compression_type=compression)
    try:
        futures = [producer.send(topic, key=k, value=v, partition=partition, headers=headers or []) for k, v in records]
        producer.flush(timeout=30)
        return [(m.partition, m.offset) for m in (f.get(timeout=30) for f in futures)]
    finally:
        producer.close(timeout=10)


def produce_timed(
    topic: str, records: Iterable[tuple[bytes | None, bytes | None, int]], compression: str | None = None
) -> None:
    """Send (key, value, timestamp ms) records with those record timestamps (acks=all)."""
    producer = KafkaProducer(
        bootstrap_servers=BOOTSTRAP.split(","), acks="all", compression_type=compression, linger_ms=20
    )
    try:
        for key, value, ts in records:
            producer.send(topic, key=key, value=value, timestamp_ms=ts)
        producer.flush(timeout=60)
    finally:
        producer.close(timeout=10)


def wait_healthy(timeout: float = 60) -> None:
    """Wait until every broker is back and no partition is offline or under-replicated, so a test that
    stopped a broker leaves the cluster as it found it."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            client = admin()
            try:
                brokers = len(client.describe_cluster()["brokers"])
                partitions = [p for t in client.describe_topics() for p in t["partitions"]]
            finally:
                client.close()
            if brokers == 3 and all(
                p["leader_id"] >= 0 and len(p["isr_nodes"]) == len(p["replica_nodes"]) for p in partitions
            ):
                return
        except Exception:  # noqa: BLE001, S110 - the cluster is settling; try again
            pass
        if time.monotonic() > deadline:
            raise AssertionError("the test cluster did not become healthy again")
        time.sleep(0.5)


def active_controller(client: KafkaAdminClient) -> int:
    """The active controller as Kafka's own tools find it: the KRaft quorum's leader, or in ZooKeeper mode
    the controller DescribeCluster names."""
    from tests.conftest import KRAFT

    if KRAFT:
        quorum = client.describe_metadata_quorum()
        return int(quorum["topics"][0]["partitions"][0]["leader_id"])
    return int(client.describe_cluster()["controller_id"])


def small_segments(size: int) -> dict[str, str]:
    """Topic configs that roll segments every ``size`` bytes: Kafka 4 refuses ``segment.bytes`` under 1 MiB
    and takes ``internal.segment.bytes`` (meant for tests) instead."""
    from tests.conftest import KRAFT

    return {"internal.segment.bytes" if KRAFT else "segment.bytes": str(size)}


def until(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    """``check()``'s first true answer, asked every 0.5 s; AssertionError naming ``what`` (and the last
    answer) when ``timeout`` seconds pass first."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def commit_offsets(group: str, offsets: dict[TopicPartition, int]) -> None:
    """Commit ``offsets`` for ``group`` as a consumer with no member left behind (the group stays Empty)."""
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), group_id=group, enable_auto_commit=False)
    try:
        consumer.assign(list(offsets))
        consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()})
    finally:
        consumer.close()
