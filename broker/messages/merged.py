"""A topic's messages across its partitions, merged by time: the newest first (or the oldest first), a page at
a time, as a developer reads a topic without knowing where a record went.

Each partition is read in offset order from where the page starts (its position in the cursor), the
partitions in parallel, and the rows are merged by timestamp: each step takes the newest (or oldest) of the
partitions' next rows. So the rows taken from one partition are always a run of its offsets, and the cursor
of the next page is one offset per partition, exact even where a producer's timestamps go back in time.

A cursor is the partitions' positions and a direction: ``before`` reads the rows below each position (toward
older ones), ``after`` those at or above it. Its text (``b0:120,1:88``) can be pasted into a URL.

Only records are merged: transaction markers belong to the per-partition view, which shows them in place.
read_uncommitted rows carry their transaction's fate as a partition page labels it; read_committed shows
what such a consumer is given.
"""

from __future__ import annotations

import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import kafka.errors

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError, PartitionNotFound
from broker.messages.log import Message, PartitionLog, hidden_reason, offsets_for_time
from broker.topics.read import PartitionInfo, get_topic_partitions

ORDERS = ("newest", "oldest")
BEFORE, AFTER = "before", "after"
# Partitions read at once, each with its own fetches (the connection's workers send them).
_READERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="merged-read")
_CURSOR = re.compile(r"^([ab])((?:\d{1,9}:\d{1,19})(?:,\d{1,9}:\d{1,19})*)$")


@dataclass(frozen=True)
class Cursor:
    """Where a page starts in each partition: ``before`` (rows below each offset) or ``after`` (at or above)."""

    direction: str
    positions: dict[int, int]

    @property
    def text(self) -> str:
        spots = ",".join(f"{p}:{o}" for p, o in sorted(self.positions.items()))
        return ("b" if self.direction == BEFORE else "a") + spots

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """The cursor of ``text`` (as :attr:`text` writes it); raises InvalidInput."""
        found = _CURSOR.match(text.strip())
        if found is None:
            raise InvalidInput(
                f"cursor {text!r} is not one this console wrote: take it from a page's next_cursor or prev_cursor."
            )
        positions = {int(p): int(o) for p, o in (spot.split(":") for spot in found[2].split(","))}
        return cls(BEFORE if found[1] == "b" else AFTER, positions)


@dataclass
class MergedPage:
    """``messages`` in the order asked for, from the partitions ``shown``; the cursors of the pages either
    side (``older``/``newer``; None where no row lies that way now)."""

    topic: str
    order: str
    limit: int
    isolation: str
    messages: list[Message]
    partitions: list[PartitionInfo]  # every partition of the topic, with its offsets
    shown: list[int]  # the partitions merged (all of them unless a filter named some)
    older: Cursor | None
    newer: Cursor | None
    notes: list[str] = field(default_factory=list)
    complete: bool = True  # False when a partition's read ran out of time: the page may miss rows
    unreadable: dict[int, str] = field(default_factory=dict)  # partition -> why it was left out

    @property
    def next_cursor(self) -> Cursor | None:
        """The page after this one in its order."""
        return self.older if self.order == "newest" else self.newer

    @property
    def prev_cursor(self) -> Cursor | None:
        return self.newer if self.order == "newest" else self.older


def check_order(order: str | None) -> str:
    if order is None or order == "":
        return "newest"
    if order not in ORDERS:
        raise InvalidInput(f"order must be newest or oldest, not {order!r}.")
    return order


def parse_partitions(text: str | None) -> list[int] | None:
    """``partitions=0,2,5`` as numbers (None: every partition); raises InvalidInput."""
    if text is None or not text.strip():
        return None
    try:
        chosen = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise InvalidInput(f"partitions must be partition numbers separated by commas, not {text!r}.") from None
    if not chosen:
        return None
    return chosen


@dataclass
class _Read:
    rows: list[Message]  # in offset order
    exhausted: bool  # nothing more lies that way (the partition's start, or its end as the read found it)
    complete: bool


def _listed(message: Message, isolation: str, lso: int | None) -> bool:
    return message.control is None and hidden_reason(message, isolation, lso) is None


def _rows_below(log: PartitionLog, at: int, start: int, count: int, isolation: str, deadline: float) -> _Read:
    """The last ``count`` rows below offset ``at``, read from ``count`` offsets back and further back while
    markers, hidden records or compaction leave too few."""
    window = max(count, 16)
    while True:
        low = max(start, at - window)
        rows = [m for m in log.entries(low, at, deadline) if _listed(m, isolation, log.last_stable_offset)]
        if log.timed_out:
            return _Read(rows[-count:], False, False)
        if len(rows) >= count or low <= start:
            return _Read(rows[-count:], len(rows) <= count and low <= start, True)
        window *= 4


def _rows_from(log: PartitionLog, at: int, stop: int, count: int, isolation: str, deadline: float) -> _Read:
    """The first ``count`` rows at offset ``at`` or after, below ``stop``."""
    rows: list[Message] = []
    walk = log.entries(at, stop, deadline)
    for message in walk:
        if not _listed(message, isolation, log.last_stable_offset):
            continue
        if len(rows) == count:
            walk.close()
            return _Read(rows, False, True)
        rows.append(message)
    return _Read(rows, not log.timed_out, not log.timed_out)


def _merge(reads: dict[int, _Read], direction: str, limit: int) -> list[Message]:
    """Up to ``limit`` rows, taking each time the newest (``before``) or oldest (``after``) of the partitions'
    next rows. It stops early where a partition's rows ran out but its read was not exhausted: what comes
    next there is not known, and the next page goes on from it."""
    heads = {p: (list(reversed(r.rows)) if direction == BEFORE else list(r.rows)) for p, r in reads.items()}
    index = dict.fromkeys(heads, 0)
    taken: list[Message] = []
    newest = direction == BEFORE

    def key(m: Message) -> tuple[int, int, int]:
        stamp = m.timestamp if m.timestamp is not None else -1
        return (stamp, -m.partition, m.offset) if newest else (-stamp, -m.partition, -m.offset)

    while len(taken) < limit:
        best: Message | None = None
        for p, rows in heads.items():
            i = index[p]
            if i >= len(rows):
                if not reads[p].exhausted:
                    return taken
                continue
            if best is None or key(rows[i]) > key(best):
                best = rows[i]
        if best is None:
            break
        taken.append(best)
        index[best.partition] += 1
    return taken


def get_merged(
    conn: ClusterConnection,
    topic: str,
    order: str = "newest",
    limit: int = 50,
    timestamp_ms: int | None = None,
    partitions: list[int] | None = None,
    cursor: Cursor | None = None,
    isolation: str = "read_uncommitted",
) -> MergedPage:
    """A page of ``topic``'s records merged across ``partitions`` (default: all), newest or oldest first;
    from ``cursor`` when given, else from ``timestamp_ms`` (the newest at or before it, or the oldest at or
    after it), else from the end (newest) or the start (oldest). A partition that cannot be read is left out
    and named in ``unreadable``. Raises TopicNotFound, PartitionNotFound, ClusterUnavailable, InvalidInput."""
    infos = get_topic_partitions(conn, topic)
    by_number = {info.partition: info for info in infos}
    missing = [p for p in partitions or [] if p not in by_number]
    if missing:
        raise PartitionNotFound(
            f"Topic {topic!r} has partitions 0 to {len(infos) - 1}; there is no partition {missing[0]}."
        )
    shown = partitions if partitions is not None else sorted(by_number)
    unreadable: dict[int, str] = {}
    bounds: dict[int, tuple[int, int]] = {}
    for p in shown:
        info = by_number[p]
        if info.leader is None:
            unreadable[p] = "it has no leader right now"
        elif info.start_offset is None or info.end_offset is None:
            unreadable[p] = info.error or "its offsets could not be read"
        else:
            bounds[p] = (info.start_offset, info.end_offset)
    direction = cursor.direction if cursor is not None else (BEFORE if order == "newest" else AFTER)
    positions = _positions(conn, topic, bounds, direction, cursor, timestamp_ms)
    deadline = time.monotonic() + conn.config.timeout * 2
    reads = _read_all(conn, topic, by_number, bounds, positions, direction, limit, isolation, deadline, unreadable)
    if bounds and not reads:
        raise ClusterUnavailable(
            f"No partition of {topic!r} in cluster {conn.config.name!r} could be read: "
            + "; ".join(f"partition {p}: {why}" for p, why in sorted(unreadable.items()))
            + "."
        )
    taken = _merge(reads, direction, limit)
    lows, highs = dict(positions), dict(positions)
    counts = dict.fromkeys(positions, 0)
    for m in taken:
        counts[m.partition] += 1
        if direction == BEFORE:
            lows[m.partition] = min(lows[m.partition], m.offset)
        else:
            highs[m.partition] = max(highs[m.partition], m.offset + 1)

    def more_ahead(p: int) -> bool:
        """Whether rows may lie beyond this page in the direction it was read. A partition whose read failed
        keeps its place in the cursors, so that the next page tries it again."""
        read = reads.get(p)
        if read is None:
            return positions[p] > bounds[p][0] if direction == BEFORE else positions[p] < bounds[p][1]
        return not read.exhausted or counts[p] < len(read.rows)

    if direction == BEFORE:
        older = Cursor(BEFORE, lows) if any(more_ahead(p) for p in positions) else None
        newer = Cursor(AFTER, highs) if any(highs[p] < bounds[p][1] for p in highs) else None
    else:
        older = Cursor(BEFORE, lows) if any(lows[p] > bounds[p][0] for p in lows) else None
        newer = Cursor(AFTER, highs) if any(more_ahead(p) for p in positions) else None
    if (order == "newest") == (direction == AFTER):
        taken.reverse()
    complete = all(r.complete for r in reads.values())
    notes = [f"Partition {p} is left out: {why}." for p, why in sorted(unreadable.items())]
    if not complete:
        notes.append(f"Reading stopped after {conn.config.timeout * 2:.0f} s; the page may miss rows.")
    return MergedPage(
        topic=topic,
        order=order,
        limit=limit,
        isolation=isolation,
        messages=taken,
        partitions=infos,
        shown=shown,
        older=older,
        newer=newer,
        notes=notes,
        complete=complete,
        unreadable=unreadable,
    )


def _positions(
    conn: ClusterConnection,
    topic: str,
    bounds: dict[int, tuple[int, int]],
    direction: str,
    cursor: Cursor | None,
    timestamp_ms: int | None,
) -> dict[int, int]:
    """Where the read starts in each readable partition, inside its offsets."""
    if cursor is not None:
        # A partition the cursor does not name (added since) starts at its beginning: after, all of it is
        # newer than the cursor; before, none of it is older.
        given = {p: cursor.positions.get(p, start) for p, (start, _) in bounds.items()}
    elif timestamp_ms is not None:
        at = timestamp_ms + 1 if direction == BEFORE else timestamp_ms
        found = offsets_for_time(conn, topic, sorted(bounds), at) if bounds else {}
        given = {p: found.get(p, end) for p, (_, end) in bounds.items()}
    else:
        given = {p: (end if direction == BEFORE else start) for p, (start, end) in bounds.items()}
    return {p: min(max(o, bounds[p][0]), bounds[p][1]) for p, o in given.items()}


def _read_all(
    conn: ClusterConnection,
    topic: str,
    by_number: dict[int, PartitionInfo],
    bounds: dict[int, tuple[int, int]],
    positions: dict[int, int],
    direction: str,
    limit: int,
    isolation: str,
    deadline: float,
    unreadable: dict[int, str],
) -> dict[int, _Read]:
    """Each partition's rows from its position, the partitions read in parallel; a partition whose read fails
    goes into ``unreadable``."""

    def read_one(p: int) -> _Read:
        start, end = bounds[p]
        at = positions[p]
        if (direction == BEFORE and at <= start) or (direction == AFTER and at >= end):
            return _Read([], True, True)
        log = PartitionLog(conn, topic, p, by_number[p].leader or 0, first_fetch_bytes=64 * 1024)
        if direction == BEFORE:
            return _rows_below(log, at, start, limit, isolation, deadline)
        return _rows_from(log, at, end, limit, isolation, deadline)

    futures = {p: _READERS.submit(read_one, p) for p in bounds}
    reads: dict[int, _Read] = {}
    for p, future in futures.items():
        try:
            reads[p] = future.result()
        except (KazamiError, kafka.errors.KafkaError) as exc:
            unreadable[p] = str(exc) or type(exc).__name__
    return reads
