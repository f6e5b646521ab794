"""Property-based: real segment bytes, mutated every way Hypothesis finds (cut, flipped, garbage inserted,
size fields made huge), never make the reader raise, loop or allocate without bound: it reports findings."""

from __future__ import annotations

import io
import struct
import time
import tracemalloc
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.segments import Finding, LogReader, scan_log
from broker.segments.dump import DumpOptions, dump
from tests.unit.test_segments_records import control_batch, legacy_messages, sample_rows, v2_batch

# One segment as Kafka could hold it: v2 batches in every codec (headers, tombstones, a 20 KB value,
# producer state), a commit marker, and legacy messages (plain and compressed wrappers).
SEGMENT = b"".join(
    [
        v2_batch(0, sample_rows(8), base_offset=0, producer=(5, 0, 0)),
        v2_batch(1, sample_rows(6), base_offset=8),
        v2_batch(2, sample_rows(6), base_offset=14),
        v2_batch(3, sample_rows(6), base_offset=20, producer=(5, 0, 8), transactional=True),
        control_batch(1, 26, struct.pack(">hi", 0, 3)),
        v2_batch(4, sample_rows(6), base_offset=27),
        # A v1 gzip wrapper holding relative offsets 0-2, placed at 35 as a broker places it (33-35).
        struct.pack(">q", 35) + legacy_messages(1, 1, [0, 1, 2])[8:],
        legacy_messages(0, 0, [36]),
    ]
)
MAX_SECONDS = 5.0
MAX_PEAK_BYTES = 64 * 1024 * 1024


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    data = bytearray(SEGMENT)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["cut", "flip", "insert", "size", "zero", "magic"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if kind == "cut":
            del data[at:]
        elif kind == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        elif kind == "size" and at + 12 <= len(data):
            struct.pack_into(">i", data, at + 8, draw(st.sampled_from([2**31 - 1, -1, 13, 0, 2**27, 61])))
        elif kind == "zero":
            data[at : at + draw(st.integers(1, 200))] = bytes(min(200, len(data) - at))
        elif kind == "magic" and at + 17 <= len(data):
            data[at + 16] = draw(st.integers(0, 255))
        if not data:
            break
    return bytes(data)


def read_everything(path: Path) -> int:
    """Every batch, every record and the dump of the file; the number of findings."""
    findings: list[Finding] = []
    reader = LogReader(path, findings=findings)
    for batch in reader:
        records, trouble = batch.records()
        findings.extend(trouble)
        # The CRC does not cover a batch's base offset: a damaged one passes the CRC, and the reader says so
        # (offset_below_base, offsets_backwards) at the batch's position rather than in the batch's records.
        told = bool(trouble) or any(f.position == batch.position for f in findings)
        assert all(r.offset >= 0 for r in records) or told or not batch.crc_valid
    scan = scan_log(path)
    out, err = io.StringIO(), io.StringIO()
    dump([str(path)], DumpOptions(print_data_log=True), out, err)
    assert out.getvalue().startswith(f"Dumping {path}\n")
    return len(findings) + len(scan.findings)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=damaged())
def test_damaged_segments_give_findings_never_exceptions(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    tracemalloc.start()
    started = time.monotonic()
    try:
        read_everything(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.monotonic() - started < MAX_SECONDS
    assert peak < MAX_PEAK_BYTES


def test_the_undamaged_segment_reads_clean(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(SEGMENT)
    assert read_everything(path) == 0


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=4096))
def test_random_bytes_never_raise(data: bytes) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "00000000000000000000.log"
        path.write_bytes(data)
        read_everything(path)
