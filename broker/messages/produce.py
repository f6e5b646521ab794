"""Producing one message and waiting for the brokers' acknowledgement."""

from __future__ import annotations

from dataclasses import dataclass

import kafka.errors

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable
from broker.topics.changes import refusal
from broker.topics.read import get_partition, get_topic_partitions


@dataclass(frozen=True)
class Produced:
    topic: str
    partition: int
    offset: int
    timestamp: int | None


def do_produce(
    conn: ClusterConnection,
    topic: str,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]] | None = None,
    partition: int | None = None,
) -> Produced:
    """Send one message with acks=all and wait for the broker's acknowledgement.

    Raises PartitionNotFound, TopicNotFound, KafkaRefused (e.g. too large), ClusterUnavailable.
    """

    if partition is not None:
        get_partition(conn, topic, partition)
    else:
        get_topic_partitions(conn, topic)
    producer = conn.producer()
    try:
        future = producer.send(topic, key=key, value=value, headers=headers or [], partition=partition)
        meta = future.get(timeout=conn.config.timeout * 2)
    except (kafka.errors.KafkaTimeoutError, kafka.errors.RequestTimedOutError, kafka.errors.KafkaConnectionError):
        conn.drop_producer()
        raise ClusterUnavailable(
            f"Cluster {conn.config.name!r} did not acknowledge the message in time; "
            "it may or may not have been written."
        ) from None
    except kafka.errors.KafkaError as exc:
        raise refusal(exc) from None
    finally:
        conn.reads.forget()  # the partition's end offset moved (or may have)
    return Produced(
        topic=meta.topic,
        partition=meta.partition,
        offset=meta.offset,
        timestamp=meta.timestamp if meta.timestamp is not None and meta.timestamp >= 0 else None,
    )
