"""Record batches (magic 2) and legacy messages (magic 0 and 1) taken apart as Kafka wrote them.

A ``Batch`` is one entry of a ``.log`` file: its header fields, whether its checksum holds, and its bytes
as they are on disk. Reading the header is cheap (one ``struct`` call and one CRC); the records inside
are decoded only when ``Batch.records()`` is called, which is also when a compressed batch is
decompressed. Nothing here raises on damaged data: ``records()`` returns what it could decode together
with a list of findings saying what it could not.

The layouts follow Kafka's ``DefaultRecordBatch``, ``DefaultRecord``, ``LegacyRecord`` and
``AbstractLegacyRecordBatch``, as described in the project's reference on Kafka's log formats.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

import crc32c

from broker.segments.compression import CompressionError, codec_name, decompress
from broker.segments.findings import Finding

LOG_OVERHEAD = 12  # int64 offset + int32 size, before every entry
HEADER_SIZE_UP_TO_MAGIC = 17
V2_HEADER_SIZE = 61
V2_MIN_BATCH_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD  # 49
LEGACY_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
LEGACY_OVERHEAD_V1 = 22  # ... and the timestamp
NO_SEQUENCE = -1
INT32_MAX = 2**31 - 1
DEFAULT_MAX_RECORDS_BYTES = 64 * 1024 * 1024

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
NO_TIMESTAMP_TYPE = "NoTimestampType"
CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
# offset, size, partitionLeaderEpoch (v2) or crc (legacy), magic: what every entry starts with
ENTRY_PREFIX = struct.Struct(">qiib")
# offset, size, crc, magic, attributes
_LEGACY_HEADER = struct.Struct(">qiIbb")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


# --- varints -------------------------------------------------------------------------------------------


def read_unsigned_varint(buf: bytes | bytearray | memoryview, pos: int, max_length: int = 5) -> tuple[int, int]:
    """The unsigned base-128 number at ``buf[pos]`` (low 7 bits first) and the position after it.

    Raises ``ValueError`` when it runs past the end of ``buf`` or is longer than ``max_length`` bytes (5 for
    an int, 10 for a long: Kafka rejects longer encodings as corrupt).
    """
    value = shift = 0
    end = len(buf)
    for i in range(max_length):
        if pos + i >= end:
            raise ValueError(f"varint at byte {pos} runs past the end of the data")
        b = buf[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise ValueError(f"varint at byte {pos} is longer than {max_length} bytes")


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zigzag-encoded int (at most 5 bytes, 32 bits) at ``buf[pos]`` and the position after it."""
    u, pos = read_unsigned_varint(buf, pos, 5)
    u &= 0xFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """The zigzag-encoded long (at most 10 bytes, 64 bits) at ``buf[pos]`` and the position after it."""
    u, pos = read_unsigned_varint(buf, pos, 10)
    u &= 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def encode_varint(value: int) -> bytes:
    """Kafka's zigzag varint encoding of a 64-bit signed ``value`` (the inverse of ``read_varlong``; for
    values that fit 32 bits also of ``read_varint``)."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


def _zigzag_slow(buf: bytes, pos: int, max_length: int) -> tuple[int, int]:
    """``read_varint``/``read_varlong`` for the record decoder's rare long case, with the 32- or 64-bit
    mask that Java's int or long arithmetic applies."""
    u, pos = read_unsigned_varint(buf, pos, max_length)
    u &= 0xFFFFFFFF if max_length == 5 else 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` as Kafka's producer sequences count: past 2^31 - 1 they wrap to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


# --- dataclasses ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class Record:
    """One record as a consumer would see it, plus what only the log shows.

    ``key_size``/``value_size`` are -1 for a null key/value (a tombstone's value). ``sequence`` is the
    producer sequence of a v2 record, -1 when the batch has none. Legacy messages carry their own CRC
    (``crc``, ``crc_valid``); v2 records have none (the batch's covers them). A control record has
    ``control_type`` (``"COMMIT"``, ``"ABORT"``, ``"LEADER_CHANGE"``... or ``"UNKNOWN"``) and its raw
    ``control_type_id``; a commit or abort marker also has the ``coordinator_epoch`` that wrote it.
    """

    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    sequence: int
    key_size: int
    value_size: int
    crc: int | None = None
    crc_valid: bool | None = None
    control_type: str | None = None
    control_type_id: int | None = None
    coordinator_epoch: int | None = None

    @property
    def is_control(self) -> bool:
        """Whether this is a control record (a transaction marker or a KRaft control record)."""
        return self.control_type is not None

    @property
    def header_keys(self) -> list[str]:
        """The header keys in order (what kafka-dump-log prints as ``headerKeys``)."""
        return [k for k, _ in self.headers]


@dataclass(slots=True)
class Batch:
    """One entry of a ``.log`` file: a v2 record batch, or a legacy message (magic 0 or 1), which may be
    a compressed wrapper holding a set of inner messages.

    ``position`` is the byte position of the entry in ``file`` and ``size`` its whole length on disk,
    the 12-byte offset and length prefix included, so the next entry starts at ``position + size``.
    ``crc`` is the stored checksum (unsigned) and ``crc_valid`` whether it matches the bytes: CRC-32C of
    bytes 21 to the end for v2, CRC-32 of the message from its magic byte for legacy. Producer fields
    are -1 when there are none, as Kafka prints them.

    For a legacy entry, ``base_offset`` and ``last_offset`` are both the offset the entry carries: a
    compressed wrapper carries the offset of its last inner message, and its first is known only once
    ``records()`` has decompressed it. ``count`` is the v2 header's record count, 1 for an uncompressed
    legacy message and ``None`` for a legacy wrapper (Kafka's ``countOrNull``; kafka-dump-log prints no
    count for legacy entries). ``raw`` holds the entry's bytes, for ``records()`` and hex views.
    """

    file: str
    position: int
    base_offset: int
    last_offset: int
    count: int | None
    size: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    codec: int
    codec_name: str
    timestamp_type: str
    max_timestamp: int
    base_timestamp: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    raw: bytes = field(repr=False, compare=False)

    @property
    def next_position(self) -> int:
        """The file position just past this entry, where the next one starts."""
        return self.position + self.size

    @property
    def is_compressed(self) -> bool:
        """Whether the records are compressed (a codec other than none)."""
        return self.codec != 0

    def records(
        self, max_bytes: int = DEFAULT_MAX_RECORDS_BYTES, limit: int | None = None
    ) -> tuple[list[Record], list[Finding]]:
        """The records of this batch, decompressed and decoded, with findings for what could not be read.

        ``max_bytes`` bounds the decompressed size (a hostile batch cannot make this allocate more);
        ``limit`` stops after that many records (no count mismatch is reported then). Findings cover
        decompression failures, records that do not use exactly their declared length, a records count
        that does not match, bytes left after the last record, malformed control records and, for legacy
        wrappers, inner messages that are truncated, compressed again or fail their CRC. Never raises
        on bad data.
        """
        findings: list[Finding] = []
        if self.magic == 2:
            return _v2_records(self, max_bytes, limit, findings), findings
        return _legacy_records(self, max_bytes, limit, findings), findings

    def as_dict(self) -> dict[str, object]:
        """The header fields as a plain dict (no bytes), for JSON output and templates."""
        return {name: getattr(self, name) for name in _BATCH_FIELDS}


_BATCH_FIELDS = tuple(name for name in Batch.__dataclass_fields__ if name != "raw")


# --- reading headers -----------------------------------------------------------------------------------


def batch_from_bytes(
    buf: bytes | bytearray | memoryview,
    offset: int = 0,
    position: int | None = None,
    file: str = "<memory>",
    findings: list[Finding] | None = None,
) -> Batch | None:
    """The entry starting at ``buf[offset]``, read as a ``Batch`` (header only; records stay undecoded).

    ``position`` is its file position for the batch and its findings (``offset`` when not given). The
    whole entry, prefix included, must be in ``buf``. Returns ``None`` (with a finding appended when a
    list is given) when the entry cannot be read as one: too short, cut off, or of an unknown magic.
    """
    findings = [] if findings is None else findings
    pos = offset if position is None else position
    if len(buf) - offset < HEADER_SIZE_UP_TO_MAGIC:
        findings.append(
            Finding(file, pos, "truncated", f"only {len(buf) - offset} bytes where an entry needs at least 17")
        )
        return None
    _, length, _, magic = ENTRY_PREFIX.unpack_from(buf, offset)
    total = LOG_OVERHEAD + length
    if length < LEGACY_OVERHEAD_V0 or total > len(buf) - offset:
        findings.append(
            Finding(
                file,
                pos,
                "truncated" if length >= LEGACY_OVERHEAD_V0 else "bad_size",
                f"entry size field says {length} bytes, but {len(buf) - offset - LOG_OVERHEAD} follow"
                " (an entry holds at least 14)",
                expected=f"14..{len(buf) - offset - LOG_OVERHEAD}",
                found=str(length),
            )
        )
        return None
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    if magic == 2:
        return read_v2(view, offset, total, pos, file, findings)
    if magic in (0, 1):
        return read_legacy(view, offset, total, pos, file, findings)
    findings.append(bad_magic(file, pos, magic))
    return None


def bad_magic(file: str, position: int, magic: int) -> Finding:
    """The finding for an entry whose magic byte (entry byte 16) is not 0, 1 or 2."""
    return Finding(
        file,
        position + 16,
        "bad_magic",
        f"entry at byte {position} has magic {magic}; Kafka writes 0, 1 (legacy messages) or 2 (record batches)",
        expected="0, 1 or 2",
        found=str(magic),
    )


def read_v2(
    view: memoryview, offset: int, total: int, position: int, file: str, findings: list[Finding]
) -> Batch | None:
    """The v2 record batch of ``total`` bytes at ``view[offset]`` (``position`` in ``file``), its CRC-32C
    checked; ``None`` with a finding when it is too short to hold the 61-byte header."""
    if total < V2_HEADER_SIZE:
        findings.append(
            Finding(
                file,
                position + 8,
                "bad_size",
                f"record batch at byte {position} says it is {total - LOG_OVERHEAD} bytes long,"
                f" shorter than the {V2_MIN_BATCH_LENGTH} of a v2 batch header",
                expected=f">= {V2_MIN_BATCH_LENGTH}",
                found=str(total - LOG_OVERHEAD),
            )
        )
        return None
    (
        base_offset,
        _,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_delta,
        base_ts,
        max_ts,
        producer_id,
        producer_epoch,
        base_seq,
        count,
    ) = V2_HEADER.unpack_from(view, offset)
    computed = crc32c.crc32c(view[offset + 21 : offset + total])
    crc_valid = computed == crc
    if not crc_valid:
        findings.append(
            Finding(
                file,
                position + 17,
                "crc_mismatch",
                f"record batch at byte {position} (offsets {base_offset}..{base_offset + last_delta})"
                f" stores CRC-32C {crc} but its bytes give {computed}",
                expected=str(computed),
                found=str(crc),
            )
        )
    codec = attributes & CODEC_MASK
    if codec > 4:
        findings.append(_bad_codec(file, position + 21, position, codec))
    if last_delta < 0 or count < 0:
        findings.append(
            Finding(
                file,
                position + 23,
                "bad_batch",
                f"record batch at byte {position} has lastOffsetDelta {last_delta} and records count {count};"
                " neither can be negative",
            )
        )
    last_seq = NO_SEQUENCE if base_seq == NO_SEQUENCE else increment_sequence(base_seq, last_delta)
    return Batch(
        file,
        position,
        base_offset,
        base_offset + last_delta,
        count,
        total,
        magic,
        crc,
        crc_valid,
        attributes,
        codec,
        codec_name(codec),
        TIMESTAMP_TYPES[(attributes >> 3) & 1],
        max_ts,
        base_ts,
        leader_epoch,
        producer_id,
        producer_epoch,
        base_seq,
        last_seq,
        bool(attributes & TRANSACTIONAL_BIT),
        bool(attributes & CONTROL_BIT),
        base_ts if attributes & DELETE_HORIZON_BIT else None,
        bytes(view[offset : offset + total]),
    )


def read_legacy(view: memoryview, offset: int, total: int, position: int, file: str, findings: list[Finding]) -> Batch:
    """The legacy message (magic 0 or 1) of ``total`` bytes at ``view[offset]`` as a batch, its CRC-32
    checked. Its key and value are not looked at until ``records()``."""
    entry_offset, _, crc, magic, attributes = _LEGACY_HEADER.unpack_from(view, offset)
    attributes &= 0xFF
    timestamp = -1
    if magic == 1:
        if total - LOG_OVERHEAD >= LEGACY_OVERHEAD_V1:
            (timestamp,) = _INT64.unpack_from(view, offset + 18)
        else:
            findings.append(_legacy_too_short(file, position, magic, total - LOG_OVERHEAD))
    computed = zlib.crc32(view[offset + 16 : offset + total])
    crc_valid = computed == crc
    if not crc_valid:
        findings.append(
            Finding(
                file,
                position + 12,
                "crc_mismatch",
                f"message at byte {position} (offset {entry_offset}) stores CRC-32 {crc} but its bytes give {computed}",
                expected=str(computed),
                found=str(crc),
            )
        )
    codec = attributes & CODEC_MASK
    if codec > 3:
        findings.append(_bad_codec(file, position + 17, position, codec))
    ts_type = NO_TIMESTAMP_TYPE if magic == 0 else TIMESTAMP_TYPES[attributes >> 3 & 1]
    return Batch(
        file,
        position,
        entry_offset,
        entry_offset,
        None if codec else 1,
        total,
        magic,
        crc,
        crc_valid,
        attributes,
        codec,
        codec_name(codec),
        ts_type,
        timestamp,
        timestamp,
        -1,
        -1,
        -1,
        NO_SEQUENCE,
        NO_SEQUENCE,
        False,
        False,
        None,
        bytes(view[offset : offset + total]),
    )


def _bad_codec(file: str, at: int, position: int, codec: int) -> Finding:
    return Finding(
        file,
        at,
        "bad_codec",
        f"entry at byte {position} names compression codec {codec}, which Kafka does not have"
        " (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; legacy messages stop at 3)",
        expected="0..4",
        found=str(codec),
    )


def _legacy_too_short(file: str, position: int, magic: int, size: int) -> Finding:
    need = LEGACY_OVERHEAD_V0 if magic == 0 else LEGACY_OVERHEAD_V1
    return Finding(
        file,
        position + 8,
        "bad_size",
        f"message at byte {position} is {size} bytes, shorter than the {need} of a magic-{magic} message",
        expected=f">= {need}",
        found=str(size),
    )


# --- v2 records ----------------------------------------------------------------------------------------


class _BadRecord(ValueError):
    """A record that cannot be decoded; carries the sentence for the finding."""


def _v2_records(batch: Batch, max_bytes: int, limit: int | None, findings: list[Finding]) -> list[Record]:
    """Decompress (when needed) and decode the records of a v2 batch."""
    raw = batch.raw
    if batch.codec == 0:
        payload = raw[V2_HEADER_SIZE:]
        base_position: int | None = batch.position + V2_HEADER_SIZE
    else:
        try:
            payload = decompress(batch.codec, memoryview(raw)[V2_HEADER_SIZE:], max_bytes)
        except CompressionError as e:
            findings.append(
                Finding(
                    batch.file,
                    batch.position + V2_HEADER_SIZE,
                    "decompression_failed",
                    f"records of the batch at byte {batch.position} (offset {batch.base_offset})"
                    f" cannot be decompressed ({batch.codec_name}): {e}",
                )
            )
            return []
        base_position = None
    records = _decode_v2(payload, batch, base_position, limit, findings)
    if batch.is_control:
        for record in records:
            _read_control(record, batch, findings)
    return records


# Zigzag values of one- and two-byte varints, by their bytes: ``_ZZ1[b0]`` for b0 < 0x80, and
# ``_ZZ2[b1 << 8 | b0]`` for b0 >= 0x80 > b1. Looking them up saves the record decoder a dozen operations
# per field, and nearly every field of a record is one of these.
_ZZ1 = [(u >> 1) ^ -(u & 1) for u in range(0x80)]
_ZZ2 = [0] * 0x8000
for _b1 in range(0x80):
    for _b0 in range(0x80, 0x100):
        _u = (_b0 & 0x7F) | (_b1 << 7)
        _ZZ2[(_b1 << 8) | _b0] = (_u >> 1) ^ -(_u & 1)


def _decode_v2(
    data: bytes, batch: Batch, base_position: int | None, limit: int | None, findings: list[Finding]
) -> list[Record]:
    """Decode ``batch.count`` records from ``data`` (the records section, uncompressed).

    This is the hot loop of a deep dump: one- and two-byte varints, nearly all of them, are decoded
    inline through the ``_ZZ1``/``_ZZ2`` tables, and longer ones through ``_zigzag_slow``. A record whose
    fields do not use exactly its declared length is reported and skipped over by that length; a length
    running past the data stops the decoding.
    """
    records: list[Record] = []
    append = records.append
    slow = _zigzag_slow
    zz1 = _ZZ1
    zz2 = _ZZ2
    n = len(data)
    base_offset = batch.base_offset
    base_ts = batch.base_timestamp
    ts_type = batch.timestamp_type
    log_append_ts = batch.max_timestamp if ts_type == "LogAppendTime" else None
    base_seq = batch.base_sequence
    count = batch.count or 0
    wanted = count if limit is None else min(count, limit)
    pos = 0
    for i in range(wanted):
        if pos >= n:
            findings.append(
                Finding(
                    batch.file,
                    batch.position + 57,
                    "record_count_mismatch",
                    f"batch at byte {batch.position} (offset {base_offset}) says it holds {count} records,"
                    f" but its data ends after {i}",
                    expected=str(count),
                    found=str(i),
                )
            )
            return records
        start = pos
        rec_end = -1
        try:
            # length (varint)
            u = data[pos]
            if u < 0x80:
                length = zz1[u]
                pos += 1
            else:
                u2 = data[pos + 1]
                if u2 < 0x80:
                    length = zz2[(u2 << 8) | u]
                    pos += 2
                else:
                    length, pos = slow(data, pos, 5)
            rec_end = pos + length
            if length < 6 or rec_end > n:
                rec_end = -1
                raise _BadRecord(f"its length field says {length} bytes, but {n - pos} remain in the batch")
            # attributes (unused), then timestampDelta (varlong)
            u = data[pos + 1]
            if u < 0x80:
                ts_delta = zz1[u]
                pos += 2
            else:
                u2 = data[pos + 2]
                if u2 < 0x80:
                    ts_delta = zz2[(u2 << 8) | u]
                    pos += 3
                else:
                    ts_delta, pos = slow(data, pos + 1, 10)
            # offsetDelta (varint)
            u = data[pos]
            if u < 0x80:
                offset_delta = zz1[u]
                pos += 1
            else:
                u2 = data[pos + 1]
                if u2 < 0x80:
                    offset_delta = zz2[(u2 << 8) | u]
                    pos += 2
                else:
                    offset_delta, pos = slow(data, pos, 5)
            # key
            u = data[pos]
            if u < 0x80:
                key_size = zz1[u]
                pos += 1
            else:
                key_size, pos = slow(data, pos, 5)
            if key_size >= 0:
                end = pos + key_size
                if end > rec_end:
                    raise _BadRecord(f"its key of {key_size} bytes runs past the record's end")
                key: bytes | None = data[pos:end]
                pos = end
            elif key_size == -1:
                key = None
            else:
                raise _BadRecord(f"its key length is {key_size}")
            # value
            u = data[pos]
            if u < 0x80:
                value_size = zz1[u]
                pos += 1
            else:
                u2 = data[pos + 1]
                if u2 < 0x80:
                    value_size = zz2[(u2 << 8) | u]
                    pos += 2
                else:
                    value_size, pos = slow(data, pos, 5)
            if value_size >= 0:
                end = pos + value_size
                if end > rec_end:
                    raise _BadRecord(f"its value of {value_size} bytes runs past the record's end")
                value: bytes | None = data[pos:end]
                pos = end
            elif value_size == -1:
                value = None
            else:
                raise _BadRecord(f"its value length is {value_size}")
            # headers
            headers: list[tuple[str, bytes | None]] = []
            u = data[pos]
            if u == 0:
                pos += 1
            else:
                header_count, pos = slow(data, pos, 5)
                if header_count < 0 or header_count > rec_end - pos:
                    raise _BadRecord(f"its header count is {header_count}")
                pos = _read_headers(data, pos, rec_end, header_count, headers)
            if pos != rec_end:
                raise _BadRecord(f"its fields use {pos - (rec_end - length)} of the {length} bytes its length says")
        except (ValueError, IndexError) as e:
            reason = str(e) if isinstance(e, ValueError) else "its fields run past the end of the batch"
            findings.append(_bad_record(batch, base_position, start, i, reason))
            if rec_end < 0:
                return records
            pos = rec_end
            continue
        if base_seq < 0:
            sequence = NO_SEQUENCE
        else:
            sequence = base_seq + offset_delta
            if sequence > INT32_MAX:
                sequence -= INT32_MAX + 1
        append(
            Record(
                base_offset + offset_delta,
                base_ts + ts_delta if log_append_ts is None else log_append_ts,
                ts_type,
                key,
                value,
                headers,
                sequence,
                key_size,
                value_size,
            )
        )
    if limit is None and pos < n:
        findings.append(
            Finding(
                batch.file,
                batch.position if base_position is None else base_position + pos,
                "trailing_bytes",
                f"batch at byte {batch.position} (offset {base_offset}) has {n - pos} bytes left"
                f" after the {count} records its header counts",
                expected="0",
                found=str(n - pos),
            )
        )
    return records


def _read_headers(data: bytes, pos: int, rec_end: int, count: int, out: list[tuple[str, bytes | None]]) -> int:
    """Append ``count`` record headers read from ``data[pos:]`` to ``out``; return the position after."""
    for _ in range(count):
        u = data[pos]
        if u < 0x80:
            key_len = (u >> 1) ^ -(u & 1)
            pos += 1
        else:
            key_len, pos = read_varint(data, pos)
        end = pos + key_len
        if key_len < 0 or end > rec_end:
            raise _BadRecord(f"a header key length is {key_len}")
        key = data[pos:end].decode("utf-8", "replace")
        pos = end
        u = data[pos]
        if u < 0x80:
            value_len = (u >> 1) ^ -(u & 1)
            pos += 1
        else:
            value_len, pos = read_varint(data, pos)
        if value_len == -1:
            out.append((key, None))
            continue
        end = pos + value_len
        if value_len < 0 or end > rec_end:
            raise _BadRecord(f"the value of header {key!r} has length {value_len}")
        out.append((key, data[pos:end]))
        pos = end
    return pos


def _bad_record(batch: Batch, base_position: int | None, start: int, index: int, reason: str) -> Finding:
    where = batch.position if base_position is None else base_position + start
    inside = "" if base_position is not None else f" (byte {start} of the decompressed records)"
    return Finding(
        batch.file,
        where,
        "bad_record",
        f"record {index} of the batch at byte {batch.position} (offset {batch.base_offset}){inside}"
        f" cannot be read: {reason}",
    )


def _read_control(record: Record, batch: Batch, findings: list[Finding]) -> None:
    """Fill in the control fields of a record of a control batch: the type from the key (int16 version,
    int16 type) and, for COMMIT and ABORT, the coordinator epoch from the value (int16 version, int32)."""
    key = record.key
    if key is None or len(key) < 4:
        record.control_type, record.control_type_id = "UNKNOWN", None
        findings.append(
            _bad_control(batch, record, f"its key has {record.key_size} bytes; a control key has 4 (version, type)")
        )
        return
    version, type_id = _CONTROL_KEY.unpack_from(key)
    record.control_type = CONTROL_TYPES.get(type_id, "UNKNOWN")
    record.control_type_id = type_id
    if version < 0:
        findings.append(_bad_control(batch, record, f"its key version is {version}"))
    if type_id not in (0, 1):
        return
    value = record.value
    if value is None or len(value) < 6:
        findings.append(
            _bad_control(
                batch,
                record,
                f"its value has {record.value_size} bytes; a {record.control_type} marker has at least 6"
                " (version, coordinator epoch)",
            )
        )
        return
    value_version, record.coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
    if value_version < 0:
        findings.append(_bad_control(batch, record, f"its marker value version is {value_version}"))


def _bad_control(batch: Batch, record: Record, reason: str) -> Finding:
    return Finding(
        batch.file,
        batch.position,
        "bad_control_record",
        f"control record at offset {record.offset} (batch at byte {batch.position}) is malformed: {reason}",
    )


# --- legacy messages -----------------------------------------------------------------------------------


@dataclass(slots=True)
class _Message:
    """A legacy message's fields, parsed from its bytes."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    crc: int
    crc_valid: bool
    key: bytes | None
    value: bytes | None
    key_size: int
    value_size: int
    trailing: int  # bytes after the value, inside the message's size (Kafka ignores them)


def _parse_message(buf: bytes, start: int, total: int) -> _Message:
    """The legacy message whose entry (offset, size, message) is ``buf[start:start + total]``; raises
    ``_BadRecord`` when its key or value does not fit in it."""
    end = start + total
    offset, size, crc, magic, attributes = _LEGACY_HEADER.unpack_from(buf, start)
    if magic not in (0, 1):
        raise _BadRecord(f"its magic is {magic}, not 0 or 1")
    need = LEGACY_OVERHEAD_V0 if magic == 0 else LEGACY_OVERHEAD_V1
    if size < need:
        raise _BadRecord(f"it is {size} bytes, shorter than the {need} of a magic-{magic} message")
    pos = start + 18
    timestamp = -1
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    fields: list[bytes | None] = []
    sizes: list[int] = []
    for name in ("key", "value"):
        if pos + 4 > end:
            raise _BadRecord(f"its {name} length runs past the message's end")
        (length,) = _INT32.unpack_from(buf, pos)
        pos += 4
        if length == -1:
            fields.append(None)
        elif length < 0 or pos + length > end:
            raise _BadRecord(f"its {name} length is {length} but {end - pos} bytes remain")
        else:
            fields.append(buf[pos : pos + length])
            pos += length
        sizes.append(length)
    computed = zlib.crc32(memoryview(buf)[start + 16 : end])
    return _Message(
        offset,
        magic,
        attributes & 0xFF,
        timestamp,
        crc,
        computed == crc,
        fields[0],
        fields[1],
        sizes[0],
        sizes[1],
        end - pos,
    )


def _trailing_in_message(batch: Batch, message: _Message, inner: bool) -> Finding:
    what = f"inner message at offset {message.offset} of the wrapper" if inner else "message"
    return Finding(
        batch.file,
        batch.position,
        "trailing_bytes",
        f"{what} at byte {batch.position} has {message.trailing} bytes after its value, inside its size",
        expected="0",
        found=str(message.trailing),
    )


def _message_record(message: _Message, offset: int, timestamp: int, ts_type: str) -> Record:
    return Record(
        offset,
        timestamp,
        ts_type,
        message.key,
        message.value,
        [],
        NO_SEQUENCE,
        message.key_size,
        message.value_size,
        message.crc,
        message.crc_valid,
    )


def _legacy_records(batch: Batch, max_bytes: int, limit: int | None, findings: list[Finding]) -> list[Record]:
    """The one record of an uncompressed legacy message, or the inner messages of a compressed wrapper
    with their absolute offsets (v0 inner offsets are absolute; v1 ones are relative to the wrapper's,
    which is the last inner message's) and, under a LogAppendTime wrapper, the wrapper's timestamp."""
    try:
        wrapper = _parse_message(batch.raw, 0, batch.size)
    except (_BadRecord, struct.error) as e:
        findings.append(
            Finding(
                batch.file,
                batch.position,
                "bad_record",
                f"message at byte {batch.position} (offset {batch.base_offset}) cannot be read: {e}",
            )
        )
        return []
    if wrapper.trailing:
        findings.append(_trailing_in_message(batch, wrapper, inner=False))
    if batch.codec == 0:
        return [_message_record(wrapper, wrapper.offset, wrapper.timestamp, batch.timestamp_type)]
    if wrapper.value is None:
        findings.append(
            Finding(
                batch.file,
                batch.position,
                "bad_record",
                f"compressed message at byte {batch.position} (offset {batch.base_offset}) has a null value",
            )
        )
        return []
    try:
        inner = decompress(batch.codec, wrapper.value, max_bytes) if batch.codec != 4 else None
    except CompressionError as e:
        inner, reason = None, str(e)
    else:
        reason = "legacy messages cannot use zstd"
    if inner is None:
        findings.append(
            Finding(
                batch.file,
                batch.position,
                "decompression_failed",
                f"inner messages of the wrapper at byte {batch.position} (offset {batch.base_offset},"
                f" {batch.codec_name}) cannot be decompressed: {reason}",
            )
        )
        return []
    messages = _inner_messages(inner, batch, findings)
    if not messages:
        findings.append(
            Finding(
                batch.file,
                batch.position,
                "bad_record",
                f"compressed message at byte {batch.position} (offset {batch.base_offset}) holds no inner message",
            )
        )
        return []
    base = 0
    if batch.magic == 1 and wrapper.offset != 0:  # offset 0: a librdkafka quirk, the inner offsets are absolute
        last_inner = messages[-1].offset
        base = wrapper.offset - last_inner
        if base < 0:
            findings.append(
                Finding(
                    batch.file,
                    batch.position,
                    "offsets_backwards",
                    f"wrapper at byte {batch.position} has offset {wrapper.offset}, less than the relative offset"
                    f" {last_inner} of its last inner message",
                    expected=f">= {last_inner}",
                    found=str(wrapper.offset),
                )
            )
    log_append = batch.magic == 1 and batch.timestamp_type == "LogAppendTime"
    records: list[Record] = []
    for message in messages if limit is None else messages[:limit]:
        if message.attributes & CODEC_MASK:
            findings.append(
                Finding(
                    batch.file,
                    batch.position,
                    "nested_compression",
                    f"wrapper at byte {batch.position} holds a compressed message (offset {message.offset});"
                    " Kafka refuses nested compression, so its value is shown still compressed",
                )
            )
        if message.magic == 0:
            timestamp, ts_type = -1, NO_TIMESTAMP_TYPE
        else:
            timestamp = wrapper.timestamp if log_append else message.timestamp
            ts_type = batch.timestamp_type
        if message.trailing:
            findings.append(_trailing_in_message(batch, message, inner=True))
        if not message.crc_valid:
            findings.append(
                Finding(
                    batch.file,
                    batch.position,
                    "crc_mismatch",
                    f"inner message at offset {message.offset} of the wrapper at byte {batch.position}"
                    f" stores CRC-32 {message.crc}, which its bytes do not give",
                )
            )
        offset = message.offset + base if batch.magic == 1 else message.offset
        records.append(_message_record(message, offset, timestamp, ts_type))
    return records


def _inner_messages(data: bytes, batch: Batch, findings: list[Finding]) -> list[_Message]:
    """The [offset][size][message] entries of a decompressed wrapper value, up to the first damaged one."""
    messages: list[_Message] = []
    pos, n = 0, len(data)
    while pos < n:
        where = f"inner message {len(messages)} of the wrapper at byte {batch.position} (offset {batch.base_offset})"
        if n - pos < LOG_OVERHEAD:
            findings.append(
                Finding(batch.file, batch.position, "truncated", f"{where} is cut off after {n - pos} bytes")
            )
            break
        (size,) = _INT32.unpack_from(data, pos + 8)
        if size < LEGACY_OVERHEAD_V0 or pos + LOG_OVERHEAD + size > n:
            findings.append(
                Finding(
                    batch.file,
                    batch.position,
                    "truncated" if size >= LEGACY_OVERHEAD_V0 else "bad_size",
                    f"{where} says it is {size} bytes, but {n - pos - LOG_OVERHEAD} remain (and 14 is the least)",
                )
            )
            break
        try:
            messages.append(_parse_message(data, pos, LOG_OVERHEAD + size))
        except (_BadRecord, struct.error) as e:
            findings.append(Finding(batch.file, batch.position, "bad_record", f"{where} cannot be read: {e}"))
        pos += LOG_OVERHEAD + size
    return messages
