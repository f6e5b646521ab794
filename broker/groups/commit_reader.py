"""Follow one cluster's offsets topic (``__consumer_offsets``) and keep every group's last commits in ``Rings``.

One consumer of no group, assigned every partition of the topic, starting at its end (what was committed
before the reader started is the lag sampler's business). Each ``pump`` reads what arrived since, without
waiting (or up to ``wait_ms``), and files each commit with the lag it had: the partition's log end as the lag
sampler last read it, as Burrow does with its own periodic read of the log ends. No other request is sent.

A cluster that does not let us read the topic (an ACL) gets ``failure`` set, and nothing more is asked of it
until ``retry_after_s``: the console then judges groups over its samples alone.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

import kafka.errors
from kafka import KafkaConsumer, TopicPartition

from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.groups.commit_log import OFFSETS_TOPIC, Commit, Forget, Key, Rings, parse

log = logging.getLogger(__name__)

__all__ = ["CommitReader"]


class CommitReader:
    """The offsets topic of one cluster, read from where the reader started; not thread-safe (one caller)."""

    retry_after_s = 60.0
    most_per_pump = 200_000  # records; the rest waits for the next pump

    def __init__(self, conn: ClusterConnection, rings: Rings) -> None:
        self.conn, self.rings = conn, rings
        self.ends: dict[tuple[str, int], int] = {}
        self.failure: str | None = None
        self._consumer: KafkaConsumer | None = None
        self._failed_at = 0.0
        self._assigned = 0

    def note_ends(self, ends: Mapping[tuple[str, int], int]) -> None:
        """The log ends the lag sampler read (a log end never goes back: an older figure is ignored)."""
        for key, end in ends.items():
            if end > self.ends.get(key, -1):
                self.ends[key] = end

    @property
    def reading(self) -> bool:
        """True once the reader follows the topic (it is assigned every partition of it)."""
        return self._consumer is not None and self._assigned > 0

    def pump(self, wait_ms: int = 0) -> set[Key]:
        """Read what was committed since the last pump; the keys whose ring changed. Never raises for Kafka's
        sake: a failure is kept in ``failure`` (and the consumer dropped, to start again at the end later)."""
        if self.failure is not None and time.monotonic() - self._failed_at < self.retry_after_s:
            return set()
        try:
            consumer = self._follow()
            if consumer is None:
                return set()
            items: list[Commit | Forget] = []
            first = True
            while len(items) < self.most_per_pump:
                batch = consumer.poll(timeout_ms=wait_ms if first else 0, max_records=10_000)
                first = False
                if not batch:
                    break
                for records in batch.values():
                    for record in records:
                        item = parse(record.key, record.value)
                        if item is not None:
                            items.append(item)
        except (kafka.errors.KafkaError, KazamiError, OSError) as exc:
            self._fail(exc)
            return set()
        self.failure = None
        changed: set[Key] = set()
        for item in items:
            if isinstance(item, Forget):
                if self.rings.forget(item.key):
                    changed.add(item.key)
            elif self.rings.add(item, self.ends.get((item.topic, item.partition))):
                changed.add(item.key)
        return changed

    def _follow(self) -> KafkaConsumer | None:
        if self._consumer is None:
            self._consumer = self.conn.own_consumer("commits")
            self._assigned = 0
        consumer = self._consumer
        partitions = consumer.partitions_for_topic(OFFSETS_TOPIC)
        if not partitions:
            consumer.poll(timeout_ms=0)  # the topic does not exist until a group first commits
            return None
        if len(partitions) != self._assigned:
            tps = [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(partitions)]
            consumer.assign(tps)
            consumer.seek_to_end(*tps)
            self._assigned = len(tps)
        return consumer

    def _fail(self, exc: BaseException) -> None:
        self.failure = f"cannot read {OFFSETS_TOPIC}: {exc}"
        self._failed_at = time.monotonic()
        log.info("commit reader of %s: %s", self.conn.config.name, self.failure)
        self.close()

    def close(self) -> None:
        consumer, self._consumer, self._assigned = self._consumer, None, 0
        if consumer is not None:
            with contextlib.suppress(Exception):  # closing a broken consumer must not raise
                consumer.close(autocommit=False)

    def describe(self) -> dict[str, Any]:
        return {"reading": self.reading, "failure": self.failure, "rings": len(self.rings.rings)}
