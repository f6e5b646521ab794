"""Follow one cluster's offsets topic (``__consumer_offsets``) and keep every group's last commits in ``Rings``.

One consumer of no group, assigned every partition of the topic, starting at its end (what was committed
before the reader started is the lag sampler's business). Each ``pump`` reads what arrived since, without
waiting (or up to ``wait_ms``), and files each commit with the lag it had: the partition's log end as the lag
sampler last read it, as Burrow does with its own periodic read of the log ends (a partition the sampler has
not read yet, a group's first commits, gets its log end asked once).

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
        self._absent = False  # the topic was not there when the reader last looked

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
        self._learn_ends(consumer, items)
        changed: set[Key] = set()
        for item in items:
            if isinstance(item, Forget):
                if self.rings.forget(item.key):
                    changed.add(item.key)
            elif self.rings.add(item, self.ends.get((item.topic, item.partition))):
                changed.add(item.key)
        return changed

    def _learn_ends(self, consumer: KafkaConsumer, items: list[Commit | Forget]) -> None:
        """The log ends of partitions committed to that the lag sampler has not read yet (a group's first
        commits): one ListOffsets per leader, so that those commits count from the first."""
        unknown = sorted({(i.topic, i.partition) for i in items if isinstance(i, Commit)} - set(self.ends))
        if not unknown:
            return
        try:
            found = consumer.end_offsets([TopicPartition(t, p) for t, p in unknown])
        except (kafka.errors.KafkaError, OSError):
            return  # their commits wait for the sampler's next read of the log ends
        self.note_ends({(tp.topic, tp.partition): end for tp, end in found.items() if end is not None})

    def _follow(self) -> KafkaConsumer | None:
        if self._consumer is None:
            self._consumer = self.conn.own_consumer("commits")
            self._assigned = 0
        consumer = self._consumer
        partitions = consumer.partitions_for_topic(OFFSETS_TOPIC) or self._partitions()
        if not partitions:
            self._absent = True  # the topic does not exist until a group first commits
            return None
        if len(partitions) != self._assigned:
            tps = [TopicPartition(OFFSETS_TOPIC, p) for p in sorted(partitions)]
            consumer.assign(tps)
            if self._absent:
                # Made since the reader looked (a new cluster's first commit made it): every commit is new.
                consumer.seek_to_beginning(*tps)
            else:
                # Where the topic ends now, asked at once (a seek to the end would be resolved at some later
                # poll, and the commits written in between lost).
                for tp, end in consumer.end_offsets(tps).items():
                    consumer.seek(tp, end)
            self._assigned = len(tps)
        return consumer

    def _partitions(self) -> set[int]:
        """The offsets topic's partitions, asked now (a new consumer's metadata knows no topic yet)."""

        def ask(admin: Any) -> set[int]:
            found = admin.describe_topics([OFFSETS_TOPIC])
            return {p["partition_index"] for t in found if not t.get("error_code") for p in t.get("partitions", ())}

        return self.conn.call(ask, "the offsets topic's partitions", retry=True)

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
