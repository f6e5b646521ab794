"""Reading a ``.log`` segment file entry by entry, as Kafka's ``FileLogInputStream`` does, without ever
holding more of it than a chunk (4 MiB) and the entry being read.

``LogReader`` streams the batches of a file (or of a byte range of it, for paging) and, once done,
says where and why it stopped, which is what ``kafka-dump-log``'s "Found N invalid bytes at the end"
line reports. ``iter_batches`` is the same as a plain iterator, ``scan_log`` sums a file up in one pass,
and ``read_batch_at``, ``find_batch_at_or_after``, ``find_batch_by_offset`` and ``find_next_valid_batch``
serve pages that jump to a file position or an offset.

The rules for where reading stops (from the project's reference on Kafka's log formats, §2): fewer
than 17 bytes left; a size field under 14 (damage, unless the entry header is all zeros, a preallocated
tail, which is the end); an entry running past the end of the file (a partial trailing entry). An
entry of an unknown magic is reported and stepped over by its size. Everything found is appended to
the caller's list of findings; nothing is raised for a damaged file. Files are opened for reading only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import crc32c

from broker.segments.findings import Finding
from broker.segments.legacy import read_legacy
from broker.segments.model import LEGACY_OVERHEAD_V0, LOG_OVERHEAD, Batch
from broker.segments.records import (
    ENTRY_PREFIX,
    HEADER_SIZE_UP_TO_MAGIC,
    V2_HEADER,
    V2_HEADER_SIZE,
    V2_MIN_BATCH_LENGTH,
    bad_magic,
    read_v2,
)

DEFAULT_CHUNK_SIZE = 4 * 1024 * 1024
# An entry claiming more than this is taken for damage: Kafka's message.max.bytes is 1 MiB by default
# and rarely above some tens of MiB, and honouring any size would let one bad field allocate gigabytes.
DEFAULT_MAX_BATCH_BYTES = 128 * 1024 * 1024
_ZERO_HEADER = bytes(HEADER_SIZE_UP_TO_MAGIC)
_SEGMENT_NAME = re.compile(r"^(\d{20})\.log(?:\.|$)")
_SMALL_CHUNK = 64 * 1024

# Why a LogReader stopped (``STOP_READING`` while it has not).
STOP_READING = "reading"
STOP_END = "end"  # read to the end of the file (or range) exactly
STOP_LIMIT = "limit"  # stopped at the end of a range or after max_entries; not damage
STOP_PREALLOCATED = "preallocated"  # an all-zero entry header: the zero-filled tail of a preallocated file
STOP_TRUNCATED = "truncated"  # the last entry is cut off
STOP_SIZE_PAST_END = "size_past_end"  # a size field points far past the end of the file
STOP_BAD_SIZE = "bad_size"  # a size field under the minimum of 14
STOP_TOO_LARGE = "too_large"  # a size field over max_batch_bytes
STOP_UNREADABLE = "unreadable"  # the file could not be opened or read


def segment_base_offset(path: str | Path) -> int | None:
    """The base offset in a segment's file name (``00000000000000001234.log``, also with ``.deleted``,
    ``.cleaned`` or ``.swap`` after it), or ``None`` for any other name."""
    match = _SEGMENT_NAME.match(os.path.basename(os.fspath(path)))
    return int(match.group(1)) if match else None


class LogReader:
    """The entries of a ``.log`` file from byte ``start`` to ``end`` (the file's end when ``None``), as
    ``Batch`` objects, one at a time, reading the file in chunks of ``chunk_size``.

    Iterate it once. While and after iterating, ``position`` is where the next entry starts (where
    reading stopped, once done), ``batches`` how many were yielded, ``stop_reason`` one of the
    ``STOP_*`` names, ``file_size`` the size of the file when it was opened and ``limit`` the end of
    the range read. ``invalid_bytes_at_end`` is what kafka-dump-log reports as "Found N invalid bytes at
    the end of <name>". Damage goes to ``findings`` (the list given, or a new one): bad CRCs (the batch is
    still yielded, ``crc_valid`` False), unknown magics (stepped over), offsets going backwards, batches
    below the segment's base offset, and whatever stopped the reading early.

    ``previous_last_offset`` is for reading on from ``start`` where another reader left off: the last
    offset of the batch before ``start``, which the first batch's offsets are checked against as they
    would be in one pass over the file (and not against the segment's base offset).
    """

    def __init__(
        self,
        path: str | Path,
        start: int = 0,
        end: int | None = None,
        findings: list[Finding] | None = None,
        *,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        max_entries: int | None = None,
        previous_last_offset: int | None = None,
    ) -> None:
        if start < 0:
            raise ValueError(f"start must be a file position (>= 0), not {start}")
        self.path = os.fspath(path)
        self.file = str(path)
        self.start = start
        self.end = end
        self.findings: list[Finding] = [] if findings is None else findings
        self.max_batch_bytes = max_batch_bytes
        self.chunk_size = max(chunk_size, HEADER_SIZE_UP_TO_MAGIC)
        self.max_entries = max_entries
        self.position = start
        self.batches = 0
        self.file_size: int | None = None
        self.limit: int | None = None
        self.stop_reason: str | None = None
        self.segment_base = segment_base_offset(path)
        self.previous_last_offset = previous_last_offset

    @property
    def valid_bytes(self) -> int:
        """Bytes from ``start`` read as whole entries (damaged ones included: their framing held)."""
        return self.position - self.start

    @property
    def invalid_bytes_at_end(self) -> int:
        """Bytes after the last whole entry up to the end of the range, once reading has stopped."""
        return 0 if self.limit is None else max(0, self.limit - self.position)

    def __iter__(self) -> Iterator[Batch]:
        return self._read()

    def _finding(self, position: int | None, kind: str, message: str, **values: str) -> None:
        self.findings.append(Finding(self.file, position, kind, message, **values))

    def _read(self) -> Iterator[Batch]:
        if self.stop_reason is not None:
            raise RuntimeError("a LogReader can be iterated only once")
        self.stop_reason = STOP_READING
        try:
            with open(self.path, "rb") as f:
                yield from self._entries(f)
        except OSError as e:
            if self.file_size is None:
                self._finding(None, "unreadable", f"cannot open {self.file}: {e.strerror or e}")
            else:
                self._finding(self.position, "unreadable", f"reading failed at byte {self.position}: {e.strerror or e}")
            self.stop_reason = STOP_UNREADABLE

    def _entries(self, f: BinaryIO) -> Iterator[Batch]:
        file = self.file
        findings = self.findings
        size = os.fstat(f.fileno()).st_size
        self.file_size = size
        limit = size if self.end is None else max(self.start, min(self.end, size))
        self.limit = limit
        to_eof = limit == size
        chunk = self.chunk_size
        max_batch = self.max_batch_bytes
        max_entries = self.max_entries
        base = self.segment_base
        prefix = ENTRY_PREFIX.unpack_from
        pos = self.start
        buf = b""
        view = memoryview(buf)
        buf_start = pos
        prev_last = self.previous_last_offset
        entries = 0
        while True:
            left = limit - pos
            if left < HEADER_SIZE_UP_TO_MAGIC:
                self._tail(f, pos, left, to_eof)
                return
            if max_entries is not None and entries >= max_entries:
                self.stop_reason = STOP_LIMIT
                return
            off = pos - buf_start
            if off + HEADER_SIZE_UP_TO_MAGIC > len(buf):
                f.seek(pos)
                buf = f.read(min(chunk, left))
                view = memoryview(buf)
                buf_start, off = pos, 0
                if len(buf) < HEADER_SIZE_UP_TO_MAGIC:
                    self._shrunk(pos)
                    return
            base_offset, length, _, magic = prefix(buf, off)
            if length < LEGACY_OVERHEAD_V0:
                if buf[off : off + HEADER_SIZE_UP_TO_MAGIC] == _ZERO_HEADER:
                    self._zero_tail(buf, off, pos)
                else:
                    self._finding(
                        pos + 8,
                        "bad_size",
                        f"entry at byte {pos} has size {length}, below the 14 bytes of the smallest message;"
                        " nothing after it can be framed",
                        expected=">= 14",
                        found=str(length),
                    )
                    self.stop_reason = STOP_BAD_SIZE
                return
            total = LOG_OVERHEAD + length
            if total > left:
                if not to_eof:
                    self.stop_reason = STOP_LIMIT
                    return
                plausible = magic in (0, 1, 2) and total <= max_batch
                self._finding(
                    pos + 8,
                    "truncated" if plausible else "size_past_end",
                    f"entry at byte {pos} (offset {base_offset}) says it is {length} bytes long, but only"
                    f" {left - LOG_OVERHEAD} bytes follow to the end of the file"
                    + (" (a partial trailing entry)" if plausible else " (a damaged size field)"),
                    expected=f"<= {left - LOG_OVERHEAD}",
                    found=str(length),
                )
                self.stop_reason = STOP_TRUNCATED if plausible else STOP_SIZE_PAST_END
                return
            if total > max_batch:
                self._finding(
                    pos + 8,
                    "too_large",
                    f"entry at byte {pos} (offset {base_offset}) says it is {length} bytes long, more than the"
                    f" {max_batch} this reader accepts; taken for a damaged size field",
                    expected=f"<= {max_batch - LOG_OVERHEAD}",
                    found=str(length),
                )
                self.stop_reason = STOP_TOO_LARGE
                return
            if off + total > len(buf):
                f.seek(pos)
                buf = f.read(min(max(chunk, total), left))
                view = memoryview(buf)
                buf_start, off = pos, 0
                if len(buf) < total:
                    self._shrunk(pos)
                    return
            entries += 1
            if magic == 2:
                batch = read_v2(view, off, total, pos, file, findings)
            elif magic == 0 or magic == 1:
                batch = read_legacy(view, off, total, pos, file, findings)
            else:
                findings.append(bad_magic(file, pos, magic))
                batch = None
            pos += total
            self.position = pos
            if batch is None:
                continue
            if prev_last is not None and batch.base_offset <= prev_last:
                self._finding(
                    batch.position,
                    "offsets_backwards",
                    f"batch at byte {batch.position} starts at offset {batch.base_offset}, not after the"
                    f" previous batch's last offset {prev_last}",
                    expected=f"> {prev_last}",
                    found=str(batch.base_offset),
                )
            elif prev_last is None and base is not None and batch.base_offset < base:
                self._finding(
                    batch.position,
                    "offset_below_base",
                    f"batch at byte {batch.position} starts at offset {batch.base_offset}, below the base offset"
                    f" {base} in the segment's file name",
                    expected=f">= {base}",
                    found=str(batch.base_offset),
                )
            prev_last = batch.last_offset
            self.batches += 1
            yield batch

    def _tail(self, f: BinaryIO, pos: int, left: int, to_eof: bool) -> None:
        """Stop with fewer than 17 bytes left: the end, zeros of a preallocated tail, the end of a range,
        or a cut-off entry header."""
        if left <= 0:
            self.stop_reason = STOP_END
            return
        if not to_eof:
            self.stop_reason = STOP_LIMIT
            return
        f.seek(pos)
        rest = f.read(left)
        if rest.count(0) == len(rest):
            self.stop_reason = STOP_PREALLOCATED
            return
        self._finding(
            pos,
            "truncated",
            f"the last {left} bytes of the file (from byte {pos}) are too few for an entry, which needs"
            f" {HEADER_SIZE_UP_TO_MAGIC} for its header alone",
        )
        self.stop_reason = STOP_TRUNCATED

    def _zero_tail(self, buf: bytes, off: int, pos: int) -> None:
        """Stop at an all-zero entry header (a preallocated file's tail), and say so when data follows the
        zeros within the chunk in hand: the broker would have truncated the log there after a crash."""
        self.stop_reason = STOP_PREALLOCATED
        rest = buf[off:]
        data = rest.lstrip(b"\0")
        if data:
            at = pos + len(rest) - len(data)
            self._finding(
                at,
                "data_after_zeros",
                f"the entries end at byte {pos} in zeros (a preallocated or zero-filled region), but non-zero"
                f" bytes follow at byte {at}; they are not read",
            )

    def _shrunk(self, pos: int) -> None:
        self._finding(pos, "truncated", f"the file ended at byte {pos} while being read (did it shrink?)")
        self.stop_reason = STOP_TRUNCATED


def iter_batches(
    path: str | Path, start: int = 0, end: int | None = None, findings: list[Finding] | None = None
) -> Iterator[Batch]:
    """The batches of a ``.log`` file from byte ``start`` (an entry boundary) to ``end``, streamed with a
    bounded buffer; damage goes to ``findings``. Use ``LogReader`` to learn where and why it stopped."""
    return iter(LogReader(path, start, end, findings))


@dataclass(frozen=True)
class LogScan:
    """A summary of one pass over a ``.log`` file (or a range of it), without keeping any batch.

    ``end_position`` is where the last whole entry ends; ``invalid_bytes_at_end`` the bytes after it up
    to ``limit`` (the end of the range, normally the file's size), as kafka-dump-log reports them.
    """

    file: str
    file_size: int
    start: int
    limit: int
    batches: int
    crc_failures: int
    first_offset: int | None
    last_offset: int | None
    max_timestamp: int | None
    end_position: int
    stop_reason: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def valid_bytes(self) -> int:
        """Bytes from ``start`` read as whole entries."""
        return self.end_position - self.start

    @property
    def invalid_bytes_at_end(self) -> int:
        """Bytes after the last whole entry up to ``limit``."""
        return self.limit - self.end_position

    @property
    def is_clean(self) -> bool:
        """No findings and nothing left over at the end."""
        return not self.findings and self.invalid_bytes_at_end == 0


def scan_log(path: str | Path, start: int = 0, end: int | None = None) -> LogScan:
    """One pass over a ``.log`` file (headers and CRCs only, no decompression), summed up."""
    reader = LogReader(path, start, end)
    count = crc_failures = 0
    first: int | None = None
    last: int | None = None
    max_ts: int | None = None
    for batch in reader:
        count += 1
        if first is None:
            first = batch.base_offset
        last = batch.last_offset
        if not batch.crc_valid:
            crc_failures += 1
        if max_ts is None or batch.max_timestamp > max_ts:
            max_ts = batch.max_timestamp
    return LogScan(
        file=reader.file,
        file_size=reader.file_size or 0,
        start=start,
        limit=reader.limit if reader.limit is not None else start,
        batches=count,
        crc_failures=crc_failures,
        first_offset=first,
        last_offset=last,
        max_timestamp=max_ts,
        end_position=reader.position,
        stop_reason=reader.stop_reason or STOP_UNREADABLE,
        findings=reader.findings,
    )


def read_batch_at(path: str | Path, position: int, findings: list[Finding] | None = None) -> Batch | None:
    """The batch that starts exactly at byte ``position``, or ``None`` (with a finding) when no readable
    entry starts there. The position is trusted to be an entry boundary (from a listing or an index)."""
    for batch in LogReader(path, position, None, findings, chunk_size=_SMALL_CHUNK, max_entries=1):
        return batch
    return None


def _walk(path: str | Path, start: int, findings: list[Finding] | None) -> Iterator[tuple[int, int, int]]:
    """(position, last offset, size) of each entry from ``start`` on, reading only its first 27 bytes;
    stops where ``LogReader`` would, with the same findings for what stops it (when run to its end)."""
    with open(path, "rb", buffering=_SMALL_CHUNK) as f:
        size = os.fstat(f.fileno()).st_size
        pos = start
        while size - pos >= HEADER_SIZE_UP_TO_MAGIC:
            f.seek(pos)
            head = f.read(27)
            if len(head) < HEADER_SIZE_UP_TO_MAGIC:
                break
            base_offset, length, _, magic = ENTRY_PREFIX.unpack_from(head)
            if not LEGACY_OVERHEAD_V0 <= length <= DEFAULT_MAX_BATCH_BYTES - LOG_OVERHEAD:
                break
            if pos + LOG_OVERHEAD + length > size:
                break
            if magic == 2 and len(head) == 27:
                last = base_offset + int.from_bytes(head[23:27], "big", signed=True)
            else:
                last = base_offset
            yield pos, last, LOG_OVERHEAD + length
            pos += LOG_OVERHEAD + length
    # What stopped the walk, reported with LogReader's words: read the one entry there.
    if findings is not None:
        read_batch_at(path, pos, findings)


def find_batch_at_or_after(
    path: str | Path, position: int, hint: int = 0, findings: list[Finding] | None = None
) -> Batch | None:
    """The first batch starting at or after byte ``position``, found by stepping over entry headers from
    ``hint`` (byte 0, or any entry boundary before ``position``, such as an offset index's position).
    ``None`` when there is none or the entries break off before it (a finding says why)."""
    for pos, _, _ in _walk(path, min(hint, position), findings):
        if pos >= position:
            return read_batch_at(path, pos, findings)
    return None


def find_batch_by_offset(
    path: str | Path, offset: int, hint: int = 0, findings: list[Finding] | None = None
) -> Batch | None:
    """The first batch whose last offset is at least ``offset`` (the one holding it, or the next after a
    gap), stepping over headers from ``hint`` as Kafka's lookup does from an offset index entry."""
    for pos, last, _ in _walk(path, hint, findings):
        if last >= offset:
            return read_batch_at(path, pos, findings)
    return None


def find_next_valid_batch(
    path: str | Path, position: int, end: int | None = None, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES
) -> int | None:
    """The position of the first v2 record batch at or after byte ``position`` whose header is plausible
    and whose CRC-32C holds, or ``None``: how to pick up reading after damage that broke the framing.
    Legacy messages are not looked for (their 4-byte CRC alone is too weak a test over arbitrary bytes)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        limit = size if end is None else min(end, size)
        pos = position
        while limit - pos >= V2_HEADER_SIZE:
            f.seek(pos)
            buf = f.read(min(DEFAULT_CHUNK_SIZE, limit - pos))
            if len(buf) < V2_HEADER_SIZE:
                return None
            last_start = len(buf) - V2_HEADER_SIZE  # candidates must have their whole header in buf
            i = buf.find(b"\x02", 16)
            while 0 <= i <= last_start + 16:
                candidate = i - 16
                if _plausible(buf, candidate, pos, limit, max_batch_bytes):
                    length = int.from_bytes(buf[candidate + 8 : candidate + 12], "big", signed=True)
                    total = LOG_OVERHEAD + length
                    if candidate + total <= len(buf):
                        body = memoryview(buf)[candidate + 21 : candidate + total]
                    else:
                        f.seek(pos + candidate + 21)
                        body = memoryview(f.read(total - 21))
                    stored = int.from_bytes(buf[candidate + 17 : candidate + 21], "big")
                    if len(body) == total - 21 and crc32c.crc32c(body) == stored:
                        return pos + candidate
                i = buf.find(b"\x02", i + 1)
            pos += last_start + 1
    return None


def _plausible(buf: bytes, at: int, pos: int, limit: int, max_batch_bytes: int) -> bool:
    fields: tuple[int, ...] = V2_HEADER.unpack_from(buf, at)
    length, attributes, last_delta, count = fields[1], fields[5], fields[6], fields[12]
    return (
        V2_MIN_BATCH_LENGTH <= length <= max_batch_bytes
        and pos + at + LOG_OVERHEAD + length <= limit
        and 0 <= attributes < 0x80
        and attributes & 0x07 <= 4
        and 0 <= count <= last_delta + 1
    )
