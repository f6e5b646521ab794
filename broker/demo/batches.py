"""Kafka record batches written directly, and a producer that sends them: how the demo's backfill
writes hundreds of thousands of events a second where kafka-python's producer manages tens of
thousands (broker/demo/web.py makes the events)."""

from __future__ import annotations

import socket
import struct
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

import crc32c
import kafka.errors
import lz4.frame  # type: ignore[import-untyped]
from kafka import KafkaAdminClient
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from broker.client.connection import live_brokers
from broker.errors import ClusterUnavailable, KafkaRefused, TopicNotFound


class Record(Protocol):
    """What a record batch is made of (broker.demo.web.WebEvent is one)."""

    key: bytes
    value: bytes
    timestamp_ms: int


# Kafka record batches (magic 2, lz4), written directly: kafka-python's producer spends some twenty
# microseconds of Python on each record, this about two (compression included), half of what
# kafka-python's own DefaultRecordBatchBuilder takes. The format is Kafka's
# DefaultRecordBatch: a 61-byte header, then the records, compressed as one LZ4 frame of
# independent 64 KiB blocks (the framing Kafka's own producer writes).

_ZIGZAG_LIMIT = 1 << 16  # deltas and lengths below this come from a table
_BATCH_HEAD = struct.Struct(">qiibI")  # base offset, length, partition leader epoch, magic, CRC-32C
_BATCH_REST = struct.Struct(">hiqqqhii")  # attributes ... record count: what the CRC covers, with the records
_LZ4 = 3
MAX_BATCH_RECORDS = 4_000
MAX_BATCH_BYTES = 900_000  # before compression; a broker takes batches up to 1 MiB by default


def _varint(n: int) -> bytes:
    """Kafka's variable-length encoding of ``n``: zigzag, then 7 bits a byte, lowest first."""
    return _unsigned((n << 1) ^ (n >> 63))


def _unsigned(u: int) -> bytes:
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


_ZIGZAG = [_unsigned(n << 1) for n in range(_ZIGZAG_LIMIT)]
# A larger timestamp delta d (zigzag 2d < 2**28) is its low 14 bits as two bytes that say more follows,
# then the rest as a varint of its own.
_LOW_14 = [bytes(((u & 0x7F) | 0x80, ((u >> 7) & 0x7F) | 0x80)) for u in range(1 << 14)]
_HIGH = [_unsigned(u) for u in range(1 << 14)]
_MAX_DELTA = 1 << 27  # ms, 37 hours


def key_field(key: bytes) -> bytes:
    """A record's key as it is written in a batch: its length as a varint, then the key."""
    return _varint(len(key)) + key


def _seal(records: list[bytes], count: int, base_ts: int, max_ts: int) -> bytes:
    payload: bytes = lz4.frame.compress(
        b"".join(records), block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, store_size=False
    )
    rest = _BATCH_REST.pack(_LZ4, count - 1, base_ts, max_ts, -1, -1, -1, count) + payload
    return _BATCH_HEAD.pack(0, len(rest) + 9, -1, 2, crc32c.crc32c(rest)) + rest


def encode_batches(
    records: Iterable[tuple[int, int, bytes]], key_fields: list[bytes], max_records: int = MAX_BATCH_RECORDS
) -> list[bytes]:
    """Kafka record batches (magic 2, lz4, no producer id, CreateTime) holding ``records`` in order:
    (timestamp ms, key number, value), where ``key_fields[key number]`` is from :func:`key_field`.

    A batch holds at most ``max_records`` records and ``MAX_BATCH_BYTES`` of them before compression,
    and timestamps from its first one to 37 hours later; a timestamp before it starts a new batch. Each
    batch's base offset is 0, as a producer sends it. Returns [] for no records."""
    zigzag, low, high = _ZIGZAG, _LOW_14, _HIGH
    batches: list[bytes] = []
    parts: list[bytes] = []
    append = parts.append
    base = last = size = 0
    n = max_records
    for ts, key, value in records:
        delta = ts - base
        if n == max_records or size > MAX_BATCH_BYTES or not 0 <= delta < _MAX_DELTA:
            if parts:
                batches.append(_seal(parts, n, base, last))
                parts = []
                append = parts.append
            base, delta, n, size = ts, 0, 0, 0
        ts_delta = zigzag[delta] if delta < _ZIGZAG_LIMIT else low[(delta << 1) & 0x3FFF] + high[delta >> 13]
        body = b"\x00%s%s%s%s%s\x00" % (ts_delta, zigzag[n], key_fields[key], zigzag[len(value)], value)
        append(zigzag[len(body)])
        append(body)
        size += len(body)
        n += 1
        if ts > last or n == 1:
            last = ts
    if parts:
        batches.append(_seal(parts, n, base, last))
    return batches


def record_batches(events: Iterable[Record], max_records: int = MAX_BATCH_RECORDS) -> list[bytes]:
    """:func:`encode_batches` of ``events`` (in the order given); values shorter than 64 KiB."""
    keys: dict[bytes, int] = {}
    rows = [(e.timestamp_ms, keys.setdefault(e.key, len(keys)), e.value) for e in events]
    return encode_batches(rows, [key_field(k) for k in keys], max_records)


_PRODUCE_VERSION = 8  # Kafka 2.4 and later, 4.x included
_RETRIES = 5


@dataclass
class _Connection:
    sock: socket.socket
    in_flight: deque[tuple[int, dict[int, bytes]]] = field(default_factory=deque)


class BatchProducer:
    """Writes record batches (from :func:`encode_batches`) to the leaders of a topic's partitions: one
    Produce request per leader for the batches of its partitions, up to ``in_flight`` of them unanswered
    per broker, through kafka-python's protocol classes on plain sockets.

    A partition the broker refuses with a retriable error (a leader moved, a time-out) is sent again
    after a metadata refresh, up to five times; the order of its batches may then change, and a batch
    whose answer was lost with its connection may be written twice. Raises
    ClusterUnavailable when the cluster cannot be reached, TopicNotFound, KafkaRefused when a broker
    refuses a write for good."""

    def __init__(
        self, servers: list[str], topic: str, acks: int = 1, in_flight: int = 5, timeout_ms: int = 30_000
    ) -> None:
        if acks not in (1, -1):
            raise ValueError("acks must be 1 or -1 (all)")
        self.topic = topic
        self._servers = servers
        self._acks = acks
        self._max_in_flight = in_flight
        self._timeout_ms = timeout_ms
        self._correlation = 0
        self._connections: dict[int, _Connection] = {}
        self._retry: dict[int, list[bytes]] = {}
        self._leaders: dict[int, int] = {}
        self._addresses: dict[int, tuple[str, int]] = {}
        self._refresh()
        self.partitions = len(self._leaders)

    def _refresh(self) -> None:
        self._addresses, self._leaders = topic_leaders(self._servers, self.topic)

    def _connection(self, node: int) -> _Connection:
        connection = self._connections.get(node)
        if connection is None:
            if node not in self._addresses:
                raise kafka.errors.LeaderNotAvailableError(f"no leader ({node})")
            sock = socket.create_connection(self._addresses[node], timeout=self._timeout_ms / 1000 + 5)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            connection = self._connections[node] = _Connection(sock)
        return connection

    def send(self, batches: dict[int, list[bytes]]) -> None:
        """Send ``batches`` ({partition: record batches, oldest first}) without waiting for the answers
        (but for the oldest ones once a broker has ``in_flight`` unanswered). Kafka takes one batch per
        partition in a request: the n-th batches of all partitions go in the n-th requests to their
        leaders. Raises as the class says."""
        self._send(batches)
        if self._retry:
            self._resend()

    def flush(self) -> None:
        """Wait until every batch sent is acknowledged. Raises as the class says."""
        self._settle()
        if self._retry:
            self._resend()

    def _send(self, batches: dict[int, list[bytes]]) -> None:
        rounds = max((len(b) for b in batches.values()), default=0)
        for n in range(rounds):
            by_leader: dict[int, dict[int, bytes]] = {}
            for partition, batch_list in batches.items():
                if n < len(batch_list):
                    by_leader.setdefault(self._leaders.get(partition, -1), {})[partition] = batch_list[n]
            for node, records in by_leader.items():
                self._request(node, records)

    def _settle(self) -> None:
        """Read every answer outstanding; what failed is left in ``_retry``."""
        for node, connection in list(self._connections.items()):
            while connection.in_flight and self._connections.get(node) is connection:
                self._receive(node, connection)

    def _resend(self) -> None:
        """Send again what failed, after every other answer is in and the metadata is read again (a
        leader may have moved), until it is acknowledged or ``_RETRIES`` attempts have failed."""
        attempt = 0
        while self._retry:
            attempt += 1
            if attempt > _RETRIES:
                failed = sorted(self._retry)
                raise ClusterUnavailable(f"Writes to {self.topic} failed {_RETRIES} times (partitions {failed})")
            self._settle()
            time.sleep(0.2 * attempt)
            self.close()
            self._refresh()
            retry, self._retry = self._retry, {}
            self._send(retry)
            self._settle()

    def close(self) -> None:
        """Close the connections (without waiting for answers: :meth:`flush` first)."""
        for connection in self._connections.values():
            connection.sock.close()
        self._connections.clear()

    def _request(self, node: int, records: dict[int, bytes]) -> None:
        try:
            connection = self._connection(node)
            while len(connection.in_flight) >= self._max_in_flight and self._connections.get(node) is connection:
                self._receive(node, connection)
            connection = self._connection(node)
        except (OSError, kafka.errors.KafkaError):
            self._failed(node, records)
            return
        self._correlation += 1
        topic = ProduceRequest.TopicProduceData
        request = ProduceRequest(
            transactional_id=None,
            acks=self._acks,
            timeout_ms=self._timeout_ms,
            topic_data=[
                topic(
                    name=self.topic,
                    partition_data=[topic.PartitionProduceData(index=p, records=r) for p, r in records.items()],
                )
            ],
        )
        request.with_header(correlation_id=self._correlation, client_id="kazami-web")
        try:
            connection.sock.sendall(request.encode(version=_PRODUCE_VERSION, header=True, framed=True))
        except OSError:
            self._failed(node, records)
            return
        connection.in_flight.append((self._correlation, records))

    def _receive(self, node: int, connection: _Connection) -> None:
        correlation, records = connection.in_flight[0]
        try:
            (size,) = struct.unpack(">i", _read(connection.sock, 4))
            answer = ProduceResponse.decode(_read(connection.sock, size), version=_PRODUCE_VERSION, header=True)
            if answer.header.correlation_id != correlation:
                raise OSError(f"answer {answer.header.correlation_id} to request {correlation}")
        except OSError:
            self._failed(node, records)
            return
        connection.in_flight.popleft()
        for topic in answer.responses:
            for part in topic.partition_responses:
                if not part.error_code:
                    continue
                error = kafka.errors.for_code(part.error_code)
                if not error.retriable:
                    raise KafkaRefused(f"{self.topic}/{part.index}: {error.__name__} {part.error_message or ''}")
                self._retry.setdefault(part.index, []).append(records[part.index])

    def _failed(self, node: int, records: dict[int, bytes]) -> None:
        """The connection to ``node`` broke (or there is none): what was on it, and ``records``, are to be
        sent again (the broker may have written some of it: those records are then written twice)."""
        connection = self._connections.pop(node, None)
        pending = []
        if connection is not None:
            connection.sock.close()
            pending = [r for _, r in connection.in_flight]
        if not any(r is records for r in pending):
            pending.append(records)
        for batch in pending:
            for partition, data in batch.items():
                self._retry.setdefault(partition, []).append(data)


def topic_leaders(servers: list[str], topic: str) -> tuple[dict[int, tuple[str, int]], dict[int, int]]:
    """({broker id: (host, port)}, {partition: leader broker id, -1 for none}) of ``topic``. A topic
    created a moment ago may be unknown to the broker asked: it is asked again for up to 5 s. Raises
    ClusterUnavailable when the brokers do not answer, TopicNotFound."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=servers, client_id="kazami-web", bootstrap_timeout_ms=10_000)
    except kafka.errors.KafkaError as exc:
        raise ClusterUnavailable(f"Cannot reach {','.join(servers)}: {exc}") from None
    unknown = kafka.errors.UnknownTopicOrPartitionError.errno
    deadline = time.monotonic() + 5
    try:
        brokers = live_brokers(admin)
        (described,) = admin.describe_topics([topic])
        while described["error_code"] == unknown and time.monotonic() < deadline:
            time.sleep(0.2)
            (described,) = admin.describe_topics([topic])
    except kafka.errors.KafkaError as exc:
        raise ClusterUnavailable(f"Cannot describe topic {topic}: {exc}") from None
    finally:
        admin.close()
    error = described["error_code"]
    if error == unknown:
        raise TopicNotFound(f"No topic {topic!r}.")
    if error:
        raise ClusterUnavailable(f"Topic {topic}: {kafka.errors.for_code(error).__name__}")
    addresses = {b["broker_id"]: (b["host"], b["port"]) for b in brokers}
    return addresses, {p["partition_index"]: p["leader_id"] for p in described["partitions"]}


def _read(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("connection closed by the broker")
        data += chunk
    return bytes(data)
