"""The timestamp of the first record at or after given offsets, for lag in time, read with fetch requests
of our own (broker.messages.log) rather than a consumer.

A consumer cannot tell "nothing there" from "not there yet": at an offset where only transaction markers
stand before the high watermark (a group that read every record of a transactional topic commits the
offset of the commit marker), it is given no record and polls until its time is up. A fetch answers at
once (``max_wait_ms`` 0) with the markers and the high watermark, so the read knows no record follows and
stops. One fetch per leader a round, all leaders at once, every partition asked from the next offset it
still needs.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient

from broker.client.connection import send_requests
from broker.messages.log import _READ_UNCOMMITTED, Message, _fetch_request, _unpack

Wanted = tuple[str, int, int]  # (topic, partition, offset)
# Bytes asked per partition and fetch: a few records past each offset (the first batch comes whole anyway).
PARTITION_BYTES = 16 * 1024
_OUT_OF_RANGE = kafka.errors.OffsetOutOfRangeError.errno


@dataclass
class _Partition:
    offsets: list[int]  # the offsets asked, ascending
    leader: int
    next: int = 0  # the first of ``offsets`` without its record yet
    position: int = 0  # where the next fetch starts

    def take(self, where: tuple[str, int], data: Any, found: dict[Wanted, int]) -> bool:
        """Note the timestamps one fetch answer gives; True when the partition is done (every offset has
        its record, or the rest have none up to the high watermark: markers at most)."""
        offsets = self.offsets
        reached = self.position
        for entry, following in _unpack(*where, bytes(data.records or b""), [], _READ_UNCOMMITTED):
            reached = max(reached, following)
            if not isinstance(entry, Message) or entry.control is not None:
                continue  # a marker, or the end of a batch
            while self.next < len(offsets) and offsets[self.next] <= entry.offset:
                if entry.timestamp is not None:
                    found[(*where, offsets[self.next])] = entry.timestamp
                self.next += 1
            if self.next == len(offsets):
                return True
        if reached >= data.high_watermark:
            return True
        self.position = max(reached, offsets[self.next])
        return False

    def skip(self) -> bool:
        """Leave out the offsets at or below the position, which Kafka says is out of range (deleted by
        retention or by a delete-records); True when none is left."""
        while self.next < len(self.offsets) and self.offsets[self.next] <= self.position:
            self.next += 1
        if self.next == len(self.offsets):
            return True
        self.position = self.offsets[self.next]
        return False


def first_timestamps(
    admin: KafkaAdminClient,
    wanted: list[Wanted],
    leaders: dict[tuple[str, int], int],
    timeout_ms: int,
    deadline: float,
) -> dict[Wanted, int]:
    """{(topic, partition, offset): timestamp ms} of the first record at or after each offset (aborted and
    open transactions' records count, markers do not). An offset with no record after it up to the high
    watermark (only markers, or nothing) is left out, and so are offsets below the log start, those of
    partitions without a leader in ``leaders`` or whose leader fails, and what ``deadline``
    (time.monotonic()) leaves unread."""
    asked: dict[tuple[str, int], set[int]] = defaultdict(set)
    for topic, partition, offset in wanted:
        if (topic, partition) in leaders:
            asked[(topic, partition)].add(offset)
    pending = {
        where: _Partition(sorted(offsets), leaders[where], position=min(offsets)) for where, offsets in asked.items()
    }
    found: dict[Wanted, int] = {}
    while pending and time.monotonic() < deadline:
        by_leader: dict[int, dict[str, list[tuple[int, int]]]] = defaultdict(lambda: defaultdict(list))
        for (topic, partition), state in pending.items():
            by_leader[state.leader][topic].append((partition, state.position))
        requests = [
            (_fetch_request(dict(p), PARTITION_BYTES, _READ_UNCOMMITTED), leader) for leader, p in by_leader.items()
        ]
        before = {where: state.position for where, state in pending.items()}
        for (_, leader), answer in zip(requests, send_requests(admin, requests, timeout_ms), strict=True):
            if isinstance(answer, kafka.errors.KafkaError):  # no lag in time on that leader this once
                pending = {w: s for w, s in pending.items() if s.leader != leader}
                continue
            for topic_answer in answer.responses:
                for data in topic_answer.partitions:
                    where = (topic_answer.topic, data.partition_index)
                    reading = pending.get(where)
                    if reading is None:
                        continue
                    if data.error_code == _OUT_OF_RANGE:
                        done = reading.skip()
                    else:  # another error (leader moved, ...): no lag in time there this once
                        done = bool(data.error_code) or reading.take(where, data, found)
                    if done:
                        del pending[where]
        if all(before.get(where) == state.position for where, state in pending.items()):
            break  # no partition got further: asking again would give the same
    return found
