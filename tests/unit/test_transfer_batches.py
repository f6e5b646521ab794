"""Whole batches (broker.transfer.batches): a batch read from a fetch, written again with the target producer's id,
epoch, sequence and transactional flag, keeps every record byte for byte and a valid CRC; batches that cannot be
written whole are told apart."""

from __future__ import annotations

import pytest
from kafka.errors import IllegalStateError
from kafka.record.default_records import DefaultRecordBatchBuilder

from broker.segments.findings import Finding
from broker.segments.records import V2Batch, decode_v2_records, read_v2, v2_payload
from broker.transfer.batches import WholeBatch, whole_copyable

LZ4 = 3


def built(offsets: list[int], compression: int = LZ4, producer: tuple[int, int, int] = (-1, -1, -1)) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=compression,
        is_transactional=False,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        batch_size=1 << 20,
    )
    for n in offsets:
        key = None if n % 3 == 0 else b"key-%d" % n
        builder.append(n, 1_700_000_000_000 + 7 * n, key, b'{"n":%d}' % n, [("h", b"v%d" % n), ("h", b"\x00\xff")])
    return bytes(builder.build())


def batch_of(raw: bytes | bytearray, base_offset: int = 0) -> V2Batch:
    data = bytearray(raw)
    data[0:8] = base_offset.to_bytes(8, "big")  # as a fetch gives it: the offsets the source log assigned
    findings: list[Finding] = []
    batch = read_v2(memoryview(bytes(data)), 0, len(data), 0, "test", findings)
    assert isinstance(batch, V2Batch), findings
    return batch


def records(batch: V2Batch) -> list[tuple[object, ...]]:
    payload = v2_payload(batch, 1 << 24, [])
    assert payload is not None
    return [
        (r.offset - batch.base_offset, r.timestamp, r.key, r.value, tuple(r.headers))
        for r in decode_v2_records(payload, batch, None, None, [])
    ]


def test_a_batch_rewritten_for_the_target_producer_keeps_its_records_and_a_valid_crc() -> None:
    source = batch_of(built(list(range(50)), producer=(12, 0, 400)), base_offset=9_000)
    assert whole_copyable(source)
    whole = WholeBatch(source.raw, source.count or 0)
    assert whole.is_full()
    assert whole.next_offset() == 50
    assert whole.append(0, b"k", b"v") is None  # nothing more goes in
    whole.set_producer_state(77, 3, 1_000, True)
    whole.close()
    written = batch_of(whole.buffer())
    assert written.crc_valid
    assert (written.producer_id, written.producer_epoch, written.base_sequence) == (77, 3, 1_000)
    assert written.is_transactional
    assert not written.is_control
    assert written.partition_leader_epoch == -1
    assert written.codec == LZ4
    assert (written.base_timestamp, written.max_timestamp) == (source.base_timestamp, source.max_timestamp)
    assert records(written) == records(source)
    assert records(written)[0][2] is None  # a null key stays null
    assert whole.size_in_bytes() == len(source.raw)
    with pytest.raises(IllegalStateError):
        whole.set_producer_state(78, 0, 0, False)  # a batch sent once keeps its sequence on retries


def test_an_idempotent_producer_without_transactions_clears_the_transactional_flag() -> None:
    raw = bytearray(built([0, 1, 2], compression=0, producer=(5, 1, 0)))
    raw[22] |= 0x10  # the source batch was transactional
    source = batch_of(raw)
    whole = WholeBatch(source.raw, 3)
    whole.set_producer_state(6, 0, 3, False)
    whole.close()
    written = batch_of(whole.buffer())
    assert not written.is_transactional
    assert records(written) == records(source)


def test_batches_with_gaps_in_their_offsets_or_markers_are_not_written_whole() -> None:
    assert not whole_copyable(batch_of(built([0, 1, 5])))  # compacted: the target's sequences count records
    marker = bytearray(built([0]))
    marker[22] |= 0x20
    assert not whole_copyable(batch_of(marker))
    append_time = bytearray(built([0, 1]))
    append_time[22] |= 0x08
    assert not whole_copyable(batch_of(append_time))
