"""Messages: read a page at an offset or a time, one message, find by key, scan with a filter, produce.

Every read is bounded: by a message count, by a deadline, and by the offsets the
partition had when the read began (a page never waits for messages not yet written).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, NotFound, PartitionNotFound, PartitionUnavailable
from broker.messages.log import ISOLATIONS, Message, OffsetOutOfRange, PartitionLog, visible
from broker.messages.partitioners import CHOICES, PARTITIONERS, placements
from broker.topics.read import PartitionInfo, get_partition, get_topic_partitions

MAX_PAGE = 500
DEFAULT_PAGE = 50
# Bytes (keys + values) one page, one search's matches or one tail's buffer may hold: a topic of
# 10 MB messages must not make a page of 500 hold 5 GB.
PAGE_BYTES = 16 * 1024 * 1024
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}
__all__ = ["ISOLATIONS", "Message", "visible"]  # re-exported: the record type and who sees it live in logread


@dataclass(frozen=True)
class Page:
    """A page of one partition's records (and, read_uncommitted, its transaction markers) and where its
    neighbouring pages start."""

    topic: str
    partition: int
    offset: int  # where this page starts (after clamping)
    limit: int
    start_offset: int  # of the partition
    end_offset: int  # its high watermark
    messages: list[Message]
    notes: list[str] = field(default_factory=list)  # clamping and time-outs, said to the user
    complete: bool = True  # False when the deadline cut the read short
    partitions: list[PartitionInfo] = field(default_factory=list)  # every partition of the topic
    isolation: str = "read_uncommitted"
    last_stable_offset: int | None = None  # below it every transaction has ended
    next_offset: int | None = None  # of the first row after this page; None: this page is the last
    prev_offset: int | None = None  # where the page of the ``limit`` rows before this one starts

    @property
    def first_offset(self) -> int:
        return self.start_offset

    @property
    def open_from(self) -> int | None:
        """The LSO when a transaction is open (records from it on wait for it), else None."""
        lso = self.last_stable_offset
        return lso if lso is not None and lso < self.end_offset else None


def check_isolation(isolation: str | None) -> str:
    if isolation is None or isolation == "":
        return "read_uncommitted"
    if isolation not in ISOLATIONS:
        raise InvalidInput(f"isolation must be {' or '.join(ISOLATIONS)}, not {isolation!r}.")
    return isolation


def check_limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_PAGE
    if limit < 1 or limit > MAX_PAGE:
        raise InvalidInput(f"The page size is 1 to {MAX_PAGE}, not {limit}.")
    return limit


def _record(record: Any) -> Message:
    return Message(
        topic=record.topic,
        partition=record.partition,
        offset=record.offset,
        timestamp=record.timestamp if record.timestamp is not None and record.timestamp >= 0 else None,
        timestamp_type=TIMESTAMP_TYPES.get(record.timestamp_type, "NoTimestamp"),
        key=record.key,
        value=record.value,
        headers=[(name, value) for name, value in (record.headers or [])],
    )


def _readable(info: PartitionInfo, topic: str) -> tuple[int, int]:
    if not info.available:
        raise PartitionUnavailable(
            f"Partition {info.partition} of {topic!r} has no leader right now; it cannot be read until one is elected."
        )
    if info.start_offset is None or info.end_offset is None:
        why = f": {info.error}" if info.error else ""
        raise PartitionUnavailable(f"The offsets of partition {info.partition} of {topic!r} could not be read{why}.")
    return info.start_offset, info.end_offset


@contextmanager
def _reading(conn: ClusterConnection, topic: str, partitions: str) -> Iterator[None]:
    """A consumer's read failing with a Kafka error (a leader that does not answer, a lost connection), as
    ClusterUnavailable naming what was read."""
    try:
        yield
    except kafka.errors.KafkaError as exc:
        raise ClusterUnavailable(
            f"Reading {partitions} of {topic!r} in cluster {conn.config.name!r} failed: {type(exc).__name__}."
        ) from None


def _offset_for_time(conn: ClusterConnection, tp: TopicPartition, timestamp_ms: int) -> int | None:
    def lookup(admin: KafkaAdminClient) -> int | None:
        answer = admin.list_partition_offsets({tp: timestamp_ms})
        found = answer.get(tp)
        return int(found.offset) if found is not None and found.offset >= 0 else None

    return conn.call(lookup, "offset lookup by time", retry=True)


def _listed(message: Message, isolation: str) -> bool:
    """Whether a page lists ``message``: read_uncommitted, every record and marker; read_committed, what
    such a consumer is given."""
    return isolation == "read_uncommitted" or visible(message, isolation)


@dataclass
class _Window:
    before: list[Message] = field(default_factory=list)  # listed rows before the page, oldest first
    rows: list[Message] = field(default_factory=list)
    following: int | None = None  # the first listed row after the page
    complete: bool = True


def _before(
    log: PartitionLog, at: int, start: int, count: int, isolation: str, deadline: float, window: int
) -> tuple[list[Message], bool]:
    """The last ``count`` listed rows below offset ``at`` (fewer at the partition's start), read from
    ``window`` offsets back and further back while markers, aborted records or compaction leave too few."""
    while True:
        low = max(start, at - window)
        found = [m for m in log.entries(low, at, deadline) if _listed(m, isolation)]
        if log.timed_out:
            return found[-count:], False
        if len(found) >= count or low <= start:
            return found[-count:], True
        window *= 4


def _read_window(
    log: PartitionLog, offset: int, start: int, stop: int, limit: int, isolation: str, deadline: float
) -> _Window:
    """The page of ``limit`` listed rows from ``offset`` (bounded by PAGE_BYTES), the rows before it and
    the offset of the next one after, in one read from ``limit`` offsets before ``offset`` on."""
    result = _Window()
    low = max(start, offset - limit)
    held = 0
    for message in log.entries(low, stop, deadline):
        if not _listed(message, isolation):
            continue
        if message.offset < offset:
            result.before.append(message)
        elif len(result.rows) < limit and held < PAGE_BYTES:
            result.rows.append(message)
            held += message.size
        else:
            result.following = message.offset
            break
    result.complete = not log.timed_out
    if len(result.before) < limit and low > start and result.complete:
        result.before, result.complete = _before(log, offset, start, limit, isolation, deadline, 4 * limit)
    result.before = result.before[-limit:]
    return result


def _read_last(log: PartitionLog, start: int, stop: int, limit: int, isolation: str, deadline: float) -> _Window:
    """The last ``limit`` listed rows below ``stop`` (as many of the newest as PAGE_BYTES allows) and the
    ``limit`` rows before them."""
    found, complete = _before(log, stop, start, 2 * limit, isolation, deadline, 2 * limit)
    rows, before = found[-limit:], found[:-limit]
    held = sum(m.size for m in rows)
    while len(rows) > 1 and held > PAGE_BYTES:
        held -= rows[0].size
        before.append(rows.pop(0))
    return _Window(before=before[-limit:], rows=rows, following=None, complete=complete)


def get_page(
    conn: ClusterConnection,
    topic: str,
    partition: int,
    offset: int | None = None,
    limit: int = DEFAULT_PAGE,
    timestamp_ms: int | None = None,
    from_end: bool = False,
    isolation: str = "read_uncommitted",
) -> Page:
    """A page of ``limit`` rows from ``offset``, or from the first record at/after ``timestamp_ms``, or
    the last page. read_uncommitted lists every record, labelled with its transaction's fate, and every
    commit and abort marker; read_committed only what a read_committed consumer is given (nothing from
    the last stable offset on). Pages step over markers, hidden records and compaction gaps: a page is
    empty only when nothing listed is left at or after its offset.

    Offsets outside the partition are clamped and the page's ``notes`` say so.
    Raises TopicNotFound, PartitionNotFound, PartitionUnavailable, ClusterUnavailable, InvalidInput.
    """
    isolation = check_isolation(isolation)
    infos = get_topic_partitions(conn, topic, only=partition)
    info = _pick(infos, topic, partition)
    start, end = _readable(info, topic)
    log = PartitionLog(conn, topic, partition, info.leader or 0)
    deadline = time.monotonic() + conn.config.timeout * 2
    notes: list[str] = []
    stop = end
    with _reading(conn, topic, f"partition {partition}"):
        if isolation == "read_committed":
            stop = max(start, min(end, log.bounds(end)[1]))
        tp = TopicPartition(topic, partition)
        last = False
        if timestamp_ms is not None:
            found = _offset_for_time(conn, tp, timestamp_ms)
            if found is None or found >= stop:
                notes.append("No message at or after that time; showing the last page.")
                last = True
            else:
                offset = found
        elif from_end:
            last = True
        elif offset is None or offset < start:
            if offset is not None:
                notes.append(f"Offset {offset} is before the first offset {start}; showing from {start}.")
            offset = start
        elif offset >= stop and stop > start:
            if offset < end:
                notes.append(
                    f"Offset {offset} is at or after the last stable offset ({stop}): a read_committed consumer "
                    "sees nothing there until the open transaction ends. Showing the last messages it sees{}."
                )
            else:
                notes.append(f"Offset {offset} is past the end ({end}); showing the last messages{{}}.")
            last = True
        elif offset > stop:
            notes.append(f"Offset {offset} is past the end ({end}); the partition is empty.")
            offset = stop
        try:
            if last:
                window = _read_last(log, start, stop, limit, isolation, deadline)
                offset = window.rows[0].offset if window.rows else stop
                if notes and "{}" in notes[-1]:
                    notes[-1] = notes[-1].format(f" from {offset}" if window.rows else "")
            else:
                assert offset is not None
                window = _read_window(log, offset, start, stop, limit, isolation, deadline)
            high, stable = log.bounds(end)
        except OffsetOutOfRange:
            raise ClusterUnavailable(
                f"Partition {partition} of {topic!r} changed while it was read (records were deleted); try again."
            ) from None
    if not window.complete:
        notes.append(f"Reading stopped after {conn.config.timeout * 2:.0f} s; the page may be short.")
    elif window.following is not None and len(window.rows) < limit:
        notes.append(
            f"These {len(window.rows)} messages hold more than {PAGE_BYTES // (1024 * 1024)} MB, so the page "
            "ends here; the next page goes on."
        )
    return Page(
        topic=topic,
        partition=partition,
        offset=offset,
        limit=limit,
        start_offset=start,
        end_offset=end,
        messages=window.rows,
        notes=notes,
        complete=window.complete,
        partitions=infos,
        isolation=isolation,
        last_stable_offset=min(stable, end, high),
        next_offset=window.following,
        prev_offset=window.before[0].offset if window.before else None,
    )


def _pick(infos: list[PartitionInfo], topic: str, partition: int) -> PartitionInfo:
    for info in infos:
        if info.partition == partition:
            return info
    raise PartitionNotFound(f"Topic {topic!r} has no partition {partition} (it has 0 to {len(infos) - 1}).")


@dataclass(frozen=True)
class Located:
    """One record or marker, and its neighbours' offsets (None at either end of the partition)."""

    message: Message
    info: PartitionInfo
    prev_offset: int | None
    next_offset: int | None


def get_message(conn: ClusterConnection, topic: str, partition: int, offset: int) -> Located:
    """The record, or transaction marker, at exactly ``offset``, labelled like a page's rows, with the
    offsets of the entries before and after it (over compaction gaps). Raises NotFound when the offset is
    outside the partition or holds nothing (compacted away), and the reading errors of get_page."""
    info = _pick(get_topic_partitions(conn, topic, only=partition), topic, partition)
    start, end = _readable(info, topic)
    if not start <= offset < end:
        raise NotFound(
            f"Partition {partition} of {topic!r} holds offsets {start} to {end - 1}; there is no message at {offset}."
            if end > start
            else f"Partition {partition} of {topic!r} is empty; there is no message at {offset}."
        )
    log = PartitionLog(conn, topic, partition, info.leader or 0)
    deadline = time.monotonic() + conn.config.timeout * 2
    with _reading(conn, topic, f"partition {partition}"):
        try:
            walk = log.entries(offset, end, deadline)
            found = next(walk, None)
            following = next(walk, None) if found is not None and found.offset == offset else None
            walk.close()
            before: list[Message] = []
            if found is not None and found.offset == offset and offset > start:
                before, _ = _before(log, offset, start, 1, "read_uncommitted", deadline, 16)
        except OffsetOutOfRange:
            found = None
    if found is None or found.offset != offset:
        after = f"; the next one is at {found.offset}" if found is not None else ""
        raise NotFound(
            f"No message at offset {offset} of partition {partition} of {topic!r}: compaction removed it{after}."
        )
    return Located(
        message=found,
        info=info,
        prev_offset=before[0].offset if before else None,
        next_offset=following.offset if following is not None else None,
    )


# ---------------------------------------------------------------- scanning


@dataclass
class ScanProgress:
    """Where a scan is; a callback receives it every ``report_every`` messages and at the end."""

    scanned: int = 0
    matched: int = 0
    positions: dict[int, int] = field(default_factory=dict)  # partition -> next offset to read
    total: int = 0  # messages in range
    done: bool = False
    stopped: str | None = None  # why the scan ended early: "limit", "cancelled", "deadline", "matches"
    unreadable: list[int] = field(default_factory=list)  # partitions in the plan that had no leader: not read


@dataclass(frozen=True)
class ScanRange:
    partition: int
    start: int
    stop: int
    readable: bool = True  # False: the partition has no leader now; the scan reports it, reads nothing
    leader: int = -1


def plan_scan(
    conn: ClusterConnection,
    topic: str,
    partitions: list[int] | None = None,
    start_ms: int | None = None,
    stop_ms: int | None = None,
    last: int | None = None,
    start_offset: int | None = None,
    stop_offset: int | None = None,
    isolation: str = "read_uncommitted",
) -> list[ScanRange]:
    """The offset ranges a scan reads, per partition: bounded by time, by offsets, or the last N of each;
    read_committed, below each partition's last stable offset (what such a consumer can read now).
    A partition without a leader gets an unreadable range, so that the scan says it was not searched.

    Raises TopicNotFound, PartitionNotFound, ClusterUnavailable.
    """
    infos = get_topic_partitions(conn, topic)
    known = {p.partition: p for p in infos}
    chosen = partitions if partitions is not None else sorted(known)
    stable = (
        _stable_offsets(conn, topic, [known[p] for p in chosen if p in known])
        if isolation != "read_uncommitted"
        else {}
    )
    ranges = []
    for number in chosen:
        if number not in known:
            raise PartitionNotFound(f"Topic {topic!r} has no partition {number} (it has 0 to {len(known) - 1}).")
        info = known[number]
        if not info.available or info.start_offset is None or info.end_offset is None:
            ranges.append(ScanRange(number, 0, 0, readable=False))
            continue
        start, stop = info.start_offset, min(info.end_offset, stable.get(number, info.end_offset))
        if start_offset is not None:
            start = max(start, start_offset)
        if stop_offset is not None:
            stop = min(stop, stop_offset)
        if last is not None:
            start = max(start, stop - last)
        tp = TopicPartition(topic, number)
        if start_ms is not None:
            found = _offset_for_time(conn, tp, start_ms)
            start = max(start, found) if found is not None else stop
        if stop_ms is not None:
            found = _offset_for_time(conn, tp, stop_ms)
            stop = min(stop, found) if found is not None else stop
        if stop > start:
            ranges.append(ScanRange(number, start, stop, leader=info.leader if info.leader is not None else -1))
    return ranges


def _stable_offsets(conn: ClusterConnection, topic: str, infos: list[PartitionInfo]) -> dict[int, int]:
    """Partition -> last stable offset, in one request per leader (partitions that fail are left out)."""
    from kafka.admin import OffsetSpec

    from broker.topics.read import partition_offsets

    tps = [TopicPartition(topic, i.partition) for i in infos if i.available]
    leaders = {TopicPartition(topic, i.partition): i.leader for i in infos if i.leader is not None}

    def ask(admin: KafkaAdminClient) -> dict[int, int]:
        found = partition_offsets(admin, conn, tps, OffsetSpec.LATEST, leaders, isolation="read_committed")
        return {tp.partition: offset for tp, offset in found.items()}

    return conn.call(ask, "last stable offsets", retry=True) if tps else {}


def scan(
    conn: ClusterConnection,
    topic: str,
    ranges: list[ScanRange],
    predicate: Callable[[Message], bool],
    max_scan: int,
    max_matches: int,
    cancel: threading.Event | None = None,
    on_progress: Callable[[ScanProgress], None] | None = None,
    report_every: int = 2000,
    deadline_s: float = 300.0,
    isolation: str = "read_uncommitted",
) -> Iterator[Message]:
    """Yield the records of ``ranges`` that satisfy ``predicate``, partition by partition, each labelled
    with its transaction's fate; read_committed, only those such a consumer is given.

    Stops at ``max_scan`` messages read, ``max_matches`` found, ``cancel`` set, or the deadline;
    ``on_progress`` hears where it is (its last call has ``done`` set and says why it stopped).
    """
    progress = ScanProgress(
        total=sum(r.stop - r.start for r in ranges if r.readable),
        positions={r.partition: r.start for r in ranges if r.readable},
        unreadable=[r.partition for r in ranges if not r.readable],
    )
    ranges = [r for r in ranges if r.readable]
    deadline = time.monotonic() + deadline_s

    def report(force: bool = False) -> None:
        if on_progress is not None and (force or progress.scanned % report_every == 0):
            on_progress(progress)

    try:
        with _reading(conn, topic, "partitions"):
            for r in ranges:
                log = PartitionLog(conn, topic, r.partition, r.leader)
                for message in log.entries(r.start, r.stop, deadline):
                    if message.control is not None:
                        continue  # a marker is no message: it is counted in no total but the range's
                    if cancel is not None and cancel.is_set():
                        progress.stopped = "cancelled"
                        return
                    progress.scanned += 1
                    progress.positions[r.partition] = message.offset + 1
                    if visible(message, isolation) and predicate(message):
                        progress.matched += 1
                        yield message
                        if progress.matched >= max_matches:
                            progress.stopped = "matches"
                            return
                    if progress.scanned >= max_scan:
                        progress.stopped = "limit"
                        return
                    report()
                if log.timed_out:
                    progress.stopped = "deadline"
                    return
                progress.positions[r.partition] = r.stop
    except OffsetOutOfRange:
        raise ClusterUnavailable(f"Partitions of {topic!r} changed while they were read (records deleted).") from None
    finally:
        progress.done = True
        report(force=True)


@dataclass(frozen=True)
class KeySearch:
    partitioner: str  # what was asked: one of partitioners.CHOICES
    partitions: int  # the topic's
    placements: dict[str, int]  # partitioner name -> the partition it gives the key
    searched: list[int]  # the partitions read
    unreadable: list[int]  # partitions that should have been read but have no leader now
    reason: str
    matches: list[Message]
    scanned: int
    ranges: list[ScanRange]
    stopped: str | None

    @property
    def partition(self) -> int:
        """The first partition searched (with one partitioner, the only one)."""
        return self.searched[0] if self.searched else self.placements["murmur2"]

    @property
    def spans(self) -> list[tuple[int, ScanRange | None]]:
        """Each partition searched with the offsets read, None when it held nothing to read."""
        by_partition = {r.partition: r for r in self.ranges}
        return [(p, by_partition.get(p)) for p in self.searched]

    @property
    def found_in(self) -> dict[int, list[str]]:
        """Partition -> the partitioners that send the key there, for each partition holding a match."""
        held = sorted({m.partition for m in self.matches})
        return {p: [name for name, q in self.placements.items() if q == p] for p in held}


def find_by_key(
    conn: ClusterConnection,
    topic: str,
    key: bytes,
    partitioner: str = "auto",
    max_scan: int = 200_000,
    max_matches: int = 100,
    masked: Callable[[Message], Message] | None = None,
) -> KeySearch:
    """The messages whose key is ``key``. ``partitioner``: ``auto`` reads the partitions the Java
    (murmur2) and librdkafka (CRC32) default partitioners give the key, at most two; ``murmur2`` or
    ``crc32`` that one's; ``all`` every partition. At most the newest ``max_scan`` messages of each are
    read. Raises InvalidInput for an unknown partitioner, TopicNotFound, PartitionUnavailable (one
    partitioner's partition cannot be read now: not searched, so not reported empty),
    ClusterUnavailable. With several partitions, those without a leader are listed in ``unreadable``.

    ``masked`` (broker.messages.masking.Masker.message): the messages as the user is shown them; a message matches
    when its masked key is ``key``, so a hidden key cannot be found by guessing it."""
    if partitioner not in CHOICES:
        raise InvalidInput(f"partitioner must be one of {', '.join(CHOICES)}, not {partitioner!r}.")
    infos = get_topic_partitions(conn, topic)
    count = len(infos)
    placed = placements(key, count)
    if partitioner == "all":
        wanted = sorted(info.partition for info in infos)
    elif partitioner == "auto":
        wanted = sorted(set(placed.values()))
    else:
        wanted = [placed[partitioner]]
        _readable(_pick(infos, topic, wanted[0]), topic)
    ranges = plan_scan(conn, topic, wanted, last=max_scan)
    unreadable = [r.partition for r in ranges if not r.readable]
    seen = ScanProgress()

    def remember(progress: ScanProgress) -> None:
        seen.scanned, seen.stopped = progress.scanned, progress.stopped

    matches = list(
        scan(
            conn,
            topic,
            ranges,
            (lambda m: m.key == key) if masked is None else (lambda m: masked(m).key == key),
            max_scan=max_scan * len(wanted),
            max_matches=max_matches,
            on_progress=remember,
            report_every=max_scan,
        )
    )
    searched = [p for p in wanted if p not in unreadable]
    return KeySearch(
        partitioner=partitioner,
        partitions=count,
        placements=placed,
        searched=searched,
        unreadable=unreadable,
        reason=_key_reason(key, partitioner, placed, count),
        matches=matches if masked is None else [masked(m) for m in matches],
        scanned=seen.scanned,
        ranges=[r for r in ranges if r.readable],
        stopped=seen.stopped,
    )


def _key_reason(key: bytes, partitioner: str, placed: dict[str, int], count: int) -> str:
    """Why these partitions were read, in a sentence or two."""
    try:
        text = key[:40].decode("utf-8")
        shown = repr(text) if text.isprintable() else key[:40].hex(" ")
    except UnicodeDecodeError:
        shown = key[:40].hex(" ")
    shown += "..." if len(key) > 40 else ""
    if partitioner == "all":
        return f"Every partition of the {count} was read: a producer may choose any partition for key {shown}."

    def says(name: str) -> str:
        p = PARTITIONERS[name]
        return f"{p.label} modulo {count} gives partition {placed[name]} ({p.clients})"

    if partitioner != "auto":
        return f"Key {shown}: {says(partitioner)}; producers with this partitioner write the key nowhere else."
    if placed["murmur2"] == placed["crc32"]:
        return (
            f"Key {shown}: both default partitioners give partition {placed['murmur2']}: {says('murmur2')}, "
            f"and {says('crc32')}."
        )
    return f"Key {shown}: {says('murmur2')}; {says('crc32')}."


# ---------------------------------------------------------------- producing


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
    from broker.topics.read import _refused

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
        raise _refused(exc) from None
    finally:
        conn.reads.forget()  # the partition's end offset moved (or may have)
    return Produced(
        topic=meta.topic,
        partition=meta.partition,
        offset=meta.offset,
        timestamp=meta.timestamp if meta.timestamp is not None and meta.timestamp >= 0 else None,
    )


# ---------------------------------------------------------------- tailing


class Tail:
    """New messages of a topic (or one partition) as they arrive, read by a thread of its own.

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

    def discard(self) -> int:
        """Forget every waiting message (while paused); returns how many."""
        with self._lock:
            count, self._buffer, self._held = len(self._buffer), [], 0
        return count

    def _run(self) -> None:
        consumer = None
        try:
            consumer = self.conn._new_consumer(isolation=self.isolation)
            tps = [TopicPartition(self.topic, p) for p in self.partitions]
            consumer.assign(tps)
            consumer.seek_to_end(*tps)
            while not self._stop.is_set():
                batch = consumer.poll(timeout_ms=300, max_records=500)
                for records in batch.values():
                    for record in records:
                        self._add(_record(record))
        except Exception as exc:  # noqa: BLE001 - the page shows why the tail stopped
            self.error = f"The live tail stopped: {type(exc).__name__}: {exc}"
        finally:
            if consumer is not None:
                consumer.close()

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
