"""Whole record batches, written as they were read: a copy keeping partitions and timestamps, without a filter,
sends the source's batches (still compressed) to the target instead of taking them apart into records and building
new ones. Only the batch header changes: the target producer's id, epoch, first sequence and transactional flag,
and the CRC over them; keys, values, headers (null ones too), timestamps and compression stay byte for byte.

A batch goes into the target producer's own queue (kafka-python's RecordAccumulator), so its sender assigns the
sequence, adds the partition to the transaction and retries as for any batch it built; ``WholeBatch`` plays the
part of the builder kafka-python would have filled.

Taken whole: batches of the current format (magic 2) with create times, neither emptied by compaction in places
(their offsets must run without gaps: the target's sequence counts records) nor carrying a delete horizon. Any
other batch is taken apart into records as before.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import crc32c
from kafka import KafkaProducer, TopicPartition
from kafka.errors import IllegalStateError
from kafka.record import MemoryRecords

from broker.segments.model import CODEC_MASK
from broker.segments.records import TRANSACTIONAL_BIT, V2Batch

__all__ = ["WholeBatch", "whole_appender", "whole_copyable"]

_BASE_OFFSET_AND_LENGTH = struct.Struct(">qi")
_LEADER_EPOCH = struct.Struct(">i")
_CRC = struct.Struct(">I")
_ATTRIBUTES = struct.Struct(">h")
_PRODUCER = struct.Struct(">qhi")  # producerId, producerEpoch, baseSequence
_CRC_AT, _ATTRIBUTES_AT, _PRODUCER_AT = 17, 21, 43
_TIMESTAMP_TYPE_BIT = 0x08


def whole_copyable(batch: V2Batch) -> bool:
    """Whether ``batch`` can be written as it is (see the module's docstring)."""
    return (
        batch.magic == 2
        and not batch.is_control
        and batch.timestamp_type == "CreateTime"
        and batch.delete_horizon_ms is None
        and batch.count == batch.last_offset - batch.base_offset + 1
        and batch.codec <= 4
    )


class WholeBatch:
    """A built batch in the place of kafka-python's MemoryRecordsBuilder: full from the start, its producer state
    set by the sender when it is drained, and written into its header when closed."""

    __slots__ = ("_base_sequence", "_buffer", "_closed", "_count", "_producer_epoch", "_producer_id", "_transactional")

    def __init__(self, raw: bytes, count: int) -> None:
        self._buffer = bytearray(raw)
        self._count = count
        self._producer_id, self._producer_epoch, self._base_sequence = -1, -1, -1
        self._transactional = False
        self._closed = False

    def append(self, timestamp: int, key: bytes | None, value: bytes | None, headers: Any = None) -> Any:
        return None  # full: nothing more goes in (kafka-python's builder answers None too)

    def is_full(self) -> bool:
        return True

    def next_offset(self) -> int:
        return self._count  # the records it holds: what the sender adds to the partition's sequence

    @property
    def producer_id(self) -> int:
        return self._producer_id

    @property
    def producer_epoch(self) -> int:
        return self._producer_epoch

    @property
    def base_sequence(self) -> int:
        return self._base_sequence

    def set_producer_state(
        self, producer_id: int, producer_epoch: int, base_sequence: int, transactional: bool
    ) -> None:
        if self._closed:  # as kafka-python's own: a batch sent once keeps its sequence on retries
            raise IllegalStateError("The producer state of a batch already sent cannot change.")
        self._producer_id, self._producer_epoch, self._base_sequence = producer_id, producer_epoch, base_sequence
        self._transactional = transactional

    def close(self) -> None:
        if self._closed:
            return
        buf = self._buffer
        _BASE_OFFSET_AND_LENGTH.pack_into(buf, 0, 0, len(buf) - 12)
        _LEADER_EPOCH.pack_into(buf, 12, -1)
        kept = _ATTRIBUTES.unpack_from(buf, _ATTRIBUTES_AT)[0] & (CODEC_MASK | _TIMESTAMP_TYPE_BIT)
        _ATTRIBUTES.pack_into(buf, _ATTRIBUTES_AT, kept | (TRANSACTIONAL_BIT if self._transactional else 0))
        _PRODUCER.pack_into(buf, _PRODUCER_AT, self._producer_id, self._producer_epoch, self._base_sequence)
        _CRC.pack_into(buf, _CRC_AT, crc32c.crc32c(memoryview(buf)[_ATTRIBUTES_AT:]))
        self._closed = True

    def size_in_bytes(self) -> int:
        return len(self._buffer)

    def compression_rate(self) -> float:
        return 1.0

    def buffer(self) -> bytearray:
        return self._buffer

    def records(self) -> MemoryRecords:
        return MemoryRecords(bytes(self._buffer))


def whole_appender(producer: KafkaProducer) -> Callable[[TopicPartition, V2Batch], None] | None:
    """A function putting a whole batch into ``producer``'s queue for a partition of a topic whose metadata it has;
    None when this kafka-python is not built as expected (then batches are taken apart into records)."""
    accumulator = getattr(producer, "_accumulator", None)
    sender = getattr(producer, "_sender", None)
    transactions = getattr(producer, "_transaction_manager", None)
    try:
        from kafka.producer.producer_batch import ProducerBatch
    except ImportError:
        return None
    needed = ("_tp_lock", "_batches", "_incomplete")
    if accumulator is None or sender is None or not all(hasattr(accumulator, name) for name in needed):
        return None
    in_transaction = transactions is not None and transactions.is_transactional()

    def append(tp: TopicPartition, batch: V2Batch) -> None:
        if in_transaction and transactions is not None:
            transactions.maybe_add_partition_to_transaction(tp)
        queued = ProducerBatch(tp, WholeBatch(batch.raw, batch.count or 0), now=time.monotonic())
        with accumulator._tp_lock(tp):
            accumulator._batches[tp].append(queued)
            accumulator._incomplete.add(queued)
        sender.wakeup()

    return append
