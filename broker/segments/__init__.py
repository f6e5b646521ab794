"""A reader of Kafka's on-disk formats: ``.log`` segments, their indexes and the side files of a
partition directory (producer snapshots, transaction indexes, checkpoints).

Files are only ever opened for reading; nothing here writes, renames or locks a file, so it is safe to
point at a running broker's log directory. Damage is reported, never raised: readers append a
``Finding`` (file, byte position, kind, a sentence saying what was found and what was expected) to a list
and carry on where the format allows, so a page or the ``dump`` CLI can show everything that is wrong
next to everything that could still be read. Nothing in this package imports Django.

- ``findings``: the ``Finding`` dataclass.
- ``compression``: bounded decompression of Kafka's codecs (gzip, xerial snappy, LZ4 frames, zstd).
- ``records``: record batches (v2) and legacy messages (v0/v1): headers, CRCs, records, control records.
- ``logfile``: streaming a ``.log`` file batch by batch, as Kafka's ``FileLogInputStream`` does.
"""

from __future__ import annotations

from broker.segments.compression import CODEC_NAMES, CompressionError, codec_name, decompress
from broker.segments.findings import Finding
from broker.segments.logfile import (
    LogReader,
    LogScan,
    find_batch_at_or_after,
    find_batch_by_offset,
    find_next_valid_batch,
    iter_batches,
    read_batch_at,
    scan_log,
    segment_base_offset,
)
from broker.segments.records import (
    CONTROL_TYPES,
    Batch,
    Record,
    batch_from_bytes,
    encode_varint,
    increment_sequence,
    read_unsigned_varint,
    read_varint,
    read_varlong,
)

__all__ = [
    "CODEC_NAMES",
    "CONTROL_TYPES",
    "Batch",
    "CompressionError",
    "Finding",
    "LogReader",
    "LogScan",
    "Record",
    "batch_from_bytes",
    "codec_name",
    "decompress",
    "encode_varint",
    "find_batch_at_or_after",
    "find_batch_by_offset",
    "find_next_valid_batch",
    "increment_sequence",
    "iter_batches",
    "read_batch_at",
    "read_unsigned_varint",
    "read_varint",
    "read_varlong",
    "scan_log",
    "segment_base_offset",
]
