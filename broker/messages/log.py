"""One partition's log as Kafka holds it: every record with the fate of its transaction, and the commit
and abort markers between them.

A consumer hides what the pages must show: kafka-python's (like Java's) drops control batches, and says
nothing of a record's producer or transaction. So messages are read here with fetch requests of our own,
sent to the partition's leader, and the record batches are taken apart as Kafka wrote them:

- below the last stable offset (LSO) the fetch asks for ``read_committed``. The broker then still returns
  every batch, aborted ones included, together with the list of aborted transactions the range overlaps
  (producer id and first offset). A transactional record of a producer whose aborted transaction began at
  or before it, and whose abort marker is still ahead, is ``aborted``; the others are ``committed``;
- from the LSO on, the fetch asks for ``read_uncommitted`` (the broker gives no aborted list there). A
  transactional record's fate is the type of the next marker its producer wrote; with none up to the
  high watermark its transaction is still ``open``.

A read_committed consumer (kcat's default, Kafka Streams, every exactly-once pipeline) sees the records
that are neither aborted nor open, below the LSO, and no marker: ``visible(m, "read_committed")``.
"""

from __future__ import annotations

import contextlib
import struct
import time
from collections import deque
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar, cast

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.protocol.consumer import FetchRequest
from kafka.record import MemoryRecords

from broker.client.connection import ClusterConnection, send_request
from broker.errors import ClusterUnavailable, KafkaRefused, TopicNotFound
from broker.segments.findings import Finding
from broker.segments.model import Batch, Record
from broker.segments.records import ENTRY_PREFIX as _ENTRY_PREFIX
from broker.segments.records import V2Batch, decode_v2_records, read_v2, v2_payload

ISOLATIONS = ("read_uncommitted", "read_committed")
K = TypeVar("K")
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
FETCH_BYTES = 1024 * 1024
# Fetches sent ahead by scans (PartitionLog.walk with ahead): one at a time per walk, at most this many at once.
_AHEAD = ThreadPoolExecutor(max_workers=8, thread_name_prefix="fetch-ahead")
_LAST_DELTA = struct.Struct(">i")
# A batch's records, uncompressed, are read up to this size (Kafka's own limit on a message is far below it).
_MAX_RECORDS_BYTES = 256 * 1024 * 1024
# A transaction open above the LSO is looked for this far ahead (its marker) before it is called open.
LOOK_AHEAD_ENTRIES = 20_000
# A read from inside a batch decodes this many of its records first, and the rest only when it wants more.
FIRST_PART = 128
_READ_UNCOMMITTED, _READ_COMMITTED = 0, 1
_LEADER_MOVED = (
    kafka.errors.NotLeaderForPartitionError,
    kafka.errors.FencedLeaderEpochError,
    kafka.errors.UnknownLeaderEpochError,
    kafka.errors.LeaderNotAvailableError,
)
# The leader's connection refused or dropped: it stopped, and another broker leads (or will in a moment).
_LEADER_AWAY = (kafka.errors.KafkaConnectionError, kafka.errors.NodeNotReadyError)
# How often a read looks the partition's leader up again after it moved or went away, and how long it
# waits before each new look (the controller needs a moment to elect another).
LEADER_LOOKS = 3
LEADER_PAUSE_S = 0.3


class _LeaderGone(Exception):
    """The broker a fetch was sent to no longer leads the partition or does not answer the connection.
    Not a Kafka error, so ClusterConnection.call lets it through untouched (and keeps its client)."""


@dataclass(frozen=True)
class Message:
    """A record of a partition, or (``control`` set) a transaction's commit or abort marker."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None  # epoch ms
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    # "committed", "aborted" or "open" for a record a transactional producer wrote; None otherwise, and
    # for records read by a consumer (the tail), which does not say.
    transaction: str | None = None
    control: str | None = None  # "commit" or "abort" on a marker; None on a record
    producer_id: int | None = None  # of an idempotent or transactional producer (-1 and None: none)
    producer_epoch: int | None = None

    @property
    def size(self) -> int:
        return len(self.key or b"") + len(self.value or b"")

    @property
    def is_marker(self) -> bool:
        return self.control is not None


def visible(message: Message, isolation: str) -> bool:
    """Whether a consumer with this isolation level is given ``message`` (read_committed: below the LSO,
    which a reader stops at, neither aborted nor open, and no marker)."""
    if isolation == "read_uncommitted":
        return message.control is None
    return message.control is None and message.transaction in (None, "committed")


def hidden_reason(message: Message, isolation: str, last_stable_offset: int | None = None) -> str | None:
    """Why a consumer with this isolation level is not given ``message``, in a sentence; None if it is. With
    the partition's ``last_stable_offset``, read_committed also hides every record at or above it (a consumer
    stops there until the transaction holding it back ends), whatever its own transaction."""
    where = f"Offset {message.offset} of partition {message.partition}"
    if (
        visible(message, isolation)
        and isolation == "read_committed"
        and last_stable_offset is not None
        and message.offset >= last_stable_offset
    ):
        return (
            f"{where} is at or above the last stable offset ({last_stable_offset}): a transaction still open "
            "before it holds it back, and a read_committed consumer is not given it until that transaction ends."
        )
    if visible(message, isolation):
        return None
    if message.control is not None:
        kind = message.control
        return f"{where} is a transaction's {kind} marker: no consumer is given it, and it has no key or value."
    if message.transaction == "aborted":
        return f"{where} belongs to an aborted transaction: a read_committed consumer is never given it."
    return f"{where} belongs to a transaction still open: a read_committed consumer is not given it yet."


class OffsetOutOfRange(Exception):
    """The fetch offset is outside the partition now (records deleted or the log truncated meanwhile)."""


@dataclass
class _Fetched:
    batches: bytes
    aborted: list[tuple[int, int]]  # (producer id, first offset)
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int


class PartitionLog:
    """Reads one partition from its leader. ``high_watermark`` and ``last_stable_offset`` are those of
    the first answer (None before it): a page reports the partition as it was when its read began.

    Each fetch asks for up to FETCH_BYTES; a read that wants a few rows (a page) may ask less of its first
    fetch (``first_fetch_bytes``; each next one asks four times more, up to FETCH_BYTES): the broker still
    answers at least one whole batch, and a page of small records is not made to receive and copy 1 MB."""

    def __init__(
        self, conn: ClusterConnection, topic: str, partition: int, leader: int, first_fetch_bytes: int = FETCH_BYTES
    ) -> None:
        self.conn, self.topic, self.partition, self.leader = conn, topic, partition, leader
        self._fetch_bytes = max(1, min(first_fetch_bytes, FETCH_BYTES))
        self.high_watermark: int | None = None
        self.last_stable_offset: int | None = None
        self.log_start_offset: int | None = None
        self.fetches = 0
        self._lso_now: int | None = None  # the LSO of the latest answer: where the isolation level changes
        self.timed_out = False  # the last walk ended at its deadline, before its stop
        self._primed_at = 0  # the offset of the fetch prime() sent

    # ------------------------------------------------------------ fetching

    def _fetch(self, offset: int, isolation: int) -> _Fetched:
        """One fetch of up to FETCH_BYTES from ``offset``. Raises OffsetOutOfRange, TopicNotFound,
        KafkaRefused (not allowed), ClusterUnavailable (no answer, or no leader found after LEADER_LOOKS
        looks: a broker stopping is one failover, not an unreachable cluster)."""
        for look in range(LEADER_LOOKS + 1):
            try:
                return self.conn.call(lambda admin: self._ask(admin, offset, isolation), "message read", retry=True)
            except _LeaderGone:
                if look == LEADER_LOOKS:
                    break
                time.sleep(LEADER_PAUSE_S * (look + 1))
                with contextlib.suppress(ClusterUnavailable):
                    self.leader = self._current_leader()
        raise ClusterUnavailable(
            f"Partition {self.partition} of {self.topic!r} is changing leader (broker {self.leader} stopped or "
            "moved it); try again in a moment."
        )

    def prime(self, offset: int) -> Future[_Fetched | None]:
        """Send the first fetch of a read from ``offset`` now, in the background, to ``leader`` as guessed
        (the leader the last metadata named): its answer, or None when the guess was wrong or anything
        failed (nothing is reset or retried: the read then fetches as usual). Pass the future to
        :meth:`entries` once the guess is confirmed; cancel it otherwise."""

        def guess() -> _Fetched | None:
            try:
                return self.conn.try_once(lambda admin: self._ask(admin, offset, _READ_COMMITTED, guess=True))
            except Exception:  # noqa: BLE001 - a wrong guess in any of its forms: the read asks as usual
                return None

        self._primed_at = offset
        return _AHEAD.submit(guess)

    def _ask(self, admin: KafkaAdminClient, offset: int, isolation: int, guess: bool = False) -> _Fetched:
        partition = FetchRequest.FetchTopic.FetchPartition(
            partition=self.partition,
            current_leader_epoch=-1,
            fetch_offset=offset,
            log_start_offset=-1,
            partition_max_bytes=self._fetch_bytes,
        )
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=self._fetch_bytes,
            isolation_level=isolation,
            topics=[FetchRequest.FetchTopic(topic=self.topic, partitions=[partition])],
            min_version=4,  # the first with isolation levels, the LSO and aborted transactions
            max_version=12,  # the last that names topics (13 uses topic ids)
        )
        wait_ms = int(self.conn.config.timeout * 1000)
        try:
            answer = send_request(admin, request, node=self.leader, timeout_ms=wait_ms)
        except _LEADER_AWAY:
            # A client whose connection to a broker broke may keep failing to reach it after it restarts
            # (reconnect back-off): the next look asks with a new one. Not for a guess: other calls may be
            # using the client (the metadata request that checks the guess).
            if not guess:
                self.conn.reset(admin)
            raise _LeaderGone() from None
        self.fetches += 1
        self._fetch_bytes = min(FETCH_BYTES, self._fetch_bytes * 4)
        if getattr(answer, "error_code", 0):
            raise kafka.errors.for_code(answer.error_code)()
        data = answer.responses[0].partitions[0]
        if data.error_code:
            error = kafka.errors.for_code(data.error_code)
            if issubclass(error, _LEADER_MOVED):
                raise _LeaderGone()
            if error is kafka.errors.OffsetOutOfRangeError:
                raise OffsetOutOfRange(offset)
            if error is kafka.errors.UnknownTopicOrPartitionError:
                raise TopicNotFound(f"No topic named {self.topic!r} in cluster {self.conn.config.name!r}.")
            if error.__name__.endswith("AuthorizationFailedError"):
                raise KafkaRefused(f"Kafka refused: {error.message}: reading {self.topic!r} is not allowed.")
            raise error()
        return _Fetched(
            batches=bytes(data.records or b""),
            aborted=[(t.producer_id, t.first_offset) for t in (data.aborted_transactions or [])],
            high_watermark=data.high_watermark,
            last_stable_offset=data.last_stable_offset if data.last_stable_offset >= 0 else data.high_watermark,
            log_start_offset=data.log_start_offset,
        )

    def _current_leader(self) -> int:
        from broker.topics.read import get_topic_partitions

        self.conn.reads.forget()
        for info in get_topic_partitions(self.conn, self.topic, only=self.partition):
            if info.partition == self.partition and info.leader is not None:
                return info.leader
        raise ClusterUnavailable(f"Partition {self.partition} of {self.topic!r} has no leader right now.")

    def _note(self, fetched: _Fetched) -> None:
        self._lso_now = fetched.last_stable_offset
        if self.high_watermark is None:
            self.high_watermark = fetched.high_watermark
            self.last_stable_offset = fetched.last_stable_offset
            self.log_start_offset = fetched.log_start_offset

    def bounds(self, end: int) -> tuple[int, int]:
        """(high watermark, LSO): those of the first answer, or of a fetch at ``end`` (the high watermark
        listed for the partition, so the answer holds nothing or only what was written since)."""
        if self.high_watermark is None:
            self._note(self._fetch(end, _READ_COMMITTED))
        high, stable = self.high_watermark, self.last_stable_offset
        if high is None or stable is None:
            raise ClusterUnavailable(f"Partition {self.partition} of {self.topic!r} did not say its offsets.")
        return high, stable

    # ------------------------------------------------------------ walking

    def entries(
        self, offset: int, stop: int, deadline: float, primed: Future[_Fetched | None] | None = None
    ) -> Generator[Message, None, None]:
        """Every record and marker at ``offset`` or after and below ``stop``, in offset order, each
        with its transaction's fate. Ends early (quietly) at ``deadline``; the caller checks the clock.
        ``primed``: the first fetch, sent already by :meth:`prime` (from ``offset``)."""
        return cast(Generator[Message, None, None], self.walk(offset, stop, deadline, primed=primed))

    def walk(
        self,
        offset: int,
        stop: int,
        deadline: float,
        pass_over: PassOver | None = None,
        ahead: bool = False,
        primed: Future[_Fetched | None] | None = None,
        take: Take | None = None,
    ) -> Generator[Message | Passed, None, None]:
        """:meth:`entries`, where ``pass_over`` may pass over whole batches of records below the LSO that lie
        within ``offset`` and ``stop`` (each a Passed, in its place in offset order). With ``ahead`` (a scan of
        many records), the next fetch below the LSO is sent while the records of the last one are read.
        ``take`` is offered every batch of records below the LSO, within the range, that no transaction aborted,
        as it came (still compressed): a batch it takes is a Passed too, its records not decoded."""
        self.timed_out = False
        skip = None
        if pass_over is not None:

            def skip(first: int, last: int, count: int, payload: bytes) -> bool:
                return first >= offset and last < stop and pass_over(first, last, count, payload)

        taking = None
        if take is not None:

            def taking(batch: V2Batch) -> bool:
                return batch.base_offset >= offset and batch.last_offset < stop and take(batch)

        # The fetch sent ahead: (its offset, its answer; None: ask again).
        box: list[tuple[int, Future[_Fetched | None]] | None] = [None]
        if primed is not None:
            box[0] = (self._primed_at, primed)
        try:
            yield from self._walk_from(offset, stop, deadline, skip, ahead, box, taking)
        finally:
            sent = box[0]
            if sent is not None:
                sent[1].cancel()  # read no further: an answer on its way is dropped

    def _walk_from(
        self,
        offset: int,
        stop: int,
        deadline: float,
        skip: PassOver | None,
        ahead: bool,
        box: list[tuple[int, Future[_Fetched | None]] | None],
        take: Take | None = None,
    ) -> Generator[Message | Passed, None, None]:
        """The walk of :meth:`walk`; ``box`` holds the fetch sent ahead, if any, for the caller to drop."""
        position = offset
        waiting: deque[Message] = deque()  # read above the LSO, in order, from the first one not settled
        open_producers: set[int] = set()  # producers with a record in ``waiting`` not settled yet
        while position < stop and time.monotonic() < deadline:
            isolation = _READ_COMMITTED if self._lso_now is None or position < self._lso_now else _READ_UNCOMMITTED
            sent, box[0] = box[0], None
            answer = None
            if sent is not None and sent[0] == position and isolation == _READ_COMMITTED:
                answer = sent[1].result()
            elif sent is not None:
                sent[1].cancel()
            fetched = answer if answer is not None else self._fetch(position, isolation)
            self._note(fetched)
            if isolation == _READ_COMMITTED and not fetched.batches and position >= fetched.last_stable_offset:
                continue  # the LSO is behind us: ask again, read_uncommitted, for what lies above it
            if ahead and isolation == _READ_COMMITTED:
                following = _after_batches(fetched.batches)
                if following is not None and following < min(stop, fetched.last_stable_offset):
                    box[0] = (following, _AHEAD.submit(self._fetch, following, _READ_COMMITTED))
            moved = False
            below = isolation == _READ_COMMITTED
            for entry, next_position in self._unpack(
                fetched, isolation, skip if below else None, take if below else None, (offset, stop)
            ):
                position, moved = next_position, True
                if isinstance(entry, Passed):
                    yield entry
                    continue
                if entry is None or entry.offset < offset:
                    continue
                if entry.offset >= stop:
                    position = stop
                    break
                if isolation == _READ_COMMITTED:
                    yield entry
                    continue
                self._settle(entry, waiting, open_producers)
                while waiting and (waiting[0].transaction != "?" or len(waiting) > LOOK_AHEAD_ENTRIES):
                    held = waiting.popleft()
                    yield replace(held, transaction="open") if held.transaction == "?" else held
            if not moved:
                break  # nothing more below the high watermark
        self.timed_out = position < stop and time.monotonic() >= deadline
        if waiting:
            yield from self._settle_ahead(waiting, open_producers, position, deadline)

    def _settle(self, entry: Message, waiting: deque[Message], open_producers: set[int]) -> None:
        """Above the LSO: a transactional record waits for its producer's marker; a marker settles every
        waiting record of its producer."""
        _apply_marker(entry, waiting, open_producers)
        if entry.transaction == "?":
            open_producers.add(-1 if entry.producer_id is None else entry.producer_id)
        waiting.append(entry)

    def _settle_ahead(
        self, waiting: deque[Message], open_producers: set[int], position: int, deadline: float
    ) -> Iterator[Message]:
        """The records held for their transaction's fate, once the markers after ``position`` (up to the
        high watermark, within the deadline and LOOK_AHEAD_ENTRIES) have been read; those whose producer
        wrote none are open."""
        looked = 0
        end = self.high_watermark or position
        while open_producers and position < end and looked < LOOK_AHEAD_ENTRIES and time.monotonic() < deadline:
            fetched = self._fetch(position, _READ_UNCOMMITTED)
            moved = False
            for entry, next_position in self._unpack(fetched, _READ_UNCOMMITTED):
                position, moved = next_position, True
                if not isinstance(entry, Message) or entry.offset < waiting[-1].offset + 1:
                    continue
                looked += 1
                _apply_marker(entry, waiting, open_producers)
            if not moved:
                break
        for held in waiting:
            yield replace(held, transaction="open") if held.transaction == "?" else held

    def _unpack(
        self,
        fetched: _Fetched,
        isolation: int,
        pass_over: PassOver | None = None,
        take: Take | None = None,
        window: tuple[int, int] | None = None,
    ) -> Iterator[tuple[Message | Passed | None, int]]:
        return _unpack(self.topic, self.partition, fetched.batches, fetched.aborted, isolation, pass_over, take, window)


def _apply_marker(entry: Message, waiting: deque[Message], open_producers: set[int]) -> None:
    """When ``entry`` is the marker of a producer with records waiting for their fate, settle them all:
    committed or aborted as the marker says."""
    if entry.control is None or entry.producer_id not in open_producers:
        return
    fate = "committed" if entry.control == "commit" else "aborted"
    for i, held in enumerate(waiting):
        if held.producer_id == entry.producer_id and held.transaction == "?":
            waiting[i] = replace(held, transaction=fate)
    open_producers.discard(entry.producer_id)


@dataclass(frozen=True)
class Passed:
    """The records of one batch, passed over unread: a reader's ``pass_over`` said none of them can be wanted
    (a search's probe found none of its words in the batch). ``count`` records from ``first`` to ``last``."""

    first: int
    last: int
    count: int


# Asked of each batch of records: (first offset, last offset, records, the records' bytes uncompressed) ->
# True to pass over the batch unread (Passed).
PassOver = Callable[[int, int, int, bytes], bool]
# Offered each batch of records (magic 2) below the LSO that no transaction aborted, still compressed: True when
# the reader took it whole (a copy writing it as it is), and it is then a Passed, its records not decoded.
Take = Callable[[V2Batch], bool]


def _unpack(
    topic: str,
    partition: int,
    batches: bytes,
    aborted_list: list[tuple[int, int]],
    isolation: int,
    pass_over: PassOver | None = None,
    take: Take | None = None,
    window: tuple[int, int] | None = None,
) -> Iterator[tuple[Message | Passed | None, int]]:
    """(entry, offset after it) for each record and marker of a fetch answer; (None, next offset) after
    each batch of records (one emptied by compaction yields only that). Fates below the LSO come from the
    answer's aborted list; above it (read_uncommitted), transactional records carry "?" until settled.

    Batches of the current format (magic 2) are read by the project's own record reader (broker.segments),
    older ones by kafka-python's. With ``pass_over``, a batch of records it accepts is yielded as one Passed;
    with ``take``, so is a batch it takes, before it is decompressed. ``window`` (first offset, stop): records of
    a batch outside it may be left out (a page at an offset inside a batch of thousands decodes only its rows)."""
    aborted = deque(sorted(aborted_list, key=lambda t: t[1]))
    aborting: set[int] = set()
    view = memoryview(batches)
    position, size = 0, len(batches)
    findings: list[Finding] = []
    while size - position >= _ENTRY_PREFIX.size:
        _, length, _, magic = _ENTRY_PREFIX.unpack_from(view, position)
        total = 12 + length
        if position + total > size:
            return  # a fetch answer may end with part of a batch: the next fetch starts at it
        if magic < 2:
            for record in MemoryRecords(bytes(view[position : position + total])).next_batch() or ():
                yield _message(topic, partition, record, None, None, None, None), record.offset + 1
            position += total
            continue
        batch = read_v2(view, position, total, position, "fetch", findings)
        position += total
        if batch is None or not batch.crc_valid:
            where = f"at offset {batch.base_offset} " if batch is not None else ""
            raise ClusterUnavailable(
                f"A record batch of partition {partition} of {topic!r} {where}failed its CRC check."
            )
        producer = batch.producer_id if batch.producer_id >= 0 else None
        epoch = batch.producer_epoch if producer is not None else None
        if isolation == _READ_COMMITTED and producer is not None:
            while aborted and aborted[0][1] <= batch.last_offset:
                aborting.add(aborted.popleft()[0])
        next_offset = batch.last_offset + 1
        if batch.is_control:
            payload = _payload(topic, partition, batch, findings)
            for record in decode_v2_records(payload, batch, None, None, findings):
                kind = "abort" if record.control_type == "ABORT" else "commit"
                if kind == "abort":
                    aborting.discard(-1 if producer is None else producer)
                yield _entry(topic, partition, record, None, kind, producer, epoch), next_offset
            continue
        fate: str | None = None
        if batch.is_transactional and isolation == _READ_UNCOMMITTED:
            fate = "?"
        elif batch.is_transactional:
            fate = "aborted" if producer in aborting else "committed"
        count = batch.count or 0
        if take is not None and fate != "?" and fate != "aborted" and take(cast(V2Batch, batch)):
            yield Passed(batch.base_offset, batch.last_offset, count), next_offset
            continue
        payload = _payload(topic, partition, batch, findings)
        if pass_over is not None and fate != "?" and pass_over(batch.base_offset, batch.last_offset, count, payload):
            yield Passed(batch.base_offset, batch.last_offset, count), next_offset
            continue
        for part in _parts(batch, count, window):
            records = decode_v2_records(payload, batch, None, part[1], findings, part[0])
            if findings:
                raise ClusterUnavailable(f"{_unreadable(topic, partition, batch.base_offset)}: {findings[-1].message}")
            for record in records:
                yield _entry(topic, partition, record, fate, None, producer, epoch), record.offset + 1
        # A batch emptied by compaction keeps its offsets: reading goes on after its last one.
        yield None, next_offset


def _parts(batch: Batch, count: int, window: tuple[int, int] | None) -> list[tuple[int, int | None]]:
    """The (skip, limit) of each part of a batch to decode in turn, for a read of the offsets in ``window``
    (first, stop): records before it are passed over, those after it not decoded, and a read from inside a large
    batch decodes its first FIRST_PART records alone, the rest only if it goes on (a page stops long before).
    Only a batch whose offsets run without gaps (not compacted) is cut: a record's place is its offset delta."""
    if window is None or count != batch.last_offset - batch.base_offset + 1:
        return [(0, None)]
    skip = max(0, window[0] - batch.base_offset)
    limit = window[1] - batch.base_offset if window[1] <= batch.last_offset else None
    if (limit if limit is not None else count) - skip <= FIRST_PART:
        return [(skip, limit)]
    return [(skip, skip + FIRST_PART), (skip + FIRST_PART, limit)]


def _payload(topic: str, partition: int, batch: Batch, findings: list[Finding]) -> bytes:
    """A batch's records, decompressed; raises ClusterUnavailable when they cannot be."""
    payload = v2_payload(batch, _MAX_RECORDS_BYTES, findings)
    if payload is None:
        raise ClusterUnavailable(f"{_unreadable(topic, partition, batch.base_offset)}: {findings[-1].message}")
    return payload


def _after_batches(batches: bytes) -> int | None:
    """The offset after the last whole batch of a fetch answer (None when it holds none): where the next fetch
    starts, known before the records are read."""
    position, size, last = 0, len(batches), None
    while size - position >= _ENTRY_PREFIX.size:
        base, length, _, magic = _ENTRY_PREFIX.unpack_from(batches, position)
        if position + 12 + length > size:
            break
        # v2: base offset + lastOffsetDelta (at byte 23); legacy: the entry's offset is its last record's
        last = base + _LAST_DELTA.unpack_from(batches, position + 23)[0] if magic >= 2 else base
        position += 12 + length
    return None if last is None else last + 1


def _unreadable(topic: str, partition: int, offset: int) -> str:
    return f"A record batch of partition {partition} of {topic!r} at offset {offset} could not be read"


def _entry(
    topic: str,
    partition: int,
    record: Record,
    fate: str | None,
    control: str | None,
    producer: int | None,
    epoch: int | None,
) -> Message:
    """A record read by the project's own reader, as a Message."""
    timestamp = record.timestamp
    return Message(
        topic,
        partition,
        record.offset,
        timestamp if timestamp >= 0 else None,
        record.timestamp_type,
        None if control else record.key,
        None if control else record.value,
        [] if control else record.headers,
        fate,
        control,
        producer,
        epoch,
    )


def _message(
    topic: str,
    partition: int,
    record: Any,
    fate: str | None,
    control: str | None,
    producer: int | None,
    epoch: int | None,
) -> Message:
    """A record read by kafka-python's reader (a legacy message, magic 0 or 1), as a Message."""
    timestamp = record.timestamp
    return Message(
        topic=topic,
        partition=partition,
        offset=record.offset,
        timestamp=timestamp if timestamp is not None and timestamp >= 0 else None,
        timestamp_type=TIMESTAMP_TYPES.get(record.timestamp_type, "NoTimestamp"),
        key=None if control else record.key,
        value=None if control else record.value,
        headers=[] if control else [(name, value) for name, value in (record.headers or [])],
        transaction=fate,
        control=control,
        producer_id=producer,
        producer_epoch=epoch,
    )


# ---------------------------------------------------------------- lag at the last stable offset

# Lag at the LSO is counted record by record for ranges up to this many offsets; a wider range counts
# each offset as a record (its few markers do not change what a user reads from it).
COUNT_RANGE = 1_000
_COUNT_PARTITION_BYTES = 64 * 1024
_COUNT_BYTES = 16 * 1024 * 1024


def _fetch_request(partitions: dict[str, list[tuple[int, int]]], partition_bytes: int, isolation: int) -> Any:
    """A fetch of several partitions, ``{topic: [(partition, offset)]}``."""
    fetch_partition = FetchRequest.FetchTopic.FetchPartition
    return FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=_COUNT_BYTES,
        isolation_level=isolation,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    fetch_partition(
                        partition=p,
                        current_leader_epoch=-1,
                        fetch_offset=offset,
                        log_start_offset=-1,
                        partition_max_bytes=partition_bytes,
                    )
                    for p, offset in wanted
                ],
            )
            for topic, wanted in partitions.items()
        ],
        min_version=4,
        max_version=12,
    )


def records_given(
    admin: KafkaAdminClient,
    ranges: dict[K, tuple[str, int, int, int]],
    leaders: dict[tuple[str, int], int],
    timeout_ms: int,
) -> dict[K, int]:
    """For each key's (topic, partition, start, stop): how many records a read_committed consumer at
    ``start`` is still given below ``stop`` (the LSO). Transaction markers and aborted records do not count:
    a group that consumed every committed record has 0 left, though the high watermark stands one marker
    further.

    One read_committed fetch per leader, each partition read once from the lowest start asked of it, for
    every range of at most COUNT_RANGE offsets; wider ranges, and what an answer does not reach, count
    every offset. Keys whose leader fails are left out."""
    result: dict[K, int] = {}
    lowest: dict[tuple[str, int], int] = {}
    for key, (topic, partition, start, stop) in ranges.items():
        where = (topic, partition)
        if stop - start > COUNT_RANGE or stop <= start or where not in leaders:
            result[key] = max(0, stop - start)
        else:
            lowest[where] = min(start, lowest.get(where, start))
    by_leader: dict[int, dict[str, list[tuple[int, int]]]] = {}
    for (topic, partition), start in lowest.items():
        by_leader.setdefault(leaders[(topic, partition)], {}).setdefault(topic, []).append((partition, start))
    read: dict[tuple[str, int], list[Message]] = {}  # what a read_committed consumer is given, in order
    reached: dict[tuple[str, int], int] = {}  # where each answer ends
    for leader, partitions in by_leader.items():
        request = _fetch_request(partitions, _COUNT_PARTITION_BYTES, _READ_COMMITTED)
        try:
            answer = send_request(admin, request, node=leader, timeout_ms=timeout_ms)
        except kafka.errors.KafkaError:
            continue
        for topic_answer in answer.responses:
            for data in topic_answer.partitions:
                where = (topic_answer.topic, data.partition_index)
                if data.error_code or where not in lowest:
                    continue
                aborted = [(t.producer_id, t.first_offset) for t in (data.aborted_transactions or [])]
                given: list[Message] = []
                end = lowest[where]
                for entry, following in _unpack(*where, bytes(data.records or b""), aborted, _READ_COMMITTED):
                    end = max(end, following)
                    if isinstance(entry, Message) and visible(entry, "read_committed"):
                        given.append(entry)
                read[where], reached[where] = given, end
    for key, (topic, partition, start, stop) in ranges.items():
        where = (topic, partition)
        if key in result or where not in read:
            continue
        counted = sum(1 for m in read[where] if start <= m.offset < stop)
        result[key] = counted + max(0, stop - max(start, reached[where]))
    return result


def offsets_for_time(conn: ClusterConnection, topic: str, partitions: list[int], at_ms: int) -> dict[int, int]:
    """Each of ``partitions``' first offset with a timestamp at or after ``at_ms`` (ListOffsets, one request per
    leader); a partition with none is left out."""

    def lookup(admin: KafkaAdminClient) -> dict[int, int]:
        answer = admin.list_partition_offsets({TopicPartition(topic, p): at_ms for p in partitions})
        return {tp.partition: int(o.offset) for tp, o in answer.items() if o is not None and o.offset >= 0}

    return conn.call(lookup, "offset lookup by time", retry=True)
