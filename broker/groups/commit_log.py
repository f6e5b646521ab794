"""The group coordinator's own log, ``__consumer_offsets``, read as commits: which group committed which offset
of which partition, and at what time the coordinator took it.

The lag sampler sees a group's committed offset once an interval; this log has every commit, each with its
commit time, which is what Burrow judges a group by. ``Rings`` keeps, per group and partition, the last few
commits as ``lag_status.Observation`` (with the lag at the time of the commit), the way Burrow's ring does.

Pure: ``parse`` turns a record's key and value (bytes, as the broker stores them) into a ``Commit``, a
``Forget`` (a tombstone: the offset was deleted) or None (the log's other records: group metadata, the
KIP-848 and share-group records). Record layouts are Kafka's ``OffsetCommitKey`` (versions 0 and 1) and
``OffsetCommitValue`` (versions 0 to 4; version 4 is the first flexible one: compact strings and tagged fields).
"""

from __future__ import annotations

import struct
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from broker.groups.lag_status import Observation

__all__ = ["OFFSETS_TOPIC", "Commit", "Forget", "Rings", "parse"]

OFFSETS_TOPIC = "__consumer_offsets"
Key = tuple[str, str, int]  # (group, topic, partition)


@dataclass(frozen=True)
class Commit:
    """One offset commit, as the coordinator wrote it."""

    group: str
    topic: str
    partition: int
    offset: int
    at_ms: int  # the commit's time (the coordinator's clock)

    @property
    def key(self) -> Key:
        return (self.group, self.topic, self.partition)


@dataclass(frozen=True)
class Forget:
    """The group's offset of this partition was deleted (the group was deleted, or its offsets expired)."""

    group: str
    topic: str
    partition: int

    @property
    def key(self) -> Key:
        return (self.group, self.topic, self.partition)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        length = self.take(">h")
        return self._text(length)

    def compact_string(self) -> str:
        return self._text(self.varint() - 1)

    def varint(self) -> int:
        shift = result = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7
            if shift > 28:
                raise ValueError("varint too long")

    def _text(self, length: int) -> str:
        if length < 0:
            return ""
        text = self.data[self.at : self.at + length]
        if len(text) != length:
            raise ValueError("string runs past the record")
        self.at += length
        return text.decode("utf-8", "replace")


def parse(key: bytes | None, value: bytes | None) -> Commit | Forget | None:
    """What one record of ``__consumer_offsets`` says about offsets; None for records of other kinds and for
    records that cannot be read (a newer layout than this module knows is skipped, never guessed)."""
    if not key or len(key) < 2:
        return None
    try:
        k = _Reader(key)
        if k.take(">h") not in (0, 1):
            return None  # group metadata (2) and the KIP-848 / share-group records (3 and up)
        group, topic, partition = k.string(), k.string(), k.take(">i")
        if value is None:
            return Forget(group, topic, partition)
        v = _Reader(value)
        version = v.take(">h")
        if version > 4 or version < 0:
            return None
        offset = v.take(">q")
        if version >= 3:
            v.take(">i")  # leader epoch
        if version >= 4:
            v.compact_string()  # metadata
        else:
            v.string()
        at_ms = v.take(">q")
    except (struct.error, ValueError, IndexError):
        return None
    return Commit(group, topic, partition, offset, at_ms)


@dataclass
class Rings:
    """The last ``window`` commits of every group's partitions, as Burrow's storage keeps them: a commit
    less than ``min_distance_ms`` after the previous one replaces it, a commit older than the newest one is
    dropped, and each holds the lag at its commit (the partition's log end known then, never below the offset).
    """

    window: int
    min_distance_ms: int = 1000
    rings: dict[Key, deque[Observation]] = field(default_factory=dict)

    def add(self, commit: Commit, log_end: int | None) -> bool:
        """Take one commit; False when it was not kept (out of order, or no log end known for its partition:
        its lag would be a guess)."""
        if log_end is None:
            return False
        ring = self.rings.get(commit.key)
        if ring is None:
            ring = self.rings[commit.key] = deque(maxlen=self.window)
        seen = Observation(commit.at_ms, commit.offset, max(log_end, commit.offset))
        if ring:
            if commit.at_ms < ring[-1].at_ms:
                return False
            if commit.at_ms - ring[-1].at_ms < self.min_distance_ms:
                ring[-1] = seen
                return True
        ring.append(seen)
        return True

    def forget(self, key: Key) -> bool:
        return self.rings.pop(key, None) is not None

    def get(self, key: Key) -> list[Observation]:
        return list(self.rings.get(key, ()))

    def load(self, stored: Mapping[Key, Iterable[Observation]]) -> None:
        """Start from rings kept elsewhere (another process had them): the newest ``window`` of each."""
        for key, observations in stored.items():
            self.rings[key] = deque(sorted(observations, key=lambda o: o.at_ms), maxlen=self.window)

    def __iter__(self) -> Iterator[Key]:
        return iter(self.rings)
