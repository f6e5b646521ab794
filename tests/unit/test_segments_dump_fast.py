"""The fast ways of the deep dump (broker/segments/loglines, logpass, parallel) print exactly what the
general way prints: the fast record lines against the decoded records on every kind of batch and on
damaged segments, and the dump in several processes against one pass, cuts through gaps in the offsets,
damage and failing children included. Pure logic on files in tmp_path; no cluster."""

from __future__ import annotations

import io
import os
import random
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from broker.segments import Batch, loglines, logpass, parallel
from broker.segments import dump as dump_module
from broker.segments.dump import DumpOptions, dump
from broker.segments.logpass import LineOptions, LogPass
from tests.unit.test_segments_fuzz import SEGMENT, damaged
from tests.unit.test_segments_records import (
    T0,
    control_batch,
    hand_batch,
    legacy_messages,
    record_bytes,
    sample_rows,
    set_base_offset,
    v2_batch,
)

DEEP = DumpOptions(deep_iteration=True, jobs=1)
DATA = DumpOptions(print_data_log=True, jobs=1)
SKIP = DumpOptions(print_data_log=True, skip_record_metadata=True, jobs=1)
ALL_OPTIONS = {"deep": DEEP, "data": DATA, "skip": SKIP}
INT_MAX = 2**31 - 1


def run_dump(path: Path, options: DumpOptions) -> tuple[str, str, int]:
    out, err = io.StringIO(), io.StringIO()
    status = dump([str(path)], options, out, err)
    return out.getvalue(), err.getvalue(), status


def general_dump(path: Path, options: DumpOptions, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, int]:
    """The dump with the fast record lines turned off: every batch decoded into records."""
    with monkeypatch.context() as patch:
        patch.setattr(logpass, "v2_record_lines", lambda *args: None)
        return run_dump(path, options)


def odd_records() -> bytes:
    """Records every field of which takes the less common form: multi-byte lengths, keys and values
    (a 300-byte header key, a 100-byte header value), three headers, a null header value, non-ASCII and
    invalid UTF-8, negative timestamp deltas, gaps in the offsets."""
    rows = [
        record_bytes(0, b"k" * 70, b"v" * 200, ts_delta=-5, headers=((b"a" * 300, b"x"),)),
        record_bytes(1, None, b"\xff\xfe broken \xc3", headers=((b"one", None), (b"two", b""), (b"three", b"3"))),
        record_bytes(3, "ünï".encode(), None, ts_delta=300, headers=(("ключ".encode(), b"v" * 100),)),
        record_bytes(4, b"", b"", ts_delta=20_000_000, headers=((b"k", b"y" * 70), (b"\xe9", None))),
        record_bytes(9, b"key", b"x" * 20_000, headers=((b"h1", b"1"), (b"h2", b"2"))),
    ]
    return b"".join(rows)


def odd_segment() -> bytes:
    """Batches of every kind the fast path takes or leaves to the general one."""
    records = odd_records()
    return b"".join(
        [v2_batch(codec, sample_rows(12), base_offset=12 * codec, producer=(9, 2, 12 * codec)) for codec in range(5)]
        + [
            hand_batch(records, base_offset=60, last_delta=9, count=5, producer=(9, 2, 60)),
            # LogAppendTime, no producer; a sequence wrapping past 2^31 - 1.
            hand_batch(records, base_offset=70, last_delta=9, count=5, attributes=0x08, max_ts=T0 + 77),
            hand_batch(records, base_offset=80, last_delta=9, count=5, producer=(9, 2, INT_MAX - 3)),
            hand_batch(records, base_offset=90, last_delta=9, count=5, attributes=0x40, base_ts=T0 - 10),
            v2_batch(3, sample_rows(8), base_offset=100, producer=(5, 0, 0), transactional=True),
            control_batch(1, 108, struct.pack(">hi", 0, 4)),
            # Damage inside a valid CRC: a record longer than its fields, then too few records.
            hand_batch(record_bytes(0, b"k", b"v") + b"\x00", base_offset=109, count=1),
            hand_batch(record_bytes(0, b"k", b"v"), base_offset=110, count=2, last_delta=1),
            set_base_offset(legacy_messages(1, 1, [0, 1, 2]), 114),
            legacy_messages(0, 0, [115]),
            v2_batch(0, [(b"k", b"after legacy", [])], base_offset=116),
        ]
    )


@pytest.mark.parametrize("name", list(ALL_OPTIONS))
def test_the_fast_record_lines_print_what_the_decoded_records_print(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(odd_segment())
    options = ALL_OPTIONS[name]
    fast = run_dump(path, options)
    assert fast == general_dump(path, options, monkeypatch)
    assert "Non-consecutive offsets" in fast[1]
    if name != "skip":
        assert (
            "| offset: 63 CreateTime: 1700000000300 keySize: 5 valueSize: -1 sequence: 63 headerKeys: [ключ]"
            in (fast[0])
        )


def test_the_fast_path_takes_ordinary_batches_and_leaves_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(odd_segment())
    taken: list[int] = []
    fast_lines = loglines.v2_record_lines

    def spy(batch: Batch, *args: Any) -> tuple[int, int | None] | None:
        done = fast_lines(batch, *args)
        if done is not None:
            taken.append(batch.base_offset)
        return done

    monkeypatch.setattr(logpass, "v2_record_lines", spy)
    run_dump(path, DATA)
    # Not: the wrapping sequence (80), the control batch (108), the damaged ones (109, 110), legacy (114, 115).
    assert taken == [0, 12, 24, 36, 48, 60, 70, 90, 100, 116]


def header_shapes(seed: int, count: int = 300) -> bytes:
    """A batch whose records' headers change shape now and then, as the fast path's layout check must
    notice: the same keys with other value lengths, one header or two with the same first key, null and
    empty values, long keys and values (lengths of two bytes), three headers, none."""
    rng = random.Random(seed)
    keys = [b"trace", b"span", b"k" * 70, "ü".encode(), b""]
    shapes = []
    for _ in range(8):
        shape = []
        for _ in range(rng.choice([0, 1, 2, 2, 2, 3])):
            length = rng.choice([None, 0, 1, 16, 16, 63, 64, 200])
            shape.append((rng.choice(keys), length))
        shapes.append(shape)
    rows = []
    shape = shapes[0]
    for i in range(count):
        if rng.random() < 0.05:
            shape = rng.choice(shapes)
        headers = tuple((key, None if length is None else bytes([48 + i % 10]) * length) for key, length in shape)
        rows.append(record_bytes(i, b"key-%d" % i, b"value %d" % i, ts_delta=i, headers=headers))
    return hand_batch(b"".join(rows), last_delta=count - 1, count=count, producer=(1, 0, 0))


@pytest.mark.parametrize("seed", range(8))
def test_headers_changing_shape_are_printed_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(header_shapes(seed))
    for options in (DEEP, DATA):
        assert run_dump(path, options) == general_dump(path, options, monkeypatch)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=damaged())
def test_on_damaged_segments_the_fast_path_prints_what_the_general_path_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes
) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    for options in (DEEP, DATA):
        assert run_dump(path, options) == general_dump(path, options, monkeypatch)


def test_the_undamaged_fuzz_segment_is_printed_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(SEGMENT)
    assert run_dump(path, DATA) == general_dump(path, DATA, monkeypatch)


# --- several processes ----------------------------------------------------------------------------------


def many_batches(count: int = 60, gap_every: int = 7) -> list[bytes]:
    """Batches of every codec, 10 records each, with a gap in the offsets before every ``gap_every``-th."""
    batches = []
    offset = 0
    for i in range(count):
        if i and i % gap_every == 0:
            offset += 5
        batches.append(v2_batch(i % 5, sample_rows(10), base_offset=offset, producer=(3, 0, offset)))
        offset += 10
    return batches


@pytest.fixture
def small_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut files of a few hundred kilobytes as if they were large."""
    monkeypatch.setattr(parallel, "MIN_RANGE_BYTES", 1024)


def jobs(options: DumpOptions, n: int) -> DumpOptions:
    return DumpOptions(
        deep_iteration=options.deep_iteration,
        print_data_log=options.print_data_log,
        skip_record_metadata=options.skip_record_metadata,
        jobs=n,
    )


def assert_parallel_is_one_pass(path: Path, n: int = 2) -> tuple[str, str]:
    for options in ALL_OPTIONS.values():
        one = run_dump(path, options)
        assert run_dump(path, jobs(options, n)) == one
    return one[0], one[1]


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("n", [2, 3, 5])
def test_several_processes_print_exactly_one_pass(tmp_path: Path, n: int) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(many_batches()) + b"\x01\x02\x03")  # and invalid bytes at the end
    assert len(parallel.find_cuts(str(path), path.stat().st_size, n)) == n - 1
    out, err = assert_parallel_is_one_pass(path, n)
    assert out.endswith("Found 3 invalid bytes at the end of 00000000000000000000.log\n")
    assert err.count(" is followed by ") == 8


def batch_at_cut(path: Path, batches: list[bytes]) -> int:
    """The index of the batch the (first) cut of ``path`` into two ranges falls on."""
    path.write_bytes(b"".join(batches))
    (cut, _), *_ = parallel.find_cuts(str(path), path.stat().st_size, 2)
    starts = [sum(map(len, batches[:i])) for i in range(len(batches))]
    return starts.index(cut)


@pytest.mark.usefixtures("small_ranges")
def test_a_gap_in_the_offsets_right_at_a_cut_is_reported_once(tmp_path: Path) -> None:
    batches = many_batches(40, gap_every=1000)
    path = tmp_path / "00000000000000000000.log"
    at_cut = batch_at_cut(path, batches)
    for i in range(at_cut, len(batches)):  # from the cut on, 1000 offsets further: one gap, at the cut
        batches[i] = set_base_offset(batches[i], struct.unpack_from(">q", batches[i])[0] + 1000)
    path.write_bytes(b"".join(batches))
    _, err = assert_parallel_is_one_pass(path)
    last_before = struct.unpack_from(">q", batches[at_cut - 1])[0] + 9
    assert err.count(" is followed by ") == 1
    assert f"  {last_before} is followed by {last_before + 1001}" in err


@pytest.mark.usefixtures("small_ranges")
def test_offsets_going_backwards_across_a_cut_are_found_as_in_one_pass(tmp_path: Path) -> None:
    batches = many_batches(40)
    path = tmp_path / "00000000000000000005.log"
    at_cut = batch_at_cut(path, batches)
    batches[at_cut] = set_base_offset(batches[at_cut], 3)  # backwards, and below the file name's base offset
    path.write_bytes(b"".join(batches))
    _, err = assert_parallel_is_one_pass(path)
    assert "offsets_backwards" not in err  # findings are printed as sentences
    assert "not after the previous batch's last offset" in err


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("damage", ["crc", "magic", "size", "short"])
def test_damage_before_a_cut_gives_one_pass_output(tmp_path: Path, damage: str) -> None:
    batches = many_batches(40)
    data = bytearray(b"".join(batches))
    at = sum(map(len, batches[:5]))
    if damage == "crc":
        data[at + 100] ^= 0xFF
    elif damage == "magic":  # stepped over: the tool's positions then lag behind the file's
        data[at + 16] = 7
    elif damage == "size":  # reading stops there
        struct.pack_into(">i", data, at + 8, 3)
    else:  # a batch too short for a v2 header, stepped over
        data[at:at] = struct.pack(">qiib", 99, 30, 0, 2) + bytes(25)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    assert_parallel_is_one_pass(path)


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.parametrize("cut", ["inside a batch", "wrong last offset"])
def test_a_cut_one_pass_would_not_stop_at_is_read_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cut: str
) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(many_batches(40)))
    (position, last), *_ = parallel.find_cuts(str(path), path.stat().st_size, 2)
    bogus = [(position + 100, last)] if cut == "inside a batch" else [(position, (last or 0) + 1)]
    monkeypatch.setattr(parallel, "find_cuts", lambda *args: bogus)
    assert_parallel_is_one_pass(path)


@pytest.mark.usefixtures("small_ranges")
def test_a_failing_child_has_its_range_dumped_by_the_parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(many_batches(40)))
    parent = os.getpid()
    range_pass = parallel._range_pass

    def fail_in_child(*args: Any) -> LogPass:
        if os.getpid() != parent:
            raise RuntimeError("child failed")
        return range_pass(*args)

    monkeypatch.setattr(parallel, "_range_pass", fail_in_child)
    assert_parallel_is_one_pass(path, 3)


def test_small_files_and_memory_outputs_stay_in_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(many_batches(10)))
    assert parallel.dump_in_parallel(str(path), 2, io.StringIO(), LineOptions(deep=True)) is None

    def refuse(*args: object) -> None:
        raise AssertionError("forked for an in-memory output")

    monkeypatch.setattr(parallel, "dump_in_parallel", refuse)
    run_dump(path, DumpOptions(deep_iteration=True))  # jobs unset: one process for a StringIO


def test_the_command_line_dump_of_a_large_file_is_one_pass(tmp_path: Path) -> None:
    """Through ``python -m broker.segments`` as a user runs it (its output a file, one process per CPU)."""
    template = many_batches(50)
    size = sum(map(len, template))
    batches = []
    for copy in range(-(-2 * parallel.MIN_RANGE_BYTES // size) + 1):
        for batch in template:
            base = struct.unpack_from(">q", batch)[0] + copy * 1000
            batches.append(set_base_offset(batch, base))
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(batches))
    for flags, options in ((["--print-data-log"], DATA), (["--deep-iteration"], DEEP)):
        with open(tmp_path / "out", "wb") as out:
            done = subprocess.run(
                [sys.executable, "-m", "broker.segments", "dump", str(path), *flags],
                stdout=out,
                stderr=subprocess.PIPE,
                check=False,
                timeout=120,
            )
        expected_out, expected_err, status = run_dump(path, options)
        assert done.returncode == status
        assert (tmp_path / "out").read_bytes() == expected_out.encode()
        assert done.stderr.decode() == expected_err


def test_by_default_a_dump_into_a_file_uses_every_cpu_unless_threads_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = DumpOptions(deep_iteration=True)
    with open(tmp_path / "out", "w", encoding="utf-8") as out:
        monkeypatch.setattr(threading, "active_count", lambda: 1)
        assert dump_module._jobs(options, out) == len(os.sched_getaffinity(0))
        assert dump_module._jobs(options, io.StringIO()) == 1
        monkeypatch.setattr(threading, "active_count", lambda: 2)  # forking would copy no thread
        assert dump_module._jobs(options, out) == 1
    assert dump_module._jobs(DumpOptions(jobs=3), io.StringIO()) == 3


@pytest.mark.usefixtures("small_ranges")
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one CPU: nothing to share")
def test_a_default_dump_into_a_file_is_one_pass_in_several_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(many_batches(40)))
    used: list[bool] = []
    in_parallel = parallel.dump_in_parallel

    def spy(*args: Any) -> LogPass | None:
        result = in_parallel(*args)
        used.append(result is not None)
        return result

    monkeypatch.setattr(parallel, "dump_in_parallel", spy)
    monkeypatch.setattr(threading, "active_count", lambda: 1)  # other tests may leave threads
    err = io.StringIO()
    with open(tmp_path / "out", "w", encoding="utf-8") as out:
        dump([str(path)], DumpOptions(print_data_log=True), out, err)
    assert used == [True]
    assert ((tmp_path / "out").read_text(encoding="utf-8"), err.getvalue()) == run_dump(path, DATA)[:2]


@pytest.mark.usefixtures("small_ranges")
def test_when_no_process_can_be_started_it_is_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(b"".join(many_batches(40)))

    def no_fork(*args: Any) -> None:
        raise OSError("Resource temporarily unavailable")

    monkeypatch.setattr(parallel._Child, "start", no_fork)
    assert parallel.dump_in_parallel(str(path), 3, io.StringIO(), LineOptions(deep=True)) is None
    assert_parallel_is_one_pass(path, 3)


def test_cuts_fall_on_batch_starts_once_each(tmp_path: Path) -> None:
    big = v2_batch(0, sample_rows(6) * 40, base_offset=0)  # most of the file: it spans several targets
    small = many_batches(10)
    small = [set_base_offset(b, struct.unpack_from(">q", b)[0] + 1000) for b in small]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(big + b"".join(small))
    starts = [len(big) + sum(map(len, small[:i])) for i in range(len(small))]
    cuts = parallel.find_cuts(str(path), path.stat().st_size, 8)
    assert [c for c, _ in cuts] == sorted({c for c, _ in cuts})
    assert cuts[0] == (len(big), 239)
    assert all(c in starts for c, _ in cuts)
    assert all(last == struct.unpack_from(">q", small[starts.index(c) - 1])[0] + 9 for c, last in cuts[1:])
