"""What an entry of a ``.log`` file is once read, whatever its format: the ``Batch`` (a v2 record batch, or a
legacy message of magic 0 or 1) and the ``Record`` dataclasses, the layout constants both formats share,
and the error and finding both of their readers use.

A ``Batch`` is one entry of a ``.log`` file: its header fields, whether its checksum holds, and its bytes
as they are on disk. Reading the header is cheap (one ``struct`` call and one CRC); the records inside
are decoded only when ``Batch.records()`` is called, which is also when a compressed batch is
decompressed. Nothing here raises on damaged data: ``records()`` returns what it could decode together
with a list of findings saying what it could not.

``records`` (v2) and ``legacy`` (v0/v1) read the bytes and build these dataclasses, so they import this
module and this one imports neither: ``Batch`` is abstract, and each of them builds its own kind of it
(``records.V2Batch``, ``legacy.LegacyBatch``), whose ``records()`` is that module's decoder.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from broker.segments.findings import Finding

LOG_OVERHEAD = 12  # int64 offset + int32 size, before every entry
LEGACY_OVERHEAD_V0 = 14  # crc, magic, attributes, key length, value length
LEGACY_OVERHEAD_V1 = 22  # ... and the timestamp
NO_SEQUENCE = -1
DEFAULT_MAX_RECORDS_BYTES = 64 * 1024 * 1024

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
NO_TIMESTAMP_TYPE = "NoTimestampType"

CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08


class BadRecord(ValueError):
    """A record that cannot be decoded; carries the sentence for the finding."""


def bad_codec(file: str, at: int, position: int, codec: int) -> Finding:
    """The finding for an entry at byte ``position`` whose attributes (at byte ``at``) name a compression
    codec Kafka does not have."""
    return Finding(
        file,
        at,
        "bad_codec",
        f"entry at byte {position} names compression codec {codec}, which Kafka does not have"
        " (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd; legacy messages stop at 3)",
        expected="0..4",
        found=str(codec),
    )


@dataclass(slots=True)
class Record:
    """One record as a consumer would see it, plus what only the log shows.

    ``key_size``/``value_size`` are -1 for a null key/value (a tombstone's value). ``sequence`` is the
    producer sequence of a v2 record, -1 when the batch has none. Legacy messages carry their own CRC
    (``crc``, ``crc_valid``); v2 records have none (the batch's covers them). A control record has
    ``control_type`` (``"COMMIT"``, ``"ABORT"``, ``"LEADER_CHANGE"``... or ``"UNKNOWN"``) and its raw
    ``control_type_id``; a commit or abort marker also has the ``coordinator_epoch`` that wrote it.
    """

    offset: int
    timestamp: int
    timestamp_type: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    sequence: int
    key_size: int
    value_size: int
    crc: int | None = None
    crc_valid: bool | None = None
    control_type: str | None = None
    control_type_id: int | None = None
    coordinator_epoch: int | None = None

    @property
    def is_control(self) -> bool:
        """Whether this is a control record (a transaction marker or a KRaft control record)."""
        return self.control_type is not None

    @property
    def header_keys(self) -> list[str]:
        """The header keys in order (what kafka-dump-log prints as ``headerKeys``)."""
        return [k for k, _ in self.headers]


@dataclass(slots=True)
class Batch(ABC):
    """One entry of a ``.log`` file: a v2 record batch, or a legacy message (magic 0 or 1), which may be
    a compressed wrapper holding a set of inner messages. Abstract: the readers build a ``V2Batch``
    (``records``) or a ``LegacyBatch`` (``legacy``), which differ only in how they decode their records.

    ``position`` is the byte position of the entry in ``file`` and ``size`` its whole length on disk,
    the 12-byte offset and length prefix included, so the next entry starts at ``position + size``.
    ``crc`` is the stored checksum (unsigned) and ``crc_valid`` whether it matches the bytes: CRC-32C of
    bytes 21 to the end for v2, CRC-32 of the message from its magic byte for legacy. Producer fields
    are -1 when there are none, as Kafka prints them.

    For a legacy entry, ``base_offset`` and ``last_offset`` are both the offset the entry carries: a
    compressed wrapper carries the offset of its last inner message, and its first is known only once
    ``records()`` has decompressed it. ``count`` is the v2 header's record count, 1 for an uncompressed
    legacy message and ``None`` for a legacy wrapper (Kafka's ``countOrNull``; kafka-dump-log prints no
    count for legacy entries). ``raw`` holds the entry's bytes, for ``records()`` and hex views.
    """

    file: str
    position: int
    base_offset: int
    last_offset: int
    count: int | None
    size: int
    magic: int
    crc: int
    crc_valid: bool
    attributes: int
    codec: int
    codec_name: str
    timestamp_type: str
    max_timestamp: int
    base_timestamp: int
    partition_leader_epoch: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_sequence: int
    is_transactional: bool
    is_control: bool
    delete_horizon_ms: int | None
    raw: bytes = field(repr=False, compare=False)

    @property
    def next_position(self) -> int:
        """The file position just past this entry, where the next one starts."""
        return self.position + self.size

    @property
    def is_compressed(self) -> bool:
        """Whether the records are compressed (a codec other than none)."""
        return self.codec != 0

    @abstractmethod
    def records(
        self, max_bytes: int = DEFAULT_MAX_RECORDS_BYTES, limit: int | None = None
    ) -> tuple[list[Record], list[Finding]]:
        """The records of this batch, decompressed and decoded, with findings for what could not be read.

        ``max_bytes`` bounds the decompressed size (a hostile batch cannot make this allocate more);
        ``limit`` stops after that many records (no count mismatch is reported then). Findings cover
        decompression failures, records that do not use exactly their declared length, a records count
        that does not match, bytes left after the last record, malformed control records and, for legacy
        wrappers, inner messages that are truncated, compressed again or fail their CRC. Never raises
        on bad data.
        """

    def as_dict(self) -> dict[str, object]:
        """The header fields as a plain dict (no bytes), for JSON output and templates."""
        return {name: getattr(self, name) for name in _BATCH_FIELDS}


_BATCH_FIELDS = tuple(name for name in Batch.__dataclass_fields__ if name != "raw")
