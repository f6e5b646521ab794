"""Reading messages: a page of a partition at an offset or a time, and one message.

Every read is bounded: by a message count, by a deadline, and by the offsets the
partition had when the read began (a page never waits for messages not yet written).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import kafka.errors
from kafka import TopicPartition

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, NotFound, PartitionNotFound, PartitionUnavailable
from broker.messages.log import (
    ISOLATIONS,
    Message,
    OffsetOutOfRange,
    PartitionLog,
    hidden_reason,
    offsets_for_time,
    visible,
)
from broker.topics.read import PartitionInfo, get_topic_leaders, get_topic_partitions

MAX_PAGE = 500
DEFAULT_PAGE = 50
# Bytes (keys + values) one page, one search's matches or one tail's buffer may hold: a topic of
# 10 MB messages must not make a page of 500 hold 5 GB.
PAGE_BYTES = 16 * 1024 * 1024
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


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


def _led(info: PartitionInfo, topic: str) -> int:
    """The partition's leader; raises PartitionUnavailable when it has none."""
    if info.leader is None:
        raise PartitionUnavailable(
            f"Partition {info.partition} of {topic!r} has no leader right now; it cannot be read until one is elected."
        )
    return info.leader


def _readable(info: PartitionInfo, topic: str) -> tuple[int, int]:
    _led(info, topic)
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
    return offsets_for_time(conn, tp.topic, [tp.partition], timestamp_ms).get(tp.partition)


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
    if timestamp_ms is None and not from_end and offset is not None:
        page = _page_inside(conn, topic, partition, offset, limit, isolation)
        if page is not None:
            return page
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
    notes += _window_notes(conn, window, limit)
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


def _window_notes(conn: ClusterConnection, window: _Window, limit: int) -> list[str]:
    if not window.complete:
        return [f"Reading stopped after {conn.config.timeout * 2:.0f} s; the page may be short."]
    if window.following is not None and len(window.rows) < limit:
        return [
            f"These {len(window.rows)} messages hold more than {PAGE_BYTES // (1024 * 1024)} MB, so the page "
            "ends here; the next page goes on."
        ]
    return []


# Where a read that learns the partition's end from its first fetch answer is told to stop: never reached.
_UNBOUNDED = 2**63 - 1
# What the first fetch of a page asks for (the next ones ask more): a page of 50 records of up to a kB
# each, and those before it, in most topics.
PAGE_FIRST_FETCH = 64 * 1024


def _page_inside(
    conn: ClusterConnection, topic: str, partition: int, offset: int, limit: int, isolation: str
) -> Page | None:
    """The page from ``offset`` when it lies inside the partition (below its end, or, read_committed, its
    last stable offset), read with one metadata request and the fetches of the read itself: their first
    answer says where the partition starts and ends and its LSO, so the two ListOffsets requests (each with
    a metadata request of its own) get_page otherwise asks first are not needed. None when ``offset`` lies
    outside (get_page then clamps it and says so, as before), and when the answer does not say (a fetch
    answer without the log start offset, or a leader that did not answer lately): get_page reads as before.
    Raises as get_page does."""
    guessed = _guess_first_fetch(conn, topic, partition, offset, limit)
    try:
        infos = get_topic_leaders(conn, topic)
    except BaseException:
        if guessed is not None:
            guessed[1].cancel()
        raise
    _remember_leaders(conn, topic, infos)
    leader = _led(_pick(infos, topic, partition), topic)
    if guessed is not None and (guessed[0].leader != leader or offset < 0 or conn.is_silent(leader)):
        guessed[1].cancel()  # the guess was wrong (a new leader): its answer, if one comes, is dropped
        guessed = None
    if offset < 0 or conn.is_silent(leader):
        return None
    read = _read_from(conn, topic, partition, leader, offset, limit, isolation, guessed)
    if read is None:
        return None
    window, (start, end, stable) = read
    infos = [replace(p, start_offset=start, end_offset=end) if p.partition == partition else p for p in infos]
    return Page(
        topic=topic,
        partition=partition,
        offset=offset,
        limit=limit,
        start_offset=start,
        end_offset=end,
        messages=window.rows,
        notes=_window_notes(conn, window, limit),
        complete=window.complete,
        partitions=infos,
        isolation=isolation,
        last_stable_offset=min(stable, end),
        next_offset=window.following,
        prev_offset=window.before[0].offset if window.before else None,
    )


# A page's rows and the (log start offset, high watermark, LSO) of its first answer; None: read as before.
_Read = tuple[_Window, tuple[int, int, int]] | None


# The leader the last metadata answer named for each (cluster, topic, partition): where a page's first fetch
# is sent while the page's own metadata request is answered (:func:`_guess_first_fetch`). A guess only: the
# page uses that answer when its metadata names the same leader, and shows only what its own requests said.
_LEADER_HINTS: dict[tuple[str, str, int], int] = {}
_MAX_HINTS = 100_000
_Guessed = tuple[PartitionLog, Future[Any]]


def _remember_leaders(conn: ClusterConnection, topic: str, infos: list[PartitionInfo]) -> None:
    if len(_LEADER_HINTS) > _MAX_HINTS:
        _LEADER_HINTS.clear()
    for info in infos:
        key = (conn.config.name, topic, info.partition)
        if info.leader is None:
            _LEADER_HINTS.pop(key, None)
        else:
            _LEADER_HINTS[key] = info.leader


def _guess_first_fetch(conn: ClusterConnection, topic: str, partition: int, offset: int, limit: int) -> _Guessed | None:
    """The page's first fetch sent now to the leader the last metadata named, beside the metadata request
    that checks it: a page then costs one round trip rather than two. None without a hint (the first read
    of the topic in this process), for a leader that did not answer lately, or an offset from the end."""
    leader = _LEADER_HINTS.get((conn.config.name, topic, partition))
    if leader is None or offset < 0 or conn.is_silent(leader):
        return None
    log = PartitionLog(conn, topic, partition, leader, first_fetch_bytes=PAGE_FIRST_FETCH)
    return log, log.prime(max(0, offset - limit))


def _read_from(
    conn: ClusterConnection,
    topic: str,
    partition: int,
    leader: int,
    offset: int,
    limit: int,
    isolation: str,
    guessed: _Guessed | None = None,
) -> _Read:
    """:func:`_read_inside` from ``leader`` (with the first fetch already sent when ``guessed``); None when the
    first fetch was outside the partition."""
    log = guessed[0] if guessed is not None else PartitionLog(conn, topic, partition, leader, PAGE_FIRST_FETCH)
    deadline = time.monotonic() + conn.config.timeout * 2
    with _reading(conn, topic, f"partition {partition}"):
        try:
            return _read_inside(log, offset, limit, isolation, deadline, guessed[1] if guessed is not None else None)
        except OffsetOutOfRange:
            if log.high_watermark is None:
                return None  # the first fetch was outside the partition
            raise ClusterUnavailable(
                f"Partition {partition} of {topic!r} changed while it was read (records were deleted); try again."
            ) from None


def _read_inside(
    log: PartitionLog, offset: int, limit: int, isolation: str, deadline: float, primed: Future[Any] | None = None
) -> tuple[_Window, tuple[int, int, int]] | None:
    """:func:`_read_window` for a read that does not know the partition's offsets yet: from ``limit``
    offsets before ``offset`` on, bounded by the high watermark (read_committed: the LSO) of the first
    answer; with the log start offset, high watermark and LSO that answer gave. None when ``offset`` is not
    inside [log start, that bound), when the answer does not say the log start offset, and when nothing is
    there to read (get_page decides what to show then)."""
    result = _Window()
    low = max(0, offset - limit)
    bounds: tuple[int, int, int] | None = None
    start = stop = 0
    held = 0
    for message in log.entries(low, _UNBOUNDED, deadline, primed):
        if bounds is None:
            bounds = _first_bounds(log)
            if bounds is None:
                return None
            start, high, stable = bounds
            stop = max(start, min(high, stable)) if isolation == "read_committed" else high
            if not start <= offset < stop:
                return None
        if message.offset >= stop:
            break
        if _listed(message, isolation):
            if message.offset < offset:
                result.before.append(message)
            elif len(result.rows) < limit and held < PAGE_BYTES:
                result.rows.append(message)
                held += message.size
            else:
                result.following = message.offset
                break
        if message.offset + 1 >= stop:
            break  # the last offset below the bound: nothing to fetch after it
    if bounds is None:
        return None
    result.complete = not log.timed_out
    if len(result.before) < limit and low > start and result.complete:
        result.before, result.complete = _before(log, offset, start, limit, isolation, deadline, 4 * limit)
    result.before = result.before[-limit:]
    return result, bounds


def _first_bounds(log: PartitionLog) -> tuple[int, int, int] | None:
    """(log start offset, high watermark, LSO) of the read's first answer; None when it did not say."""
    start, high, stable = log.log_start_offset, log.high_watermark, log.last_stable_offset
    if start is None or start < 0 or high is None or stable is None:
        return None
    return start, high, stable


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
    last_stable_offset: int | None = None  # the partition's when it was read: read_committed stops there

    def hidden_reason(self, isolation: str) -> str | None:
        """Why a consumer with ``isolation`` is not given this entry (a marker, an aborted or open record, or
        anything at or above the last stable offset), in a sentence; None when it is."""
        return hidden_reason(self.message, isolation, self.last_stable_offset)


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
        last_stable_offset=log.last_stable_offset,
    )
