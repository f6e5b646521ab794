"""Record batches (magic 2), the format Kafka has written since 0.11, taken apart as Kafka wrote them:
the 61-byte header and its CRC-32C, the records (decompressed when the batch is), control records. Also
``batch_from_bytes``, which reads any entry of a ``.log`` file and hands legacy messages (magic 0 and 1)
to ``legacy``.

``V2Batch`` is the ``Batch`` (``model``) of a v2 record batch; ``Record`` is in ``model`` too, the varints in
``varints``. Nothing here raises on damaged data: what cannot be read becomes a finding. The layouts follow
Kafka's ``DefaultRecordBatch`` and ``DefaultRecord``, as described in the project's reference on Kafka's log
formats.
"""

from __future__ import annotations

import struct

import crc32c

from broker.segments.compression import CompressionError, codec_name, decompress
from broker.segments.findings import Finding
from broker.segments.legacy import read_legacy
from broker.segments.model import (
    CODEC_MASK,
    DEFAULT_MAX_RECORDS_BYTES,
    LEGACY_OVERHEAD_V0,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    TIMESTAMP_TYPES,
    BadRecord,
    Batch,
    Record,
    bad_codec,
)
from broker.segments.varints import read_unsigned_varint, read_varint

HEADER_SIZE_UP_TO_MAGIC = 17
V2_HEADER_SIZE = 61
V2_MIN_BATCH_LENGTH = V2_HEADER_SIZE - LOG_OVERHEAD  # 49
INT32_MAX = 2**31 - 1

CONTROL_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}

TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
# maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
V2_HEADER = struct.Struct(">qiibIhiqqqhii")
# offset, size, partitionLeaderEpoch (v2) or crc (legacy), magic: what every entry starts with
ENTRY_PREFIX = struct.Struct(">qiib")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_VALUE = struct.Struct(">hi")


class V2Batch(Batch):
    """A record batch (magic 2), as ``read_v2`` reads it."""

    __slots__ = ()

    def records(
        self, max_bytes: int = DEFAULT_MAX_RECORDS_BYTES, limit: int | None = None
    ) -> tuple[list[Record], list[Finding]]:
        findings: list[Finding] = []
        return v2_records(self, max_bytes, limit, findings), findings


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment`` as Kafka's producer sequences count: past 2^31 - 1 they wrap to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


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
        findings.append(bad_codec(file, position + 21, position, codec))
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
    return V2Batch(
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


# --- v2 records ----------------------------------------------------------------------------------------


def v2_records(batch: Batch, max_bytes: int, limit: int | None, findings: list[Finding]) -> list[Record]:
    """Decompress (when needed) and decode the records of a v2 batch."""
    payload = v2_payload(batch, max_bytes, findings)
    if payload is None:
        return []
    base_position = batch.position + V2_HEADER_SIZE if batch.codec == 0 else None
    return decode_v2_records(payload, batch, base_position, limit, findings)


def v2_payload(batch: Batch, max_bytes: int, findings: list[Finding]) -> bytes | None:
    """The records section of a v2 batch, decompressed when it is; None (with a finding) when it cannot be.
    A reader that looks for text in the records (a search's probe) looks here before decoding them."""
    raw = batch.raw
    if batch.codec == 0:
        return raw[V2_HEADER_SIZE:]
    try:
        return decompress(batch.codec, memoryview(raw)[V2_HEADER_SIZE:], max_bytes)
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
        return None


def decode_v2_records(
    payload: bytes,
    batch: Batch,
    base_position: int | None,
    limit: int | None,
    findings: list[Finding],
    skip: int = 0,
) -> list[Record]:
    """The records of ``payload`` (:func:`v2_payload`), control records read; ``base_position``: where the
    payload starts in its file (None when it was decompressed). ``skip``: the first so many records are passed
    over by their lengths, not decoded (a reader that wants the records from an offset inside the batch);
    ``limit`` counts them too."""
    records = _decode_v2(payload, batch, base_position, limit, findings, skip)
    if batch.is_control:
        for record in records:
            _read_control(record, batch, findings)
    return records


# Zigzag values of one- and two-byte varints, by their bytes: ``_ZZ1[b0]`` for b0 < 0x80, and
# ``_ZZ2[b1 << 8 | b0]`` for b0 >= 0x80 > b1. Looking them up saves the record decoder a dozen operations
# per field, and nearly every field of a record is one of these.
_ZZ1 = [(u >> 1) ^ -(u & 1) for u in range(0x80)]
# Built a row of 128 at a time (every process that dumps pays for this at start): the row of b1 holds the
# zigzag values of b1 << 7 | (b0 & 0x7F) for b0 in 0x80..0xFF.
_ZZ14 = [(u >> 1) ^ -(u & 1) for u in range(0x4000)]
_ZZ2 = [0] * 0x8000
for _b1 in range(0x80):
    _ZZ2[(_b1 << 8) | 0x80 : (_b1 + 1) << 8] = _ZZ14[_b1 << 7 : (_b1 + 1) << 7]
del _ZZ14


def _zigzag_slow(buf: bytes, pos: int, max_length: int) -> tuple[int, int]:
    """``read_varint``/``read_varlong`` for the record decoder's rare long case, with the 32- or 64-bit
    mask that Java's int or long arithmetic applies."""
    u, pos = read_unsigned_varint(buf, pos, max_length)
    u &= 0xFFFFFFFF if max_length == 5 else 0xFFFFFFFFFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def _decode_v2(
    data: bytes, batch: Batch, base_position: int | None, limit: int | None, findings: list[Finding], skip: int = 0
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
    first = 0
    while first < skip and first < wanted and pos < n:  # passed over: each record's length, nothing else
        u = data[pos]
        if u < 0x80:
            length, pos = zz1[u], pos + 1
        elif pos + 1 < n and data[pos + 1] < 0x80:
            length, pos = zz2[(data[pos + 1] << 8) | u], pos + 2
        else:
            try:
                length, pos = slow(data, pos, 5)
            except (ValueError, IndexError):
                break  # decoded below, where a bad record is reported
        if length < 6 or pos + length > n:
            break
        pos += length
        first += 1
    for i in range(first, wanted):
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
                raise BadRecord(f"its length field says {length} bytes, but {n - pos} remain in the batch")
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
                    raise BadRecord(f"its key of {key_size} bytes runs past the record's end")
                key: bytes | None = data[pos:end]
                pos = end
            elif key_size == -1:
                key = None
            else:
                raise BadRecord(f"its key length is {key_size}")
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
                    raise BadRecord(f"its value of {value_size} bytes runs past the record's end")
                value: bytes | None = data[pos:end]
                pos = end
            elif value_size == -1:
                value = None
            else:
                raise BadRecord(f"its value length is {value_size}")
            # headers
            headers: list[tuple[str, bytes | None]] = []
            u = data[pos]
            if u == 0:
                pos += 1
            else:
                header_count, pos = slow(data, pos, 5)
                if header_count < 0 or header_count > rec_end - pos:
                    raise BadRecord(f"its header count is {header_count}")
                pos = _read_headers(data, pos, rec_end, header_count, headers)
            if pos != rec_end:
                raise BadRecord(f"its fields use {pos - (rec_end - length)} of the {length} bytes its length says")
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
            raise BadRecord(f"a header key length is {key_len}")
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
            raise BadRecord(f"the value of header {key!r} has length {value_len}")
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
