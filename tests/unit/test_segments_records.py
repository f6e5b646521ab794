"""The segment reader (broker/segments): Kafka's published vectors, batches written by kafka-python's own
builders read back exactly for every codec and message format, and damaged files that give findings,
never exceptions. Pure logic on files in tmp_path; no cluster."""

from __future__ import annotations

import gzip
import random
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import crc32c
import lz4.frame  # type: ignore[import-untyped]
import pytest
import snappy  # type: ignore[import-untyped]
import zstandard
from kafka.codec import snappy_encode
from kafka.record import legacy_records
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecordsBuilder

from broker.segments import (
    Batch,
    CompressionError,
    Finding,
    LogReader,
    batch_from_bytes,
    decompress,
    encode_varint,
    find_batch_at_or_after,
    find_batch_by_offset,
    find_next_valid_batch,
    increment_sequence,
    iter_batches,
    read_batch_at,
    read_varint,
    read_varlong,
    scan_log,
    segment_base_offset,
)
from broker.segments import legacy as legacy_module
from broker.segments import records as records_module

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
T0 = 1_700_000_000_000
V2_HEADER_SIZE = 61


# --- building batches -------------------------------------------------------------------------------


def set_base_offset(batch: bytes | bytearray, base_offset: int) -> bytes:
    """A batch (or legacy entry) moved to another offset: the offset is not covered by any CRC."""
    out = bytearray(batch)
    struct.pack_into(">q", out, 0, base_offset)
    return bytes(out)


def v2_batch(
    codec: int,
    rows: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    base_offset: int = 0,
    producer: tuple[int, int, int] = (-1, -1, -1),
    transactional: bool = False,
    t0: int = T0,
) -> bytes:
    """A v2 batch written by kafka-python's MemoryRecordsBuilder (records 1 ms apart)."""
    pid, epoch, seq = producer
    builder = MemoryRecordsBuilder(
        magic=2,
        compression_type=codec,
        batch_size=1 << 20,
        transactional=transactional,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    for i, (key, value, headers) in enumerate(rows):
        assert builder.append(t0 + i, key, value, headers) is not None
    builder.close()
    return set_base_offset(builder.buffer(), base_offset)


def sample_rows(n: int = 20) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    """Compressible records with the awkward cases: headers (one with a null value), a null key, a
    tombstone, an empty value, a long value (multi-byte varints)."""
    rows: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = []
    for i in range(max(n, 6)):
        rows.append((f"key-{i}".encode(), f"value number {i} ".encode() * 5, []))
    rows[1] = (b"k1", b"with headers", [("trace", b"abc"), ("empty", None), ("ünï", b"")])
    rows[2] = (None, b"no key", [])
    rows[3] = (b"gone", None, [])
    rows[4] = (b"empty", b"", [])
    rows[5] = (b"big", b"x" * 20_000, [("h", b"v" * 300)])
    return rows[:n]


def hand_batch(
    records: bytes,
    base_offset: int = 0,
    last_delta: int = 0,
    count: int = 1,
    attributes: int = 0,
    base_ts: int = T0,
    max_ts: int = T0,
    producer: tuple[int, int, int] = (-1, -1, -1),
    leader_epoch: int = 0,
) -> bytes:
    """A v2 batch around already encoded (and, if the attributes say so, compressed) records, with a
    correct CRC-32C: how the tests write what kafka-python's builders cannot (control batches,
    LogAppendTime, delete horizons, damage inside a valid checksum)."""
    pid, epoch, seq = producer
    rest = struct.pack(">hiqqqhii", attributes, last_delta, base_ts, max_ts, pid, epoch, seq, count) + records
    crc = crc32c.crc32c(rest)
    return struct.pack(">qiibI", base_offset, len(rest) + 9, leader_epoch, 2, crc) + rest


def record_bytes(
    offset_delta: int,
    key: bytes | None,
    value: bytes | None,
    ts_delta: int = 0,
    headers: tuple[tuple[bytes, bytes | None], ...] = (),
) -> bytes:
    body = b"\x00" + encode_varint(ts_delta) + encode_varint(offset_delta)
    body += encode_varint(-1) if key is None else encode_varint(len(key)) + key
    body += encode_varint(-1) if value is None else encode_varint(len(value)) + value
    body += encode_varint(len(headers))
    for hk, hv in headers:
        body += encode_varint(len(hk)) + hk
        body += encode_varint(-1) if hv is None else encode_varint(len(hv)) + hv
    return encode_varint(len(body)) + body


def control_batch(type_id: int, base_offset: int, value: bytes | None, key_version: int = 0) -> bytes:
    key = struct.pack(">hh", key_version, type_id)
    return hand_batch(
        record_bytes(0, key, value), base_offset=base_offset, attributes=0x30, producer=(7, 1, -1), count=1
    )


def legacy_messages(magic: int, codec: int, offsets: list[int], t0: int = T0) -> bytes:
    """Legacy messages written by kafka-python's LegacyRecordBatchBuilder (a wrapper when compressed)."""
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for i, offset in enumerate(offsets):
        value = None if i == 2 else f"legacy value {i} ".encode() * 4
        key = None if i == 1 else f"key-{i}".encode()
        assert builder.append(offset, t0 + i, key, value) is not None
    return bytes(builder.build())


def rewrap(entry: bytes, attributes: int, timestamp: int) -> bytes:
    """A v1 wrapper message with other attributes and timestamp, its CRC-32 recomputed."""
    out = bytearray(entry)
    out[17] = attributes
    struct.pack_into(">q", out, 18, timestamp)
    struct.pack_into(">I", out, 12, zlib.crc32(out[16:]))
    return bytes(out)


def broken_hc_lz4(payload: bytes) -> bytes:
    """An LZ4 frame as Kafka's magic-0 producers wrote it: independent 64 KiB blocks, and a header
    checksum byte that does not match (python-lz4's frame decoder rejects it)."""
    frame = bytearray(
        lz4.frame.compress(payload, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, store_size=False)
    )
    frame[6] ^= 0xFF
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(bytes(frame))
    return bytes(frame)


def write(tmp_path: Path, *entries: bytes, name: str = "00000000000000000000.log") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(entries))
    return path


def read_all(path: Path, **kwargs: int) -> tuple[list[Batch], list[Finding], LogReader]:
    findings: list[Finding] = []
    reader = LogReader(path, findings=findings, **kwargs)
    return list(reader), findings, reader


def kinds(findings: list[Finding]) -> list[str]:
    return [f.kind for f in findings]


# --- Kafka's published vectors ------------------------------------------------------------------------


def test_crc32c_of_kafkas_vector() -> None:
    assert crc32c.crc32c(b"Some String") == 608512271


VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (INT_MAX, "feffffff0f"),
    (INT_MIN, "ffffffff0f"),
]


@pytest.mark.parametrize(("value", "encoded"), VARINTS)
def test_it_reads_and_writes_kafkas_varint_table(value: int, encoded: str) -> None:
    data = bytes.fromhex(encoded)
    assert encode_varint(value) == data
    assert read_varint(data, 0) == (value, len(data))
    assert read_varlong(data, 0) == (value, len(data))


@pytest.mark.parametrize("value", [2**63 - 1, -(2**63), 2**40, -(2**35) + 3, 1234567890123])
def test_it_round_trips_varlongs(value: int) -> None:
    data = encode_varint(value)
    assert read_varlong(b"\xaa" + data, 1) == (value, len(data) + 1)


def test_it_rejects_over_long_and_cut_off_varints() -> None:
    with pytest.raises(ValueError, match="longer than 5"):
        read_varint(bytes.fromhex("ffffffffff01"), 0)
    with pytest.raises(ValueError, match="longer than 10"):
        read_varlong(bytes.fromhex("ffffffffffffffffff8001"), 0)
    with pytest.raises(ValueError, match="past the end"):
        read_varint(bytes.fromhex("8080"), 0)
    # Five bytes whose high bits overflow an int are masked to 32 bits, as Java's int arithmetic does.
    assert read_varint(bytes.fromhex("ffffffff7f"), 0) == (INT_MIN, 5)


def test_it_wraps_sequences_past_int_max() -> None:
    assert increment_sequence(983, 22) == 1005
    assert increment_sequence(INT_MAX, 1) == 0
    assert increment_sequence(INT_MAX - 5, 10) == 4


def test_an_empty_batch_header_gives_kafkas_last_sequence() -> None:
    # DefaultRecordBatchTest.testWriteEmptyHeader: base 15, last 37, producer 23423/145, base sequence 983.
    data = hand_batch(b"", base_offset=15, last_delta=22, count=0, base_ts=-1, max_ts=T0, producer=(23423, 145, 983))
    findings: list[Finding] = []
    batch = batch_from_bytes(data, findings=findings)
    assert batch is not None
    assert (batch.base_offset, batch.last_offset, batch.count) == (15, 37, 0)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence) == (
        23423,
        145,
        983,
        1005,
    )
    assert batch.base_timestamp == -1
    assert batch.crc_valid
    assert batch.records() == ([], [])
    assert findings == []


def test_sequences_of_records_wrap_like_the_batchs() -> None:
    records = b"".join(record_bytes(d, b"k", b"v") for d in range(11))
    batch = batch_from_bytes(hand_batch(records, last_delta=10, count=11, producer=(1, 0, INT_MAX - 5)))
    assert batch is not None
    assert batch.last_sequence == 4
    got, findings = batch.records()
    assert [r.sequence for r in got][:6] == [INT_MAX - 5, INT_MAX - 4, INT_MAX - 3, INT_MAX - 2, INT_MAX - 1, INT_MAX]
    assert [r.sequence for r in got][6:] == [0, 1, 2, 3, 4]
    assert findings == []


def test_the_leader_epoch_is_outside_the_crc() -> None:
    data = bytearray(v2_batch(0, sample_rows(3)))
    struct.pack_into(">i", data, 12, 99)
    batch = batch_from_bytes(bytes(data))
    assert batch is not None
    assert batch.partition_leader_epoch == 99
    assert batch.crc_valid


# --- v2 batches read back exactly ---------------------------------------------------------------------


@pytest.mark.parametrize("codec_name", list(CODECS))
def test_it_reads_back_v2_batches_of_every_codec(tmp_path: Path, codec_name: str) -> None:
    codec = CODECS[codec_name]
    rows = sample_rows()
    first = v2_batch(codec, rows, base_offset=100, producer=(4321, 3, 50))
    second = v2_batch(codec, rows[:7], base_offset=120, producer=(4321, 3, 70))
    path = write(tmp_path, first, second, name="00000000000000000100.log")

    batches, findings, reader = read_all(path)

    assert findings == []
    assert reader.stop_reason == "end"
    assert reader.invalid_bytes_at_end == 0
    assert [b.position for b in batches] == [0, len(first)]
    assert [b.size for b in batches] == [len(first), len(second)]
    b = batches[0]
    assert (b.base_offset, b.last_offset, b.count, b.magic) == (100, 119, 20, 2)
    assert (b.codec, b.codec_name) == (codec, codec_name)
    assert b.crc_valid
    assert b.crc == struct.unpack_from(">I", first, 17)[0]
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) == (4321, 3, 50, 69)
    assert (b.base_timestamp, b.max_timestamp, b.timestamp_type) == (T0, T0 + 19, "CreateTime")
    assert not b.is_transactional
    assert not b.is_control
    assert b.delete_horizon_ms is None

    records, record_findings = b.records()
    assert record_findings == []
    assert [r.offset for r in records] == list(range(100, 120))
    assert [r.timestamp for r in records] == [T0 + i for i in range(20)]
    assert [(r.key, r.value, r.headers) for r in records] == rows
    assert [r.sequence for r in records] == list(range(50, 70))
    assert records[3].value_size == -1
    assert records[3].value is None
    assert records[2].key_size == -1
    assert records[2].key is None
    assert records[5].value_size == 20_000
    assert records[1].header_keys == ["trace", "empty", "ünï"]
    assert not any(r.is_control for r in records)
    assert [r.offset for r in batches[1].records()[0]] == list(range(120, 127))


def test_listing_batches_does_not_decompress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, v2_batch(CODECS["zstd"], sample_rows()), set_base_offset(legacy_messages(1, 1, [0, 1]), 21))

    def refuse(*args: object) -> bytes:
        raise AssertionError("decompressed while listing")

    monkeypatch.setattr(records_module, "decompress", refuse)
    monkeypatch.setattr(legacy_module, "decompress", refuse)
    batches, findings, _ = read_all(path)
    assert [b.codec_name for b in batches] == ["zstd", "gzip"]
    assert findings == []


def test_it_reads_transactional_batches_and_their_markers(tmp_path: Path) -> None:
    data = v2_batch(0, sample_rows(3), base_offset=10, producer=(7, 1, 0), transactional=True)
    commit = control_batch(1, 13, struct.pack(">hi", 0, 15))
    abort = control_batch(0, 14, struct.pack(">hi", 0, 3) + b"future fields")
    path = write(tmp_path, data, commit, abort)

    batches, findings, _ = read_all(path)

    assert findings == []
    assert [b.is_transactional for b in batches] == [True, True, True]
    assert [b.is_control for b in batches] == [False, True, True]
    markers = [b.records()[0][0] for b in batches[1:]]
    assert [(m.control_type, m.control_type_id, m.coordinator_epoch, m.offset) for m in markers] == [
        ("COMMIT", 1, 15, 13),
        ("ABORT", 0, 3, 14),
    ]
    assert all(m.is_control for m in markers)


@pytest.mark.parametrize(
    ("type_id", "name"),
    [
        (2, "LEADER_CHANGE"),
        (3, "SNAPSHOT_HEADER"),
        (4, "SNAPSHOT_FOOTER"),
        (5, "KRAFT_VERSION"),
        (6, "KRAFT_VOTERS"),
        (42, "UNKNOWN"),
    ],
)
def test_it_names_kraft_and_unknown_control_records(type_id: int, name: str) -> None:
    batch = batch_from_bytes(control_batch(type_id, 0, b"\x00\x00\x00"))
    assert batch is not None
    records, findings = batch.records()
    assert findings == []
    assert (records[0].control_type, records[0].control_type_id, records[0].coordinator_epoch) == (
        name,
        type_id,
        None,
    )


def test_malformed_control_records_give_findings() -> None:
    short_value = batch_from_bytes(control_batch(1, 0, b"\x00\x00\x00"))
    bad_version = batch_from_bytes(control_batch(0, 0, struct.pack(">hi", 0, 1), key_version=-1))
    short_key = batch_from_bytes(hand_batch(record_bytes(0, b"\x00", b""), attributes=0x20))
    assert short_value
    assert bad_version
    assert short_key
    records, findings = short_value.records()
    assert records[0].control_type == "COMMIT"
    assert records[0].coordinator_epoch is None
    assert kinds(findings) == ["bad_control_record"]
    assert "at least 6" in findings[0].message
    assert kinds(bad_version.records()[1]) == ["bad_control_record"]
    records, findings = short_key.records()
    assert records[0].control_type == "UNKNOWN"
    assert kinds(findings) == ["bad_control_record"]


def test_log_append_time_gives_every_record_the_max_timestamp() -> None:
    records = b"".join(record_bytes(d, b"k", b"v", ts_delta=d * 7) for d in range(3))
    batch = batch_from_bytes(hand_batch(records, last_delta=2, count=3, attributes=0x08, max_ts=T0 + 999))
    assert batch is not None
    assert batch.timestamp_type == "LogAppendTime"
    assert [r.timestamp for r in batch.records()[0]] == [T0 + 999] * 3


def test_a_delete_horizon_moves_the_base_timestamp() -> None:
    # MemoryRecordsBuilderTest.testRecordTimestampsWithDeleteHorizon: horizon 100, records at 50, 100, 150.
    records = b"".join(record_bytes(d, b"k", b"v", ts_delta=ts - 100) for d, ts in enumerate((50, 100, 150)))
    batch = batch_from_bytes(hand_batch(records, last_delta=2, count=3, attributes=0x40, base_ts=100, max_ts=150))
    assert batch is not None
    assert batch.delete_horizon_ms == 100
    assert [r.timestamp for r in batch.records()[0]] == [50, 100, 150]


def test_records_limit_stops_early_without_a_finding() -> None:
    batch = batch_from_bytes(v2_batch(CODECS["lz4"], sample_rows()))
    assert batch is not None
    records, findings = batch.records(limit=4)
    assert [r.offset for r in records] == [0, 1, 2, 3]
    assert findings == []


def test_as_dicts_hold_plain_values() -> None:
    batch = batch_from_bytes(v2_batch(0, sample_rows(2)))
    assert batch is not None
    d = batch.as_dict()
    assert d["base_offset"] == 0
    assert d["codec_name"] == "none"
    assert "raw" not in d
    f = Finding("x.log", 3, "crc_mismatch", "m", expected="1", found="2")
    assert f.as_dict() == {
        "file": "x.log",
        "position": 3,
        "kind": "crc_mismatch",
        "message": "m",
        "expected": "1",
        "found": "2",
    }


# --- legacy messages ----------------------------------------------------------------------------------


@pytest.mark.parametrize("codec_name", ["none", "gzip", "snappy", "lz4"])
@pytest.mark.parametrize("magic", [0, 1])
def test_it_reads_back_legacy_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, magic: int, codec_name: str
) -> None:
    codec = CODECS[codec_name]
    monkeypatch.setattr(legacy_records, "lz4_encode_old_kafka", broken_hc_lz4)
    base = 200
    if codec == 0:
        entries = legacy_messages(magic, 0, list(range(base, base + 5)))
    elif magic == 0:  # inner offsets absolute; the wrapper carries the last one
        entries = set_base_offset(legacy_messages(0, codec, list(range(base, base + 5))), base + 4)
    else:  # inner offsets relative, the wrapper's offset the absolute last one
        entries = set_base_offset(legacy_messages(1, codec, list(range(5))), base + 4)
    path = write(tmp_path, entries, name="00000000000000000200.log")

    batches, findings, reader = read_all(path)
    assert findings == []
    assert reader.invalid_bytes_at_end == 0
    records = []
    for b in batches:
        assert b.magic == magic
        assert b.crc_valid
        assert b.codec_name == codec_name
        assert b.timestamp_type == ("NoTimestampType" if magic == 0 else "CreateTime")
        assert b.producer_id == -1
        assert b.last_sequence == -1
        assert b.delete_horizon_ms is None
        got, record_findings = b.records()
        assert record_findings == []
        records += got

    if codec == 0:
        assert [b.last_offset for b in batches] == list(range(base, base + 5))
        assert [b.count for b in batches] == [1] * 5
    else:
        assert len(batches) == 1
        assert (batches[0].last_offset, batches[0].count) == (base + 4, None)
    assert [r.offset for r in records] == list(range(base, base + 5))
    expected_ts = [-1] * 5 if magic == 0 else [T0 + i for i in range(5)]
    assert [r.timestamp for r in records] == expected_ts
    assert records[1].key is None
    assert records[1].key_size == -1
    assert records[2].value is None
    assert records[2].value_size == -1
    assert records[3].value == b"legacy value 3 " * 4
    assert all(r.crc_valid for r in records)
    assert all(r.sequence == -1 and r.headers == [] for r in records)


def test_a_v1_wrapper_at_offset_zero_keeps_inner_offsets() -> None:
    # The librdkafka quirk: a wrapper offset of 0 means the inner offsets are used as they are.
    batch = batch_from_bytes(legacy_messages(1, CODECS["gzip"], [0, 1, 2]))
    assert batch is not None
    assert [r.offset for r in batch.records()[0]] == [0, 1, 2]


def test_a_log_append_time_wrapper_overrides_inner_timestamps() -> None:
    wrapper = set_base_offset(legacy_messages(1, CODECS["gzip"], [0, 1, 2]), 52)
    batch = batch_from_bytes(rewrap(wrapper, 0x08 | CODECS["gzip"], T0 + 5000))
    assert batch is not None
    assert batch.crc_valid
    assert (batch.timestamp_type, batch.max_timestamp) == ("LogAppendTime", T0 + 5000)
    records, findings = batch.records()
    assert findings == []
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in records] == [
        (50, T0 + 5000, "LogAppendTime"),
        (51, T0 + 5000, "LogAppendTime"),
        (52, T0 + 5000, "LogAppendTime"),
    ]


def test_nested_compression_is_reported_not_followed() -> None:
    inner_wrapper = legacy_messages(0, CODECS["gzip"], [0, 1])  # a set of one message: a gzip wrapper
    entry = _legacy_entry(0, 1, CODECS["gzip"], None, gzip.compress(inner_wrapper))
    batch = batch_from_bytes(entry)
    assert batch is not None
    records, findings = batch.records()
    assert kinds(findings) == ["nested_compression"]
    assert len(records) == 1
    assert records[0].value is not None


def _legacy_entry(magic: int, offset: int, attributes: int, key: bytes | None, value: bytes | None) -> bytes:
    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", T0) if magic == 1 else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_legacy_damage_gives_findings() -> None:
    zstd_wrapper = batch_from_bytes(_legacy_entry(1, 3, CODECS["zstd"], None, zstandard.compress(b"x")))
    null_wrapper = batch_from_bytes(_legacy_entry(1, 3, CODECS["gzip"], None, None))
    bad_key = bytearray(_legacy_entry(1, 3, 0, b"abc", b"def"))
    struct.pack_into(">i", bad_key, 30, 1000)
    struct.pack_into(">I", bad_key, 12, zlib.crc32(bad_key[16:]))
    cut_inner = batch_from_bytes(
        _legacy_entry(0, 3, CODECS["gzip"], None, gzip.compress(legacy_messages(0, 0, [3])[:-3]))
    )
    assert zstd_wrapper
    assert null_wrapper
    assert cut_inner
    assert kinds(zstd_wrapper.records()[1]) == ["decompression_failed"]
    assert kinds(null_wrapper.records()[1]) == ["bad_record"]
    broken = batch_from_bytes(bytes(bad_key))
    assert broken is not None
    assert broken.crc_valid
    assert kinds(broken.records()[1]) == ["bad_record"]
    assert kinds(cut_inner.records()[1]) == ["truncated", "bad_record"]
    # Bytes after the value but inside the message's size: Kafka ignores them; the record still reads.
    padded = bytearray(_legacy_entry(1, 3, 0, b"abc", b"def") + b"\x00\x00")
    struct.pack_into(">i", padded, 8, len(padded) - 12)
    struct.pack_into(">I", padded, 12, zlib.crc32(padded[16:]))
    batch = batch_from_bytes(bytes(padded))
    assert batch is not None
    records, findings = batch.records()
    assert [(r.key, r.value, r.crc_valid) for r in records] == [(b"abc", b"def", True)]
    assert kinds(findings) == ["trailing_bytes"]


# --- compression --------------------------------------------------------------------------------------


PAYLOAD = b"".join(f"line {i} of a compressible payload\n".encode() for i in range(20_000))


def test_snappy_reads_xerial_streams_concatenated_and_raw_blocks() -> None:
    xerial = snappy_encode(PAYLOAD)
    assert xerial[:8] == b"\x82SNAPPY\x00"
    assert decompress(2, xerial, len(PAYLOAD)) == PAYLOAD
    assert decompress(2, xerial + snappy_encode(b"tail"), len(PAYLOAD) + 4) == PAYLOAD + b"tail"
    assert decompress(2, snappy.compress(PAYLOAD), len(PAYLOAD)) == PAYLOAD


def test_lz4_reads_wrong_header_checksums_and_linked_blocks() -> None:
    assert decompress(3, broken_hc_lz4(PAYLOAD), len(PAYLOAD)) == PAYLOAD
    linked = lz4.frame.compress(PAYLOAD, block_linked=True, content_checksum=True, block_checksum=True)
    assert decompress(3, linked, len(PAYLOAD)) == PAYLOAD
    big_blocks = lz4.frame.compress(PAYLOAD, block_size=lz4.frame.BLOCKSIZE_MAX4MB, store_size=True)
    assert decompress(3, big_blocks, len(PAYLOAD)) == PAYLOAD


def test_zstd_and_gzip_read_concatenated_frames() -> None:
    frames = zstandard.ZstdCompressor(write_content_size=False).compress(PAYLOAD) + zstandard.compress(b"more")
    assert decompress(4, frames, len(PAYLOAD) + 4) == PAYLOAD + b"more"
    members = gzip.compress(PAYLOAD) + gzip.compress(b"more")
    assert decompress(1, members, len(PAYLOAD) + 4) == PAYLOAD + b"more"


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_is_bounded(codec: int) -> None:
    zeros = bytes(8 << 20)
    compressed = {
        1: gzip.compress(zeros),
        2: snappy_encode(zeros),
        3: lz4.frame.compress(zeros, block_linked=False),
        4: zstandard.compress(zeros),
    }[codec]
    assert len(compressed) < 1 << 20
    with pytest.raises(CompressionError, match="more than the 1000000 bytes"):
        decompress(codec, compressed, 1_000_000)
    assert decompress(codec, compressed, len(zeros)) == zeros


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_corrupt_or_cut_compressed_data_raises_compression_error(codec: int) -> None:
    compressed = {
        1: gzip.compress(PAYLOAD),
        2: snappy_encode(PAYLOAD),
        3: lz4.frame.compress(PAYLOAD),
        4: zstandard.compress(PAYLOAD),
    }[codec]
    with pytest.raises(CompressionError):
        decompress(codec, compressed[: len(compressed) // 2], 1 << 30)
    with pytest.raises(CompressionError):
        decompress(codec, b"\x04\x22\x4d\x18" + bytes(range(256)) * 4, 1 << 30)
    with pytest.raises(CompressionError, match="unknown compression codec 6"):
        decompress(6, compressed, 1 << 30)


# --- damaged files ------------------------------------------------------------------------------------


def good_file(tmp_path: Path, batches: int = 5, codec: int = 0) -> tuple[Path, list[bytes]]:
    entries = [v2_batch(codec, sample_rows(8), base_offset=i * 8) for i in range(batches)]
    return write(tmp_path, *entries), entries


def test_an_empty_file_has_no_batches_and_no_findings(tmp_path: Path) -> None:
    batches, findings, reader = read_all(write(tmp_path))
    assert (batches, findings, reader.stop_reason, reader.invalid_bytes_at_end) == ([], [], "end", 0)


def test_a_missing_file_is_a_finding(tmp_path: Path) -> None:
    batches, findings, reader = read_all(tmp_path / "nope.log")
    assert batches == []
    assert kinds(findings) == ["unreadable"]
    assert reader.stop_reason == "unreadable"


def test_a_file_cut_mid_batch_reports_a_partial_trailing_entry(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 3)
    whole = len(entries[0]) + len(entries[1])
    path.write_bytes(path.read_bytes()[: whole + 100])
    batches, findings, reader = read_all(path)
    assert len(batches) == 2
    assert kinds(findings) == ["truncated"]
    assert findings[0].position == whole + 8
    assert reader.invalid_bytes_at_end == 100
    assert reader.stop_reason == "truncated"
    scan = scan_log(path)
    assert (scan.batches, scan.end_position, scan.invalid_bytes_at_end, scan.is_clean) == (2, whole, 100, False)


def test_a_few_bytes_after_the_last_batch_are_invalid_bytes(tmp_path: Path) -> None:
    path, _entries = good_file(tmp_path, 2)
    path.write_bytes(path.read_bytes() + b"\x01\x02\x03")
    batches, findings, reader = read_all(path)
    assert len(batches) == 2
    assert kinds(findings) == ["truncated"]
    assert reader.invalid_bytes_at_end == 3


def test_a_flipped_byte_fails_the_crc_and_reading_goes_on(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 3)
    data = bytearray(path.read_bytes())
    data[len(entries[0]) + 100] ^= 0x40
    path.write_bytes(bytes(data))
    batches, findings, _ = read_all(path)
    assert [b.crc_valid for b in batches] == [True, False, True]
    assert kinds(findings) == ["crc_mismatch"]
    assert findings[0].position == len(entries[0]) + 17
    assert findings[0].expected != findings[0].found


def test_a_huge_size_field_stops_with_a_finding(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 3)
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, len(entries[0]) + 8, 0x7FFF0000)
    path.write_bytes(bytes(data))
    batches, findings, reader = read_all(path)
    assert len(batches) == 1
    assert kinds(findings) == ["size_past_end"]
    assert reader.stop_reason == "size_past_end"
    assert reader.invalid_bytes_at_end == len(data) - len(entries[0])
    assert find_next_valid_batch(path, len(entries[0]) + 1) == len(entries[0]) + len(entries[1])


def test_a_size_below_the_minimum_stops_with_a_finding(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 2)
    data = bytearray(path.read_bytes())
    struct.pack_into(">i", data, len(entries[0]) + 8, 5)
    path.write_bytes(bytes(data))
    batches, findings, reader = read_all(path)
    assert len(batches) == 1
    assert kinds(findings) == ["bad_size"]
    assert reader.stop_reason == "bad_size"


def test_a_zero_filled_tail_is_the_end(tmp_path: Path) -> None:
    path, _entries = good_file(tmp_path, 2)
    path.write_bytes(path.read_bytes() + bytes(10_000))
    batches, findings, reader = read_all(path)
    assert len(batches) == 2
    assert findings == []
    assert reader.stop_reason == "preallocated"
    assert reader.invalid_bytes_at_end == 10_000
    path.write_bytes(path.read_bytes()[:-9_990])  # ten zeros: fewer than a header
    assert read_all(path)[1] == []


def test_data_after_a_zero_filled_gap_is_reported(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 2)
    path.write_bytes(entries[0] + bytes(4096) + entries[1])
    batches, findings, reader = read_all(path)
    assert len(batches) == 1
    assert reader.stop_reason == "preallocated"
    assert kinds(findings) == ["data_after_zeros"]
    assert findings[0].position == len(entries[0]) + 4096 + 7  # the first non-zero byte of the next batch
    assert find_next_valid_batch(path, len(entries[0])) == len(entries[0]) + 4096


def test_an_unknown_magic_is_stepped_over(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 3)
    data = bytearray(path.read_bytes())
    data[len(entries[0]) + 16] = 7
    path.write_bytes(bytes(data))
    batches, findings, reader = read_all(path)
    assert [b.base_offset for b in batches] == [0, 16]
    assert kinds(findings) == ["bad_magic"]
    assert findings[0].found == "7"
    assert reader.invalid_bytes_at_end == 0


def test_offsets_going_backwards_and_below_the_base_are_reported(tmp_path: Path) -> None:
    rows = sample_rows(4)
    path = write(
        tmp_path,
        v2_batch(0, rows, base_offset=10),
        v2_batch(0, rows, base_offset=12),
        name="00000000000000000011.log",
    )
    _, findings, _ = read_all(path)
    assert kinds(findings) == ["offset_below_base", "offsets_backwards"]
    assert findings[1].expected == "> 13"
    assert findings[1].found == "12"


def test_damage_inside_a_valid_crc_gives_record_findings() -> None:
    good = record_bytes(0, b"k", b"value")
    # A record whose length claims two bytes more than its fields use, then a good one.
    padded = bytearray(record_bytes(1, b"k", b"v"))
    padded[0] += 4
    padded += b"\x00\x00"
    records = good + bytes(padded) + record_bytes(2, b"k", b"v")
    batch = batch_from_bytes(hand_batch(records, last_delta=2, count=3))
    assert batch is not None
    assert batch.crc_valid
    got, findings = batch.records()
    assert [r.offset for r in got] == [0, 2]
    assert kinds(findings) == ["bad_record"]
    assert findings[0].position == V2_HEADER_SIZE + len(good)

    too_few = batch_from_bytes(hand_batch(good, count=3))
    too_many = batch_from_bytes(hand_batch(good + b"\x00\x01\x02", count=1))
    assert too_few
    assert too_many
    assert kinds(too_few.records()[1]) == ["record_count_mismatch"]
    assert kinds(too_many.records()[1]) == ["trailing_bytes"]

    garbage = batch_from_bytes(hand_batch(b"\x00garbage that is not lz4", attributes=3, count=1))
    assert garbage is not None
    assert garbage.records() == ([], garbage.records()[1])
    assert kinds(garbage.records()[1]) == ["decompression_failed"]


def test_a_batch_shorter_than_a_v2_header_is_stepped_over(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 1)
    short = struct.pack(">qiib", 99, 30, 0, 2) + bytes(30 - 5)
    path.write_bytes(entries[0] + short + entries[0])
    batches, findings, _ = read_all(path)
    assert len(batches) == 2
    assert kinds(findings) == ["bad_size", "offsets_backwards"]


@pytest.mark.parametrize("seed", range(6))
def test_random_bytes_and_mutations_never_raise(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(rng.randbytes(rng.randrange(0, 5000)))
    for batch in iter_batches(path, findings=[]):
        batch.records()
    (tmp_path / "good").mkdir()
    good, _ = good_file(tmp_path / "good", 4, codec=seed % 5)
    original = good.read_bytes()
    for _ in range(60):
        data = bytearray(original)
        for _ in range(rng.randrange(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        path.write_bytes(bytes(data))
        findings: list[Finding] = []
        reader = LogReader(path, findings=findings)
        for batch in reader:
            batch.records(max_bytes=1 << 20)
        assert reader.stop_reason is not None
        assert 0 <= reader.invalid_bytes_at_end <= len(data)


def test_random_record_sections_never_raise() -> None:
    rng = random.Random(1)
    for _ in range(300):
        batch = batch_from_bytes(hand_batch(rng.randbytes(rng.randrange(0, 200)), count=rng.randrange(0, 9)))
        assert batch is not None
        batch.records()
        control = batch_from_bytes(hand_batch(rng.randbytes(rng.randrange(0, 50)), attributes=0x20, count=1))
        assert control is not None
        control.records()
        legacy = batch_from_bytes(_legacy_entry(1, 0, rng.randrange(0, 4), None, rng.randbytes(rng.randrange(60))))
        assert legacy is not None
        legacy.records()


# --- reading ranges and finding batches ---------------------------------------------------------------


def test_small_chunks_read_the_same_as_large_ones(tmp_path: Path) -> None:
    path, _ = good_file(tmp_path, 6, codec=CODECS["gzip"])
    big = [b.as_dict() for b in read_all(path)[0]]
    for chunk in (17, 100, 1000):
        assert [b.as_dict() for b in read_all(path, chunk_size=chunk)[0]] == big


def test_a_range_is_read_without_reporting_its_cut_end(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 4)
    start = len(entries[0])
    findings: list[Finding] = []
    reader = LogReader(path, start, start + len(entries[1]) + 50, findings)
    assert [b.base_offset for b in reader] == [8]
    assert findings == []
    assert reader.stop_reason == "limit"
    assert reader.valid_bytes == len(entries[1])


def test_finding_batches_by_position_and_offset(tmp_path: Path) -> None:
    path, entries = good_file(tmp_path, 5)
    positions = [sum(len(e) for e in entries[:i]) for i in range(5)]
    assert read_batch_at(path, positions[2]) is not None
    assert read_batch_at(path, positions[2]).base_offset == 16  # type: ignore[union-attr]
    found = find_batch_at_or_after(path, positions[2] + 1)
    assert found is not None
    assert found.position == positions[3]
    assert find_batch_at_or_after(path, positions[1], hint=positions[1]).base_offset == 8  # type: ignore[union-attr]
    assert find_batch_at_or_after(path, path.stat().st_size) is None
    assert find_batch_by_offset(path, 21).base_offset == 16  # type: ignore[union-attr]
    assert find_batch_by_offset(path, 0).position == 0  # type: ignore[union-attr]
    assert find_batch_by_offset(path, 40) is None
    findings: list[Finding] = []
    assert read_batch_at(path, positions[2] + 3, findings) is None
    assert findings


def test_segment_base_offsets_come_from_file_names() -> None:
    assert segment_base_offset("/x/00000000000000001234.log") == 1234
    assert segment_base_offset("00000000000000001234.log.deleted") == 1234
    assert segment_base_offset("00000000000000001234-0000000001.checkpoint") is None
    assert segment_base_offset("foo.log") is None


def test_the_package_imports_neither_django_nor_the_console() -> None:
    code = (
        "import sys, broker.segments\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'console')]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
