"""Replica folders read from disk without a cluster: names refused before anything is opened, segments
summarised, every segment checked with progress, damage found."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from broker.cluster import logdirs
from broker.errors import InvalidInput, NotFound
from tests.unit.test_segments_fuzz import SEGMENT


@pytest.fixture
def replica(tmp_path: Path) -> Path:
    pdir = tmp_path / "logs" / "orders-0"
    pdir.mkdir(parents=True)
    (pdir / "00000000000000000000.log").write_bytes(SEGMENT)
    (pdir / "00000000000000000037.log").write_bytes(b"")
    return pdir


def test_names_that_would_lead_out_are_refused(tmp_path: Path, replica: Path) -> None:
    for bad in ("..", "a/b", "..\\x", "", "x\x00"):
        with pytest.raises(InvalidInput):
            logdirs.inside(replica, bad)
    (tmp_path / "secret.log").write_bytes(b"secret")
    os.symlink(tmp_path / "secret.log", replica / f"{5:020d}.log")
    with pytest.raises(InvalidInput, match="leads out"):
        logdirs.segment_path(replica, 5)
    with pytest.raises(NotFound):
        logdirs.segment_path(replica, 6)
    with pytest.raises(InvalidInput):
        logdirs.check_topic_name("../orders")
    assert logdirs.readable_dir(str(replica.parent), [tmp_path]) == replica.parent.resolve()
    assert logdirs.readable_dir(str(replica.parent), [tmp_path / "elsewhere"]) is None


def test_segments_are_summarised(replica: Path) -> None:
    first, last = logdirs.list_segments(replica)
    assert (first.base_offset, first.first_offset, first.last_offset, first.batches) == (0, 0, 36, 8)
    assert (first.active, last.active, last.batches) == (False, True, 0)
    assert first.findings == []
    page = logdirs.read_batches(replica / "00000000000000000000.log", limit=3)
    assert [b.base_offset for b in page.batches] == [0, 8, 14]
    assert page.next_position == page.batches[-1].next_position
    assert logdirs.read_batches(replica / "00000000000000000000.log", offset=22, limit=1).batches[0].base_offset == 20
    with pytest.raises(InvalidInput):
        logdirs.read_batches(replica / "00000000000000000000.log", limit=0)


def test_checking_every_segment_reports_progress_and_damage(replica: Path) -> None:
    seen: list[tuple[int, int, bool]] = []
    clean = logdirs.check_replica(replica, lambda p: seen.append((p.checked, p.done_bytes, p.done)), report_every=0)
    assert (clean.segments, clean.checked, clean.findings, clean.records) == (2, 2, [], 37)
    assert seen[-1] == (2, len(SEGMENT), True)
    assert [b for _, b, _ in seen] == sorted(b for _, b, _ in seen)
    damaged = bytearray(SEGMENT)
    damaged[100] ^= 0xFF
    (replica / "00000000000000000000.log").write_bytes(bytes(damaged))
    found = logdirs.check_replica(replica)
    assert "crc_mismatch" in {f.kind for f in found.findings}
    stop = threading.Event()
    stop.set()
    assert logdirs.check_replica(replica, cancel=stop).cancelled


def test_log_dirs_mounted_elsewhere_are_mapped_per_broker(tmp_path: Path) -> None:
    mount = tmp_path / "mnt" / "kafka-2" / "data"
    mount.mkdir(parents=True)
    roots = [f"2:/var/lib/kafka={tmp_path / 'mnt' / 'kafka-2'}"]
    assert logdirs.readable_dir("/var/lib/kafka/data", roots, broker=2) == mount.resolve()
    assert logdirs.readable_dir("/var/lib/kafka/data", roots, broker=1) is None
    assert logdirs.readable_dir("/var/lib/other", roots, broker=2) is None
    every = [f"/var/lib/kafka={tmp_path / 'mnt' / 'kafka-2'}"]
    assert logdirs.readable_dir("/var/lib/kafka/data", every, broker=7) == mount.resolve()
    # A mapped path that climbs out of the mount (a symlink) is not readable.
    os.symlink(tmp_path, tmp_path / "mnt" / "kafka-2" / "up")
    assert logdirs.readable_dir("/var/lib/kafka/up", every, broker=7) is None
