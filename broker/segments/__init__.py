"""A reader of Kafka's on-disk formats: ``.log`` segments, their indexes and the side files of a
partition directory (producer snapshots, transaction indexes, checkpoints).

Files are only ever opened for reading; nothing here writes, renames or locks a file, so it is safe to
point at a running broker's log directory. Damage is reported, never raised: readers append a
``Finding`` (file, byte position, kind, a sentence saying what was found and what was expected) to a list
and carry on where the format allows, so a page or the ``dump`` CLI can show everything that is wrong
next to everything that could still be read. Nothing in this package imports Django.

- ``findings``: the ``Finding`` dataclass.
- ``compression``: bounded decompression of Kafka's codecs (gzip, xerial snappy, LZ4 frames, zstd).
- ``varints``: Kafka's unsigned and zigzag varints and varlongs, read and written.
- ``model``: the ``Batch`` (abstract) and ``Record`` dataclasses and the layout constants both entry formats share.
- ``records``: record batches (v2, ``V2Batch``): headers, CRCs, records, control records; ``batch_from_bytes`` for
  any entry.
- ``legacy``: legacy messages (v0/v1, ``LegacyBatch``): headers, CRCs, compressed wrappers and their inner messages.
- ``logfile``: streaming a ``.log`` file batch by batch, as Kafka's ``FileLogInputStream`` does.
- ``indexes``: ``.index`` and ``.timeindex`` files: entries, preallocated tails, sanity and ``.log`` checks.
- ``sidefiles``: ``.txnindex`` and producer ``.snapshot`` files, and kafka-dump-log's lines for them.
- ``checkpoints``: offset checkpoints, ``leader-epoch-checkpoint``, ``partition.metadata``, ``meta.properties``.
- ``names``: segment file, partition directory and KRaft snapshot names, taken apart and built.
- ``protocol``: Kafka's message encoding (as its generated classes read it) and JSON as its tools print it.
- ``decoders``: ``__consumer_offsets`` and ``__transaction_state`` records as kafka-dump-log's decoders show them.
- ``dump`` and ``__main__``: ``python -m broker.segments dump``, kafka-dump-log's output from these readers.

The package re-exports every module's public classes, functions and type aliases and the constants that
name things (codecs, control types, why a ``LogReader`` stopped, checkpoint files, file suffixes). Byte
layouts, sizes, sentinels, default caps, the helpers the modules share among themselves (``read_v2``,
``read_legacy``, ``read_capped``, ``java_int``...) and the ``dump`` CLI stay in their modules.
"""

from __future__ import annotations

from broker.segments.checkpoints import (
    OFFSET_CHECKPOINT_FILES,
    EpochEntry,
    LeaderEpochCheckpoint,
    MetaProperties,
    OffsetCheckpoint,
    PartitionMetadata,
    PartitionOffset,
    decode_kafka_uuid,
    parse_java_properties,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
)
from broker.segments.compression import CODEC_NAMES, CompressionError, codec_name, decompress
from broker.segments.decoders import offsets_key_payload, transaction_key_payload
from broker.segments.findings import Finding
from broker.segments.indexes import (
    BatchAt,
    BatchHolding,
    BatchSummary,
    IndexCheck,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimeIndexCheck,
    TimestampOffset,
    base_offset_from_name,
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
from broker.segments.legacy import LegacyBatch
from broker.segments.logfile import (
    STOP_BAD_SIZE,
    STOP_END,
    STOP_LIMIT,
    STOP_PREALLOCATED,
    STOP_READING,
    STOP_SIZE_PAST_END,
    STOP_TOO_LARGE,
    STOP_TRUNCATED,
    STOP_UNREADABLE,
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
from broker.segments.model import Batch, Record
from broker.segments.names import (
    SEGMENT_SUFFIXES,
    TRANSIENT_SUFFIXES,
    KRaftSnapshotName,
    PartitionDirName,
    SegmentFileName,
    kraft_snapshot_file_name,
    parse_kraft_snapshot_name,
    parse_partition_dir_name,
    parse_segment_file_name,
    segment_file_name,
)
from broker.segments.records import CONTROL_TYPES, V2Batch, batch_from_bytes, increment_sequence
from broker.segments.sidefiles import (
    AbortedTxn,
    ProducerEntry,
    ProducerSnapshot,
    TxnIndex,
    dump_producer_snapshot,
    dump_txn_index,
    producer_snapshot_error_lines,
    read_producer_snapshot,
    read_txn_index,
)
from broker.segments.varints import encode_varint, read_unsigned_varint, read_varint, read_varlong

__all__ = [
    "CODEC_NAMES",
    "CONTROL_TYPES",
    "OFFSET_CHECKPOINT_FILES",
    "SEGMENT_SUFFIXES",
    "STOP_BAD_SIZE",
    "STOP_END",
    "STOP_LIMIT",
    "STOP_PREALLOCATED",
    "STOP_READING",
    "STOP_SIZE_PAST_END",
    "STOP_TOO_LARGE",
    "STOP_TRUNCATED",
    "STOP_UNREADABLE",
    "TRANSIENT_SUFFIXES",
    "AbortedTxn",
    "Batch",
    "BatchAt",
    "BatchHolding",
    "BatchSummary",
    "CompressionError",
    "EpochEntry",
    "Finding",
    "IndexCheck",
    "KRaftSnapshotName",
    "LeaderEpochCheckpoint",
    "LegacyBatch",
    "LogReader",
    "LogScan",
    "MetaProperties",
    "OffsetCheckpoint",
    "OffsetIndex",
    "OffsetPosition",
    "PartitionDirName",
    "PartitionMetadata",
    "PartitionOffset",
    "ProducerEntry",
    "ProducerSnapshot",
    "Record",
    "SegmentFileName",
    "TimeIndex",
    "TimeIndexCheck",
    "TimestampOffset",
    "TxnIndex",
    "V2Batch",
    "base_offset_from_name",
    "batch_from_bytes",
    "check_offset_index",
    "check_time_index",
    "codec_name",
    "decode_kafka_uuid",
    "decompress",
    "dump_offset_index",
    "dump_producer_snapshot",
    "dump_time_index",
    "dump_txn_index",
    "encode_varint",
    "find_batch_at_or_after",
    "find_batch_by_offset",
    "find_next_valid_batch",
    "increment_sequence",
    "iter_batches",
    "kraft_snapshot_file_name",
    "log_lookups",
    "offset_index_mismatch_lines",
    "offsets_key_payload",
    "parse_java_properties",
    "parse_kraft_snapshot_name",
    "parse_partition_dir_name",
    "parse_segment_file_name",
    "producer_snapshot_error_lines",
    "read_batch_at",
    "read_leader_epoch_checkpoint",
    "read_meta_properties",
    "read_offset_checkpoint",
    "read_offset_index",
    "read_partition_metadata",
    "read_producer_snapshot",
    "read_time_index",
    "read_txn_index",
    "read_unsigned_varint",
    "read_varint",
    "read_varlong",
    "sanity_check",
    "scan_log",
    "segment_base_offset",
    "segment_file_name",
    "time_index_error_lines",
    "transaction_key_payload",
]
