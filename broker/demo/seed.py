"""Create the demo topics and fill them once; running it again leaves existing data alone."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from broker.client.connection import live_brokers
from broker.demo import web
from broker.errors import ClusterUnavailable
from broker.topics.changes import settled_everywhere


@dataclass(frozen=True)
class DemoTopic:
    """A topic of web events (broker/demo/web.py): ``messages`` of them over the ``span_ms`` before now,
    from a population of ``users``."""

    name: str
    partitions: int
    replication: int
    configs: dict[str, str]
    messages: int
    span_ms: int = 24 * 3600 * 1000
    users: int = 2_000


# Enough for an analytics page to show a day of page views, users, sessions, searches and click rates.
DEMO_TOPICS = [
    DemoTopic(
        "page-views",
        partitions=6,
        replication=3,
        configs={"retention.ms": str(30 * 24 * 3600 * 1000)},
        messages=20_000,
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
            replication = min(topic.replication, len(live_brokers(admin)))
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(topic.name, topic.partitions, replication, topic_configs=topic.configs)])
            admin.wait_for_topics([topic.name], timeout_ms=30_000)
            settled_everywhere(admin, [topic.name], 30, topic.partitions)  # any broker may be asked next
            produced[topic.name] = _produce(servers, topic)
            echo(
                f"Demo topic {topic.name}: {topic.partitions} partitions x {replication} replicas, "
                f"{produced[topic.name]} messages."
            )
    finally:
        admin.close()
    return produced


def _produce(servers: list[str], topic: DemoTopic) -> int:
    written = web.backfill(
        servers, topic.name, topic.messages, topic.span_ms, seed=7, users=topic.users, workers=1, acks=-1
    )
    return written.events
