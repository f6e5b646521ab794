"""The names Kafka gives what it keeps in a log directory, taken apart and built: segment files (a 20-digit
base offset, a suffix, maybe a transient suffix), partition directories (live, ``-delete``, ``-future``,
``-stray``) and KRaft metadata snapshots (``<end offset>-<epoch>.checkpoint``).

A name says what a file or directory is before it is opened: the segment a file belongs to and whether it
waits for deletion, compaction or a swap, the partition a directory holds and in what state, the offset
and epoch a snapshot ends at. A name the broker would not take for one of these gives None. ``java_int``
parses numbers as the broker's Java does, here and in ``checkpoints``.
"""

from __future__ import annotations

import re
from typing import NamedTuple

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex", ".snapshot")
TRANSIENT_SUFFIXES = (".deleted", ".cleaned", ".swap")
_SEGMENT_NAME = re.compile(r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?")
_PARTITION_DIR = re.compile(r"(\S+)-(\S+)\.(\S+)-(delete|future|stray)")
_KRAFT_SNAPSHOT = re.compile(r"([0-9]{20})-([0-9]{10})\.checkpoint(\.part|\.deleted)?")
_JAVA_INT = re.compile(r"[+-]?[0-9]+")


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
    partition = java_int(base[dash + 1 :], 32)
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


def java_int(text: str, bits: int) -> int | None:
    """``Integer.parseInt`` / ``Long.parseLong``: an optional sign and ASCII digits, in range."""
    if not _JAVA_INT.fullmatch(text):
        return None
    value = int(text)
    return value if -(2 ** (bits - 1)) <= value < 2 ** (bits - 1) else None
