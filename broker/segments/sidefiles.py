"""Readers of the binary files Kafka keeps beside a partition's segments: ``N.txnindex`` (the aborted
transactions of segment N) and ``M.snapshot`` (the state of each producer as of offset M), and the lines
kafka-dump-log (3.9) prints for them.

The broker reads them to know which records of a segment belong to aborted transactions and, on startup,
where each producer's sequence and open transaction stand instead of rereading the log. Every reader opens
its file read-only and returns what it read together with findings; damaged content never raises (a
missing file raises FileNotFoundError). Where Kafka itself would refuse a file, the finding says so. The
readers of ``checkpoints`` share this module's ``read_capped`` and ``cap_findings``.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c

from broker.segments.findings import Finding
from broker.segments.indexes import base_offset_from_name

INT32_MAX = 2**31 - 1
# Side files are small; these caps only keep a damaged or mistaken file from being loaded whole.
DEFAULT_MAX_TXN_INDEX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
MAX_FINDINGS_PER_KIND = 50


def read_capped(path: str, max_bytes: int, findings: list[Finding]) -> tuple[bytes, int]:
    """The first ``max_bytes`` of a file and its size, with a finding when the file is larger."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(max(0, max_bytes))
    if size > max_bytes:
        findings.append(
            Finding(
                path,
                max_bytes,
                "oversized",
                f"The file is {size} bytes, far more than a file of this kind holds; only the first "
                f"{max_bytes} bytes were read.",
                expected=f"at most {max_bytes} bytes",
                found=f"{size} bytes",
            )
        )
    return data, size


def cap_findings(findings: list[Finding]) -> list[Finding]:
    """Keep at most ``MAX_FINDINGS_PER_KIND`` findings of each kind, and say how many more there were."""
    counts: dict[str, int] = {}
    kept: list[Finding] = []
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
        if counts[f.kind] <= MAX_FINDINGS_PER_KIND:
            kept.append(f)
    for kind, n in counts.items():
        if n > MAX_FINDINGS_PER_KIND:
            file = findings[0].file
            kept.append(
                Finding(file, None, kind, f"{n - MAX_FINDINGS_PER_KIND} more findings of this kind not listed.")
            )
    return kept


# --- .txnindex ----------------------------------------------------------------------------------------

TXN_ENTRY_SIZE = 34
_TXN_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    """An aborted transaction: its producer, the offsets of its first record and of its abort marker, and
    the partition's last stable offset once it was aborted."""

    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    @property
    def kafka_version(self) -> int:
        """The version as Kafka (3.9 and 4.0) reads it: only the first of the two bytes, signed. So a
        stored version 1 reads as 0, and Kafka refuses an entry only when that first byte is above 0."""
        high = (self.version >> 8) & 0xFF
        return high - 256 if high > 127 else high


@dataclass
class TxnIndex:
    """An ``N.txnindex`` file as read: its whole entries, in file order, and findings. ``kafka_error`` is
    the message with which Kafka refuses the file (an entry whose version it reads as above 0), None when
    it reads it."""

    path: str
    base_offset: int
    file_size: int
    entries: list[AbortedTxn]
    kafka_error: str | None = None
    findings: list[Finding] = field(default_factory=list)


def read_txn_index(
    path: str | os.PathLike[str], base_offset: int | None = None, *, max_bytes: int = DEFAULT_MAX_TXN_INDEX_BYTES
) -> TxnIndex:
    """Read a segment's transaction index (34-byte entries, never preallocated).

    Findings: a partial trailing entry (Kafka ignores it), a version other than 0 (Kafka refuses some of
    them, see ``AbortedTxn.kafka_version``), a first offset after the last, last offsets that do not
    increase (Kafka appends them in order), a last offset below the segment's base offset (what the
    broker's sanity check rejects).
    """
    p = os.fspath(path)
    findings: list[Finding] = []
    if base_offset is None:
        base_offset = base_offset_from_name(p)
        if base_offset is None:
            findings.append(Finding(p, None, "bad_file_name", "The file name does not start with a base offset."))
            base_offset = 0
    data, size = read_capped(p, max_bytes, findings)
    if size % TXN_ENTRY_SIZE:
        whole = size // TXN_ENTRY_SIZE * TXN_ENTRY_SIZE
        findings.append(
            Finding(
                p,
                whole,
                "partial_entry",
                f"The file is {size} bytes, not a multiple of the {TXN_ENTRY_SIZE}-byte entry: the last "
                f"{size - whole} bytes are part of an entry (Kafka ignores them).",
                expected=f"a multiple of {TXN_ENTRY_SIZE}",
                found=str(size),
            )
        )
    entries: list[AbortedTxn] = []
    whole_bytes = len(data) // TXN_ENTRY_SIZE * TXN_ENTRY_SIZE
    for i, fields in enumerate(_TXN_ENTRY.iter_unpack(data[:whole_bytes])):
        txn = AbortedTxn(*fields)
        at = i * TXN_ENTRY_SIZE
        if txn.version != 0:
            findings.append(
                Finding(
                    p,
                    at,
                    "unknown_version",
                    f"Entry {i} has version {txn.version}; only version 0 exists"
                    + (" (Kafka refuses to read past it)." if txn.kafka_version > 0 else "."),
                    expected="0",
                    found=str(txn.version),
                )
            )
        if txn.first_offset > txn.last_offset:
            findings.append(
                Finding(
                    p,
                    at + 10,
                    "first_after_last",
                    f"Entry {i} starts at offset {txn.first_offset}, after its last offset {txn.last_offset}.",
                    expected=f"<= {txn.last_offset}",
                    found=str(txn.first_offset),
                )
            )
        if txn.last_offset < base_offset:
            findings.append(
                Finding(
                    p,
                    at + 18,
                    "below_base_offset",
                    f"Entry {i} ends at offset {txn.last_offset}, below the segment's base offset {base_offset} "
                    "(the broker's sanity check rejects this index).",
                    expected=f">= {base_offset}",
                    found=str(txn.last_offset),
                )
            )
        if entries and txn.last_offset <= entries[-1].last_offset:
            findings.append(
                Finding(
                    p,
                    at + 18,
                    "last_offset_not_increasing",
                    f"Entry {i} ends at offset {txn.last_offset}, not after the previous entry's "
                    f"{entries[-1].last_offset}.",
                    expected=f"> {entries[-1].last_offset}",
                    found=str(txn.last_offset),
                )
            )
        entries.append(txn)
    refused = next((t for t in entries if t.kafka_version > 0), None)
    kafka_error = (
        None
        if refused is None
        else f"Unexpected aborted transaction version {refused.kafka_version} in transaction index "
        f"{os.path.abspath(p)}, current version is 0"
    )
    return TxnIndex(p, base_offset, size, entries, kafka_error, cap_findings(findings))


def dump_txn_index(index: TxnIndex) -> list[str]:
    """The lines ``kafka-dump-log --files N.txnindex`` prints after ``Dumping <file>``, one per aborted
    transaction, with the version Kafka reads (``AbortedTxn.kafka_version``). None when Kafka refuses the
    file (``kafka_error``): the tool reads every entry before printing, and fails with that message."""
    if index.kafka_error is not None:
        return []
    lines: list[str] = []
    for t in index.entries:
        lines.append(
            f"version: {t.kafka_version} producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}"
        )
    return lines


# --- producer state .snapshot ------------------------------------------------------------------------

SNAPSHOT_VERSION = 1
SNAPSHOT_HEADER_SIZE = 10  # int16 version, uint32 crc, int32 count
SNAPSHOT_ENTRY_SIZE = 46
_SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
# Field names as Kafka 3.9's snapshot schema calls them, with the byte each ends at within an entry: its
# error messages name the field a truncated file ends in.
_SNAPSHOT_FIELDS = (
    ("producer_id", 8),
    ("epoch", 10),
    ("last_sequence", 14),
    ("last_offset", 22),
    ("offset_delta", 26),
    ("timestamp", 34),
    ("coordinator_epoch", 38),
    ("current_txn_first_offset", 46),
)


class ProducerEntry(NamedTuple):
    """One producer's state in a snapshot, in the file's field order (``ProducerSnapshot.json``)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def first_sequence(self) -> int:
        """The first sequence of the producer's last batch: ``last_sequence - offset_delta``, wrapping
        below 0 to int32's maximum as Kafka's sequences do."""
        if self.last_sequence < self.offset_delta:
            return INT32_MAX - (self.offset_delta - self.last_sequence) + 1
        return self.last_sequence - self.offset_delta


@dataclass
class ProducerSnapshot:
    """A producer state snapshot as read.

    ``offset`` is the log offset in the file name (the state is as of that offset). ``stored_crc`` and
    ``computed_crc`` are the CRC-32C in the header and the one of bytes [6, end). ``declared_count`` is the
    header's entry count; ``entries`` are the whole entries present (at most that many). ``kafka_error``
    is the message with which Kafka (3.9) refuses the file, None when it reads it.
    """

    path: str
    offset: int | None
    file_size: int
    version: int | None
    stored_crc: int | None
    computed_crc: int
    declared_count: int | None
    entries: list[ProducerEntry]
    kafka_error: str | None
    findings: list[Finding] = field(default_factory=list)


def _schema_error(size: int, count: int | None) -> str | None:
    """The message Kafka 3.9's snapshot schema gives for a file too short for its header or entries."""
    underflow = "java.nio.BufferUnderflowException"
    if size < 2:
        return f"Error reading field 'version': {underflow}"
    if size < 6:
        return f"Error reading field 'crc': {underflow}"
    if size < SNAPSHOT_HEADER_SIZE or count is None:
        return f"Error reading field 'producer_entries': {underflow}"
    remaining = size - SNAPSHOT_HEADER_SIZE
    if count < 0:
        return f"Error reading field 'producer_entries': Array size {count} cannot be negative"
    if count > remaining:
        return (
            f"Error reading field 'producer_entries': Error reading array of size {count}, "
            f"only {remaining} bytes available"
        )
    if count * SNAPSHOT_ENTRY_SIZE > remaining:
        left = remaining % SNAPSHOT_ENTRY_SIZE
        name = next(n for n, end in _SNAPSHOT_FIELDS if end > left)
        return f"Error reading field 'producer_entries': Error reading field '{name}': {underflow}"
    return None


def read_producer_snapshot(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES
) -> ProducerSnapshot:
    """Read a producer state snapshot (``M.snapshot``): int16 version 1, uint32 CRC-32C of bytes [6, end),
    int32 count, then count 46-byte entries.

    Findings: a file too short for its header, an unknown version, a CRC mismatch, a count that does not
    match the file's length (too few bytes, or bytes left over) or is negative. The entries that are
    whole are returned whatever the findings.
    """
    p = os.fspath(path)
    findings: list[Finding] = []
    data, size = read_capped(p, max_bytes, findings)
    version = struct.unpack_from(">h", data)[0] if len(data) >= 2 else None
    stored_crc = struct.unpack_from(">I", data, 2)[0] if len(data) >= 6 else None
    count = struct.unpack_from(">i", data, 6)[0] if len(data) >= SNAPSHOT_HEADER_SIZE else None
    computed_crc = crc32c.crc32c(data[6:]) if len(data) > 6 else 0
    if count is None:
        findings.append(
            Finding(
                p,
                0,
                "truncated",
                f"The file is {size} bytes, shorter than the {SNAPSHOT_HEADER_SIZE}-byte header "
                "(version, CRC, entry count).",
                expected=f">= {SNAPSHOT_HEADER_SIZE} bytes",
                found=f"{size} bytes",
            )
        )
    if version is not None and version != SNAPSHOT_VERSION:
        findings.append(
            Finding(
                p,
                0,
                "unknown_version",
                f"The snapshot has version {version}; Kafka reads only version {SNAPSHOT_VERSION}.",
                expected=str(SNAPSHOT_VERSION),
                found=str(version),
            )
        )
    if stored_crc is not None and size <= max_bytes and stored_crc != computed_crc:
        findings.append(
            Finding(
                p,
                2,
                "crc_mismatch",
                f"The stored CRC-32C {stored_crc} does not match the one computed over bytes 6 to the end, "
                f"{computed_crc}.",
                expected=str(computed_crc),
                found=str(stored_crc),
            )
        )
    entries: list[ProducerEntry] = []
    if count is not None:
        expected_size = SNAPSHOT_HEADER_SIZE + max(count, 0) * SNAPSHOT_ENTRY_SIZE
        if count < 0:
            findings.append(
                Finding(p, 6, "negative_count", f"The entry count is {count}.", expected=">= 0", found=str(count))
            )
        elif expected_size != size:
            findings.append(
                Finding(
                    p,
                    6,
                    "count_mismatch",
                    f"The header counts {count} entries ({expected_size} bytes with the header) but the file is "
                    f"{size} bytes: "
                    + ("entries are missing or cut short." if size < expected_size else "bytes are left over."),
                    expected=f"{expected_size} bytes",
                    found=f"{size} bytes",
                )
            )
        available = (len(data) - SNAPSHOT_HEADER_SIZE) // SNAPSHOT_ENTRY_SIZE
        n = min(max(count, 0), available)
        body = data[SNAPSHOT_HEADER_SIZE : SNAPSHOT_HEADER_SIZE + n * SNAPSHOT_ENTRY_SIZE]
        entries = [ProducerEntry(*e) for e in _SNAPSHOT_ENTRY.iter_unpack(body)]
    # Kafka 3.9 parses the whole file, then checks the version, then the CRC.
    schema = _schema_error(size, count)
    kafka_error: str | None
    if schema is not None:
        kafka_error = f"Snapshot failed schema validation: {schema}"
    elif version != SNAPSHOT_VERSION:
        kafka_error = f"Snapshot contained an unknown file version {version}"
    elif stored_crc != computed_crc:
        kafka_error = (
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. Computed crc: {computed_crc}"
        )
    else:
        kafka_error = None
    return ProducerSnapshot(
        path=p,
        offset=base_offset_from_name(p),
        file_size=size,
        version=version,
        stored_crc=stored_crc,
        computed_crc=computed_crc,
        declared_count=count,
        entries=entries,
        kafka_error=kafka_error,
        findings=findings,
    )


def _optional_long(value: int) -> str:
    return f"OptionalLong[{value}]" if value >= 0 else "OptionalLong.empty"


def dump_producer_snapshot(snapshot: ProducerSnapshot) -> list[str]:
    """The stdout lines ``kafka-dump-log --files M.snapshot`` prints after ``Dumping <file>``: one per
    producer, or none when Kafka refuses the file (then ``producer_snapshot_error_lines`` has its
    message). A producer with no batch (last offset < 0) ends in a space after ``lastTimestamp``, as the
    tool prints it."""
    if snapshot.kafka_error is not None:
        return []
    lines = []
    for e in snapshot.entries:
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {_optional_long(e.current_txn_first_offset)} lastTimestamp: {e.timestamp} "
        )
        if e.last_offset >= 0:
            line += (
                f"firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}"
            )
        lines.append(line)
    return lines


def producer_snapshot_error_lines(snapshot: ProducerSnapshot) -> list[str]:
    """What kafka-dump-log (3.9) prints to stderr for the snapshot: Kafka's refusal, or nothing."""
    return [] if snapshot.kafka_error is None else [snapshot.kafka_error]
