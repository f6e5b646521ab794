"""Readers of the files Kafka keeps beside a partition's segments and at the root of a log directory, and
of the names it gives them.

Binary files: ``N.txnindex`` (the aborted transactions of a segment) and ``M.snapshot`` (producer state at
offset M). Text files: ``leader-epoch-checkpoint`` and ``partition.metadata`` in a partition directory; the
offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``) and ``meta.properties`` at the root.
Names: segment files, partition directories (live, ``-delete``, ``-future``, ``-stray``) and KRaft
snapshots.

Every reader opens its file read-only and returns what it read together with findings; damaged content
never raises (a missing file raises FileNotFoundError). Where Kafka itself would refuse a file, the
finding says so. The ``dump_*`` functions give the lines kafka-dump-log (3.9) prints for ``.snapshot``
and ``.txnindex`` files.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import struct
from dataclasses import dataclass, field
from typing import NamedTuple

import crc32c

from broker.segments.findings import Finding
from broker.segments.indexes import base_offset_from_name

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
# Side files are small; these caps only keep a damaged or mistaken file from being loaded whole.
DEFAULT_MAX_TXN_INDEX_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_TEXT_BYTES = 64 * 1024 * 1024
MAX_FINDINGS_PER_KIND = 50


def _read(path: str, max_bytes: int, findings: list[Finding]) -> tuple[bytes, int]:
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


def _capped(findings: list[Finding]) -> list[Finding]:
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
    data, size = _read(p, max_bytes, findings)
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
    return TxnIndex(p, base_offset, size, entries, kafka_error, _capped(findings))


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
    data, size = _read(p, max_bytes, findings)
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


# --- Text checkpoint files ---------------------------------------------------------------------------

_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_WHITESPACE = re.compile(r"[ \t\n\x0b\f\r]+")


def _lines(data: bytes) -> list[tuple[int, str]]:
    """The file's lines as Java's BufferedReader gives them (no empty line after a final line break),
    each with the byte position where it starts."""
    out: list[tuple[int, str]] = []
    start = 0
    for m in _LINE_BREAK.finditer(data):
        out.append((start, data[start : m.start()].decode("utf-8", "replace")))
        start = m.end()
    if start < len(data):
        out.append((start, data[start:].decode("utf-8", "replace")))
    return out


def _java_int(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong``: an optional sign and ASCII digits, in range."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None


def _java_split(line: str) -> list[str]:
    """``line.split("\\\\s+")`` as Java does it: a leading empty field kept, trailing empty ones dropped."""
    parts = _JAVA_WHITESPACE.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts or [""]


@dataclass
class _Checkpoint:
    version: int | None
    declared_count: int | None
    rows: list[tuple[int, list[str]]]  # (byte position of the line, its fields)


def _read_checkpoint(path: str, width: int, what: str, findings: list[Finding], max_bytes: int) -> _Checkpoint:
    """Kafka's checkpoint layout: a version line (0), a count line, then ``width`` whitespace-separated
    fields per line. Kafka reads an empty file, or one that ends after the version, as no entries."""
    data, _size = _read(path, max_bytes, findings)
    lines = _lines(data)
    if not lines:
        return _Checkpoint(None, None, [])
    version = _java_int(lines[0][1], 32)
    if version is None:
        findings.append(
            Finding(path, 0, "malformed_line", f"The version line {lines[0][1]!r} is not a number.", "0", lines[0][1])
        )
    elif version != 0:
        findings.append(
            Finding(
                path,
                0,
                "unknown_version",
                f"The checkpoint has version {version}; Kafka reads only version 0 and refuses the file.",
                expected="0",
                found=str(version),
            )
        )
    if len(lines) < 2:
        return _Checkpoint(version, None, [])
    count = _java_int(lines[1][1], 32)
    if count is None:
        findings.append(
            Finding(
                path,
                lines[1][0],
                "malformed_line",
                f"The entry count line {lines[1][1]!r} is not a number.",
                found=lines[1][1],
            )
        )
    rows: list[tuple[int, list[str]]] = []
    for position, line in lines[2:]:
        parts = _java_split(line)
        if len(parts) != width:
            findings.append(
                Finding(
                    path,
                    position,
                    "malformed_line",
                    f"The line {line!r} does not hold {width} fields ({what}); Kafka refuses the file.",
                    expected=what,
                    found=line,
                )
            )
            continue
        rows.append((position, parts))
    entry_lines = len(lines) - 2
    if count is not None and count != entry_lines:
        findings.append(
            Finding(
                path,
                lines[1][0],
                "count_mismatch",
                f"The checkpoint says it holds {count} entries but {entry_lines} lines follow; Kafka refuses the file.",
                expected=str(count),
                found=str(entry_lines),
            )
        )
    return _Checkpoint(version, count, rows)


class PartitionOffset(NamedTuple):
    """One line of an offset checkpoint file: a partition and its offset."""

    topic: str
    partition: int
    offset: int


@dataclass
class OffsetCheckpoint:
    """A log directory's offset checkpoint file (recovery points, log start offsets, high watermarks or
    the cleaner's offsets) as read: version, declared count, entries in file order, findings."""

    path: str
    version: int | None
    declared_count: int | None
    entries: list[PartitionOffset]
    findings: list[Finding] = field(default_factory=list)

    def as_map(self) -> dict[tuple[str, int], int]:
        """The offsets by (topic, partition); a partition listed twice keeps its last offset, as in Kafka."""
        return {(e.topic, e.partition): e.offset for e in self.entries}


OFFSET_CHECKPOINT_FILES = (
    "recovery-point-offset-checkpoint",
    "log-start-offset-checkpoint",
    "replication-offset-checkpoint",
    "cleaner-offset-checkpoint",
)


def read_offset_checkpoint(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> OffsetCheckpoint:
    """Read one of the log directory's offset checkpoint files (``OFFSET_CHECKPOINT_FILES``): version 0,
    a count, then ``topic partition offset`` lines. An empty file (Kafka creates the cleaner's so) holds
    no entries. Findings: a version other than 0, a count not matching the lines, a malformed line or
    number, a partition listed twice."""
    p = os.fspath(path)
    findings: list[Finding] = []
    cp = _read_checkpoint(p, 3, "topic partition offset", findings, max_bytes)
    entries: list[PartitionOffset] = []
    seen: set[tuple[str, int]] = set()
    for position, (topic, partition_text, offset_text) in cp.rows:
        partition = _java_int(partition_text, 32)
        offset = _java_int(offset_text, 64)
        if partition is None or offset is None:
            bad = partition_text if partition is None else offset_text
            findings.append(Finding(p, position, "malformed_line", f"{bad!r} is not a valid number.", found=f"{bad}"))
            continue
        if (topic, partition) in seen:
            findings.append(
                Finding(
                    p, position, "duplicate_partition", f"{topic}-{partition} is listed more than once; the last wins."
                )
            )
        seen.add((topic, partition))
        entries.append(PartitionOffset(topic, partition, offset))
    return OffsetCheckpoint(p, cp.version, cp.declared_count, entries, _capped(findings))


class EpochEntry(NamedTuple):
    """One line of a leader-epoch-checkpoint: a leader epoch and the first offset written in it."""

    epoch: int
    start_offset: int


@dataclass
class LeaderEpochCheckpoint:
    """A partition's ``leader-epoch-checkpoint`` as read."""

    path: str
    version: int | None
    declared_count: int | None
    entries: list[EpochEntry]
    findings: list[Finding] = field(default_factory=list)


def read_leader_epoch_checkpoint(
    path: str | os.PathLike[str], *, max_bytes: int = DEFAULT_MAX_TEXT_BYTES
) -> LeaderEpochCheckpoint:
    """Read a partition's ``leader-epoch-checkpoint``: version 0, a count, then ``epoch startOffset``
    lines. Findings as for offset checkpoints, plus epochs that do not increase and start offsets that go
    backwards (the broker keeps both in order)."""
    p = os.fspath(path)
    findings: list[Finding] = []
    cp = _read_checkpoint(p, 2, "epoch startOffset", findings, max_bytes)
    entries: list[EpochEntry] = []
    for position, (epoch_text, offset_text) in cp.rows:
        epoch = _java_int(epoch_text, 32)
        offset = _java_int(offset_text, 64)
        if epoch is None or offset is None:
            bad = epoch_text if epoch is None else offset_text
            findings.append(Finding(p, position, "malformed_line", f"{bad!r} is not a valid number.", found=bad))
            continue
        if entries and epoch <= entries[-1].epoch:
            findings.append(
                Finding(
                    p,
                    position,
                    "epoch_not_increasing",
                    f"Epoch {epoch} follows epoch {entries[-1].epoch}.",
                    expected=f"> {entries[-1].epoch}",
                    found=str(epoch),
                )
            )
        if entries and offset < entries[-1].start_offset:
            findings.append(
                Finding(
                    p,
                    position,
                    "start_offset_backwards",
                    f"Epoch {epoch} starts at offset {offset}, before epoch {entries[-1].epoch}'s start "
                    f"{entries[-1].start_offset}.",
                    expected=f">= {entries[-1].start_offset}",
                    found=str(offset),
                )
            )
        entries.append(EpochEntry(epoch, offset))
    return LeaderEpochCheckpoint(p, cp.version, cp.declared_count, entries, _capped(findings))


# --- partition.metadata and meta.properties ----------------------------------------------------------

ZERO_UUID = bytes(16)


def decode_kafka_uuid(text: str) -> bytes | None:
    """The 16 bytes of a Kafka Uuid written as Kafka writes it (22 characters of unpadded base64url, as
    in ``partition.metadata`` and ``meta.properties``), or None when the text is not one. Padding is
    accepted, as Java's decoder accepts it."""
    if len(text) > 24 or not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", text):
        return None
    stripped = text.rstrip("=")
    try:
        raw = base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 16 else None


@dataclass
class PartitionMetadata:
    """A partition's ``partition.metadata``: its version and topic id (as written, base64url)."""

    path: str
    version: int | None
    topic_id: str | None
    findings: list[Finding] = field(default_factory=list)


def read_partition_metadata(path: str | os.PathLike[str]) -> PartitionMetadata:
    """Read ``partition.metadata`` (``version: 0`` then ``topic_id: <uuid>``). Findings for a missing or
    malformed line, a version other than 0 (Kafka refuses a negative one and accepts a greater one), a
    topic id that is not a 16-byte base64url uuid or is all zeros (both refused by Kafka), and a key other
    than ``version`` / ``topic_id`` (Kafka does not look at the keys)."""
    p = os.fspath(path)
    findings: list[Finding] = []
    data, _size = _read(p, 64 * 1024, findings)
    lines = _lines(data)
    values: list[str | None] = []
    for n, key in enumerate(("version", "topic_id")):
        if n >= len(lines):
            findings.append(Finding(p, None, "missing_line", f"The {key} line is missing.", expected=f"{key}: ..."))
            values.append(None)
            continue
        position, line = lines[n]
        parts = re.split(r":\s+", line)
        if len(parts) != 2:
            findings.append(
                Finding(
                    p, position, "malformed_line", f"The line {line!r} is not '{key}: <value>'.", f"{key}: ...", line
                )
            )
            values.append(None)
            continue
        if parts[0] != key:
            findings.append(
                Finding(
                    p,
                    position,
                    "unexpected_key",
                    f"The line names {parts[0]!r} where {key!r} is expected.",
                    key,
                    parts[0],
                )
            )
        values.append(parts[1])
    version: int | None = None
    if values[0] is not None:
        version = _java_int(values[0], 32)
        if version is None:
            findings.append(
                Finding(p, 0, "malformed_line", f"The version {values[0]!r} is not a number.", "0", values[0])
            )
        elif version != 0:
            findings.append(
                Finding(
                    p,
                    0,
                    "unknown_version",
                    f"The file has version {version}; Kafka writes version 0"
                    + (" and refuses a negative one." if version < 0 else " and reads newer ones as if they were 0."),
                    expected="0",
                    found=str(version),
                )
            )
    topic_id = values[1]
    if topic_id is not None:
        raw = decode_kafka_uuid(topic_id)
        position = lines[1][0]
        if raw is None:
            findings.append(
                Finding(
                    p,
                    position,
                    "bad_topic_id",
                    f"The topic id {topic_id!r} is not a uuid in base64url (16 bytes, 22 characters).",
                    found=topic_id,
                )
            )
        elif raw == ZERO_UUID:
            findings.append(
                Finding(p, position, "bad_topic_id", "The topic id is the all-zero uuid, which Kafka refuses.")
            )
    if len(lines) > 2 and any(line.strip() for _, line in lines[2:]):
        findings.append(Finding(p, lines[2][0], "extra_lines", "Lines follow the topic id (Kafka ignores them)."))
    return PartitionMetadata(p, version, topic_id, findings)


_PROPERTIES_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_java_properties(text: str, problems: list[str] | None = None) -> dict[str, str]:
    """The key/value pairs of a Java properties file, read as ``java.util.Properties.load`` reads it:
    ``#`` and ``!`` comments, ``=``, ``:`` or whitespace between key and value, backslash line
    continuations and escapes (``\\uXXXX`` included). A later key wins. Malformed ``\\u`` escapes are kept
    as written and described in ``problems``."""
    result: dict[str, str] = {}
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        line = natural[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        # A line ending in an odd number of backslashes continues on the next one.
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(natural):
            line = line[:-1] + natural[i].lstrip(" \t\f")
            i += 1
        if (len(line) - len(line.rstrip("\\"))) % 2 == 1:
            line = line[:-1]
        key_end = 0
        while key_end < len(line) and line[key_end] not in "=: \t\f":
            key_end += 2 if line[key_end] == "\\" else 1
        key_end = min(key_end, len(line))
        rest = line[key_end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(line[:key_end], problems)] = _unescape(rest, problems)
    return result


def _unescape(text: str, problems: list[str] | None) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        n = text[i + 1]
        if n == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) == 4 and all(d in "0123456789abcdefABCDEF" for d in digits):
                out.append(chr(int(digits, 16)))
                i += 6
                continue
            if problems is not None:
                problems.append(f"malformed \\uxxxx escape {text[i : i + 6]!r}")
            out.append(text[i : i + 2])
            i += 2
            continue
        out.append(_PROPERTIES_ESCAPES.get(n, n))
        i += 2
    return "".join(out)


@dataclass
class MetaProperties:
    """A log directory's ``meta.properties``. ``version`` 0 is a ZooKeeper-mode broker (``node_id`` from
    ``broker.id``), 1 a KRaft node (from ``node.id``); ``directory_id`` exists from Kafka 3.7 on."""

    path: str
    properties: dict[str, str]
    version: int | None
    node_id: int | None
    cluster_id: str | None
    directory_id: str | None
    findings: list[Finding] = field(default_factory=list)

    @property
    def mode(self) -> str | None:
        """``"zookeeper"`` for version 0, ``"kraft"`` for version 1, None for anything else."""
        return {0: "zookeeper", 1: "kraft"}.get(self.version) if self.version is not None else None


def read_meta_properties(path: str | os.PathLike[str]) -> MetaProperties:
    """Read ``meta.properties`` as the broker does (a missing version means 0). Findings: an unknown or
    malformed version, a missing or non-numeric ``broker.id`` (v0, optional) or ``node.id`` (v1,
    required), a missing ``cluster.id`` in v1, a ``directory.id`` that is not a Kafka uuid, malformed
    escapes."""
    p = os.fspath(path)
    findings: list[Finding] = []
    data, _size = _read(p, 1024 * 1024, findings)
    problems: list[str] = []
    props = parse_java_properties(data.decode("latin-1"), problems)
    for problem in problems:
        findings.append(Finding(p, None, "malformed_escape", f"The file has a {problem}."))
    version_text = props.get("version", "0")
    version = _java_int(version_text.strip(), 32)
    if version is None:
        findings.append(
            Finding(
                p, None, "malformed_version", f"The version {version_text!r} is not a number.", "0 or 1", version_text
            )
        )
    elif version not in (0, 1):
        findings.append(
            Finding(
                p,
                None,
                "unknown_version",
                f"Version {version} is unknown: 0 is ZooKeeper mode, 1 KRaft. Kafka refuses the file.",
                expected="0 or 1",
                found=str(version),
            )
        )
    id_key = "broker.id" if version == 0 else "node.id"
    node_id: int | None = None
    if id_key in props:
        node_id = _java_int(props[id_key], 32)
        if node_id is None:
            findings.append(
                Finding(p, None, "malformed_id", f"{id_key} {props[id_key]!r} is not a number.", found=props[id_key])
            )
    elif version == 1:
        findings.append(Finding(p, None, "missing_node_id", "A version 1 (KRaft) file must have node.id."))
    cluster_id = props.get("cluster.id")
    if cluster_id is None and version == 1:
        findings.append(Finding(p, None, "missing_cluster_id", "A version 1 (KRaft) file must have cluster.id."))
    directory_id = props.get("directory.id")
    if directory_id is not None and decode_kafka_uuid(directory_id) is None:
        findings.append(
            Finding(
                p,
                None,
                "bad_directory_id",
                f"directory.id {directory_id!r} is not a uuid in base64url (Kafka refuses the file).",
                found=directory_id,
            )
        )
    return MetaProperties(p, props, version, node_id, cluster_id, directory_id, findings)


# --- Names ---------------------------------------------------------------------------------------------

SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
_SEGMENT_NAME = re.compile(r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?")
_PARTITION_DIR = re.compile(r"(\S+)-(\S+)\.(\S+)-(delete|future|stray)")
_KRAFT_SNAPSHOT = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint(\.part|\.deleted)?")


class SegmentFileName(NamedTuple):
    """A segment file's name taken apart: ``00000000000000000042.log.deleted`` is base offset 42, suffix
    ``.log``, transient suffix ``.deleted`` (a file waiting for deletion, compaction or a swap)."""

    base_offset: int
    suffix: str
    transient: str | None


def parse_segment_file_name(name: str) -> SegmentFileName | None:
    """Take apart a segment file name (``%020d`` base offset, then ``.log``, ``.index``, ``.timeindex``,
    ``.txnindex`` or ``.snapshot``, then maybe ``.deleted``, ``.cleaned`` or ``.swap``); None for any
    other name."""
    m = _SEGMENT_NAME.fullmatch(name)
    if m is None or int(m.group(1)) > INT64_MAX:
        return None
    return SegmentFileName(int(m.group(1)), m.group(2), m.group(3))


def segment_file_name(base_offset: int, suffix: str) -> str:
    """The name Kafka gives a segment's file: ``segment_file_name(42, ".index")`` is
    ``00000000000000000042.index``."""
    return f"{base_offset:020d}{suffix}"


class PartitionDirName(NamedTuple):
    """A partition directory's name taken apart. ``state`` is ``live`` (``<topic>-<partition>``),
    ``delete`` (waiting for deletion), ``future`` (the target of a move between log directories) or
    ``stray`` (a partition the broker found it should not hold); the last three carry ``unique_id`` (32
    hex digits). Kafka shortens the topic in ``-delete`` and ``-stray`` names past 255 characters, so
    ``topic`` may then be a prefix."""

    topic: str
    partition: int
    state: str
    unique_id: str | None


def parse_partition_dir_name(name: str) -> PartitionDirName | None:
    """Take apart a directory name of a log directory as the broker does (``parseTopicPartitionName``);
    None when the broker would not take it for a partition."""
    state, unique = "live", None
    base = name
    if name.endswith(("-delete", "-future", "-stray")):
        m = _PARTITION_DIR.fullmatch(name)
        if m is None:
            return None
        state = m.group(4)
        dot = name.rfind(".")
        base = name[:dot]
        unique = name[dot + 1 : name.rfind("-")]
    dash = base.rfind("-")
    if dash <= 0 or dash == len(base) - 1:
        return None
    partition = _java_int(base[dash + 1 :], 32)
    if partition is None:
        return None
    return PartitionDirName(base[:dash], partition, state, unique)


class KRaftSnapshotName(NamedTuple):
    """A KRaft metadata snapshot's name taken apart: ``<20-digit end offset>-<10-digit epoch>.checkpoint``,
    with ``.part`` while being written and ``.deleted`` before removal."""

    end_offset: int
    epoch: int
    partial: bool
    deleted: bool


def parse_kraft_snapshot_name(name: str) -> KRaftSnapshotName | None:
    """Take apart a KRaft snapshot file name (in ``__cluster_metadata-0``); None for any other name."""
    m = _KRAFT_SNAPSHOT.fullmatch(name)
    if m is None or int(m.group(1)) > INT64_MAX or int(m.group(2)) > INT32_MAX:
        return None
    return KRaftSnapshotName(int(m.group(1)), int(m.group(2)), m.group(3) == ".part", m.group(3) == ".deleted")


def kraft_snapshot_file_name(end_offset: int, epoch: int) -> str:
    """The name of a KRaft snapshot: ``kraft_snapshot_file_name(42, 3)`` is
    ``00000000000000000042-0000000003.checkpoint``."""
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"
