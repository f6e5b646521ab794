"""Transactions and the producers of partitions, as their coordinators and the partitions' leaders tell them.

- Every broker coordinates the transactional ids whose ``__transaction_state`` partition it leads: the list
  asks each one (ListTransactions), then describes the ids in one DescribeTransactions per coordinator.
- A partition's leader knows its active producers (DescribeProducers): last sequence, epoch, last write
  and, for a producer inside a transaction, the offset its transaction began at. The last stable offset
  (LSO) is the lowest of those: the open transaction that starts at the LSO holds it back, and the records
  between it and the high watermark wait, unseen by read_committed consumers.
- A hanging transaction is one a partition still holds open that its coordinator does not know (found as
  ``kafka-transactions.sh find-hanging`` finds them): open on the partition and silent for longer than the
  brokers' ``transaction.max.timeout.ms``, and no ongoing transaction of that producer id at its coordinator
  includes the partition. Nothing will ever end it but an abort marker written by hand: ``do_abort`` writes
  one (WriteTxnMarkers to the leader, as ``kafka-transactions.sh abort`` does).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.protocol.admin.transactions import (
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    ListTransactionsRequest,
)
from kafka.protocol.metadata import CoordinatorType
from kafka.protocol.producer.transaction import WriteTxnMarkersRequest

from broker.client.connection import ClusterConnection, find_coordinators, live_brokers, send_request
from broker.errors import InvalidInput, KafkaRefused, NotFound, PartitionNotFound, PartitionUnavailable
from broker.messages.log import PartitionLog
from broker.topics.read import get_topic_partitions, topic_leaders

STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)
# Kafka's default transaction.max.timeout.ms, used when no broker says its own.
DEFAULT_MAX_TIMEOUT_MS = 900_000
# Records between the LSO and the high watermark are read and counted one by one up to this many offsets;
# a wider range is given in offsets (``hidden_counted`` false).
COUNT_LIMIT = 20_000
COUNT_SECONDS = 5.0


def _ms(value: int | None) -> int | None:
    return value if value is not None and value >= 0 else None


# ---------------------------------------------------------------- what is shown


@dataclass(frozen=True)
class Transaction:
    """A transactional id as its coordinator describes it (or only lists it, when the description failed)."""

    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int | None = None
    timeout_ms: int | None = None
    partitions: tuple[tuple[str, int], ...] = ()
    start_time: int | None = None  # epoch ms; None outside a transaction
    coordinator: int | None = None

    @property
    def ongoing(self) -> bool:
        return self.state == "Ongoing"

    def as_dict(self) -> dict[str, Any]:
        return {
            "transactional_id": self.transactional_id,
            "state": self.state,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "timeout_ms": self.timeout_ms,
            "partitions": [{"topic": t, "partition": p} for t, p in self.partitions],
            "start_time": self.start_time,
            "coordinator": self.coordinator,
        }


@dataclass
class TransactionList:
    transactions: list[Transaction]
    counts: dict[str, int]  # state -> transactional ids in it, before any filter
    unanswered: list[str] = field(default_factory=list)  # brokers (or coordinators) that did not answer, and why

    def as_dict(self) -> dict[str, Any]:
        return {
            "transactions": [t.as_dict() for t in self.transactions],
            "counts": self.counts,
            "unanswered": self.unanswered,
        }


@dataclass(frozen=True)
class ActiveProducer:
    """One producer a partition's leader remembers (DescribeProducers)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int | None  # epoch ms of its last write
    coordinator_epoch: int
    current_txn_start_offset: int | None  # where its open transaction began; None: none open

    @property
    def in_transaction(self) -> bool:
        return self.current_txn_start_offset is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "last_sequence": self.last_sequence,
            "last_timestamp": self.last_timestamp,
            "coordinator_epoch": self.coordinator_epoch,
            "current_txn_start_offset": self.current_txn_start_offset,
        }


@dataclass(frozen=True)
class Holder:
    """The open transaction whose first record is at the LSO."""

    producer: ActiveProducer
    first_offset: int
    since: int | None  # timestamp of its first record
    transactional_id: str | None
    coordinator_state: str | None
    start_time: int | None  # the coordinator's start of the transaction

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.producer.as_dict(),
            "first_offset": self.first_offset,
            "since": self.since,
            "transactional_id": self.transactional_id,
            "coordinator_state": self.coordinator_state,
            "transaction_start_time": self.start_time,
        }


@dataclass
class PartitionProducers:
    topic: str
    partition: int
    leader: int
    high_watermark: int
    last_stable_offset: int
    producers: list[ActiveProducer]
    holder: Holder | None
    hidden_records: int  # not markers, not aborted, between the LSO and the high watermark
    open_records: int  # of those, the ones whose transaction is still open
    hidden_counted: bool  # records counted one by one (else offsets, markers included)

    @property
    def held_back(self) -> bool:
        return self.last_stable_offset < self.high_watermark

    @property
    def gap(self) -> int:
        return self.high_watermark - self.last_stable_offset

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "leader": self.leader,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "holder": self.holder.as_dict() if self.holder else None,
            "hidden_records": self.hidden_records,
            "open_records": self.open_records,
            "hidden_counted": self.hidden_counted,
            "producers": [p.as_dict() for p in self.producers],
        }


@dataclass(frozen=True)
class OpenTransaction:
    """A transaction a partition holds open, and what its coordinator says of that producer."""

    topic: str
    partition: int
    producer: ActiveProducer
    silent_ms: int  # since the producer's last write to the partition
    transactional_id: str | None
    coordinator_state: str | None
    hanging: bool
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            **self.producer.as_dict(),
            "silent_ms": self.silent_ms,
            "transactional_id": self.transactional_id,
            "coordinator_state": self.coordinator_state,
            "hanging": self.hanging,
            "reason": self.reason,
        }


@dataclass
class HangingReport:
    max_timeout_ms: int
    partitions: int  # partitions asked
    candidates: list[OpenTransaction]  # open longer than the time-out; ``hanging`` says which the coordinator forgot
    unanswered: list[str] = field(default_factory=list)

    @property
    def hanging(self) -> list[OpenTransaction]:
        return [c for c in self.candidates if c.hanging]

    def as_dict(self) -> dict[str, Any]:
        return {
            "max_timeout_ms": self.max_timeout_ms,
            "partitions": self.partitions,
            "hanging": [c.as_dict() for c in self.hanging],
            "candidates": [c.as_dict() for c in self.candidates],
            "unanswered": self.unanswered,
        }


@dataclass(frozen=True)
class Aborted:
    topic: str
    partition: int
    producer_id: int
    high_watermark: int
    last_stable_offset: int
    coordinator_state: str | None  # the coordinator's own view of that producer's transaction, when it has one

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "producer_id": self.producer_id,
            "high_watermark": self.high_watermark,
            "last_stable_offset": self.last_stable_offset,
            "coordinator_state": self.coordinator_state,
        }


# ---------------------------------------------------------------- pure parts


def check_state(state: str | None) -> str | None:
    if not state:
        return None
    if state not in STATES:
        raise InvalidInput(f"state must be one of {', '.join(STATES)}, not {state!r}.")
    return state


def holder_of(producers: Iterable[ActiveProducer], lso: int, high: int) -> ActiveProducer | None:
    """The producer whose open transaction holds the LSO back: the one whose transaction begins at it (the
    LSO is the lowest first offset of the open transactions). None when nothing is held back."""
    if lso >= high:
        return None
    open_ones = sorted(
        (p for p in producers if p.current_txn_start_offset is not None), key=lambda p: p.current_txn_start_offset or 0
    )
    exact = [p for p in open_ones if p.current_txn_start_offset == lso]
    return exact[0] if exact else (open_ones[0] if open_ones else None)


def is_candidate(producer: ActiveProducer, now_ms: int, max_timeout_ms: int) -> bool:
    """Open, and silent on the partition longer than any transaction may last (Kafka's tool measures from
    the producer's last write, DescribeProducers' ``last_timestamp``)."""
    if not producer.in_transaction:
        return False
    last = producer.last_timestamp
    return last is None or now_ms - last > max_timeout_ms


def judge(topic: str, partition: int, producer: ActiveProducer, known: list[Transaction]) -> tuple[bool, str]:
    """(hanging, why) for a transaction open on the partition, given what the coordinators say of the
    transactional ids of its producer id (``known``)."""
    if not known:
        return True, f"No coordinator knows producer {producer.producer_id}: nothing will ever end this transaction."
    for txn in known:
        if txn.ongoing and (topic, partition) in txn.partitions:
            return False, (
                f"Its coordinator has {txn.transactional_id!r} Ongoing with this partition: it ends the "
                f"transaction itself (at the latest at its time-out of {txn.timeout_ms} ms)."
            )
    described = ", ".join(f"{t.transactional_id!r} is {t.state}" for t in known)
    return True, f"Its coordinator has no ongoing transaction with this partition ({described})."


def max_timeout(values: Iterable[str | None]) -> int:
    """The largest ``transaction.max.timeout.ms`` the brokers say (Kafka's default when none does)."""
    found = [int(v) for v in values if v and str(v).lstrip("-").isdigit()]
    return max(found) if found else DEFAULT_MAX_TIMEOUT_MS


def _producer(p: Any) -> ActiveProducer:
    start = p.current_txn_start_offset
    return ActiveProducer(
        producer_id=p.producer_id,
        producer_epoch=p.producer_epoch,
        last_sequence=p.last_sequence,
        last_timestamp=_ms(p.last_timestamp),
        coordinator_epoch=p.coordinator_epoch,
        current_txn_start_offset=start if start is not None and start >= 0 else None,
    )


# ---------------------------------------------------------------- requests


def _list(
    admin: KafkaAdminClient, brokers: list[int], producer_ids: list[int] | None = None
) -> tuple[list[tuple[str, int, str]], list[str]]:
    """(transactional id, producer id, state) from every broker in turn, and the brokers that failed."""
    found: list[tuple[str, int, str]] = []
    failed: list[str] = []
    for broker in brokers:
        request = ListTransactionsRequest(state_filters=[], producer_id_filters=list(producer_ids or []))
        try:
            answer = send_request(admin, request, node=broker)
        except kafka.errors.KafkaError as exc:
            failed.append(f"broker {broker}: {type(exc).__name__}")
            continue
        if answer.error_code:
            failed.append(f"broker {broker}: {kafka.errors.for_code(answer.error_code).__name__}")
            continue
        found += [(t.transactional_id, t.producer_id, t.transaction_state) for t in answer.transaction_states]
    return found, failed


def _describe(admin: KafkaAdminClient, ids: list[str]) -> tuple[dict[str, Transaction], list[str]]:
    """Each id's description, one DescribeTransactions per coordinator; ids whose coordinator failed or which
    it no longer knows are left out (with why)."""
    if not ids:
        return {}, []

    by_coordinator: dict[int, list[str]] = defaultdict(list)
    for txn_id, node in find_coordinators(admin, ids, CoordinatorType.TRANSACTION).items():
        by_coordinator[node].append(txn_id)
    found: dict[str, Transaction] = {}
    failed: list[str] = []
    for node, group in sorted(by_coordinator.items()):
        try:
            answer = send_request(admin, DescribeTransactionsRequest(transactional_ids=group), node=node)
        except kafka.errors.KafkaError as exc:
            failed.append(f"coordinator {node}: {type(exc).__name__}")
            continue
        for t in answer.transaction_states:
            if t.error_code:
                continue
            partitions = tuple(sorted((topic.topic, p) for topic in t.topics for p in topic.partitions))
            found[t.transactional_id] = Transaction(
                transactional_id=t.transactional_id,
                state=t.transaction_state,
                producer_id=t.producer_id,
                producer_epoch=t.producer_epoch,
                timeout_ms=t.transaction_timeout_ms,
                partitions=partitions,
                start_time=_ms(t.transaction_start_time_ms),
                coordinator=node,
            )
    return found, failed


def _describe_producers(
    admin: KafkaAdminClient, leaders: dict[TopicPartition, int]
) -> tuple[dict[TopicPartition, list[ActiveProducer]], list[str]]:
    """Each partition's active producers, one DescribeProducers per leader; partitions that fail are left
    out (with why)."""
    by_leader: dict[int, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for tp, leader in leaders.items():
        by_leader[leader][tp.topic].append(tp.partition)
    found: dict[TopicPartition, list[ActiveProducer]] = {}
    failed: list[str] = []
    for leader, topics in sorted(by_leader.items()):
        if leader < 0:
            failed += [f"{t}-{p}: no leader" for t, ps in topics.items() for p in ps]
            continue
        request = DescribeProducersRequest(
            topics=[DescribeProducersRequest.TopicRequest(name=t, partition_indexes=ps) for t, ps in topics.items()]
        )
        try:
            answer = send_request(admin, request, node=leader)
        except kafka.errors.KafkaError as exc:
            failed.append(f"broker {leader}: {type(exc).__name__}")
            continue
        for topic in answer.topics:
            for p in topic.partitions:
                if p.error_code:
                    failed.append(f"{topic.name}-{p.partition_index}: {kafka.errors.for_code(p.error_code).__name__}")
                    continue
                found[TopicPartition(topic.name, p.partition_index)] = [_producer(a) for a in p.active_producers]
    return found, failed


def _known_by_producer(
    admin: KafkaAdminClient, brokers: list[int], producer_ids: list[int]
) -> tuple[dict[int, list[Transaction]], list[str]]:
    """What the coordinators say of these producer ids: ListTransactions filtered on them to every broker,
    then DescribeTransactions of the transactional ids found."""
    if not producer_ids:
        return {}, []
    listed, failed = _list(admin, brokers, producer_ids)
    described, failed_too = _describe(admin, sorted({t for t, _, _ in listed}))
    known: dict[int, list[Transaction]] = defaultdict(list)
    for txn_id, producer_id, state in listed:
        known[producer_id].append(described.get(txn_id) or Transaction(txn_id, state, producer_id))
    return known, failed + failed_too


def _brokers(admin: KafkaAdminClient) -> list[int]:
    return sorted(int(b["broker_id"]) for b in live_brokers(admin))


# ---------------------------------------------------------------- reads


def get_transactions(conn: ClusterConnection, state: str | None = None) -> TransactionList:
    """Every transactional id the coordinators know, described (``state`` keeps those in it). Raises
    InvalidInput for an unknown state, ClusterUnavailable."""
    state = check_state(state)

    def fetch(admin: KafkaAdminClient) -> TransactionList:
        brokers = _brokers(admin)
        listed, failed = _list(admin, brokers)
        described, failed_too = _describe(admin, sorted({t for t, _, _ in listed}))
        every = [described.get(t) or Transaction(t, s, p) for t, p, s in listed]
        every.sort(key=lambda t: t.transactional_id)
        counts: dict[str, int] = defaultdict(int)
        for txn in every:
            counts[txn.state] += 1
        chosen = [t for t in every if state is None or t.state == state]
        return TransactionList(chosen, dict(counts), failed + failed_too)

    return conn.call(fetch, "transactions", requests=8, retry=True)


def _leader(conn: ClusterConnection, topic: str, partition: int) -> tuple[int, int]:
    """The partition's leader and (as listed now) its high watermark."""
    infos = get_topic_partitions(conn, topic, only=partition)
    info = next((i for i in infos if i.partition == partition), None)
    if info is None:
        raise PartitionNotFound(f"Topic {topic!r} has no partition {partition}.")
    if info.leader is None or info.leader < 0:
        raise PartitionUnavailable(f"Partition {partition} of {topic!r} has no leader right now.")
    return info.leader, info.end_offset or 0


def get_partition_producers(conn: ClusterConnection, topic: str, partition: int) -> PartitionProducers:
    """The partition's active producers, its high watermark and LSO, the open transaction holding the LSO
    back and the records a read_committed consumer cannot see yet. Raises TopicNotFound, PartitionNotFound,
    PartitionUnavailable, ClusterUnavailable."""
    leader, end = _leader(conn, topic, partition)
    tp = TopicPartition(topic, partition)

    def producers_of(admin: KafkaAdminClient) -> list[ActiveProducer]:
        found, failed = _describe_producers(admin, {tp: leader})
        if tp not in found:
            raise PartitionUnavailable(f"The leader of {topic}-{partition} did not say its producers: {failed}.")
        return found[tp]

    producers = conn.call(producers_of, "producers", retry=True)
    log = PartitionLog(conn, topic, partition, leader)
    high, stable = log.bounds(end)
    hidden = open_records = 0
    counted = True
    first_timestamp: int | None = None
    if stable < high:
        if high - stable <= COUNT_LIMIT:
            for entry in log.entries(stable, high, time.monotonic() + COUNT_SECONDS):
                if entry.offset == stable:
                    first_timestamp = entry.timestamp
                if entry.control is None and entry.transaction != "aborted":
                    hidden += 1
                    open_records += entry.transaction == "open"
            counted = not log.timed_out
        else:
            counted = False
        if not counted:
            hidden = open_records = high - stable
    holder: Holder | None = None
    chosen = holder_of(producers, stable, high)
    if chosen is not None:
        known, _ = conn.call(
            lambda admin: _known_by_producer(admin, _brokers(admin), [chosen.producer_id]), "coordinator", retry=True
        )
        txn = next((t for t in known.get(chosen.producer_id, []) if t.ongoing), None) or next(
            iter(known.get(chosen.producer_id, [])), None
        )
        holder = Holder(
            producer=chosen,
            first_offset=chosen.current_txn_start_offset if chosen.current_txn_start_offset is not None else stable,
            since=first_timestamp,
            transactional_id=txn.transactional_id if txn else None,
            coordinator_state=txn.state if txn else None,
            start_time=txn.start_time if txn else None,
        )
    producers.sort(key=lambda p: p.producer_id)
    return PartitionProducers(topic, partition, leader, high, stable, producers, holder, hidden, open_records, counted)


def _max_timeout(admin: KafkaAdminClient, brokers: list[int]) -> int:
    name = "transaction.max.timeout.ms"
    values: list[str | None] = []
    resources = [ConfigResource(ConfigResourceType.BROKER, str(b), [name]) for b in brokers]
    try:
        described = admin.describe_configs(resources, config_filter="all")
    except kafka.errors.KafkaError:
        return DEFAULT_MAX_TIMEOUT_MS
    for configs in described.get("broker", {}).values():
        entry = configs.get(name)
        values.append(entry.get("value") if isinstance(entry, dict) else entry)
    return max_timeout(values)


def find_hanging(
    conn: ClusterConnection, topics: list[str] | None = None, max_timeout_ms: int | None = None
) -> HangingReport:
    """The transactions open on the partitions of ``topics`` (none: every topic) for longer than
    ``max_timeout_ms`` (None: the brokers' ``transaction.max.timeout.ms``), each judged hanging or not by
    what its coordinator says. Raises TopicNotFound, ClusterUnavailable."""

    def fetch(admin: KafkaAdminClient) -> HangingReport:
        brokers = _brokers(admin)
        limit = _max_timeout(admin, brokers) if max_timeout_ms is None else max_timeout_ms
        described = admin.describe_topics(topics or None)
        missing = [t["name"] for t in described if t.get("error_code")]
        if missing and topics:
            from broker.errors import TopicNotFound

            raise TopicNotFound(f"No topic named {missing[0]!r} in cluster {conn.config.name!r}.")
        leaders = topic_leaders([t for t in described if not t.get("error_code")])
        found, failed = _describe_producers(admin, leaders)
        now = int(time.time() * 1000)
        open_ones = [
            (tp, p) for tp, producers in sorted(found.items()) for p in producers if is_candidate(p, now, limit)
        ]
        known, failed_too = _known_by_producer(admin, brokers, sorted({p.producer_id for _, p in open_ones}))
        candidates = []
        for tp, p in open_ones:
            mine = known.get(p.producer_id, [])
            hanging, why = judge(tp.topic, tp.partition, p, mine)
            first = next((t for t in mine if t.ongoing), None) or next(iter(mine), None)
            candidates.append(
                OpenTransaction(
                    topic=tp.topic,
                    partition=tp.partition,
                    producer=p,
                    silent_ms=now - p.last_timestamp if p.last_timestamp is not None else -1,
                    transactional_id=first.transactional_id if first else None,
                    coordinator_state=first.state if first else None,
                    hanging=hanging,
                    reason=why,
                )
            )
        return HangingReport(limit, len(leaders), candidates, failed + failed_too)

    return conn.call(fetch, "hanging transactions", requests=10, retry=True)


# ---------------------------------------------------------------- change


def do_abort(
    conn: ClusterConnection,
    topic: str,
    partition: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
) -> Aborted:
    """Write an abort marker for ``producer_id``'s open transaction on the partition (WriteTxnMarkers to its
    leader, as ``kafka-transactions.sh abort``). The producer must have that transaction open there now, with
    that epoch. Raises NotFound (no such open transaction), InvalidInput (another epoch), KafkaRefused,
    ClusterUnavailable."""
    leader, end = _leader(conn, topic, partition)
    tp = TopicPartition(topic, partition)

    def abort(admin: KafkaAdminClient) -> str | None:
        found, failed = _describe_producers(admin, {tp: leader})
        if tp not in found:
            raise PartitionUnavailable(f"The leader of {topic}-{partition} did not say its producers: {failed}.")
        producer = next((p for p in found[tp] if p.producer_id == producer_id), None)
        if producer is None or not producer.in_transaction:
            raise NotFound(f"Producer {producer_id} has no open transaction on {topic}-{partition}: nothing to abort.")
        if producer.producer_epoch != producer_epoch:
            raise InvalidInput(
                f"Producer {producer_id} is at epoch {producer.producer_epoch} on {topic}-{partition}, "
                f"not {producer_epoch}: look again at its transactions."
            )
        known, _ = _known_by_producer(admin, _brokers(admin), [producer_id])
        ongoing = next((t for t in known.get(producer_id, []) if t.ongoing), None)
        marker = WriteTxnMarkersRequest.WritableTxnMarker(
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            transaction_result=False,  # abort
            topics=[
                WriteTxnMarkersRequest.WritableTxnMarker.WritableTxnMarkerTopic(
                    name=topic, partition_indexes=[partition]
                )
            ],
            coordinator_epoch=coordinator_epoch,
        )
        answer = send_request(admin, WriteTxnMarkersRequest(markers=[marker]), node=leader)
        for result in answer.markers:
            for t in result.topics:
                for p in t.partitions:
                    if p.error_code:
                        error = kafka.errors.for_code(p.error_code)
                        raise KafkaRefused(
                            f"Kafka refused the abort marker on {topic}-{partition}: "
                            f"{error.__name__} ({error.message})."
                        )
        return ongoing.state if ongoing else None

    state = conn.call(abort, "transaction abort")
    log = PartitionLog(conn, topic, partition, leader)
    high, stable = log.bounds(end)
    return Aborted(topic, partition, producer_id, high, stable, state)
