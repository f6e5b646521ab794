"""Legacy messages (magic 0 and 1), the format Kafka wrote before 0.11 and still met in segments written
then or under an old ``message.format.version``: reading one as a ``LegacyBatch`` and, when its records are
asked for, the record it holds or the inner messages of a compressed wrapper.

A legacy entry is a single message (CRC-32, magic, attributes, a timestamp from magic 1 on, key, value); a
compressed one is a wrapper whose value is a whole set of inner messages, compressed. Its inner offsets are
absolute under magic 0 and relative to the wrapper's (its last inner message's) under magic 1. The layouts
follow Kafka's ``LegacyRecord`` and ``AbstractLegacyRecordBatch``, as described in the project's reference
on Kafka's log formats. Nothing here raises on damaged data: what cannot be read becomes a finding.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from broker.segments.compression import CompressionError, codec_name, decompress
from broker.segments.findings import Finding
from broker.segments.model import (
    CODEC_MASK,
    DEFAULT_MAX_RECORDS_BYTES,
    LEGACY_OVERHEAD_V0,
    LEGACY_OVERHEAD_V1,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    NO_TIMESTAMP_TYPE,
    TIMESTAMP_TYPES,
    BadRecord,
    Batch,
    Record,
    bad_codec,
)

# offset, size, crc, magic, attributes
_LEGACY_HEADER = struct.Struct(">qiIbb")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")


class LegacyBatch(Batch):
    """A legacy message (magic 0 or 1), perhaps a compressed wrapper, as ``read_legacy`` reads it."""

    __slots__ = ()

    def records(
        self, max_bytes: int = DEFAULT_MAX_RECORDS_BYTES, limit: int | None = None
    ) -> tuple[list[Record], list[Finding]]:
        findings: list[Finding] = []
        return legacy_records(self, max_bytes, limit, findings), findings


# --- reading headers -----------------------------------------------------------------------------------


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
        findings.append(bad_codec(file, position + 17, position, codec))
    ts_type = NO_TIMESTAMP_TYPE if magic == 0 else TIMESTAMP_TYPES[attributes >> 3 & 1]
    return LegacyBatch(
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


# --- records -------------------------------------------------------------------------------------------


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
    ``BadRecord`` when its key or value does not fit in it."""
    end = start + total
    offset, size, crc, magic, attributes = _LEGACY_HEADER.unpack_from(buf, start)
    if magic not in (0, 1):
        raise BadRecord(f"its magic is {magic}, not 0 or 1")
    need = LEGACY_OVERHEAD_V0 if magic == 0 else LEGACY_OVERHEAD_V1
    if size < need:
        raise BadRecord(f"it is {size} bytes, shorter than the {need} of a magic-{magic} message")
    pos = start + 18
    timestamp = -1
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(buf, pos)
        pos += 8
    fields: list[bytes | None] = []
    sizes: list[int] = []
    for name in ("key", "value"):
        if pos + 4 > end:
            raise BadRecord(f"its {name} length runs past the message's end")
        (length,) = _INT32.unpack_from(buf, pos)
        pos += 4
        if length == -1:
            fields.append(None)
        elif length < 0 or pos + length > end:
            raise BadRecord(f"its {name} length is {length} but {end - pos} bytes remain")
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


def legacy_records(batch: Batch, max_bytes: int, limit: int | None, findings: list[Finding]) -> list[Record]:
    """The one record of an uncompressed legacy message, or the inner messages of a compressed wrapper
    with their absolute offsets (v0 inner offsets are absolute; v1 ones are relative to the wrapper's,
    which is the last inner message's) and, under a LogAppendTime wrapper, the wrapper's timestamp."""
    try:
        wrapper = _parse_message(batch.raw, 0, batch.size)
    except (BadRecord, struct.error) as e:
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
        except (BadRecord, struct.error) as e:
            findings.append(Finding(batch.file, batch.position, "bad_record", f"{where} cannot be read: {e}"))
        pos += LOG_OVERHEAD + size
    return messages
