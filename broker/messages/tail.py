"""Tailing a topic: new messages as they arrive, read by a thread of its own into a bounded buffer.

The tail reads as the pages do (broker.messages.log), not through a consumer, which would hide what the pages
show: one fetch request per leader for all the tailed partitions it leads, each answer taken apart by the
pages' own reader (``_unpack``), so every record carries its transaction's fate and the commit and abort markers
are entries of their own:

- ``read_uncommitted``: a transactional record is ``open`` until its producer's marker arrives; when it does,
  the records already handed out as open come back, settled (``committed`` or ``aborted``), from
  :meth:`Tail.settled`, for the page to relabel their rows. A record whose marker arrives in the same answer
  is handed out settled (``_apply_marker``, as a page settles the records above the last stable offset);
- ``read_committed``: the fetches stop at the last stable offset, as a read_committed consumer's do; the
  broker's aborted-transactions list labels each transactional record, and only what such a consumer is given
  is handed out (``visible``): committed and plain records, no markers.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from dataclasses import replace
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec

from broker.client.connection import ClusterConnection, send_requests
from broker.errors import ClusterUnavailable, KazamiError, NotFound
from broker.messages.log import (
    _READ_COMMITTED,
    _READ_UNCOMMITTED,
    FETCH_BYTES,
    Message,
    _apply_marker,
    _fetch_request,
    _unpack,
    visible,
)
from broker.messages.read import PAGE_BYTES, check_isolation
from broker.topics.read import get_topic_partitions, partition_offsets

log = logging.getLogger(__name__)

# How long the reader waits after a round of fetches that brought nothing, or that failed.
POLL_S = 0.3
# Records handed out as open whose marker the reader still watches for (the oldest are forgotten beyond it: their
# rows keep the open label, as the browser keeps at most 500 rows anyway).
OPEN_WATCHED = 1000


class Tail:
    """New messages of a topic (or one partition) as they arrive, read by a thread of its own, each labelled
    with its transaction's fate as the pages label it (and, read_uncommitted, the transaction markers).

    Messages wait in a bounded buffer: when the reader falls behind a fast topic, the oldest
    waiting ones are dropped and counted, so memory stays flat however fast the topic is.
    """

    def __init__(
        self,
        conn: ClusterConnection,
        topic: str,
        partitions: list[int],
        buffer: int = 200,
        isolation: str = "read_uncommitted",
    ) -> None:
        self.conn, self.topic, self.partitions = conn, topic, partitions
        self.isolation = check_isolation(isolation)  # read_committed: records show once committed
        self._buffer: list[Message] = []
        self._settled: list[Message] = []  # records handed out as open whose transaction has ended since
        self._held = 0  # bytes waiting in the buffer
        self._limit = buffer
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.dropped = 0
        self.received = 0
        self.error: str | None = None
        self._thread = threading.Thread(target=self._run, name=f"tail-{topic}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def drain(self, at_most: int) -> tuple[list[Message], int]:
        """Up to ``at_most`` waiting messages, oldest first, and how many were dropped since the last call."""
        with self._lock:
            taken, self._buffer = self._buffer[:at_most], self._buffer[at_most:]
            self._held -= sum(m.size for m in taken)
            dropped, self.dropped = self.dropped, 0
        return taken, dropped

    def settled(self) -> list[Message]:
        """The records handed out (drained) as ``open`` whose transaction has ended since the last call, with
        their fate now (``committed`` or ``aborted``), oldest first. Records still waiting in the buffer are
        settled there instead."""
        with self._lock:
            taken, self._settled = self._settled, []
        return taken

    def discard(self) -> int:
        """Forget every waiting message (while paused); returns how many."""
        with self._lock:
            count, self._buffer, self._held = len(self._buffer), [], 0
            self._settled = []
        return count

    def _run(self) -> None:
        reader = _Reader(self.conn, self.topic, self.partitions, self.isolation)
        try:
            while not self._stop.is_set():
                entries, settled = reader.poll()
                for entry in entries:
                    self._add(entry)
                if settled:
                    self._settle(settled)
                if not entries:
                    self._stop.wait(POLL_S)
        except Exception as exc:  # the page shows why the tail stopped
            log.warning("a tail of %s stopped", self.topic, exc_info=True)
            self.error = f"The live tail stopped: {type(exc).__name__}: {exc}"

    def trouble(self) -> str | None:
        """Why new messages may not be arriving now, read from the topic's partitions (a shared read):
        the cluster does not answer, the topic is gone, or a tailed partition has no leader. None when
        every tailed partition can be read. The reader goes on meanwhile and picks up where it was."""
        try:
            infos = get_topic_partitions(self.conn, self.topic)
        except ClusterUnavailable as exc:
            return f"{exc} The tail goes on by itself once it answers."
        except NotFound as exc:
            return str(exc)
        leaderless = [i.partition for i in infos if i.partition in self.partitions and not i.available]
        if not leaderless:
            return None
        names = ", ".join(str(p) for p in leaderless)
        which = f"Partition {names} has" if len(leaderless) == 1 else f"Partitions {names} have"
        return f"{which} no leader now: new messages there show once one is elected."

    def _add(self, message: Message) -> None:
        with self._lock:
            self.received += 1
            self._buffer.append(message)
            self._held += message.size
            while len(self._buffer) > 1 and (len(self._buffer) > self._limit or self._held > PAGE_BYTES):
                self._held -= self._buffer.pop(0).size
                self.dropped += 1

    def _settle(self, settled: list[Message]) -> None:
        """Records handed out as open, now settled: relabelled in the buffer when still waiting there, else
        kept for :meth:`settled` (at most the buffer's size of them)."""
        with self._lock:
            waiting = {(m.partition, m.offset): i for i, m in enumerate(self._buffer)}
            for message in settled:
                at = waiting.get((message.partition, message.offset))
                if at is not None:
                    self._buffer[at] = message
                else:
                    self._settled.append(message)
            del self._settled[: max(0, len(self._settled) - self._limit)]


class _Reader:
    """Reads the tailed partitions from where they ended when it started: one fetch per leader a round, each
    answer labelled by the pages' reader. Failures (a cluster that does not answer, a leader that moved, a
    topic gone) are waited out: the next round looks the leaders up again (Tail.trouble says why meanwhile)."""

    def __init__(self, conn: ClusterConnection, topic: str, partitions: list[int], isolation: str) -> None:
        self.conn, self.topic, self.partitions, self.isolation = conn, topic, partitions, isolation
        self.level = _READ_COMMITTED if isolation == "read_committed" else _READ_UNCOMMITTED
        self.leaders: dict[int, int] | None = None  # partition -> its leader; None: to look up
        self.positions: dict[int, int] = {}  # partition -> the next offset to read
        # read_uncommitted: partition -> producer id -> its records handed out as open, oldest first.
        self.open: dict[int, dict[int, list[Message]]] = {}
        self.watched = 0  # records in ``open``

    def poll(self) -> tuple[list[Message], list[Message]]:
        """One round: the new entries of every tailed partition, labelled, and the records handed out as open
        before that this round's markers settled. Nothing when the round failed (it is tried again)."""
        try:
            if self.leaders is None or len(self.positions) < len(self.partitions):
                self._locate()
            return self._round()
        except (KazamiError, kafka.errors.KafkaError, OSError):
            self.leaders = None  # look the leaders up again next round
            return [], []

    def _locate(self) -> None:
        """The tailed partitions' leaders, and where each one not read yet starts: its end (the high
        watermark; read_committed, the last stable offset), as a consumer that seeks to the end starts."""
        self.conn.reads.forget()
        infos = get_topic_partitions(self.conn, self.topic)
        self.leaders = {i.partition: i.leader for i in infos if i.partition in self.partitions and i.leader is not None}
        missing = [TopicPartition(self.topic, p) for p in self.partitions if p not in self.positions]
        leaders = {tp: self.leaders.get(tp.partition, -1) for tp in missing}
        if missing:

            def ends(admin: KafkaAdminClient) -> dict[TopicPartition, int]:
                return partition_offsets(admin, self.conn, missing, OffsetSpec.LATEST, leaders, self.isolation)

            for tp, offset in self.conn.call(ends, "tail start", retry=True).items():
                self.positions[tp.partition] = offset

    def _round(self) -> tuple[list[Message], list[Message]]:
        by_leader: dict[int, list[tuple[int, int]]] = {}
        for partition, position in sorted(self.positions.items()):
            leader = (self.leaders or {}).get(partition)
            if leader is not None:
                by_leader.setdefault(leader, []).append((partition, position))
        if not by_leader:
            raise ClusterUnavailable(f"No tailed partition of {self.topic!r} has a leader now.")
        requests = [
            (_fetch_request({self.topic: wanted}, FETCH_BYTES, self.level), leader)
            for leader, wanted in by_leader.items()
        ]
        timeout_ms = int(self.conn.config.timeout * 1000)

        def ask(admin: KafkaAdminClient) -> list[Any]:
            return send_requests(admin, requests, timeout_ms=timeout_ms)

        answers = self.conn.call(ask, "tail read", retry=True)
        entries: list[Message] = []
        settled: list[Message] = []
        relocate = False
        for answer in answers:
            if isinstance(answer, kafka.errors.KafkaError):
                relocate = True
                continue
            for topic_answer in answer.responses:
                for data in topic_answer.partitions:
                    relocate |= self._read(data, entries, settled)
        if relocate:
            self.leaders = None
        return entries, settled

    def _read(self, data: Any, entries: list[Message], settled: list[Message]) -> bool:
        """Take one partition's answer apart into ``entries`` (and ``settled``); True when the partition's leader
        should be looked up again."""
        partition = data.partition_index
        if partition not in self.positions:
            return False
        if data.error_code:
            # A leader that moved, a topic gone, ...: the next round looks the leaders up again. Out of range
            # (records deleted, or the log truncated): the partition starts again at its end.
            if kafka.errors.for_code(data.error_code) is kafka.errors.OffsetOutOfRangeError:
                del self.positions[partition]
            return True
        start = self.positions[partition]
        aborted = [(t.producer_id, t.first_offset) for t in (data.aborted_transactions or [])]
        fresh: deque[Message] = deque()
        open_producers: set[int] = set()
        for entry, following in _unpack(self.topic, partition, bytes(data.records or b""), aborted, self.level):
            self.positions[partition] = max(self.positions[partition], following)
            if not isinstance(entry, Message) or entry.offset < start:
                continue
            if self.level == _READ_COMMITTED:
                if visible(entry, "read_committed"):
                    entries.append(entry)
                continue
            # As a page settles what lies above the last stable offset: a marker settles its producer's records
            # of this answer, and those handed out as open before.
            _apply_marker(entry, fresh, open_producers)
            if entry.control is not None:
                settled.extend(self._settle_earlier(partition, entry))
            if entry.transaction == "?":
                open_producers.add(-1 if entry.producer_id is None else entry.producer_id)
            fresh.append(entry)
        for entry in fresh:
            if entry.transaction == "?":
                entry = replace(entry, transaction="open")
                self._watch(partition, entry)
            entries.append(entry)
        return False

    def _settle_earlier(self, partition: int, marker: Message) -> list[Message]:
        """The records of ``marker``'s producer handed out as open in earlier rounds, with the marker's fate."""
        producer = -1 if marker.producer_id is None else marker.producer_id
        held = self.open.get(partition, {}).pop(producer, [])
        self.watched -= len(held)
        fate = "committed" if marker.control == "commit" else "aborted"
        return [replace(m, transaction=fate) for m in held]

    def _watch(self, partition: int, record: Message) -> None:
        producer = -1 if record.producer_id is None else record.producer_id
        self.open.setdefault(partition, {}).setdefault(producer, []).append(record)
        self.watched += 1
        while self.watched > OPEN_WATCHED:  # forget the oldest watched record
            oldest = min(
                ((p, pid) for p, producers in self.open.items() for pid, held in producers.items() if held),
                key=lambda where: self.open[where[0]][where[1]][0].offset,
            )
            held = self.open[oldest[0]][oldest[1]]
            held.pop(0)
            if not held:
                del self.open[oldest[0]][oldest[1]]
            self.watched -= 1
