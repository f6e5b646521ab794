"""kafka-dump-log's lines for the entries of a ``.log`` file: one per batch, and with ``--deep-iteration``
one per record (``| offset: ...``), with ``--print-data-log`` its key and payload too.

``batch_line`` and ``record_line`` format what the readers decoded (``Batch``, ``Record``) and serve every
kind of entry. ``v2_record_lines`` is the fast path of a deep dump: for an ordinary v2 batch (not a
control batch) it decodes the records and formats their lines in one loop, without building a
``Record`` per record, which makes a deep dump two to three times as fast. It gives up (returns ``None``)
on anything but a perfectly well-formed batch, and the caller then goes the general way, which reports the
damage; so the fast path never needs to say anything itself, and both give the same lines. It reads the
varints with the record decoder's tables (``records._ZZ1``, ``records._ZZ2``), by the same rules.
"""

from __future__ import annotations

from collections.abc import Callable

from broker.segments.compression import CompressionError, decompress
from broker.segments.model import DEFAULT_MAX_RECORDS_BYTES, Batch, Record
from broker.segments.records import _ZZ1, _ZZ2, INT32_MAX, V2_HEADER_SIZE, _zigzag_slow


def batch_line(batch: Batch, position: int) -> str:
    """kafka-dump-log's line for one batch; ``position`` counts the bytes of the batches before it, as
    the tool does (the file position, unless damage was stepped over)."""
    if batch.magic >= 2:
        horizon = (
            "OptionalLong.empty" if batch.delete_horizon_ms is None else f"OptionalLong[{batch.delete_horizon_ms}]"
        )
        head = (
            f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.count} "
            f"baseSequence: {batch.base_sequence} lastSequence: {batch.last_sequence} "
            f"producerId: {batch.producer_id} producerEpoch: {batch.producer_epoch} "
            f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
            f"isTransactional: {_bool(batch.is_transactional)} isControl: {_bool(batch.is_control)} "
            f"deleteHorizonMs: {horizon}"
        )
    else:
        head = f"offset: {batch.last_offset}"
    return (
        f"{head} position: {position} {batch.timestamp_type}: {batch.max_timestamp} size: {batch.size} "
        f"magic: {batch.magic} compresscodec: {batch.codec_name} crc: {batch.crc} isvalid: {_bool(batch.crc_valid)}"
    )


# A decoder of a record's key and value for --print-data-log: (key text, payload text), None where the
# tool prints nothing (broker.segments.decoders); without one, both are shown as UTF-8 text.
Decode = Callable[[bytes | None, bytes | None, int], tuple[str | None, str | None]]


def record_line(
    batch: Batch, record: Record, print_data: bool, skip_metadata: bool, decode: Decode | None = None
) -> str:
    """kafka-dump-log's ``| offset: ...`` line for one record (with --deep-iteration)."""
    parts: list[str] = []
    prefix = "| "
    if not skip_metadata:
        parts.append(
            f"| offset: {record.offset} {batch.timestamp_type}: {record.timestamp} "
            f"keySize: {record.key_size} valueSize: {record.value_size}"
        )
        prefix = " "
        if batch.magic >= 2:
            parts.append(f" sequence: {record.sequence} headerKeys: [{','.join(record.header_keys)}]")
        else:
            parts.append(f" isValid: {_bool(bool(record.crc_valid))} crc: {record.crc}}}")
        if batch.is_control:
            parts.append(_control_text(record))
    if print_data and not batch.is_control:
        if decode is not None:
            key, payload = decode(record.key, record.value, record.offset)
        else:
            key = None if record.key is None else text(record.key)
            payload = None if record.value is None else text(record.value)
        if key is not None:
            parts.append(f"{prefix}key: {key}")
            prefix = " "
        if payload is not None:
            parts.append(f" payload: {payload}")
    return "".join(parts)


def _control_text(record: Record) -> str:
    if record.control_type in ("COMMIT", "ABORT"):
        return f" endTxnMarker: {record.control_type} coordinatorEpoch: {record.coordinator_epoch}"
    from broker.segments.kraft import control_text

    return (
        control_text(record.control_type, record.value)
        or f" controlType: {record.control_type}({record.control_type_id})"
    )


def text(raw: bytes) -> str:
    """Bytes as the tool's default StringDecoder shows them: UTF-8, malformed bytes replaced."""
    return raw.decode("utf-8", "replace")


def _bool(value: bool) -> str:
    return "true" if value else "false"


class _Irregular(Exception):
    """Raised inside the fast path for anything a well-formed record would not have."""


# The header keys cache lives for one batch, whose records as good as always share a few sets of keys;
# the limit bounds it for a batch whose every record has keys of its own.
_HEADER_CACHE_LIMIT = 4096
# How many times a batch may learn the layout of its records' headers (see ``_layout``): a producer's keys
# and value lengths change rarely, and records whose value lengths change every time are better read
# inline without learning anything.
_LAYOUTS_PER_BATCH = 8


def v2_record_lines(
    batch: Batch, print_data: bool, previous: int, lines: list[str], skipped: list[tuple[int, int]]
) -> tuple[int, int | None] | None:
    """Append the record lines of a well-formed, non-control v2 ``batch`` to ``lines``, exactly as
    ``record_line`` would print its decoded records (metadata, and keys and payloads with
    ``print_data``); ``previous`` is the offset of the record printed before (-1 for none), and every
    pair of non-consecutive offsets is appended to ``skipped`` as the dump reports them.

    Returns the offset of the last record (``previous`` when there is none) and of the first (``None``
    when there is none); or ``None``, with ``lines`` and ``skipped`` as they were, when the batch is
    anything but well formed (a control batch, a record not filling exactly its length, a count that does
    not match, data it cannot decompress, a sequence wrapping past 2^31 - 1): decoding it the general way
    then reports what is wrong.

    This is the hot loop of a deep dump, kept as one function (a call costs as much as a field) with
    nearly every varint (one or two bytes, by far the common case) decoded inline through the
    ``_ZZ1``/``_ZZ2`` tables. Headers, a third of the work, are read the fastest way that applies: laid
    out as the last record's were (same count, keys and value lengths: two comparisons of bytes, see
    ``_layout``), else their keys read inline and their strings looked up by their encoded bytes (a
    producer sends the same few keys again and again), else the long way.
    """
    if batch.magic != 2 or batch.is_control or batch.count is None or batch.codec > 4:
        return None
    if batch.codec == 0:
        data = batch.raw
        pos = V2_HEADER_SIZE
    else:
        try:
            data = decompress(batch.codec, memoryview(batch.raw)[V2_HEADER_SIZE:], DEFAULT_MAX_RECORDS_BYTES)
        except CompressionError:
            return None
        pos = 0
    mark = len(lines)
    found: list[tuple[int, int]] = []
    try:
        last, first = _lines(data, pos, batch, print_data, previous, lines, found)
    except (_Irregular, IndexError, ValueError):
        del lines[mark:]
        return None
    skipped += found
    return last, first


def _lines(
    data: bytes,
    pos: int,
    batch: Batch,
    print_data: bool,
    previous: int,
    lines: list[str],
    skipped: list[tuple[int, int]],
) -> tuple[int, int | None]:
    """The loop of ``v2_record_lines``: raises ``_Irregular``, ``IndexError`` or ``ValueError`` (from a
    varint that is too long) on anything a well-formed batch does not have."""
    zz1 = _ZZ1
    zz2 = _ZZ2
    slow = _zigzag_slow
    append = lines.append
    n = len(data)
    base_offset = batch.base_offset
    head = "| offset: "
    stamp = f" {batch.timestamp_type}: "
    # LogAppendTime: every record shows the batch's max timestamp (the deltas are ignored, step 0).
    if batch.timestamp_type == "LogAppendTime":
        ts_base, ts_step = batch.max_timestamp, 0
    else:
        ts_base, ts_step = batch.base_timestamp, 1
    # No producer: every record shows sequence -1 (step 0). A sequence past 2^31 - 1 wraps to 0: rare
    # enough to leave to the general path, so any offset delta past ``room`` gives up.
    base_seq = batch.base_sequence
    if base_seq < 0:
        seq_base, seq_step, room = -1, 0, INT32_MAX
    else:
        seq_base, seq_step, room = base_seq, 1, INT32_MAX - base_seq
    header_keys: dict[bytes | tuple[bytes, bytes], str] = {}
    # The headers' layout of the last record read inline (see ``_layout``); none yet, which no bytes match.
    layout_1: bytes | None = None
    layout_2 = b""
    len_1 = skip_1 = len_2 = skip_2 = 0
    layout_keys = ""
    learning = _LAYOUTS_PER_BATCH
    first: int | None = None
    payload = ""
    for _ in range(batch.count or 0):
        # length (varint), then the end of the record
        u = data[pos]
        if u < 0x80:
            rec_end = pos + 1 + zz1[u]
            pos += 2  # and the attributes byte, unused
        else:
            u2 = data[pos + 1]
            if u2 < 0x80:
                rec_end = pos + 2 + zz2[(u2 << 8) | u]
                pos += 3
            else:
                length, pos = slow(data, pos, 5)
                rec_end = pos + length
                pos += 1
        # timestampDelta (varlong)
        u = data[pos]
        if u < 0x80:
            ts_delta = zz1[u]
            pos += 1
        else:
            u2 = data[pos + 1]
            if u2 < 0x80:
                ts_delta = zz2[(u2 << 8) | u]
                pos += 2
            else:
                ts_delta, pos = slow(data, pos, 10)
        # offsetDelta (varint)
        u = data[pos]
        if u < 0x80:
            delta = zz1[u]
            pos += 1
        else:
            u2 = data[pos + 1]
            if u2 < 0x80:
                delta = zz2[(u2 << 8) | u]
                pos += 2
            else:
                delta, pos = slow(data, pos, 5)
        if delta > room:
            raise _Irregular
        # key
        u = data[pos]
        if u < 0x80:
            key_size = zz1[u]
            pos += 1
        else:
            key_size, pos = slow(data, pos, 5)
        key_at = pos
        if key_size >= 0:
            pos += key_size
        elif key_size != -1:
            raise _Irregular
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
        value_at = pos
        if value_size >= 0:
            pos += value_size
        elif value_size != -1:
            raise _Irregular
        # headers: first, as the last record had them (same count, keys and value lengths); else the keys
        # of one or two read inline; else the long way
        u = data[pos]
        if u == 0:
            keys = ""
            pos += 1
        elif data[pos : pos + len_1] == layout_1 and data[pos + skip_1 : pos + skip_1 + len_2] == layout_2:
            keys = layout_keys
            pos += skip_1 + skip_2
        elif u == 2 or u == 4:
            # Read as if each key length were one byte and trust the reading only when the keys' bytes
            # are in the cache, which holds only keys that were (a miss reads them the long way).
            headers_at = pos
            end = pos + 2 + (data[pos + 1] >> 1)
            first_key = data[pos + 1 : end]
            pos = end
            u2 = data[pos]
            if u2 < 0x80:
                value_len = zz1[u2]
                pos += 1
            else:
                value_len, pos = slow(data, pos, 5)
            if value_len >= 0:
                pos += value_len
            elif value_len != -1:
                first_key = b""  # never cached
            if u == 2:
                found = header_keys.get(first_key)
                if found is None:
                    found, pos = _new_keys(header_keys, data, headers_at, rec_end, first_key)
                second_at = pos
            else:
                second_at = pos
                end = pos + 1 + (data[pos] >> 1)
                second_key = data[pos:end]
                pos = end
                u2 = data[pos]
                if u2 < 0x80:
                    value_len = zz1[u2]
                    pos += 1
                else:
                    value_len, pos = slow(data, pos, 5)
                if value_len >= 0:
                    pos += value_len
                elif value_len != -1:
                    second_key = b""
                found = header_keys.get((first_key, second_key))
                if found is None:
                    found, pos = _new_keys(header_keys, data, headers_at, rec_end, first_key, second_key)
            keys = found
            if learning and pos == rec_end:
                # The layout of this record's headers, for the next: the bytes up to each value (count,
                # key lengths, keys, value lengths) and the value lengths, when they are what the
                # inline reading assumed (a single byte each) and the record is well formed.
                learning -= 1
                layout = _layout(data, headers_at, second_at, rec_end, u == 4)
                if layout is not None:
                    layout_1, len_1, skip_1, layout_2, len_2, skip_2 = layout
                    layout_keys = keys
        else:
            keys, pos = _header_keys(data, pos, rec_end)
        if pos != rec_end:
            raise _Irregular
        offset = base_offset + delta
        if first is None:
            first = offset
        if offset != previous + 1 and previous != -1:
            skipped.append((previous, offset))
        previous = offset
        if print_data:
            # text() inline: a call per field costs more than the decoding of a short value
            payload = (
                f" payload: {data[value_at : value_at + value_size].decode('utf-8', 'replace')}"
                if value_size >= 0
                else ""
            )
            if key_size >= 0:
                payload = f" key: {data[key_at : key_at + key_size].decode('utf-8', 'replace')}{payload}"
        append(
            f"{head}{offset}{stamp}{ts_base + ts_delta * ts_step} keySize: {key_size} valueSize: {value_size}"
            f" sequence: {seq_base + delta * seq_step} headerKeys: [{keys}]{payload}"
        )
    if pos != n:
        raise _Irregular
    return previous, first


def _layout(
    data: bytes, headers_at: int, second_at: int, rec_end: int, two: bool
) -> tuple[bytes, int, int, bytes, int, int] | None:
    """The layout of the one or two headers of a well-formed record ending at ``rec_end``, the first at
    ``headers_at`` (its count byte) and the second at ``second_at``: for each, the bytes from its start up
    to its value (count byte, key length, key, value length), their number, and the bytes to step over to
    the next (the value included). ``None`` unless every length is a single byte, as the check of a
    layout assumes: a record whose bytes up to each value are the same then has the same headers."""
    first = _one_byte_key_then_value(data, headers_at + 1)
    if first is None:
        return None
    first_len = first[0] - headers_at
    first_skip = first_len + max(first[1], 0)
    second_len = second_skip = 0
    if two:
        second = _one_byte_key_then_value(data, second_at)
        if second is None or headers_at + first_skip != second_at:
            return None
        second_len = second[0] - second_at
        second_skip = second_len + max(second[1], 0)
    if headers_at + first_skip + second_skip != rec_end:
        return None
    return (
        data[headers_at : headers_at + first_len],
        first_len,
        first_skip,
        data[second_at : second_at + second_len],
        second_len,
        second_skip,
    )


def _one_byte_key_then_value(data: bytes, at: int) -> tuple[int, int] | None:
    """Where the value of the header at ``at`` starts and its length (-1: null), if its key length and
    value length are single bytes (and valid); else ``None``."""
    key_byte = data[at]
    if key_byte & 0x81:  # two bytes or more, or negative
        return None
    value_at = at + 1 + (key_byte >> 1)
    length_byte = data[value_at]
    if length_byte >= 0x80 or (length_byte & 1 and length_byte != 1):  # two bytes or more, or below -1
        return None
    return value_at + 1, _ZZ1[length_byte]


def _new_keys(
    cache: dict[bytes | tuple[bytes, bytes], str],
    data: bytes,
    headers_at: int,
    rec_end: int,
    first_key: bytes,
    second_key: bytes | None = None,
) -> tuple[str, int]:
    """The header keys of a record and the position after its headers, read the long way from
    ``headers_at``, for a record whose keys are not cached yet; cached, by the keys' encoded bytes (length
    byte included), when each key has the one-byte length the inline reading assumed."""
    keys, pos = _header_keys(data, headers_at, rec_end)
    encoded = (first_key,) if second_key is None else (first_key, second_key)
    if len(cache) < _HEADER_CACHE_LIMIT and all(k and not k[0] & 0x81 and len(k) == 1 + (k[0] >> 1) for k in encoded):
        cache[first_key if second_key is None else (first_key, second_key)] = keys
    return keys, pos


def _header_keys(data: bytes, pos: int, rec_end: int) -> tuple[str, int]:
    """The header keys (joined by commas) of a record whose headers start at ``data[pos]`` with their
    count, and the position after them; the rules of ``records._read_headers``, raising ``_Irregular``
    where it would raise ``BadRecord``."""
    count, pos = _zigzag_slow(data, pos, 5)
    if count < 0 or count > rec_end - pos:
        raise _Irregular
    keys: list[str] = []
    for _ in range(count):
        key_len, pos = _zigzag_slow(data, pos, 5)
        end = pos + key_len
        if key_len < 0 or end > rec_end:
            raise _Irregular
        keys.append(text(data[pos:end]))
        value_len, pos = _zigzag_slow(data, end, 5)
        if value_len == -1:
            continue
        if value_len < 0 or pos + value_len > rec_end:
            raise _Irregular
        pos += value_len
    return ",".join(keys), pos
