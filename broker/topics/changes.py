"""Changing topics: create, delete, add partitions, change configs, delete records; each change waits until every
broker's metadata shows it."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from broker.client.connection import ClusterConnection, live_brokers, send_request
from broker.errors import (
    AlreadyExists,
    ClusterUnavailable,
    KafkaRefused,
    TopicNotFound,
)
from broker.topics.read import SILENT_ERRORS, _zookeeper_away

_KAFKA_MESSAGE = re.compile(r"error_message='((?:[^'\\]|\\.)*)'")

log = logging.getLogger(__name__)


def refusal(exc: kafka.errors.KafkaError) -> KafkaRefused:
    """A readable message from a Kafka error: its protocol name and Kafka's own explanation.

    kafka-python puts the whole request and response in the text; only the broker's
    ``error_message`` is for users.
    """
    name = getattr(exc, "message", None) or type(exc).__name__
    text = str(exc.args[0]) if exc.args else ""
    found = _KAFKA_MESSAGE.search(text)
    if found:
        detail = found.group(1)
    elif "Request '" in text:
        detail = ""
    else:
        detail = re.sub(r"^\[Error \d+\] \w+: ?", "", text).strip()
    return KafkaRefused(f"Kafka refused: {name}: {detail}" if detail and detail != name else f"Kafka refused: {name}")


@contextmanager
def _translated(conn: ClusterConnection, name: str) -> Iterator[None]:
    """Kafka's answers to a change, as this module's errors: an unknown topic is TopicNotFound, a refusal
    is KafkaRefused with the broker's own words; time-outs and lost connections pass through (the
    connection turns them into ClusterUnavailable)."""
    try:
        yield
    except kafka.errors.UnknownTopicOrPartitionError:
        raise TopicNotFound(f"No topic named {name!r} in cluster {conn.config.name!r}.") from None
    except kafka.errors.KafkaError as exc:
        if isinstance(exc, SILENT_ERRORS):
            raise  # a broker that did not answer in time refused nothing
        raise refusal(exc) from None


@contextmanager
def _zookeeper_change(conn: ClusterConnection, what: str) -> Iterator[None]:
    """Around a change a ZooKeeper-mode broker makes in ZooKeeper (creating or deleting a topic, adding
    partitions, changing configs). While ZooKeeper is down the broker holds the request, and one of its
    request threads, until the time-out: once such a request timed out and ZooKeeper still does not serve,
    refuse at once (nothing is changed). Raises ClusterUnavailable."""
    zookeeper = conn.zookeeper_connect
    if zookeeper and _zookeeper_away(conn):
        raise ClusterUnavailable(
            f"ZooKeeper ({zookeeper}) does not serve, and cluster {conn.config.name!r} needs it to {what}: "
            "nothing was changed. Try again once ZooKeeper is back."
        )
    try:
        yield
    except SILENT_ERRORS:
        if conn.mode() != "kraft":
            conn.zookeeper_stalled_at = time.monotonic()
        raise


def settled_everywhere(
    admin: KafkaAdminClient,
    names: list[str],
    timeout: float,
    partitions: int = 1,
    skip: Collection[int] = (),
    gone: bool = False,
) -> bool:
    """Wait until the metadata of every live broker but ``skip`` lists each topic of ``names`` with at
    least ``partitions`` partitions, each with a leader (with ``gone``: lists none of them). The
    controller tells the other brokers a moment after a change returns, and a later read may go to any
    of them. A broker that does not answer is left out (it serves no reads either). False when
    ``timeout`` s pass first; with 0, asks once.

    Kafka's client has no public call to ask one given broker for metadata, so this sends the
    request with broker.client.connection.send_request."""
    from kafka.protocol.metadata import MetadataRequest

    request = MetadataRequest(
        topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=False
    )
    deadline = time.monotonic() + timeout

    def settled(node: int) -> bool | None:
        """Whether ``node`` lists them all; None when it does not answer."""
        wait_ms = int(max(deadline - time.monotonic(), 1.0) * 1000)

        try:
            answer = send_request(admin, request, node=node, timeout_ms=wait_ms).to_dict()
        except kafka.errors.KafkaError:
            return None
        topics = [t for t in answer["topics"] if not t["error_code"]]
        led = {t["name"]: [p["leader_id"] >= 0 for p in t["partitions"]] for t in topics}
        if gone:
            return not any(n in led for n in names)
        return all(len(led.get(n, [])) >= partitions and all(led[n]) for n in names)

    try:
        waiting = {b["broker_id"] for b in live_brokers(admin)} - set(skip)
    except kafka.errors.KafkaError:
        return False
    while True:
        waiting = {node for node in sorted(waiting) if settled(node) is False}
        if not waiting:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)


def _await_metadata(
    admin: KafkaAdminClient, conn: ClusterConnection, name: str, partitions: int = 1, gone: bool = False
) -> None:
    """After a change to topic ``name``: Kafka acknowledges it before every broker's metadata shows it,
    and the next page may ask any broker, so wait (bounded: two time-outs; brokers known to be silent
    left out) until they all do. Still settling after that is not a failure: the change was made."""
    timeout = conn.config.timeout * 2
    if not settled_everywhere(admin, [name], timeout, partitions, conn.silent_brokers(), gone):
        log.info("topic %s changed, but not every broker's metadata shows it yet", name)


def do_create_topic(
    conn: ClusterConnection, name: str, partitions: int, replication_factor: int, configs: dict[str, str] | None = None
) -> None:
    """Create a topic. Raises AlreadyExists, KafkaRefused (replication factor, configs, policy),
    ClusterUnavailable. Arguments are assumed checked (``check_topic_name``, positive counts)."""

    def create(admin: KafkaAdminClient) -> None:
        with _zookeeper_change(conn, "create a topic"), _translated(conn, name):
            try:
                admin.create_topics([NewTopic(name, partitions, replication_factor, topic_configs=configs or {})])
            except kafka.errors.TopicAlreadyExistsError:
                raise AlreadyExists(f"Topic {name!r} already exists.") from None
        _await_metadata(admin, conn, name, partitions)

    conn.call(create, "topic creation", requests=3)


def do_delete_topic(conn: ClusterConnection, name: str) -> None:
    """Delete a topic. Raises TopicNotFound, KafkaRefused, ClusterUnavailable."""

    def delete(admin: KafkaAdminClient) -> None:
        with _zookeeper_change(conn, "delete a topic"), _translated(conn, name):
            admin.delete_topics([name])
        _await_metadata(admin, conn, name, gone=True)

    conn.call(delete, "topic deletion", requests=3)


def do_add_partitions(conn: ClusterConnection, name: str, total: int) -> None:
    """Grow a topic to ``total`` partitions. Raises TopicNotFound, KafkaRefused (e.g. fewer than now)."""

    def grow(admin: KafkaAdminClient) -> None:
        with _zookeeper_change(conn, "add partitions"), _translated(conn, name):
            admin.create_partitions({name: total})
        _await_metadata(admin, conn, name, total)

    conn.call(grow, "partition creation", requests=3)


def do_alter_topic_configs(
    conn: ClusterConnection, name: str, set_configs: dict[str, str], reset: list[str] | None = None
) -> None:
    """Set some configs of a topic and reset others to their defaults (incrementally: the rest stay).

    Raises TopicNotFound, KafkaRefused (unknown key, bad value), ClusterUnavailable.
    """
    changes: dict[str, Any] = {k: ("SET", v) for k, v in set_configs.items()}
    changes.update({k: ("DELETE", None) for k in reset or []})

    def alter(admin: KafkaAdminClient) -> None:
        try:
            with _zookeeper_change(conn, "change a configuration"), _translated(conn, name):
                answer = admin.alter_configs(
                    [ConfigResource(ConfigResourceType.TOPIC, name, changes)], raise_on_unknown=False, incremental=True
                )
        except ValueError as exc:
            raise KafkaRefused(f"Kafka refused the configuration: {exc}") from None
        # Errors per resource come back as text rather than raised.
        outcome = answer.get("topic", {}).get(name) if isinstance(answer, dict) else None
        if isinstance(outcome, str) and outcome.startswith("[Error"):
            if "UnknownTopicOrPartition" in outcome:
                raise TopicNotFound(f"No topic named {name!r} in cluster {conn.config.name!r}.")
            raise KafkaRefused("Kafka refused: " + re.sub(r"^\[Error \d+\] ", "", outcome))

    conn.call(alter, "configuration change")


def do_delete_records(conn: ClusterConnection, name: str, before: dict[int, int]) -> dict[int, int]:
    """Delete the records below ``before[partition]`` in each partition; returns {partition: new start offset}.

    Raises TopicNotFound, KafkaRefused (offset past the end), ClusterUnavailable.
    """

    def delete(admin: KafkaAdminClient) -> dict[int, int]:
        with _translated(conn, name):
            answer = admin.delete_records({TopicPartition(name, p): o for p, o in before.items()})
        return {
            tp.partition: int(
                meta.get("low_watermark", before[tp.partition])
                if isinstance(meta, dict)
                else getattr(meta, "low_watermark", before[tp.partition])
            )
            for tp, meta in answer.items()
        }

    return conn.call(delete, "record deletion")
