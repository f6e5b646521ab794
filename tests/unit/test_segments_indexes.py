"""The readers of Kafka's index and side files (broker/segments/indexes.py, sidefiles.py, checkpoints.py
and names.py).

Files are built in tmp_path: from bytes laid out per the format, and from copies of small files a Kafka 3.9
cluster wrote (kept here as hex). The expected kafka-dump-log lines were printed by Kafka's own tool
(``kafka.tools.DumpLogSegments``, 3.9.1) for those same bytes."""

from __future__ import annotations

import builtins
import random
import struct
import subprocess
import sys
from pathlib import Path

import crc32c
import pytest

from broker.segments.checkpoints import (
    EpochEntry,
    PartitionOffset,
    decode_kafka_uuid,
    parse_java_properties,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
)
from broker.segments.indexes import (
    DEFAULT_MAX_BYTES,
    BatchSummary,
    OffsetPosition,
    TimestampOffset,
    _largest_lower_bound,
    check_offset_index,
    check_time_index,
    dump_offset_index,
    dump_time_index,
    log_lookups,
    offset_index_mismatch_lines,
    read_offset_index,
    read_time_index,
    sanity_check,
    time_index_error_lines,
)
from broker.segments.names import (
    KRaftSnapshotName,
    PartitionDirName,
    SegmentFileName,
    kraft_snapshot_file_name,
    parse_kraft_snapshot_name,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)
from broker.segments.sidefiles import (
    AbortedTxn,
    dump_producer_snapshot,
    dump_txn_index,
    producer_snapshot_error_lines,
    read_producer_snapshot,
    read_txn_index,
)

REPO = Path(__file__).resolve().parents[2]
MIB10 = 10 * 1024 * 1024

# scanb-0's active segment 00000000000000289087 (Kafka 3.9.1): the six real entries of its .index and
# .timeindex; on disk both were preallocated to 10 MiB (10485760 and 10485756 bytes) with zeros.
ACTIVE_INDEX = bytes.fromhex(
    "00000ec10003ffa30000179c0006acfe0000196f000aacc700001e28000b7ff3000024bf000da27900002aa000109d26"
)
ACTIVE_TIMEINDEX = bytes.fromhex(
    "000001a20c0a28a500000ec1000001a20c0a28cd0000179c000001a20c0a29030000196f"
    "000001a20c0a294800001e28000001a20c0a2996000024bf000001a20c0a29fc00002aa0"
)
# Every batch of that segment's .log: (position, first offset, last offset, max timestamp).
ACTIVE_BATCHES = [
    BatchSummary(0, 289087, 291351, 1795498321986),
    BatchSummary(262051, 291352, 292864, 1795498322085),
    BatchSummary(437502, 292865, 295131, 1795498322125),
    BatchSummary(699591, 295132, 295598, 1795498322179),
    BatchSummary(753651, 295599, 296807, 1795498322248),
    BatchSummary(893561, 296808, 298494, 1795498322326),
    BatchSummary(1088806, 298495, 299999, 1795498322428),
]
ACTIVE_INDEX_DUMP = [
    "offset: 292864 position: 262051",
    "offset: 295131 position: 437502",
    "offset: 295598 position: 699591",
    "offset: 296807 position: 753651",
    "offset: 298494 position: 893561",
    "offset: 299999 position: 1088806",
]
ACTIVE_TIMEINDEX_DUMP = [
    "timestamp: 1795498322085 offset: 292864",
    "timestamp: 1795498322125 offset: 295131",
    "timestamp: 1795498322179 offset: 295598",
    "timestamp: 1795498322248 offset: 296807",
    "timestamp: 1795498322326 offset: 298494",
    "timestamp: 1795498322428 offset: 299999",
]
# tx1-0's .txnindex (one aborted transaction) and the producer snapshot scanb-0/00000000000000289087.snapshot.
TX1_TXNINDEX = bytes.fromhex("00000000000000000000000000000000000300000000000000050000000000000006")
SNAPSHOT_289087 = bytes.fromhex(
    "00014dab16090000000100000000000003e800000004693e000000000004693e000008da000001a20c0a280dffffffffffffffffffffffff"
)
SNAPSHOT_289087_DUMP = (
    "producerId: 1000 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
    "lastTimestamp: 1795498321933 firstSequence: 286820 lastSequence: 289086 lastOffset: 289086 "
    "offsetDelta: 2266 timestamp: 1795498321933"
)


def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def offset_entries(base: int, rows: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", offset - base, position) for offset, position in rows)


def time_entries(base: int, rows: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">qi", ts, offset - base) for ts, offset in rows)


def kinds(findings) -> list[str]:
    return [f.kind for f in findings]


# --- offset and time indexes ---------------------------------------------------------------------------


def test_it_reads_a_preallocated_offset_index_as_kafka_dump_log_prints_it(tmp_path):
    path = write(tmp_path / "00000000000000289087.index", ACTIVE_INDEX + bytes(MIB10 - len(ACTIVE_INDEX)))
    index = read_offset_index(path)
    assert index.base_offset == 289087
    assert len(index.entries) == 6
    assert index.entries[0] == OffsetPosition(292864, 262051)
    assert index.entries[-1] == OffsetPosition(299999, 1088806)
    assert index.slots == MIB10 // 8
    assert index.preallocated
    assert index.preallocated_bytes == MIB10 - 48
    assert not index.blank
    assert index.findings == []
    assert sanity_check(index) == []
    assert dump_offset_index(index) == ACTIVE_INDEX_DUMP
    assert dump_offset_index(index, verify_only=True) == []
    assert dump_offset_index(index, name="x/y.index", index_sanity_check=True) == ["x/y.index passed sanity check."]


def test_it_reads_a_preallocated_time_index_and_fails_the_sanity_check_as_kafka_does(tmp_path):
    size = MIB10 // 12 * 12
    path = write(tmp_path / "00000000000000289087.timeindex", ACTIVE_TIMEINDEX + bytes(size - len(ACTIVE_TIMEINDEX)))
    index = read_time_index(path)
    assert list(index.entries)[:2] == [TimestampOffset(1795498322085, 292864), TimestampOffset(1795498322125, 295131)]
    assert len(index.entries) == 6
    assert index.preallocated_bytes == size - 72
    assert index.findings == []
    assert dump_time_index(index) == ACTIVE_TIMEINDEX_DUMP
    # Kafka checks the file's last slot, zeros here: the message is the one the tool dies with.
    (failure,) = sanity_check(index)
    assert failure.kind == "sanity_last_timestamp"
    assert failure.message == (
        f"Corrupt time index found, time index file ({path}) has non-zero size but the last timestamp is 0 "
        "which is less than the first timestamp 1795498322085"
    )
    assert dump_time_index(index, index_sanity_check=True) == []
    assert sanity_check(index, whole_file=False) == []


def test_a_never_written_index_has_one_zero_entry_like_kafka_dump_log_shows(tmp_path):
    # tx1-0: 751 bytes of log, so no index entry was ever written; the files are all zeros.
    index = read_offset_index(write(tmp_path / "tx1-0" / "00000000000000000000.index", bytes(MIB10)))
    assert list(index.entries) == [OffsetPosition(0, 0)]
    assert index.blank
    assert index.preallocated_bytes == MIB10 - 8
    assert dump_offset_index(index) == ["offset: 0 position: 0"]
    at, holding = log_lookups([(0, 0, 1, 1795497642112)], index)
    checks = check_offset_index(index, at)
    assert [c.ok for c in checks] == [False]
    assert offset_index_mismatch_lines(checks, index.path) == [
        f"Mismatches in :{index.path}",
        "  Index offset: 0, log offset: 1",
    ]
    time_index = read_time_index(write(tmp_path / "tx1-0" / "00000000000000000000.timeindex", bytes(MIB10 // 12 * 12)))
    assert dump_time_index(time_index) == ["timestamp: 0 offset: 0"]
    assert time_index_error_lines(check_time_index(time_index, holding), time_index.path) == [
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 0, found log offset: 1",
    ]
    # An empty log: nothing holds offset 0.
    _, nothing = log_lookups([])
    assert time_index_error_lines(check_time_index(time_index, nothing), time_index.path)[1:] == [
        "Indexed offset: 0, found log offset: -1"
    ]


def test_the_checks_against_the_log_agree_with_kafka_dump_log_on_a_damaged_preallocated_index(tmp_path):
    index_bytes = bytearray(ACTIVE_INDEX)
    struct.pack_into(">i", index_bytes, 1 * 8 + 4, 699591)  # entry 1 points at the next entry's batch
    struct.pack_into(">i", index_bytes, 4 * 8, struct.unpack_from(">i", index_bytes, 4 * 8)[0] + 1)
    time_bytes = bytearray(ACTIVE_TIMEINDEX)
    struct.pack_into(">q", time_bytes, 1 * 12, 1795498322130)  # 5 ms more than the batch's max
    struct.pack_into(">q", time_bytes, 4 * 12, 1795498322179)  # backwards, and not the batch's max
    struct.pack_into(">i", time_bytes, 3 * 12 + 8, 296804 - 289087)  # inside a batch, not at its end
    index = read_offset_index(write(tmp_path / "00000000000000289087.index", bytes(index_bytes) + bytes(MIB10 - 48)))
    time_index = read_time_index(write(tmp_path / "00000000000000289087.timeindex", bytes(time_bytes)))
    at, holding = log_lookups(ACTIVE_BATCHES, index)

    checks = check_offset_index(index, at)
    assert [c.ok for c in checks] == [True, False, True, True, False, True]
    assert (checks[1].log_first_offset, checks[1].log_offset) == (295132, 295598)
    assert offset_index_mismatch_lines(checks, index.path) == [
        f"Mismatches in :{index.path}",
        "  Index offset: 298495, log offset: 298494",
        "  Index offset: 295131, log offset: 295598",
    ]
    time_checks = check_time_index(time_index, holding)
    assert [c.ok for c in time_checks] == [True, False, True, False, False, True]
    assert time_index_error_lines(time_checks, time_index.path) == [
        f"Found timestamp mismatch in :{time_index.path}",
        "  Index timestamp: 1795498322130, log timestamp: 1795498322125",
        "  Index timestamp: 1795498322179, log timestamp: 1795498322326",
        f"Found out of order timestamp in :{time_index.path}",
        "  Index timestamp: 1795498322179, Previously indexed timestamp: 1795498322248",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 296804, found log offset: 296807",
    ]
    assert kinds(time_index.findings) == ["timestamp_not_increasing"]


def test_a_damaged_trimmed_offset_index_steers_the_time_index_check_as_in_kafka_dump_log(tmp_path):
    index_bytes = bytearray(ACTIVE_INDEX)
    struct.pack_into(">i", index_bytes, 1 * 8 + 4, 699591)
    struct.pack_into(">i", index_bytes, 2 * 8 + 4, 893561)  # sends the search for 295598 past its batch
    struct.pack_into(">i", index_bytes, 4 * 8, 298495 - 289087)
    time_bytes = bytearray(ACTIVE_TIMEINDEX)
    struct.pack_into(">q", time_bytes, 1 * 12, 1795498322130)
    struct.pack_into(">q", time_bytes, 4 * 12, 1795498322179)
    struct.pack_into(">i", time_bytes, 3 * 12 + 8, 296804 - 289087)
    index = read_offset_index(write(tmp_path / "00000000000000289087.index", bytes(index_bytes)))
    time_index = read_time_index(write(tmp_path / "00000000000000289087.timeindex", bytes(time_bytes)))
    at, holding = log_lookups(ACTIVE_BATCHES, index)
    assert offset_index_mismatch_lines(check_offset_index(index, at), index.path)[1:] == [
        "  Index offset: 298495, log offset: 298494",
        "  Index offset: 295598, log offset: 298494",
        "  Index offset: 295131, log offset: 295598",
    ]
    assert time_index_error_lines(check_time_index(time_index, holding), time_index.path)[1:] == [
        "  Index timestamp: 1795498322179, log timestamp: 1795498322326",
        f"Found out of order timestamp in :{time_index.path}",
        "  Index timestamp: 1795498322179, Previously indexed timestamp: 1795498322248",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 295131, found log offset: 295598",
        "Indexed offset: 295598, found log offset: 298494",
        "Indexed offset: 296804, found log offset: 298494",
    ]
    # Without the offset index the search starts at the first batch: only real damage shows.
    _, plain = log_lookups(ACTIVE_BATCHES)
    assert [c.offset_found for c in check_time_index(time_index, plain)] == [True, True, True, False, True, True]


def test_the_base_offset_comes_from_the_name_unless_given(tmp_path):
    data = offset_entries(100, [(150, 4100), (199, 8300)])
    index = read_offset_index(write(tmp_path / "00000000000000000100.index", data))
    assert list(index.entries) == [(150, 4100), (199, 8300)]
    given = read_offset_index(tmp_path / "00000000000000000100.index", base_offset=0)
    assert list(given.entries) == [(50, 4100), (99, 8300)]
    odd = read_offset_index(write(tmp_path / "copy-of-an.index", data))
    assert odd.base_offset == 0
    assert kinds(odd.findings) == ["bad_file_name"]


def test_a_partial_entry_is_a_finding_and_fails_the_sanity_check(tmp_path):
    path = write(tmp_path / "00000000000000000000.index", offset_entries(0, [(10, 4200)]) + b"\x01\x02\x03")
    index = read_offset_index(path)
    assert list(index.entries) == [(10, 4200)]
    assert kinds(index.findings) == ["partial_entry"]
    assert index.findings[0].position == 8
    (failure,) = sanity_check(index)
    assert failure.message == (
        f"Index file {path} is corrupt, found 11 bytes which is neither positive nor a multiple of 8"
    )
    time_path = write(tmp_path / "00000000000000000000.timeindex", time_entries(0, [(1000, 10)]) + b"\x00" * 5)
    (time_failure,) = sanity_check(read_time_index(time_path))
    assert time_failure.message == (
        f"Time index file {time_path} is corrupt, found 17 bytes which is neither positive nor a multiple of 12"
    )


def test_an_empty_offset_index_says_so_and_an_empty_time_index_prints_nothing(tmp_path):
    tiny = read_offset_index(write(tmp_path / "00000000000000000000.index", b"\x00\x00\x00\x00"))
    assert len(tiny.entries) == 0
    assert tiny.slots == 0
    assert dump_offset_index(tiny, name="d/00000000000000000000.index") == ["d/00000000000000000000.index is empty."]
    assert dump_offset_index(tiny, index_sanity_check=True) == [f"{tiny.path} is empty."]
    empty = read_time_index(write(tmp_path / "00000000000000000000.timeindex", b""))
    assert dump_time_index(empty) == []
    assert dump_time_index(empty, index_sanity_check=True) == [f"{empty.path} passed sanity check."]
    assert empty.lookup(5) == (-1, 0)
    assert tiny.lookup(5) == (0, 0)


def test_entries_going_backwards_are_findings(tmp_path):
    rows = [(110, 5000), (130, 9000), (120, 12000), (140, 11000)]
    index = read_offset_index(write(tmp_path / "00000000000000000100.index", offset_entries(100, rows)))
    assert kinds(index.findings) == ["offset_not_increasing", "position_not_increasing"]
    assert (index.findings[0].position, index.findings[0].expected, index.findings[0].found) == (16, "> 130", "120")
    time_rows = [(1000, 110), (2000, 130), (1500, 140), (3000, 120)]
    time_index = read_time_index(write(tmp_path / "00000000000000000100.timeindex", time_entries(100, time_rows)))
    assert kinds(time_index.findings) == ["timestamp_not_increasing", "offset_backwards"]


def test_a_relative_offset_past_int32_is_a_negative_offset_and_fails_the_sanity_check(tmp_path):
    data = struct.pack(">ii", 7, 4100) + struct.pack(">Ii", 0xFFFFFFFB, 8200)
    path = write(tmp_path / "00000000000000000000.index", data)
    index = read_offset_index(path)
    assert list(index.entries) == [(7, 4100), (-5, 8200)]
    assert kinds(index.findings) == ["negative_relative_offset", "offset_not_increasing"]
    (failure,) = sanity_check(index)
    assert failure.message == (
        f"Corrupt index found, index file {path} has non-zero size but the last offset is -5 which is less than "
        "the base offset 0"
    )
    negative = read_offset_index(write(tmp_path / "00000000000000000001.index", struct.pack(">ii", 3, -1)))
    assert kinds(negative.findings) == ["negative_position"]


def test_data_after_the_first_zero_entry_is_reported_and_ignored(tmp_path):
    data = offset_entries(0, [(10, 4200), (20, 8400)]) + bytes(8) + offset_entries(0, [(40, 16000)]) + bytes(16)
    index = read_offset_index(write(tmp_path / "00000000000000000000.index", data))
    assert list(index.entries) == [(10, 4200), (20, 8400)]
    assert index.preallocated_bytes == 32
    assert kinds(index.findings) == ["data_after_end"]
    assert index.findings[0].position == 24


def test_an_oversized_file_is_read_only_up_to_the_cap(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    with open(path, "wb") as f:
        f.write(offset_entries(0, [(5, 4100), (9, 8200)]))
        f.truncate(1 << 30)  # sparse: 1 GiB claimed, nothing stored
    index = read_offset_index(path)
    assert index.file_size == 1 << 30
    assert index.bytes_read == DEFAULT_MAX_BYTES
    assert list(index.entries) == [(5, 4100), (9, 8200)]
    assert index.slots == (1 << 30) // 8
    assert index.last_slot == (0, 0)
    assert kinds(index.findings) == ["oversized"]
    assert index.findings[0].found == f"{1 << 30} bytes"
    small = read_time_index(
        write(tmp_path / "00000000000000000000.timeindex", time_entries(0, [(1, 1)] * 100)), max_bytes=120
    )
    assert small.bytes_read == 120
    assert kinds(small.findings)[0] == "oversized"


def test_findings_of_one_kind_are_capped(tmp_path):
    rows = [(1000 - i, 4096 * (i + 1)) for i in range(200)]
    index = read_offset_index(write(tmp_path / "00000000000000000000.index", offset_entries(0, rows)))
    backwards = [f for f in index.findings if f.kind == "offset_not_increasing"]
    assert len(backwards) == 51
    assert backwards[-1].message == "149 more findings of this kind not listed."


def test_lookups_find_the_greatest_entry_at_or_below_the_target(tmp_path):
    index = read_offset_index(
        write(tmp_path / "00000000000000000100.index", offset_entries(100, [(150, 4100), (199, 8300), (260, 12500)]))
    )
    assert index.lookup(99) == (100, 0)
    assert index.lookup(149) == (100, 0)
    assert index.lookup(150) == (150, 4100)
    assert index.lookup(250) == (199, 8300)
    assert index.lookup(10**12) == (260, 12500)
    time_index = read_time_index(
        write(tmp_path / "00000000000000000100.timeindex", time_entries(100, [(1000, 150), (2000, 199)]))
    )
    assert time_index.lookup(999) == (-1, 100)
    assert time_index.lookup(1000) == (1000, 150)
    assert time_index.lookup(1999) == (1000, 150)
    assert time_index.lookup(5000) == (2000, 199)


def test_kafkas_search_agrees_with_a_plain_bisection_on_sorted_keys():
    rng = random.Random(7)
    for _ in range(300):
        keys = sorted(rng.sample(range(10_000), rng.randint(0, 3000)))
        target = rng.randint(-5, 10_005)
        expected = max((i for i, k in enumerate(keys) if k <= target), default=-1)
        assert _largest_lower_bound(len(keys), keys.__getitem__, target, 8) == expected


def test_the_readers_open_files_read_only_and_never_raise_on_garbage(tmp_path, monkeypatch):
    modes: list[str] = []
    real_open = builtins.open

    def spy(file, mode="r", *args, **kwargs):
        modes.append(mode)
        return real_open(file, mode, *args, **kwargs)

    rng = random.Random(3)
    garbage = bytes(rng.getrandbits(8) for _ in range(5000))
    paths = {
        name: write(tmp_path / name, garbage)
        for name in ("00000000000000000000.index", "a.timeindex", "b.txnindex", "c.snapshot")
    }
    monkeypatch.setattr(builtins, "open", spy)
    assert read_offset_index(paths["00000000000000000000.index"]).findings
    assert read_time_index(paths["a.timeindex"]).findings
    assert read_txn_index(paths["b.txnindex"]).findings
    assert read_producer_snapshot(paths["c.snapshot"]).kafka_error is not None
    for name in ("checkpoint", "leader-epoch-checkpoint", "partition.metadata", "meta.properties"):
        write(tmp_path / name, garbage)
    read_offset_checkpoint(tmp_path / "checkpoint")
    read_leader_epoch_checkpoint(tmp_path / "leader-epoch-checkpoint")
    read_partition_metadata(tmp_path / "partition.metadata")
    read_meta_properties(tmp_path / "meta.properties")
    assert modes
    assert set(modes) == {"rb"}
    with pytest.raises(FileNotFoundError):
        read_offset_index(tmp_path / "00000000000000000009.index")


def test_the_segment_readers_import_neither_django_nor_the_console():
    code = (
        "import sys; import broker.segments.indexes, broker.segments.sidefiles, broker.segments.checkpoints, "
        "broker.segments.names; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'console')); "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


# --- .txnindex -------------------------------------------------------------------------------------------


def txn(*rows: tuple[int, int, int, int, int]) -> bytes:
    return b"".join(struct.pack(">hqqqq", *row) for row in rows)


def test_it_reads_a_real_transaction_index_as_kafka_dump_log_prints_it(tmp_path):
    index = read_txn_index(write(tmp_path / "00000000000000000000.txnindex", TX1_TXNINDEX))
    assert index.entries == [AbortedTxn(0, 0, 3, 5, 6)]
    assert index.findings == []
    assert index.kafka_error is None
    assert dump_txn_index(index) == ["version: 0 producerId: 0 firstOffset: 3 lastOffset: 5 lastStableOffset: 6"]


def test_transaction_index_damage_is_found(tmp_path):
    partial = read_txn_index(
        write(tmp_path / "00000000000000000100.txnindex", txn((0, 7, 100, 103, 104)) + b"\x00\x01")
    )
    assert kinds(partial.findings) == ["partial_entry"]
    assert len(partial.entries) == 1
    odd = read_txn_index(
        write(
            tmp_path / "00000000000000000300.txnindex",
            txn((0, 7, 10, 20, 21), (0, 8, 305, 304, 311), (0, 9, 306, 304, 312)),
        )
    )
    assert kinds(odd.findings) == [
        "below_base_offset",
        "first_after_last",
        "first_after_last",
        "last_offset_not_increasing",
    ]


def test_kafka_reads_only_the_first_byte_of_an_aborted_transactions_version(tmp_path):
    # Kafka 3.9 prints a stored version 1 as 0 and reads on; it refuses 256 (first byte 1) before printing.
    one = read_txn_index(
        write(tmp_path / "00000000000000000200.txnindex", txn((0, 7, 200, 203, 204), (1, 8, 205, 210, 211)))
    )
    assert kinds(one.findings) == ["unknown_version"]
    assert one.kafka_error is None
    assert dump_txn_index(one)[1] == "version: 0 producerId: 8 firstOffset: 205 lastOffset: 210 lastStableOffset: 211"
    path = write(tmp_path / "00000000000000000400.txnindex", txn((0, 7, 400, 403, 404), (256, 8, 405, 410, 411)))
    refused = read_txn_index(path)
    assert dump_txn_index(refused) == []
    assert refused.kafka_error == (
        f"Unexpected aborted transaction version 1 in transaction index {path}, current version is 0"
    )


# --- producer snapshots ----------------------------------------------------------------------------------

ENTRY_FORMAT = ">qhiqiqiq"


def snapshot(entries: list[tuple[int, ...]], count: int | None = None, version: int = 1) -> bytes:
    body = struct.pack(">i", len(entries) if count is None else count)
    body += b"".join(struct.pack(ENTRY_FORMAT, *e) for e in entries)
    return struct.pack(">hI", version, crc32c.crc32c(body)) + body


def test_it_reads_a_real_producer_snapshot_as_kafka_dump_log_prints_it(tmp_path):
    snap = read_producer_snapshot(write(tmp_path / "00000000000000289087.snapshot", SNAPSHOT_289087))
    assert snap.offset == 289087
    assert snap.version == 1
    assert snap.declared_count == 1
    assert snap.stored_crc == snap.computed_crc == 0x4DAB1609
    (entry,) = snap.entries
    assert (entry.producer_id, entry.epoch, entry.last_sequence, entry.last_offset) == (1000, 0, 289086, 289086)
    assert (entry.offset_delta, entry.coordinator_epoch, entry.current_txn_first_offset) == (2266, -1, -1)
    assert entry.first_sequence == 286820
    assert snap.findings == []
    assert snap.kafka_error is None
    assert dump_producer_snapshot(snap) == [SNAPSHOT_289087_DUMP]
    assert producer_snapshot_error_lines(snap) == []


def test_snapshot_lines_cover_open_transactions_wrapped_sequences_and_producers_without_batches(tmp_path):
    entries = [
        (2001, 3, 2, 300, 10, 1700000000123, 7, 295),
        (3002, 1, -1, -1, 0, 1700000000456, 2, -1),
    ]
    snap = read_producer_snapshot(write(tmp_path / "00000000000000000002.snapshot", snapshot(entries)))
    assert dump_producer_snapshot(snap) == [
        "producerId: 2001 producerEpoch: 3 coordinatorEpoch: 7 currentTxnFirstOffset: OptionalLong[295] "
        "lastTimestamp: 1700000000123 firstSequence: 2147483640 lastSequence: 2 lastOffset: 300 offsetDelta: 10 "
        "timestamp: 1700000000123",
        "producerId: 3002 producerEpoch: 1 coordinatorEpoch: 2 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000456 ",
    ]


@pytest.mark.parametrize(
    ("damage", "kind", "error"),
    [
        (
            lambda b: b[:-1] + b"\x01",
            "crc_mismatch",
            "Snapshot is corrupt (CRC is no longer valid). Stored crc: 1303057929. Computed crc: 314426971",
        ),
        (lambda b: b"\x00\x02" + b[2:], "unknown_version", "Snapshot contained an unknown file version 2"),
        (
            lambda b: b[:3],
            "truncated",
            "Snapshot failed schema validation: Error reading field 'crc': java.nio.BufferUnderflowException",
        ),
        (
            lambda b: b"",
            "truncated",
            "Snapshot failed schema validation: Error reading field 'version': java.nio.BufferUnderflowException",
        ),
        (
            lambda b: b[:7],
            "truncated",
            "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "java.nio.BufferUnderflowException",
        ),
        (
            lambda b: b[:-5],
            "count_mismatch",
            "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Error reading field 'current_txn_first_offset': java.nio.BufferUnderflowException",
        ),
        (
            lambda b: b[:6] + struct.pack(">i", 2) + b[10:],
            "count_mismatch",
            "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Error reading field 'producer_id': java.nio.BufferUnderflowException",
        ),
        (
            lambda b: b[:6] + struct.pack(">i", 100) + b[10:],
            "count_mismatch",
            "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Error reading array of size 100, only 46 bytes available",
        ),
        (
            lambda b: b[:6] + struct.pack(">i", -1) + b[10:],
            "negative_count",
            "Snapshot failed schema validation: Error reading field 'producer_entries': "
            "Array size -1 cannot be negative",
        ),
    ],
)
def test_snapshot_damage_gives_a_finding_and_kafkas_own_message(tmp_path, damage, kind, error):
    data = damage(SNAPSHOT_289087)
    if kind not in ("crc_mismatch", "truncated"):  # keep the CRC right, so only the damage shows
        data = data[:2] + struct.pack(">I", crc32c.crc32c(data[6:])) + data[6:]
    snap = read_producer_snapshot(write(tmp_path / "00000000000000000001.snapshot", data))
    assert kind in kinds(snap.findings)
    assert snap.kafka_error == error
    assert dump_producer_snapshot(snap) == []
    assert producer_snapshot_error_lines(snap) == [error]


def test_bytes_after_the_snapshot_entries_are_a_finding_though_kafka_reads_the_file(tmp_path):
    data = SNAPSHOT_289087 + b"\x00\x00\x00"
    data = data[:2] + struct.pack(">I", crc32c.crc32c(data[6:])) + data[6:]
    snap = read_producer_snapshot(write(tmp_path / "00000000000000000007.snapshot", data))
    assert kinds(snap.findings) == ["count_mismatch"]
    assert snap.kafka_error is None
    assert dump_producer_snapshot(snap) == [SNAPSHOT_289087_DUMP]


# --- text files ------------------------------------------------------------------------------------------

RECOVERY_POINTS = (
    b"0\n6\nscanb 0 289087\n__transaction_state 0 0\n__transaction_state 1 0\n__transaction_state 2 0\n"
    b"__transaction_state 3 0\ntx1 0 0\n"
)


def test_it_reads_the_log_dirs_offset_checkpoints(tmp_path):
    cp = read_offset_checkpoint(write(tmp_path / "recovery-point-offset-checkpoint", RECOVERY_POINTS))
    assert (cp.version, cp.declared_count, cp.findings) == (0, 6, [])
    assert cp.entries[0] == PartitionOffset("scanb", 0, 289087)
    assert cp.as_map()[("tx1", 0)] == 0
    for content in (b"", b"0\n", b"0\n0\n", b"0\r\n1\r\nt 0 5\r\n"):
        other = read_offset_checkpoint(write(tmp_path / "cleaner-offset-checkpoint", content))
        assert other.findings == [], content


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"1\n1\nt 0 5\n", "unknown_version"),
        (b"0\n2\nt 0 5\n", "count_mismatch"),
        (b"0\n1\nt 0 5\nu 1 7\n", "count_mismatch"),
        (b"0\n1\nt 0\n", "malformed_line"),
        (b"0\n1\nt x 5\n", "malformed_line"),
        (b"0\n1\n t 0 5\n", "malformed_line"),  # Java's split keeps the empty field before the space
        (b"0\n2\nt 0 5\n\n", "malformed_line"),
        (b"zero\n", "malformed_line"),
        (b"0\n2\nt 0 5\nt 0 6\n", "duplicate_partition"),
    ],
)
def test_offset_checkpoint_damage_is_found(tmp_path, content, kind):
    cp = read_offset_checkpoint(write(tmp_path / "replication-offset-checkpoint", content))
    assert kind in kinds(cp.findings)


def test_it_reads_leader_epoch_checkpoints(tmp_path):
    cp = read_leader_epoch_checkpoint(write(tmp_path / "leader-epoch-checkpoint", b"0\n1\n0 0\n"))
    assert cp.entries == [EpochEntry(0, 0)]
    assert cp.findings == []
    assert read_leader_epoch_checkpoint(write(tmp_path / "empty", b"")).entries == []
    bad = read_leader_epoch_checkpoint(write(tmp_path / "bad", b"0\n3\n2 100\n2 150\n3 120\n"))
    assert kinds(bad.findings) == ["epoch_not_increasing", "start_offset_backwards"]


def test_it_reads_partition_metadata(tmp_path):
    meta = read_partition_metadata(
        write(tmp_path / "partition.metadata", b"version: 0\ntopic_id: 9hu6ciE5SSmMd716fqO4Yg")
    )
    assert (meta.version, meta.topic_id, meta.findings) == (0, "9hu6ciE5SSmMd716fqO4Yg", [])
    assert decode_kafka_uuid("9hu6ciE5SSmMd716fqO4Yg") == bytes.fromhex("f61bba72213949298c77bd7a7ea3b862")


@pytest.mark.parametrize(
    ("content", "kind"),
    [
        (b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "bad_topic_id"),
        (b"version: 0\ntopic_id: not-a-uuid", "bad_topic_id"),
        (b"version: 0\n", "missing_line"),
        (b"version: 1\ntopic_id: 9hu6ciE5SSmMd716fqO4Yg", "unknown_version"),
        (b"version:0\ntopic_id: 9hu6ciE5SSmMd716fqO4Yg", "malformed_line"),
        (b"vers: 0\ntopic_id: 9hu6ciE5SSmMd716fqO4Yg", "unexpected_key"),
        (b"version: 0\ntopic_id: 9hu6ciE5SSmMd716fqO4Yg\nmore\n", "extra_lines"),
    ],
)
def test_partition_metadata_damage_is_found(tmp_path, content, kind):
    assert kind in kinds(read_partition_metadata(write(tmp_path / "partition.metadata", content)).findings)


def test_it_reads_meta_properties_of_both_modes(tmp_path):
    zk = read_meta_properties(
        write(
            tmp_path / "zk" / "meta.properties",
            b"#\n#Tue Nov 24 05:20:03 UTC 2026\nbroker.id=0\nversion=0\ncluster.id=D4TJS29GSx2e_iGj7gvqHw\n",
        )
    )
    assert (zk.mode, zk.node_id, zk.cluster_id, zk.directory_id, zk.findings) == (
        "zookeeper",
        0,
        "D4TJS29GSx2e_iGj7gvqHw",
        None,
        [],
    )
    kraft = read_meta_properties(
        write(
            tmp_path / "kraft" / "meta.properties",
            b"#\nnode.id=3\ndirectory.id=9hu6ciE5SSmMd716fqO4Yg\nversion=1\ncluster.id=MkU3OEVBNTcwNTJENDM2Qg\n",
        )
    )
    assert (kraft.mode, kraft.version, kraft.node_id, kraft.directory_id, kraft.findings) == (
        "kraft",
        1,
        3,
        "9hu6ciE5SSmMd716fqO4Yg",
        [],
    )
    missing = read_meta_properties(write(tmp_path / "m" / "meta.properties", b"version=1\nbroker.id=3\n"))
    assert kinds(missing.findings) == ["missing_node_id", "missing_cluster_id"]
    unknown = read_meta_properties(write(tmp_path / "u" / "meta.properties", b"version=2\ndirectory.id=xyz\n"))
    assert kinds(unknown.findings) == ["unknown_version", "bad_directory_id"]
    assert read_meta_properties(write(tmp_path / "n" / "meta.properties", b"broker.id=7\n")).mode == "zookeeper"


def test_java_properties_are_parsed_as_java_does():
    text = (
        "# comment\n! another\n  key1 = value one\nkey2:value2\nkey3 value3\n"
        "multi = a\\\n    b\\\n  c\nesc\\=aped=\\u0041\\tB\nempty\n"
    )
    assert parse_java_properties(text) == {
        "key1": "value one",
        "key2": "value2",
        "key3": "value3",
        "multi": "abc",
        "esc=aped": "A\tB",
        "empty": "",
    }
    problems: list[str] = []
    assert parse_java_properties("k=\\u12\n", problems) == {"k": "\\u12"}
    assert problems


# --- names -----------------------------------------------------------------------------------------------


def test_segment_file_names_are_taken_apart():
    assert parse_segment_file_name("00000000000000289087.log") == SegmentFileName(289087, ".log", None)
    assert parse_segment_file_name("00000000000000000042.timeindex.deleted") == SegmentFileName(
        42, ".timeindex", ".deleted"
    )
    assert parse_segment_file_name("00000000000000000000.log.cleaned") == SegmentFileName(0, ".log", ".cleaned")
    assert parse_segment_file_name("00000000000000000007.index.swap") == SegmentFileName(7, ".index", ".swap")
    assert parse_segment_file_name("00000000000000144472.snapshot") == SegmentFileName(144472, ".snapshot", None)
    for name in ("0042.log", "00000000000000000042.log.tmp", "leader-epoch-checkpoint", "99999999999999999999.log"):
        assert parse_segment_file_name(name) is None, name
    assert segment_file_name(42, ".index") == "00000000000000000042.index"


def test_partition_directory_names_are_taken_apart():
    assert parse_partition_dir_name("tx1-0") == PartitionDirName("tx1", 0, "live", None)
    assert parse_partition_dir_name("__transaction_state-3") == PartitionDirName("__transaction_state", 3, "live", None)
    assert parse_partition_dir_name("my-topic-12") == PartitionDirName("my-topic", 12, "live", None)
    uid = "1f2e3d4c5b6a79881f2e3d4c5b6a7988"
    assert parse_partition_dir_name(f"orders-2.{uid}-delete") == PartitionDirName("orders", 2, "delete", uid)
    assert parse_partition_dir_name(f"orders-2.{uid}-future") == PartitionDirName("orders", 2, "future", uid)
    assert parse_partition_dir_name(f"a.b-0.{uid}-stray") == PartitionDirName("a.b", 0, "stray", uid)
    for name in ("orders", "orders-", "-3", "orders-x", "orders-2-delete", "lost+found", f"orders.{uid}-delete"):
        assert parse_partition_dir_name(name) is None, name


def test_kraft_snapshot_names_are_taken_apart():
    assert parse_kraft_snapshot_name("00000000000000004321-0000000007.checkpoint") == KRaftSnapshotName(
        4321, 7, False, False
    )
    assert parse_kraft_snapshot_name("00000000000000004321-0000000007.checkpoint.part") == (4321, 7, True, False)
    assert parse_kraft_snapshot_name("00000000000000004321-0000000007.checkpoint.deleted") == (4321, 7, False, True)
    assert parse_kraft_snapshot_name("00000000000000004321-7.checkpoint") is None
    assert parse_kraft_snapshot_name("00000000000000004321.log") is None
    assert kraft_snapshot_file_name(42, 3) == "00000000000000000042-0000000003.checkpoint"
