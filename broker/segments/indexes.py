"""Readers of a segment's two sparse indexes, ``N.index`` (offset → file position) and ``N.timeindex``
(timestamp → offset), as Kafka writes them next to ``N.log``.

Both store offsets relative to the segment's base offset N (taken from the 20-digit file name unless the
caller gives it). The active segment's indexes are preallocated: created zero-filled at
``segment.index.bytes`` (10 MiB) and trimmed only at roll or clean shutdown. Their real end is found the
way kafka-dump-log finds it: the first entry after the first whose relative offset is 0. Everything from
there to the end of the file is reported as preallocated.

The readers never raise on damaged content: they return what could be read with a list of findings. A
file that claims to be an index but is larger than ``max_bytes`` is read only that far (and said so), so a
1 GiB file is never loaded whole.

Beyond reading, this module offers what the broker and kafka-dump-log do with these files: the startup
sanity check, the index lookups, a check of each entry against the ``.log`` (through small callables, so it
needs nothing from the ``.log`` reader), and the exact lines kafka-dump-log prints for them.
"""

from __future__ import annotations

import os
import struct
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeAlias, TypeVar, overload

from broker.segments.findings import Finding

OFFSET_ENTRY_SIZE = 8
TIME_ENTRY_SIZE = 12
# Kafka's default segment.index.bytes: the size of a preallocated index, and so the largest index a
# broker with default settings writes. Larger files are read only this far unless the caller asks more.
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
NO_TIMESTAMP = -1
# Findings of one kind past this many are summed up in one more finding, so that a file of garbage
# gives a readable list (and a bounded one) rather than a finding per entry.
MAX_FINDINGS_PER_KIND = 50

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class OffsetPosition(NamedTuple):
    """An offset index entry: the absolute offset and the byte position in the ``.log`` file."""

    offset: int
    position: int


class TimestampOffset(NamedTuple):
    """A time index entry: a timestamp (epoch ms) and the absolute offset it points at."""

    timestamp: int
    offset: int


E = TypeVar("E")


class _Entries(Sequence[E]):
    """The real entries of an index, decoded on access from the file's bytes.

    An index may hold 1.3 million entries; a list of tuples that long would take some 150 MB, the raw
    bytes take 10 MiB. Entries are read as Kafka reads them, so the sequence is only as sorted as the
    file is (findings say when it is not).
    """

    def __init__(self, raw: bytes, count: int, entry_size: int, decode: Callable[[bytes, int], E]) -> None:
        self._raw = raw
        self._count = count
        self._size = entry_size
        self._decode = decode

    def __len__(self) -> int:
        return self._count

    def _at(self, i: int) -> E:
        return self._decode(self._raw, i * self._size)

    @overload
    def __getitem__(self, i: int) -> E: ...

    @overload
    def __getitem__(self, i: slice) -> list[E]: ...

    def __getitem__(self, i: int | slice) -> E | list[E]:
        if isinstance(i, slice):
            return [self._at(j) for j in range(*i.indices(self._count))]
        if i < 0:
            i += self._count
        if not 0 <= i < self._count:
            raise IndexError("index entry out of range")
        return self._at(i)

    def __iter__(self) -> Iterator[E]:
        for i in range(self._count):
            yield self._at(i)

    def __repr__(self) -> str:
        return f"<{self._count} index entries>"


@dataclass
class OffsetIndex:
    """An ``N.index`` file as read.

    ``entries`` are the real entries (absolute offset, position), ending where kafka-dump-log stops. Note
    that an index never written to (a fresh active segment: every byte zero, ``blank``) still has one
    entry, ``(base_offset, 0)``, as kafka-dump-log prints it; it is harmless for lookups. ``slots`` is the
    number of whole 8-byte entries in the file, which is what Kafka counts when it opens the file (so what
    its sanity check sees); ``preallocated_bytes`` is the size of the zero-filled tail after the real
    entries; ``first_slot`` and ``last_slot`` are the file's first and last whole slots, real or not.
    """

    path: str
    base_offset: int
    file_size: int
    bytes_read: int
    entries: Sequence[OffsetPosition] = field(repr=False)
    slots: int
    preallocated_bytes: int
    blank: bool
    first_slot: OffsetPosition | None
    last_slot: OffsetPosition | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def entry_size(self) -> int:
        return OFFSET_ENTRY_SIZE

    @property
    def preallocated(self) -> bool:
        """Whether the file holds a zero-filled tail after its entries (the active segment's index)."""
        return self.preallocated_bytes > 0

    def lookup(self, offset: int) -> OffsetPosition:
        """The greatest entry whose offset is at most ``offset``, or ``(base_offset, 0)`` when there is
        none: where in the ``.log`` to start scanning for that offset, as the broker does."""
        i = _largest_lower_bound(len(self.entries), lambda n: self.entries[n].offset, offset, OFFSET_ENTRY_SIZE)
        return self.entries[i] if i >= 0 else OffsetPosition(self.base_offset, 0)

    def slot(self, n: int) -> OffsetPosition:
        """Slot ``n`` of the file as Kafka sees it when it opens the file read-only (as kafka-dump-log
        does): a real entry, or the preallocated tail's ``(base_offset, 0)``."""
        return self.entries[n] if n < len(self.entries) else OffsetPosition(self.base_offset, 0)


@dataclass
class TimeIndex:
    """A ``N.timeindex`` file as read; the fields mean what they mean on ``OffsetIndex`` (12-byte slots)."""

    path: str
    base_offset: int
    file_size: int
    bytes_read: int
    entries: Sequence[TimestampOffset] = field(repr=False)
    slots: int
    preallocated_bytes: int
    blank: bool
    first_slot: TimestampOffset | None
    last_slot: TimestampOffset | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def entry_size(self) -> int:
        return TIME_ENTRY_SIZE

    @property
    def preallocated(self) -> bool:
        """Whether the file holds a zero-filled tail after its entries (the active segment's index)."""
        return self.preallocated_bytes > 0

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The greatest entry whose timestamp is at most ``timestamp``, or ``(-1, base_offset)`` when there
        is none (Kafka's answer): the offset from which to look for the first record at that time."""
        i = _largest_lower_bound(len(self.entries), lambda n: self.entries[n].timestamp, timestamp, TIME_ENTRY_SIZE)
        return self.entries[i] if i >= 0 else TimestampOffset(NO_TIMESTAMP, self.base_offset)


def _largest_lower_bound(count: int, key_at: Callable[[int], int], target: int, entry_size: int) -> int:
    """The slot of the greatest key at most ``target``, or -1: Kafka's own search (``AbstractIndex``),
    which first tries the last 8 KiB of entries (the "warm" section) and then bisects. On a sorted index
    any search gives the same answer; following Kafka's steps gives Kafka's answer on a damaged one too."""
    if count == 0:
        return -1

    def bisect(lo: int, hi: int) -> int:
        while lo < hi:
            mid = (lo + hi + 1) // 2
            key = key_at(mid)
            if key > target:
                hi = mid - 1
            elif key < target:
                lo = mid
            else:
                return mid
        return lo

    first_hot = max(0, count - 1 - 8192 // entry_size)
    if key_at(first_hot) < target:
        return bisect(first_hot, count - 1)
    if key_at(0) > target:
        return -1
    return bisect(0, first_hot)


class _Collector:
    """Findings of one file, at most ``MAX_FINDINGS_PER_KIND`` of each kind plus a count of the rest."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.findings: list[Finding] = []
        self._counts: dict[str, int] = {}

    def add(self, position: int | None, kind: str, message: str, expected: object = None, found: object = None) -> None:
        n = self._counts.get(kind, 0) + 1
        self._counts[kind] = n
        if n <= MAX_FINDINGS_PER_KIND:
            self.findings.append(
                Finding(
                    self.file,
                    position,
                    kind,
                    message,
                    None if expected is None else str(expected),
                    None if found is None else str(found),
                )
            )

    def done(self) -> list[Finding]:
        for kind, n in self._counts.items():
            if n > MAX_FINDINGS_PER_KIND:
                more = n - MAX_FINDINGS_PER_KIND
                self.findings.append(Finding(self.file, None, kind, f"{more} more findings of this kind not listed."))
        return self.findings


def base_offset_from_name(path: str | os.PathLike[str]) -> int | None:
    """The base offset in a segment file's name (the digits before the first dot, as Kafka reads it),
    or None when the name does not start with one."""
    name = os.path.basename(os.fspath(path))
    digits = name.split(".", 1)[0]
    if not digits.isascii() or not digits.isdigit():
        return None
    value = int(digits)
    return value if value < 2**63 else None


def _open_index(
    path: str | os.PathLike[str], base_offset: int | None, entry_size: int, max_bytes: int
) -> tuple[str, int, int, bytes, bytes | None, _Collector]:
    """Read up to ``max_bytes`` of an index, and its last whole slot even when that lies further.

    Returns the path, base offset, file size, the bytes read, the last slot's bytes and the findings so
    far (a bad name, an oversized file, a partial trailing entry).
    """
    p = os.fspath(path)
    out = _Collector(p)
    if base_offset is None:
        base_offset = base_offset_from_name(p)
        if base_offset is None:
            out.add(
                None,
                "bad_file_name",
                "The file name does not start with a base offset (20 digits); offsets are read relative to 0.",
            )
            base_offset = 0
    with open(p, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        limit = max(0, min(size, max_bytes))
        data = f.read(limit)
        slots = size // entry_size
        last: bytes | None = None
        if slots:
            last_at = (slots - 1) * entry_size
            if last_at + entry_size <= len(data):
                last = data[last_at : last_at + entry_size]
            else:
                f.seek(last_at)
                last = f.read(entry_size)
    if size > max_bytes:
        out.add(
            max_bytes,
            "oversized",
            f"The file is {size} bytes, more than the {max_bytes} an index of this kind should hold "
            f"(segment.index.bytes); only the first {max_bytes} bytes were read.",
            expected=f"at most {max_bytes} bytes",
            found=f"{size} bytes",
        )
    if size % entry_size:
        out.add(
            slots * entry_size,
            "partial_entry",
            f"The file is {size} bytes, not a multiple of the {entry_size}-byte entry: "
            f"the last {size % entry_size} bytes are part of an entry.",
            expected=f"a multiple of {entry_size}",
            found=str(size),
        )
    return p, base_offset, size, data, last, out


def _tail(data: bytes, real: int, stopped: bool, slots: int, entry_size: int, out: _Collector) -> tuple[int, bool]:
    """Size the zero-filled tail after ``real`` entries and report data found in it; also say whether the
    file is blank (every byte read is zero)."""
    if not stopped:
        return 0, bool(data) and not data.strip(b"\x00")
    start = real * entry_size
    tail = data[start : (len(data) // entry_size) * entry_size]
    rest = tail.lstrip(b"\x00")
    if rest:
        at = start + (len(tail) - len(rest)) // entry_size * entry_size
        out.add(
            at,
            "data_after_end",
            f"Entry {real} has relative offset 0, which marks the end of the entries (the zero-filled tail "
            f"of a preallocated index), yet a non-zero entry follows at byte {at}: entries were lost or "
            "overwritten, and kafka-dump-log and the broker ignore everything from that entry on.",
        )
    blank = real == 1 and not data[:entry_size].strip(b"\x00") and not rest
    return (slots - real) * entry_size, blank


def read_offset_index(
    path: str | os.PathLike[str], base_offset: int | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> OffsetIndex:
    """Read an ``N.index`` file: its real entries, the size of its preallocated tail, and findings for
    a length not a multiple of 8, offsets or positions that do not increase, negative relative offsets
    or positions, non-zero data after the end, a file larger than ``max_bytes`` (read only that far).

    Raises FileNotFoundError (or another OSError) only when the file cannot be opened.
    """
    p, base, size, data, last, out = _open_index(path, base_offset, OFFSET_ENTRY_SIZE, max_bytes)
    count = len(data) // OFFSET_ENTRY_SIZE
    real = count
    stopped = False
    prev: tuple[int, int] | None = None
    for i, (rel, pos) in enumerate(_OFFSET_ENTRY.iter_unpack(data[: count * OFFSET_ENTRY_SIZE])):
        if i > 0 and rel == 0:
            real, stopped = i, True
            break
        at = i * OFFSET_ENTRY_SIZE
        if rel < 0:
            out.add(
                at,
                "negative_relative_offset",
                f"Entry {i} has relative offset {rel} (stored as {rel & 0xFFFFFFFF}, past int32's maximum): "
                f"offset {base + rel} lies below the segment's base offset {base}.",
                expected=f">= {base}",
                found=base + rel,
            )
        if pos < 0:
            out.add(at + 4, "negative_position", f"Entry {i} has a negative file position {pos}.", ">= 0", pos)
        if prev is not None:
            if rel <= prev[0]:
                out.add(
                    at,
                    "offset_not_increasing",
                    f"Entry {i} has offset {base + rel}, not greater than the previous entry's {base + prev[0]}.",
                    expected=f"> {base + prev[0]}",
                    found=base + rel,
                )
            if pos <= prev[1]:
                out.add(
                    at + 4,
                    "position_not_increasing",
                    f"Entry {i} points at position {pos}, not after the previous entry's {prev[1]}.",
                    expected=f"> {prev[1]}",
                    found=pos,
                )
        prev = (rel, pos)
    slots = size // OFFSET_ENTRY_SIZE
    prealloc, blank = _tail(data, real, stopped, slots, OFFSET_ENTRY_SIZE, out)

    def decode(raw: bytes, at: int) -> OffsetPosition:
        rel, pos = _OFFSET_ENTRY.unpack_from(raw, at)
        return OffsetPosition(base + rel, pos)

    def slot(raw: bytes | None) -> OffsetPosition | None:
        return decode(raw, 0) if raw is not None and len(raw) >= OFFSET_ENTRY_SIZE else None

    return OffsetIndex(
        path=p,
        base_offset=base,
        file_size=size,
        bytes_read=len(data),
        entries=_Entries(data[: real * OFFSET_ENTRY_SIZE], real, OFFSET_ENTRY_SIZE, decode),
        slots=slots,
        preallocated_bytes=prealloc,
        blank=blank,
        first_slot=slot(data[:OFFSET_ENTRY_SIZE]),
        last_slot=slot(last),
        findings=out.done(),
    )


def read_time_index(
    path: str | os.PathLike[str], base_offset: int | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES
) -> TimeIndex:
    """Read an ``N.timeindex`` file: its real entries, the size of its preallocated tail, and findings for
    a length not a multiple of 12, timestamps that do not increase (Kafka appends an entry only for a
    greater timestamp), offsets going backwards, negative relative offsets or timestamps, non-zero data
    after the end, a file larger than ``max_bytes`` (read only that far).

    Raises FileNotFoundError (or another OSError) only when the file cannot be opened.
    """
    p, base, size, data, last, out = _open_index(path, base_offset, TIME_ENTRY_SIZE, max_bytes)
    count = len(data) // TIME_ENTRY_SIZE
    real = count
    stopped = False
    prev: tuple[int, int] | None = None
    for i, (ts, rel) in enumerate(_TIME_ENTRY.iter_unpack(data[: count * TIME_ENTRY_SIZE])):
        if i > 0 and rel == 0:
            real, stopped = i, True
            break
        at = i * TIME_ENTRY_SIZE
        if rel < 0:
            out.add(
                at + 8,
                "negative_relative_offset",
                f"Entry {i} has relative offset {rel} (stored as {rel & 0xFFFFFFFF}, past int32's maximum): "
                f"offset {base + rel} lies below the segment's base offset {base}.",
                expected=f">= {base}",
                found=base + rel,
            )
        if ts < 0:
            out.add(at, "negative_timestamp", f"Entry {i} has a negative timestamp {ts}.", ">= 0", ts)
        if prev is not None:
            if ts <= prev[0]:
                out.add(
                    at,
                    "timestamp_not_increasing",
                    f"Entry {i} has timestamp {ts}, not greater than the previous entry's {prev[0]}.",
                    expected=f"> {prev[0]}",
                    found=ts,
                )
            if rel < prev[1]:
                out.add(
                    at + 8,
                    "offset_backwards",
                    f"Entry {i} has offset {base + rel}, below the previous entry's {base + prev[1]}.",
                    expected=f">= {base + prev[1]}",
                    found=base + rel,
                )
        prev = (ts, rel)
    slots = size // TIME_ENTRY_SIZE
    prealloc, blank = _tail(data, real, stopped, slots, TIME_ENTRY_SIZE, out)

    def decode(raw: bytes, at: int) -> TimestampOffset:
        ts, rel = _TIME_ENTRY.unpack_from(raw, at)
        return TimestampOffset(ts, base + rel)

    def slot(raw: bytes | None) -> TimestampOffset | None:
        return decode(raw, 0) if raw is not None and len(raw) >= TIME_ENTRY_SIZE else None

    return TimeIndex(
        path=p,
        base_offset=base,
        file_size=size,
        bytes_read=len(data),
        entries=_Entries(data[: real * TIME_ENTRY_SIZE], real, TIME_ENTRY_SIZE, decode),
        slots=slots,
        preallocated_bytes=prealloc,
        blank=blank,
        first_slot=slot(data[:TIME_ENTRY_SIZE]),
        last_slot=slot(last),
        findings=out.done(),
    )


def sanity_check(index: OffsetIndex | TimeIndex, *, whole_file: bool = True) -> list[Finding]:
    """The checks the broker runs on a segment's index at startup (``sanityCheck``); any finding means
    the broker would call the index corrupt and rebuild it. Empty when the index passes.

    Offset index: the length is a multiple of 8 and, unless empty, the last offset is at least the base
    offset. Time index: the length is a multiple of 12 and, unless empty, the last offset is at least the
    base offset and the last timestamp at least the first. Messages are Kafka's own.

    With ``whole_file`` (the default, and what Kafka and kafka-dump-log do) "last" is the file's last slot,
    so a preallocated time index fails (its last slot is zeros: timestamp 0). With ``whole_file=False``
    the last real entry is used instead: whether the index would pass once trimmed.
    """
    where = os.path.abspath(index.path)
    out: list[Finding] = []
    if whole_file:
        has_entries = index.slots > 0
        last = index.last_slot
    else:
        has_entries = len(index.entries) > 0
        last = index.entries[-1] if has_entries else None
    if isinstance(index, OffsetIndex):
        if has_entries and isinstance(last, OffsetPosition) and last.offset < index.base_offset:
            out.append(
                Finding(
                    index.path,
                    None,
                    "sanity_last_offset",
                    f"Corrupt index found, index file {where} has non-zero size but the last offset is "
                    f"{last.offset} which is less than the base offset {index.base_offset}",
                    expected=f">= {index.base_offset}",
                    found=str(last.offset),
                )
            )
    else:
        first = index.first_slot
        if has_entries and isinstance(last, TimestampOffset) and first is not None:
            if last.timestamp < first.timestamp:
                out.append(
                    Finding(
                        index.path,
                        None,
                        "sanity_last_timestamp",
                        f"Corrupt time index found, time index file ({where}) has non-zero size but the last "
                        f"timestamp is {last.timestamp} which is less than the first timestamp {first.timestamp}",
                        expected=f">= {first.timestamp}",
                        found=str(last.timestamp),
                    )
                )
            if last.offset < index.base_offset:
                out.append(
                    Finding(
                        index.path,
                        None,
                        "sanity_last_offset",
                        f"Corrupt time index found, time index file ({where}) has non-zero size but the last "
                        f"offset is {last.offset} which is less than the first offset {index.base_offset}",
                        expected=f">= {index.base_offset}",
                        found=str(last.offset),
                    )
                )
    size = index.file_size if whole_file else len(index.entries) * index.entry_size
    if size % index.entry_size:
        label = "Index file" if isinstance(index, OffsetIndex) else "Time index file"
        out.append(
            Finding(
                index.path,
                None,
                "sanity_length",
                f"{label} {where} is corrupt, found {size} bytes which is neither positive nor a multiple of "
                f"{index.entry_size}",
                expected=f"a multiple of {index.entry_size}",
                found=str(size),
            )
        )
    return out


# --- Checking an index against its .log -------------------------------------------------------------

BatchAt: TypeAlias = Callable[[int], tuple[int, int] | None]
"""``batch_at(position)``: (first offset, last offset) of the batch starting exactly at that byte of the
``.log``, or None when no batch starts there."""

BatchHolding: TypeAlias = Callable[[int], tuple[int, int] | None]
"""``batch_holding(offset)``: (last offset, max timestamp) of the first batch of the ``.log`` whose last
offset is at least ``offset``, or None when there is none. The max timestamp is the largest record
timestamp in the batch (a v2 batch's maxTimestamp field)."""


class BatchSummary(NamedTuple):
    """What the index checks need of one batch of a ``.log``: where it starts, its offsets, its max
    timestamp. A ``.log`` reader's batches map onto this in one line."""

    position: int
    first_offset: int
    last_offset: int
    max_timestamp: int


def log_lookups(
    batches: Iterable[BatchSummary | tuple[int, int, int, int]], offset_index: OffsetIndex | None = None
) -> tuple[BatchAt, BatchHolding]:
    """The two callables ``check_offset_index`` and ``check_time_index`` take, built from a ``.log``'s
    batches in file order, e.g. ``log_lookups((b.position, b.base_offset, b.last_offset, b.max_timestamp)
    for b in batches)``. Memory grows with the number of batches (a few dozen bytes each).

    With ``offset_index``, ``batch_holding`` searches as kafka-dump-log does: from the position the offset
    index gives for the offset, so a damaged offset index shows in the time index check too. (The tool
    searches every slot of the file: on a preallocated index it lands in the zero-filled tail and starts at
    position 0.)
    """
    by_position: dict[int, tuple[int, int]] = {}
    positions: list[int] = []
    lasts: list[int] = []
    max_ts: list[int] = []
    for position, first, last, ts in batches:
        by_position.setdefault(position, (first, last))
        positions.append(position)
        lasts.append(last)
        max_ts.append(ts)

    def batch_holding(offset: int) -> tuple[int, int] | None:
        start = 0
        if offset_index is not None:
            # kafka-dump-log opens the index read-only, so it searches every slot of the file.
            slots = max(offset_index.slots, len(offset_index.entries))
            n = _largest_lower_bound(slots, lambda k: offset_index.slot(k).offset, offset, OFFSET_ENTRY_SIZE)
            start = bisect_left(positions, offset_index.slot(n).position if n >= 0 else 0)
        i = bisect_left(lasts, offset, lo=start)
        return (lasts[i], max_ts[i]) if i < len(lasts) else None

    return by_position.get, batch_holding


@dataclass(frozen=True)
class IndexCheck:
    """One offset index entry checked against the ``.log`` as kafka-dump-log checks it: ``ok`` when the
    batch starting at ``position`` ends at ``offset``. ``log_offset`` is that batch's last offset (the
    "log offset" kafka-dump-log prints), None when no batch starts there.

    A mismatch with ``log_first_offset <= offset`` and ``log_offset < offset`` can be a false alarm on a
    follower: the broker indexes an append (which on a follower may hold several batches) by its last
    offset and the position of its first batch.
    """

    slot: int
    offset: int
    position: int
    log_first_offset: int | None
    log_offset: int | None
    ok: bool


def check_offset_index(index: OffsetIndex, batch_at: BatchAt) -> list[IndexCheck]:
    """Check each real entry of an offset index against the batch at its position (see ``IndexCheck``)."""
    checks: list[IndexCheck] = []
    for i, (offset, position) in enumerate(index.entries):
        found = batch_at(position)
        first, last = found if found is not None else (None, None)
        checks.append(IndexCheck(i, offset, position, first, last, last == offset))
    return checks


@dataclass(frozen=True)
class TimeIndexCheck:
    """One time index entry checked against the ``.log`` as kafka-dump-log checks it.

    ``log_offset`` is the last offset of the first batch ending at or after the entry's offset (None when
    there is none); the entry's offset is ``offset_found`` when that batch ends exactly there. Only then
    are the other two checked, as kafka-dump-log does: ``timestamp_ok`` when the batch's max timestamp
    (``log_timestamp``) equals the entry's, ``in_order`` when the entry's timestamp is greater than the
    previous entry's (``previous_timestamp``, -1 before the first).
    """

    slot: int
    timestamp: int
    offset: int
    log_offset: int | None
    log_timestamp: int | None
    previous_timestamp: int
    offset_found: bool
    timestamp_ok: bool
    in_order: bool

    @property
    def ok(self) -> bool:
        return self.offset_found and self.timestamp_ok and self.in_order


def check_time_index(index: TimeIndex, batch_holding: BatchHolding) -> list[TimeIndexCheck]:
    """Check each real entry of a time index against the ``.log`` (see ``TimeIndexCheck``)."""
    checks: list[TimeIndexCheck] = []
    prev = NO_TIMESTAMP
    for i, (timestamp, offset) in enumerate(index.entries):
        found = batch_holding(offset)
        if found is None or found[0] != offset:
            log_offset = None if found is None else found[0]
            checks.append(TimeIndexCheck(i, timestamp, offset, log_offset, None, prev, False, True, True))
        else:
            log_ts = found[1]
            checks.append(
                TimeIndexCheck(i, timestamp, offset, offset, log_ts, prev, True, log_ts == timestamp, prev < timestamp)
            )
        prev = timestamp
    return checks


# --- kafka-dump-log's lines ---------------------------------------------------------------------------
# Each function gives the lines the tool prints for one file after its "Dumping <file>" line. ``name`` is
# the file as given on the tool's command line (default: the path the index was read from); the stderr
# reports name the absolute path, as the tool does.


def dump_offset_index(
    index: OffsetIndex, *, name: str | None = None, verify_only: bool = False, index_sanity_check: bool = False
) -> list[str]:
    """The stdout lines of ``kafka-dump-log --files N.index`` (with ``--verify-index-only`` or
    ``--index-sanity-check`` when asked): ``offset: O position: P`` per entry, ``<file> is empty.`` or
    ``<file> passed sanity check.``. A failed sanity check prints nothing (the tool dies with Kafka's
    message, which ``sanity_check`` gives)."""
    shown = index.path if name is None else name
    if index.slots == 0:
        return [f"{shown} is empty."]
    if index_sanity_check:
        return [] if sanity_check(index) else [f"{shown} passed sanity check."]
    if verify_only:
        return []
    return [f"offset: {e.offset} position: {e.position}" for e in index.entries]


def offset_index_mismatch_lines(checks: Sequence[IndexCheck], path: str) -> list[str]:
    """The stderr report kafka-dump-log prints for an offset index's mismatches (most recent entry first,
    as the tool lists them); empty when every entry is ok. An entry with no batch at its position (where
    the tool itself fails) is reported with log offset -1."""
    bad = [c for c in checks if not c.ok]
    if not bad:
        return []
    lines = [f"Mismatches in :{os.path.abspath(path)}"]
    lines += [
        f"  Index offset: {c.offset}, log offset: {-1 if c.log_offset is None else c.log_offset}" for c in bad[::-1]
    ]
    return lines


def dump_time_index(
    index: TimeIndex, *, name: str | None = None, verify_only: bool = False, index_sanity_check: bool = False
) -> list[str]:
    """The stdout lines of ``kafka-dump-log --files N.timeindex``: ``timestamp: T offset: O`` per entry,
    or ``<file> passed sanity check.`` with ``index_sanity_check`` (nothing when it fails). Unlike the
    offset index, an empty time index prints nothing."""
    shown = index.path if name is None else name
    if index_sanity_check:
        return [] if sanity_check(index) else [f"{shown} passed sanity check."]
    if verify_only:
        return []
    return [f"timestamp: {e.timestamp} offset: {e.offset}" for e in index.entries]


def time_index_error_lines(checks: Sequence[TimeIndexCheck], path: str) -> list[str]:
    """The stderr report kafka-dump-log prints for a time index: timestamp mismatches, out-of-order
    timestamps, then indexed offsets not found in the log (found log offset -1 when no batch ends at or
    after it). Empty when every entry is ok. With several files the tool prints each kind for every file
    before the next kind."""
    where = os.path.abspath(path)
    lines: list[str] = []
    mismatched = [c for c in checks if c.offset_found and not c.timestamp_ok]
    if mismatched:
        lines.append(f"Found timestamp mismatch in :{where}")
        lines += [f"  Index timestamp: {c.timestamp}, log timestamp: {c.log_timestamp}" for c in mismatched]
    disordered = [c for c in checks if c.offset_found and not c.in_order]
    if disordered:
        lines.append(f"Found out of order timestamp in :{where}")
        lines += [
            f"  Index timestamp: {c.timestamp}, Previously indexed timestamp: {c.previous_timestamp}"
            for c in disordered
        ]
    missing = [c for c in checks if not c.offset_found]
    if missing:
        lines.append("The following indexed offsets are not found in the log.")
        lines += [
            f"Indexed offset: {c.offset}, found log offset: {-1 if c.log_offset is None else c.log_offset}"
            for c in missing
        ]
    return lines
