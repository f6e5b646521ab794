"""Scanning a topic: the offsets a scan will read (plan_scan), every record through a filter (scan), and finding
the messages of a key where its partitioners put it (find_by_key)."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from kafka import KafkaAdminClient, TopicPartition

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, PartitionNotFound
from broker.messages.filtering import Probe
from broker.messages.log import Message, OffsetOutOfRange, PartitionLog, Passed, visible
from broker.messages.partitioners import CHOICES, PARTITIONERS, placements
from broker.messages.query_terms import FilterTimeSpent
from broker.messages.read import _offset_for_time, _pick, _readable, _reading
from broker.segments.records import V2Batch
from broker.topics.read import PartitionInfo, get_topic_partitions


@dataclass
class ScanProgress:
    """Where a scan is; a callback receives it every ``report_every`` messages and at the end."""

    scanned: int = 0
    matched: int = 0
    positions: dict[int, int] = field(default_factory=dict)  # partition -> next offset to read
    total: int = 0  # messages in range
    done: bool = False
    # why the scan ended early: "limit", "cancelled", "deadline" (its time ran out), "matches", "regex_budget"
    # (the filter's regular expressions used the time they were given)
    stopped: str | None = None
    why: str | None = None  # the same in a sentence, with the number of records read
    unreadable: list[int] = field(default_factory=list)  # partitions in the plan that had no leader: not read
    elapsed: float = 0.0  # seconds since the scan began


@dataclass(frozen=True)
class ScanRange:
    partition: int
    start: int
    stop: int
    readable: bool = True  # False: the partition has no leader now; the scan reports it, reads nothing
    leader: int = -1


def plan_scan(
    conn: ClusterConnection,
    topic: str,
    partitions: list[int] | None = None,
    start_ms: int | None = None,
    stop_ms: int | None = None,
    last: int | None = None,
    start_offset: int | None = None,
    stop_offset: int | None = None,
    isolation: str = "read_uncommitted",
) -> list[ScanRange]:
    """The offset ranges a scan reads, per partition: bounded by time, by offsets, or the last N of each;
    read_committed, below each partition's last stable offset (what such a consumer can read now).
    A partition without a leader gets an unreadable range, so that the scan says it was not searched.

    Raises TopicNotFound, PartitionNotFound, ClusterUnavailable.
    """
    infos = get_topic_partitions(conn, topic)
    known = {p.partition: p for p in infos}
    chosen = partitions if partitions is not None else sorted(known)
    stable = (
        _stable_offsets(conn, topic, [known[p] for p in chosen if p in known])
        if isolation != "read_uncommitted"
        else {}
    )
    ranges = []
    for number in chosen:
        if number not in known:
            raise PartitionNotFound(f"Topic {topic!r} has no partition {number} (it has 0 to {len(known) - 1}).")
        info = known[number]
        if not info.available or info.start_offset is None or info.end_offset is None:
            ranges.append(ScanRange(number, 0, 0, readable=False))
            continue
        start, stop = info.start_offset, min(info.end_offset, stable.get(number, info.end_offset))
        if start_offset is not None:
            start = max(start, start_offset)
        if stop_offset is not None:
            stop = min(stop, stop_offset)
        if last is not None:
            start = max(start, stop - last)
        tp = TopicPartition(topic, number)
        if start_ms is not None:
            found = _offset_for_time(conn, tp, start_ms)
            start = max(start, found) if found is not None else stop
        if stop_ms is not None:
            found = _offset_for_time(conn, tp, stop_ms)
            stop = min(stop, found) if found is not None else stop
        if stop > start:
            ranges.append(ScanRange(number, start, stop, leader=info.leader if info.leader is not None else -1))
    return ranges


def _stable_offsets(conn: ClusterConnection, topic: str, infos: list[PartitionInfo]) -> dict[int, int]:
    """Partition -> last stable offset, in one request per leader (partitions that fail are left out)."""
    from kafka.admin import OffsetSpec

    from broker.topics.read import partition_offsets

    tps = [TopicPartition(topic, i.partition) for i in infos if i.available]
    leaders = {TopicPartition(topic, i.partition): i.leader for i in infos if i.leader is not None}

    def ask(admin: KafkaAdminClient) -> dict[int, int]:
        found = partition_offsets(admin, conn, tps, OffsetSpec.LATEST, leaders, isolation="read_committed")
        return {tp.partition: offset for tp, offset in found.items()}

    return conn.call(ask, "last stable offsets", retry=True) if tps else {}


def scan(
    conn: ClusterConnection,
    topic: str,
    ranges: list[ScanRange],
    predicate: Callable[[Message], bool],
    max_scan: int,
    max_matches: int,
    cancel: threading.Event | None = None,
    on_progress: Callable[[ScanProgress], None] | None = None,
    report_every: int = 2000,
    deadline_s: float = 300.0,
    isolation: str = "read_uncommitted",
    report_seconds: float | None = None,
    probe: Probe | None = None,
    take: Callable[[int, V2Batch], bool] | None = None,
) -> Iterator[Message]:
    """Yield the records of ``ranges`` that satisfy ``predicate``, partition by partition, each labelled
    with its transaction's fate; read_committed, only those such a consumer is given.

    Stops at ``max_scan`` messages read, ``max_matches`` found, ``cancel`` set, the deadline (``deadline_s``
    seconds from the start, checked before every record), or when ``predicate`` raises FilterTimeSpent (that
    record is not counted); ``on_progress`` hears where it is every ``report_every`` records (and, with
    ``report_seconds``, at least that often while records come), and a last time with ``done`` set and why it
    stopped (``stopped``, ``why``).

    With ``probe`` (broker.messages.filtering.probe_for: texts one of which every match holds), batches of
    records holding none are passed over undecoded, and records holding none are not given to ``predicate``;
    they are counted as read all the same.

    ``take`` (a copy) is offered each batch of records (partition, batch) below the LSO that no transaction
    aborted and that lies within its range, still compressed; a batch it takes is counted as read, and its
    records are neither decoded nor yielded.
    """
    progress = ScanProgress(
        total=sum(r.stop - r.start for r in ranges if r.readable),
        positions={r.partition: r.start for r in ranges if r.readable},
        unreadable=[r.partition for r in ranges if not r.readable],
    )
    ranges = [r for r in ranges if r.readable]
    started = time.monotonic()
    deadline = started + deadline_s
    reported = started
    reported_at = 0  # records read at the last report

    def report(force: bool = False) -> None:
        nonlocal reported, reported_at
        if on_progress is None:
            return
        now = time.monotonic()
        due = progress.scanned // report_every != reported_at // report_every or (
            report_seconds is not None and now - reported >= report_seconds
        )
        if force or due:
            reported, reported_at = now, progress.scanned
            progress.elapsed = now - started
            on_progress(progress)

    def budget() -> int:
        return max_scan - progress.scanned

    def stop(reason: str, why: str) -> None:
        progress.stopped = reason
        progress.why = f"{why}, after {progress.scanned:,} record{'' if progress.scanned == 1 else 's'}"

    try:
        with _reading(conn, topic, "partitions"):
            for r in ranges:
                log = PartitionLog(conn, topic, r.partition, r.leader)
                passing = probe.pass_over(budget) if probe is not None else None
                taking = functools.partial(take, r.partition) if take is not None else None
                for message in log.walk(r.start, r.stop, deadline, passing, ahead=True, take=taking):
                    if isinstance(message, Passed):
                        progress.scanned += message.count
                        progress.positions[r.partition] = message.last + 1
                        if cancel is not None and cancel.is_set():
                            stop("cancelled", "stopped on request")
                            return
                        if progress.scanned >= max_scan:
                            stop("limit", "stopped at the most records asked for (max_scan)")
                            return
                        report()
                        continue
                    if message.control is not None:
                        continue  # a marker is no message: it is counted in no total but the range's
                    if cancel is not None and cancel.is_set():
                        stop("cancelled", "stopped on request")
                        return
                    if time.monotonic() >= deadline:
                        stop("deadline", f"stopped after {deadline_s:g} s, the most a search may take")
                        return
                    try:
                        hit = (
                            visible(message, isolation)
                            and (probe is None or probe.may_match(message))
                            and predicate(message)
                        )
                    except FilterTimeSpent as spent:
                        if spent.reason == "deadline":
                            stop("deadline", f"stopped after {deadline_s:g} s, the most a search may take")
                        else:
                            stop(spent.reason, f"stopped: {spent}")
                        return
                    progress.scanned += 1
                    progress.positions[r.partition] = message.offset + 1
                    if hit:
                        progress.matched += 1
                        yield message
                        if progress.matched >= max_matches:
                            stop("matches", "stopped at the most matches asked for (max_matches)")
                            return
                    if progress.scanned >= max_scan:
                        stop("limit", "stopped at the most records asked for (max_scan)")
                        return
                    report()
                if log.timed_out:
                    stop("deadline", f"stopped after {deadline_s:g} s, the most a search may take")
                    return
                progress.positions[r.partition] = r.stop
    except OffsetOutOfRange:
        raise ClusterUnavailable(f"Partitions of {topic!r} changed while they were read (records deleted).") from None
    finally:
        progress.done = True
        report(force=True)


@dataclass(frozen=True)
class KeySearch:
    partitioner: str  # what was asked: one of partitioners.CHOICES
    partitions: int  # the topic's
    placements: dict[str, int]  # partitioner name -> the partition it gives the key
    searched: list[int]  # the partitions read
    unreadable: list[int]  # partitions that should have been read but have no leader now
    reason: str
    matches: list[Message]
    scanned: int
    ranges: list[ScanRange]
    stopped: str | None

    @property
    def partition(self) -> int:
        """The first partition searched (with one partitioner, the only one)."""
        return self.searched[0] if self.searched else self.placements["murmur2"]

    @property
    def spans(self) -> list[tuple[int, ScanRange | None]]:
        """Each partition searched with the offsets read, None when it held nothing to read."""
        by_partition = {r.partition: r for r in self.ranges}
        return [(p, by_partition.get(p)) for p in self.searched]

    @property
    def found_in(self) -> dict[int, list[str]]:
        """Partition -> the partitioners that send the key there, for each partition holding a match."""
        held = sorted({m.partition for m in self.matches})
        return {p: [name for name, q in self.placements.items() if q == p] for p in held}


def find_by_key(
    conn: ClusterConnection,
    topic: str,
    key: bytes,
    partitioner: str = "auto",
    max_scan: int = 200_000,
    max_matches: int = 100,
    masked: Callable[[Message], Message] | None = None,
) -> KeySearch:
    """The messages whose key is ``key``. ``partitioner``: ``auto`` reads the partitions the default
    partitioners of broker.messages.partitioners give the key (Java's murmur2, librdkafka's CRC32, Sarama's
    FNV-1a), at most three; ``murmur2``, ``crc32`` or ``fnv1a`` that one's; ``all`` every partition. At
    most the newest ``max_scan`` messages of each are read. Raises InvalidInput for an unknown partitioner,
    TopicNotFound, PartitionUnavailable (one partitioner's partition cannot be read now: not searched, so not
    reported empty), ClusterUnavailable. With several partitions, those without a leader are listed in ``unreadable``.

    ``masked`` (broker.messages.masking.Masker.message): the messages as the user is shown them; a message matches
    when its masked key is ``key``, so a hidden key cannot be found by guessing it."""
    if partitioner not in CHOICES:
        raise InvalidInput(f"partitioner must be one of {', '.join(CHOICES)}, not {partitioner!r}.")
    infos = get_topic_partitions(conn, topic)
    count = len(infos)
    placed = placements(key, count)
    if partitioner == "all":
        wanted = sorted(info.partition for info in infos)
    elif partitioner == "auto":
        wanted = sorted(set(placed.values()))
    else:
        wanted = [placed[partitioner]]
        _readable(_pick(infos, topic, wanted[0]), topic)
    ranges = plan_scan(conn, topic, wanted, last=max_scan)
    unreadable = [r.partition for r in ranges if not r.readable]
    seen = ScanProgress()

    def remember(progress: ScanProgress) -> None:
        seen.scanned, seen.stopped = progress.scanned, progress.stopped

    matches = list(
        scan(
            conn,
            topic,
            ranges,
            (lambda m: m.key == key) if masked is None else (lambda m: masked(m).key == key),
            max_scan=max_scan * len(wanted),
            max_matches=max_matches,
            on_progress=remember,
            report_every=max_scan,
        )
    )
    searched = [p for p in wanted if p not in unreadable]
    return KeySearch(
        partitioner=partitioner,
        partitions=count,
        placements=placed,
        searched=searched,
        unreadable=unreadable,
        reason=_key_reason(key, partitioner, placed, count),
        matches=matches if masked is None else [masked(m) for m in matches],
        scanned=seen.scanned,
        ranges=[r for r in ranges if r.readable],
        stopped=seen.stopped,
    )


def _key_reason(key: bytes, partitioner: str, placed: dict[str, int], count: int) -> str:
    """Why these partitions were read, in a sentence or two."""
    try:
        text = key[:40].decode("utf-8")
        shown = repr(text) if text.isprintable() else key[:40].hex(" ")
    except UnicodeDecodeError:
        shown = key[:40].hex(" ")
    shown += "..." if len(key) > 40 else ""
    if partitioner == "all":
        return f"Every partition of the {count} was read: a producer may choose any partition for key {shown}."

    def says(name: str) -> str:
        p = PARTITIONERS[name]
        return f"{p.label} modulo {count} gives partition {placed[name]} ({p.clients})"

    if partitioner != "auto":
        return f"Key {shown}: {says(partitioner)}; producers with this partitioner write the key nowhere else."
    if len(set(placed.values())) == 1:
        return (
            f"Key {shown}: every default partitioner gives partition {next(iter(placed.values()))}: "
            + "; ".join(says(name) for name in placed)
            + "."
        )
    return f"Key {shown}: " + "; ".join(says(name) for name in placed) + "."
