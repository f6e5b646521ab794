"""Create the demo topics and fill them once; running it again leaves existing data alone."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from broker.demo.pageviews import page_view_events
from broker.errors import ClusterUnavailable


@dataclass(frozen=True)
class DemoTopic:
    name: str
    partitions: int
    replication: int
    configs: dict[str, str]
    messages: int


DEMO_TOPICS = [
    DemoTopic(
        "page-views", partitions=6, replication=3, configs={"retention.ms": str(30 * 24 * 3600 * 1000)}, messages=5000
    ),
]


def seed(
    bootstrap_servers: str, echo: Callable[[str], None] = print, topics: list[DemoTopic] | None = None
) -> dict[str, int]:
    """Create each demo topic that is missing and produce its messages into it (acks=all).

    Returns {topic: messages produced now} (0 for a topic that already existed).
    Raises ClusterUnavailable when the brokers do not answer.
    """
    servers = bootstrap_servers.split(",")
    try:
        admin = KafkaAdminClient(
            bootstrap_servers=servers, client_id="kazami-demo", bootstrap_timeout_ms=10_000, request_timeout_ms=15_000
        )
    except Exception as exc:  # noqa: BLE001 - kafka-python raises several kinds here
        raise ClusterUnavailable(f"Cannot reach {bootstrap_servers} to seed demo data: {exc}") from None
    produced: dict[str, int] = {}
    try:
        existing = set(admin.list_topics())
        for topic in topics or DEMO_TOPICS:
            if topic.name in existing:
                echo(f"Demo topic {topic.name} exists: left as it is.")
                produced[topic.name] = 0
                continue
            replication = min(topic.replication, len(admin.describe_cluster()["brokers"]))
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(topic.name, topic.partitions, replication, topic_configs=topic.configs)])
            admin.wait_for_topics([topic.name], timeout_ms=30_000)
            produced[topic.name] = _produce(servers, topic)
            echo(
                f"Demo topic {topic.name}: {topic.partitions} partitions x {replication} replicas, "
                f"{produced[topic.name]} messages."
            )
    finally:
        admin.close()
    return produced


def _produce(servers: list[str], topic: DemoTopic) -> int:
    producer = KafkaProducer(bootstrap_servers=servers, acks="all", linger_ms=20, client_id="kazami-demo")
    try:
        count = 0
        for event in page_view_events(topic.messages):
            producer.send(topic.name, key=event.key, value=event.value, timestamp_ms=event.timestamp_ms)
            count += 1
        producer.flush(timeout=60)
        return count
    finally:
        producer.close(timeout=10)
