"""Copy a topic, or a range of it, to another topic on the same cluster or another: keys, values and headers byte
for byte, in each source partition's order.

The records are read with the console's own fetches (broker.messages.scan, the search's reader: every
partition's range in offset order; what a read_committed consumer is given: markers, aborted records and those of
transactions still open left out) and written with a producer of the target cluster's own (acks=all, idempotent,
batched). A copy keeping partitions and timestamps, without a filter or a rate, writes the source's record batches
whole, still compressed (broker.transfer.batches): nothing is decoded or built again, which is most of the speed.

Exactly-once where the target allows it: a transactional producer commits a transaction at every checkpoint
(broker.transfer.progress: 20,000 records or a second), and the position saved with each commit is where a resumed
copy starts, so nothing is written twice. Where it does not
(``exactly_once=False``, or a cluster that refuses transactions), the producer flushes at each checkpoint
instead: at least once, a resumed copy may write again what came after the last checkpoint.

A record goes to the source's partition (``keep_partition``; the target needs at least as many), or, by key,
where Kafka's Java producer would put it in the target (murmur2); a record without a key goes where the
producer's own partitioner puts it. Its timestamp is kept (``keep_timestamp``) or given by the target.
Records taken apart (every other copy) lose what the Python client cannot send: a header with a null value is
written with an empty one, and a record with neither key nor value is left out (``null_headers`` and ``not_sent``
say so). Batches written whole keep both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaProducer, TopicPartition

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError
from broker.messages.log import Message
from broker.messages.partitioners import murmur2_partition
from broker.messages.scan import ScanRange, scan
from broker.segments.records import V2Batch
from broker.topics.read import get_topic_partitions
from broker.transfer.batches import whole_appender, whole_copyable
from broker.transfer.progress import Pace, Reporter, RunProgress
from broker.transfer.schemas import SchemaMover

__all__ = ["CopyPlan", "CopyProgress", "Writer", "plan_targets", "run_copy", "shift_ranges"]

SAMPLES = 10  # records a dry run shows


@dataclass(frozen=True)
class CopyPlan:
    topic: str
    to_topic: str
    ranges: list[ScanRange]
    target_partitions: int
    keep_partition: bool = True
    keep_timestamp: bool = True
    rate: float | None = None  # records a second at the most
    exactly_once: bool = True
    dry_run: bool = False
    filtered: bool = False  # a filter chooses the records (else every record is copied)
    schemas: str = "keep"  # "register": wire-format schema ids registered in the target's registry (schemas.py)

    @property
    def total(self) -> int:
        """Offsets in the ranges (markers and aborted records among them are read, not copied)."""
        return sum(r.stop - r.start for r in self.ranges if r.readable)


@dataclass
class CopyProgress(RunProgress):
    read: int = 0  # records read (those the filter passed over included)
    positions: dict[int, int] = field(default_factory=dict)  # source partition -> next offset to read
    saved: dict[int, int] = field(default_factory=dict)  # the same at the last checkpoint: where a resume starts
    samples: list[dict[str, Any]] = field(default_factory=list)  # a dry run's first records, where each goes
    null_headers: int = 0
    whole_batches: int = 0  # batches written as they were read (batches.py), their records not taken apart
    # Records with neither key nor value (partition:offset), which the Python client cannot send: left out.
    not_sent: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            **super().as_dict(),
            "read": self.read,
            "positions": {str(p): o for p, o in sorted(self.positions.items())},
            "saved_positions": {str(p): o for p, o in sorted(self.saved.items())},
            "samples": self.samples,
            "null_headers": self.null_headers,
            "whole_batches": self.whole_batches,
            "not_sent": self.not_sent[:100],
            "not_sent_count": len(self.not_sent),
        }


def plan_targets(
    source: ClusterConnection,
    target: ClusterConnection,
    topic: str,
    to_topic: str,
    ranges: list[ScanRange],
    keep_partition: bool,
) -> int:
    """The target topic's partition count, checked against the plan: the target exists, is not the source
    itself, and has every partition a copy keeping partitions writes to. Raises TopicNotFound, InvalidInput."""
    if source.config.name == target.config.name and topic == to_topic:
        raise InvalidInput("A topic cannot be copied onto itself; choose another target topic.")
    count = len(get_topic_partitions(target, to_topic))
    wanted = max((r.partition for r in ranges if r.readable), default=-1)
    if keep_partition and wanted >= count:
        raise InvalidInput(
            f"{to_topic!r} has {count} partition{'s' if count != 1 else ''}: a copy keeping partitions needs at least "
            f"{wanted + 1}. Add partitions to it, or copy by key instead (keep_partition false)."
        )
    return count


def shift_ranges(ranges: list[ScanRange], resume_from: dict[int, int]) -> list[ScanRange]:
    """The ranges from a saved position on (a resumed copy); ranges already done are dropped."""
    shifted = []
    for r in ranges:
        start = max(r.start, resume_from.get(r.partition, r.start))
        if start < r.stop or not r.readable:
            shifted.append(ScanRange(r.partition, start, r.stop, r.readable, r.leader))
    return shifted


class Writer:
    """The target side: a producer of the target cluster, transactional when asked and allowed."""

    def __init__(self, target: ClusterConnection, purpose: str, transactional_id: str | None) -> None:
        self.transactional = False
        self._known: set[str] = set()
        self._direct: Callable[..., None] | None = None
        self._whole: Callable[[TopicPartition, V2Batch], None] | None = None
        self.producer: KafkaProducer
        if transactional_id is not None:
            try:
                self.producer = target.own_producer(purpose, transactional_id=transactional_id)
                self.producer.init_transactions()
                self.producer.begin_transaction()
                self.transactional = True
                self._direct, self._whole = _direct_append(self.producer), whole_appender(self.producer)
                return
            except (kafka.errors.TransactionalIdAuthorizationFailedError, kafka.errors.UnsupportedVersionError):
                pass  # the target refuses transactions: at least once
        self.producer = target.own_producer(purpose)
        self._direct, self._whole = _direct_append(self.producer), whole_appender(self.producer)

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        headers: Iterable[tuple[str, bytes | None]],
        partition: int | None,
        timestamp_ms: int | None,
    ) -> bool:
        """False (nothing sent) for a record with neither key nor value: the Python client sends no such record."""
        if key is None and value is None:
            return False
        sent = [(name, v if v is not None else b"") for name, v in headers]
        if partition is not None and self._direct is not None and topic in self._known:
            self._direct(TopicPartition(topic, partition), timestamp_ms, key, value, sent)
            return True
        self.producer.send(topic, value=value, key=key, headers=sent, partition=partition, timestamp_ms=timestamp_ms)
        self._known.add(topic)  # its metadata is known now: the next records can go straight to the batches
        return True

    def send_batch(self, topic: str, partition: int, batch: V2Batch) -> bool:
        """``batch`` written as it was read (broker.transfer.batches) to ``partition``; False (nothing sent) when it
        cannot be: a batch of another kind, or a topic whose metadata the producer has not fetched yet."""
        if self._whole is None or topic not in self._known or not whole_copyable(batch):
            return False
        self._whole(TopicPartition(topic, partition), batch)
        return True

    def checkpoint(self) -> None:
        """Everything sent so far is written (and, transactional, committed) when this returns."""
        if self.transactional:
            self.producer.commit_transaction()
            self.producer.begin_transaction()
        else:
            self.producer.flush(timeout=120)

    def abandon(self) -> None:
        """Stop without writing what was sent since the last checkpoint (transactional), and close."""
        try:
            if self.transactional:
                self.producer.abort_transaction()
        except kafka.errors.KafkaError:
            pass
        finally:
            self.producer.close(timeout=10)

    def close(self) -> None:
        if self.transactional:
            self.producer.commit_transaction()
        self.producer.flush(timeout=120)
        self.producer.close(timeout=10)


def _direct_append(producer: KafkaProducer) -> Callable[..., None] | None:
    """A record straight into the producer's batches, for a partition already chosen of a topic whose metadata it
    has: what ``KafkaProducer.send`` does after its checks, serializers and partitioner, which cost it about 20 µs
    a record (a copy spent most of its time there). None when this kafka-python is not built as expected: then
    every record goes through ``send``."""
    accumulator = getattr(producer, "_accumulator", None)
    sender = getattr(producer, "_sender", None)
    transactions = getattr(producer, "_transaction_manager", None)
    if accumulator is None or sender is None or not hasattr(accumulator, "append"):
        return None
    in_transaction = transactions is not None and transactions.is_transactional()

    def append(
        tp: TopicPartition, timestamp_ms: int | None, key: bytes | None, value: bytes | None, headers: list[Any]
    ) -> None:
        if in_transaction and transactions is not None:
            transactions.maybe_add_partition_to_transaction(tp)
        stamp = timestamp_ms if timestamp_ms is not None else int(time.time() * 1000)
        _future, full, new_batch, _aborted = accumulator.append(tp, stamp, key, value, headers)
        if full or new_batch:
            sender.wakeup()

    return append


def run_copy(
    source: ClusterConnection,
    target: ClusterConnection,
    plan: CopyPlan,
    predicate: Callable[[Message], bool],
    transactional_id: str | None,
    cancel: threading.Event | None = None,
    on_progress: Callable[[CopyProgress], None] | None = None,
    progress_every_s: float = 0.5,
    mover: SchemaMover | None = None,
) -> CopyProgress:
    """Copy ``plan``'s ranges (the records ``predicate`` passes) to its target; the progress at the end. Raises
    ClusterUnavailable when a cluster stops answering (the progress so far then holds the position to resume).
    ``mover``: the schema ids of wire-format keys and values rewritten for the target's registry."""
    progress = CopyProgress(
        total=plan.total,
        positions={r.partition: r.start for r in plan.ranges if r.readable},
    )
    progress.saved = dict(progress.positions)
    writer: Writer | None = None
    if not plan.dry_run:
        writer = Writer(target, "copy", transactional_id if plan.exactly_once else None)
    progress.guarantee = "exactly-once" if writer is not None and writer.transactional else "at-least-once"
    pace = Pace(plan.rate)
    report = Reporter(progress, pace, on_progress, progress_every_s)

    def on_scan(scanned: Any) -> None:  # also while the filter passes nothing: the run is alive
        progress.read = scanned.scanned
        progress.positions = dict(scanned.positions)
        report()

    def take(partition: int, batch: V2Batch) -> bool:
        """A batch of records all copied: written whole when it can be."""
        if writer is None or not writer.send_batch(plan.to_topic, partition, batch):
            return False
        count = batch.count or 0
        progress.written += count
        progress.whole_batches += 1
        progress.positions[partition] = batch.last_offset + 1
        if pace.one_more(progress.written, count):
            writer.checkpoint()
            progress.saved = dict(progress.positions)
        report()
        return True

    # Whole batches: every record of a batch goes to its own partition with its own time, and no rate paces them
    # one by one.
    whole = (
        writer is not None
        and plan.keep_partition
        and plan.keep_timestamp
        and not plan.filtered
        and not plan.rate
        and mover is None
    )

    try:
        for message in scan(
            source,
            plan.topic,
            plan.ranges,
            predicate,
            max_scan=2**62,
            max_matches=2**62,
            cancel=cancel,
            on_progress=on_scan,
            report_every=1000,
            deadline_s=10**9,
            isolation="read_committed",
            take=take if whole else None,
        ):
            partition = _target_partition(message, plan)
            timestamp = message.timestamp if plan.keep_timestamp else None
            progress.null_headers += sum(1 for _, v in message.headers if v is None)
            if writer is None:
                if len(progress.samples) < SAMPLES:
                    progress.samples.append(_sample(message, partition, timestamp))
            elif not writer.send(
                plan.to_topic,
                mover.move(message.key, "key") if mover is not None else message.key,
                mover.move(message.value, "value") if mover is not None else message.value,
                message.headers,
                partition,
                timestamp,
            ):
                progress.not_sent.append(f"{message.partition}:{message.offset}")
                continue
            progress.written += 1
            progress.positions[message.partition] = message.offset + 1
            if pace.one_more(progress.written) and writer is not None:
                writer.checkpoint()
                progress.saved = dict(progress.positions)
            report()
        if cancel is not None and cancel.is_set():
            progress.stopped = "cancelled"
        if writer is not None:
            writer.close()
            writer = None
        if progress.stopped is None:  # every range read to its end (the last records may have been markers)
            progress.positions = {r.partition: r.stop for r in plan.ranges if r.readable}
        progress.saved = dict(progress.positions)
    except (kafka.errors.KafkaError, KazamiError) as exc:
        progress.error = _reason(exc)
        if isinstance(exc, KazamiError) and not isinstance(exc, ClusterUnavailable):
            raise
    finally:
        if writer is not None:
            writer.abandon()
        progress.done = True
        report(force=True)
    return progress


def _target_partition(message: Message, plan: CopyPlan) -> int | None:
    return target_partition(message.key, message.partition if plan.keep_partition else None, plan.target_partitions)


def target_partition(key: bytes | None, kept: int | None, partitions: int) -> int | None:
    """Where a record goes: ``kept`` (its own partition, kept), else by key as Kafka's Java producer places it
    (murmur2); a record without a key goes where the producer's own partitioner puts it (None)."""
    if kept is not None:
        return kept
    if key is None:
        return None
    return murmur2_partition(key, partitions)


def _sample(message: Message, partition: int | None, timestamp: int | None) -> dict[str, Any]:
    from broker.transfer.records import encode_bytes

    key, key_enc = encode_bytes(message.key)
    value, value_enc = encode_bytes(message.value)
    return {
        "partition": message.partition,
        "offset": message.offset,
        "to_partition": partition,
        "timestamp": timestamp,
        "key": key if key_enc != "base64" else f"({len(message.key or b'')} bytes)",
        "value": (value[:200] if value_enc != "base64" else f"({len(message.value or b'')} bytes)")
        if value is not None
        else None,
        "headers": len(message.headers),
    }


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class Bound:
    """Where a range starts or stops: an offset for every partition, one per partition, or a time."""

    offset: int | None = None
    offsets: dict[int, int] = field(default_factory=dict)
    timestamp_ms: int | None = None


@dataclass(frozen=True)
class CopyRequest:
    to_topic: str
    to_cluster: str | None
    partitions: list[int] | None
    start: Bound
    stop: Bound
    filter: str
    keep_partition: bool
    keep_timestamp: bool
    rate: float | None
    dry_run: bool
    exactly_once: bool
    schemas: str = "keep"


def check_copy_request(body: Any) -> CopyRequest:
    """What ``POST .../copy/`` asks, checked; raises InvalidInput naming the field."""
    from broker.times import parse_time

    if not isinstance(body, dict):
        raise InvalidInput("The body must be a JSON object.")
    to_topic = body.get("to_topic")
    if not isinstance(to_topic, str) or not to_topic.strip():
        raise InvalidInput("to_topic is required: the topic to copy to.")
    to_cluster = body.get("to_cluster")
    if to_cluster is not None and (not isinstance(to_cluster, str) or not to_cluster):
        raise InvalidInput("to_cluster must be the name of a configured cluster.")
    partitions = body.get("partitions")
    if partitions is not None:
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and 0 <= p < 2**31 for p in partitions
        ):
            raise InvalidInput("partitions must be a list of partition numbers.")
        partitions = sorted(set(partitions))

    def bound(name: str, edge: str) -> Bound:
        given = body.get(name)
        if given in (None, "", edge):
            return Bound()
        if isinstance(given, int) and not isinstance(given, bool):
            given = {"offset": given}
        if isinstance(given, str):
            given = {"timestamp": given}
        if not isinstance(given, dict) or len(given) != 1:
            raise InvalidInput(
                f'{name} must be "{edge}", an offset, {{"offsets": {{"0": 5}}}} '
                f'or {{"timestamp": "2026-11-01T12:00:00Z"}}.'
            )
        ((kind, value),) = given.items()
        if kind == "offset" and isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return Bound(offset=value)
        if kind == "offsets" and isinstance(value, dict):
            try:
                offsets = {int(p): int(o) for p, o in value.items()}
            except (TypeError, ValueError):
                raise InvalidInput(f"{name}.offsets must map partition numbers to offsets.") from None
            if any(p < 0 or o < 0 for p, o in offsets.items()):
                raise InvalidInput(f"{name}.offsets must map partition numbers to offsets.")
            return Bound(offsets=offsets)
        if kind == "timestamp" and isinstance(value, str | int) and not isinstance(value, bool):
            return Bound(timestamp_ms=parse_time(str(value), f"{name}.timestamp"))
        raise InvalidInput(f"{name}: {kind} must be an offset, offsets per partition or a timestamp.")

    def flag(name: str, default: bool) -> bool:
        value = body.get(name, default)
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true or false.")
        return value

    rate = body.get("rate")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 < rate <= 10**9:
            raise InvalidInput("rate must be a number of records a second above 0 (or left out: as fast as it goes).")
        rate = float(rate)
    text = body.get("filter") or ""
    if not isinstance(text, str):
        raise InvalidInput('filter must be a search filter such as value.status == "error".')
    schemas = body.get("schemas", "keep")
    if schemas not in ("keep", "register"):
        raise InvalidInput(
            'schemas must be "keep" (records as they are) or "register" (their schemas registered in the target '
            "cluster's registry, and the ids in the records rewritten)."
        )
    return CopyRequest(
        to_topic=to_topic.strip(),
        to_cluster=to_cluster,
        partitions=partitions,
        start=bound("from", "beginning"),
        stop=bound("to", "end"),
        filter=text,
        keep_partition=flag("keep_partition", True),
        keep_timestamp=flag("keep_timestamp", True),
        rate=rate,
        dry_run=flag("dry_run", False),
        exactly_once=flag("exactly_once", True),
        schemas=schemas,
    )


def plan_ranges(source: ClusterConnection, topic: str, asked: CopyRequest) -> list[ScanRange]:
    """The offset ranges the request covers (the log ends when it is planned bound what "end" means).
    Raises TopicNotFound, PartitionNotFound, ClusterUnavailable."""
    from broker.messages.scan import plan_scan

    ranges = plan_scan(
        source,
        topic,
        asked.partitions,
        start_ms=asked.start.timestamp_ms,
        stop_ms=asked.stop.timestamp_ms,
        start_offset=asked.start.offset,
        stop_offset=asked.stop.offset,
    )
    shaped = []
    for r in ranges:
        start = max(r.start, asked.start.offsets.get(r.partition, r.start))
        stop = min(r.stop, asked.stop.offsets.get(r.partition, r.stop))
        if r.readable and stop <= start:
            continue
        shaped.append(ScanRange(r.partition, start, stop, r.readable, r.leader))
    return shaped
