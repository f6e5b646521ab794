"""The brokers' log dirs: what each broker says it holds (DescribeLogDirs, works on any cluster), and,
where those folders can be read from the console's machine, the partitions' files themselves.

Files are opened only under the cluster's ``log_dir_roots`` (the embedded cluster's folder, or a mounted
volume): a broker's log dir counts as readable when the path it reports lies under one of them and
exists here. A root may also map a broker's path to where it is mounted here:
``[BROKER:]BROKER_PATH=LOCAL_PATH`` (``2:/var/lib/kafka/data=/mnt/kafka-2``: broker 2's log dir
``/var/lib/kafka/data/...`` is read from ``/mnt/kafka-2/...``; without ``BROKER:``, for every broker).

Names from a URL (topic, file) are checked before anything is opened: no ``..``, no path separators,
and no symlink that leads out of the log dir.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient

from broker.client.connection import ClusterConnection, live_brokers
from broker.errors import InvalidInput, NotFound
from broker.segments import (
    AbortedTxn,
    Batch,
    Finding,
    LogReader,
    ProducerSnapshot,
    Record,
    check_offset_index,
    check_time_index,
    find_batch_at_or_after,
    find_batch_by_offset,
    log_lookups,
    parse_segment_file_name,
    read_batch_at,
    read_offset_index,
    read_producer_snapshot,
    read_time_index,
    read_txn_index,
    sanity_check,
    scan_log,
)

_TOPIC = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


@dataclass(frozen=True)
class ReplicaOnDisk:
    topic: str
    partition: int
    size: int
    offset_lag: int  # of a future replica (being moved between log dirs); 0 otherwise
    future: bool


@dataclass(frozen=True)
class LogDir:
    broker: int
    path: str  # as the broker reports it
    error: str | None
    total_bytes: int | None  # of the volume (Kafka 3.3+), None when the broker does not say
    usable_bytes: int | None
    replicas: list[ReplicaOnDisk]
    local: Path | None = None  # where it can be read from here, None when it cannot

    @property
    def used_bytes(self) -> int:
        return sum(r.size for r in self.replicas)


@dataclass(frozen=True)
class BrokerDisks:
    broker: int
    log_dirs: list[LogDir] = field(default_factory=list)
    error: str | None = None  # the broker did not answer

    @property
    def used_bytes(self) -> int:
        return sum(d.used_bytes for d in self.log_dirs)


def describe_log_dirs(
    conn: ClusterConnection, brokers: list[int] | None = None, only: tuple[str, int] | None = None
) -> list[BrokerDisks]:
    """Each broker's log dirs (every live broker's when ``brokers`` is None) with every replica's size
    (``only`` that partition's), one DescribeLogDirs request per broker; a broker that does not answer
    gets an ``error``, the others still show. Raises ClusterUnavailable."""
    roots = list(conn.config.log_dir_roots)
    wanted = {only[0]: [only[1]]} if only is not None else None

    def ask(admin: KafkaAdminClient) -> list[BrokerDisks]:
        result = []
        live = {b["broker_id"] for b in live_brokers(admin, conn)}
        # Brokers seen alive before and gone now are listed too, as down, rather than silently missing.
        asked = brokers if brokers is not None else sorted(live | set(conn.known_brokers))
        for broker in asked:
            if broker not in live:
                result.append(BrokerDisks(broker, error="it is down (not registered with the cluster now)"))
                continue
            if conn.is_silent(broker):
                result.append(BrokerDisks(broker, error="did not answer lately"))
                continue
            try:
                answer = admin.describe_log_dirs(topic_partitions=wanted, brokers=[broker])
            except (kafka.errors.KafkaTimeoutError, kafka.errors.RequestTimedOutError):
                conn.mark_silent(broker)
                result.append(BrokerDisks(broker, error="did not answer in time"))
                continue
            except kafka.errors.KafkaError as exc:
                result.append(BrokerDisks(broker, error=type(exc).__name__))
                continue
            result.append(BrokerDisks(broker, [_log_dir(broker, d, roots) for d in answer[0]["log_dirs"]]))
        return result

    return conn.call(ask, "log dir listing", requests=3, retry=True)


def replica_dir(conn: ClusterConnection, broker: int, topic: str, partition: int) -> Path:
    """The folder of ``broker``'s replica of a partition, readable from here. Raises InvalidInput (a bad
    name), NotFound (the broker holds no replica of it, or is unknown), PartitionUnavailable-like
    NotFound when its log dir cannot be read from the console's machine, ClusterUnavailable."""
    check_topic_name(topic)
    disks = describe_log_dirs(conn, [broker], only=(topic, partition))[0]
    if disks.error is not None:
        raise NotFound(f"Broker {broker} did not list its log dirs: {disks.error}.")
    for log_dir in disks.log_dirs:
        if any(r.topic == topic and r.partition == partition and not r.future for r in log_dir.replicas):
            if log_dir.local is None:
                raise NotFound(
                    f"Broker {broker} keeps partition {partition} of {topic!r} in {log_dir.path}, which cannot be "
                    "read from the console's machine (see KAZAMI_LOG_DIRS in docs/settings.md)."
                )
            return partition_dir(log_dir.local, topic, partition)
    raise NotFound(f"Broker {broker} holds no replica of partition {partition} of {topic!r}.")


def _log_dir(broker: int, raw: dict[str, Any], roots: list[str]) -> LogDir:
    code = raw.get("error_code", 0)
    replicas = [
        ReplicaOnDisk(
            t["name"], p["partition_index"], p["partition_size"], p.get("offset_lag", 0), p.get("is_future_key", False)
        )
        for t in raw.get("topics", [])
        for p in t["partitions"]
    ]
    total, usable = raw.get("total_bytes", -1), raw.get("usable_bytes", -1)
    return LogDir(
        broker=broker,
        path=raw["log_dir"],
        error=kafka.errors.for_code(code).__name__ if code else None,
        total_bytes=total if total is not None and total >= 0 else None,
        usable_bytes=usable if usable is not None and usable >= 0 else None,
        replicas=sorted(replicas, key=lambda r: (-r.size, r.topic, r.partition)),
        local=readable_dir(raw["log_dir"], roots, broker),
    )


def readable_dir(path: str, roots: list[str] | list[Path], broker: int | None = None) -> Path | None:
    """Where broker ``broker``'s log dir ``path`` can be read here: ``path`` itself when it lies under a
    plain root, or its place under a mapped root's local path (see the module's docstring); None when no
    root covers it or the folder is not there."""
    for root in roots:
        local = _mapped(PurePosixPath(path), str(root), broker)
        if local is None:
            continue
        base = Path(os.path.realpath(local[1]))
        real = Path(os.path.realpath(local[0]))
        if (real == base or base in real.parents) and real.is_dir():
            return real
    return None


def _mapped(path: PurePosixPath, root: str, broker: int | None) -> tuple[Path, Path] | None:
    """(where ``path`` is here, the local root it must stay under) for one root, or None if it does not apply."""
    if "=" not in root:
        return Path(path), Path(root)
    remote, local = root.split("=", 1)
    who, colon, rest = remote.partition(":")
    if colon and who.isdigit():
        if broker is None or int(who) != broker:
            return None
        remote = rest
    remote_path = PurePosixPath(remote)
    if path != remote_path and remote_path not in path.parents:
        return None
    return Path(local) / path.relative_to(remote_path), Path(local)


def check_topic_name(topic: str) -> str:
    if not _TOPIC.match(topic) or topic in (".", ".."):
        raise InvalidInput(f"{topic[:60]!r} is not a topic name (letters, digits, '.', '_' and '-').")
    return topic


def inside(base: Path, *names: str) -> Path:
    """``base/names...`` for names that are plain file or folder names, refused (InvalidInput, nothing
    opened) when a name holds a separator or ``..``, or when the result, symlinks followed, leads out of
    ``base``."""
    for name in names:
        if not name or name in (".", "..") or "/" in name or "\\" in name or "\x00" in name:
            raise InvalidInput(f"{name[:60]!r} is not a plain file name.")
    path = base.joinpath(*names)
    real, root = Path(os.path.realpath(path)), Path(os.path.realpath(base))
    if real != root and root not in real.parents:
        raise InvalidInput(f"{'/'.join(names)[:80]!r} leads out of the log dir; it is not opened.")
    return path


def partition_dir(log_dir: Path, topic: str, partition: int) -> Path:
    """The folder of a partition's replica in a readable log dir. Raises InvalidInput for a bad name,
    NotFound when this log dir holds no such replica."""
    path = inside(log_dir, f"{check_topic_name(topic)}-{partition}")
    if not path.is_dir():
        raise NotFound(f"{log_dir} holds no replica of partition {partition} of {topic!r}.")
    return path


# ---------------------------------------------------------------- segments


@dataclass(frozen=True)
class SegmentSummary:
    """One segment of a partition's replica, from one pass over its batch headers and its indexes."""

    base_offset: int
    log_bytes: int
    batches: int
    first_offset: int | None
    last_offset: int | None
    first_timestamp: int | None
    last_timestamp: int | None  # the largest in the segment
    index_entries: int
    timeindex_entries: int
    indexes_sane: bool
    active: bool
    findings: list[Finding]


def segment_bases(pdir: Path) -> list[int]:
    """Base offsets of the segments of a partition folder, in order."""
    bases = set()
    for entry in os.scandir(pdir):
        named = parse_segment_file_name(entry.name)
        if named is not None and named.suffix == ".log" and not named.transient:
            bases.add(named.base_offset)
    return sorted(bases)


def segment_path(pdir: Path, base_offset: int, suffix: str = ".log") -> Path:
    """A segment file of a partition folder; NotFound when it does not exist."""
    if base_offset < 0:
        raise InvalidInput(f"A segment's base offset is not negative ({base_offset}).")
    path = inside(pdir, f"{base_offset:020d}{suffix}")
    if not path.is_file():
        raise NotFound(f"{pdir.name} has no segment file {path.name}.")
    return path


def summarize(pdir: Path, base_offset: int, active: bool) -> SegmentSummary:
    log = segment_path(pdir, base_offset)
    scan = scan_log(log)
    findings = list(scan.findings)
    index_entries = timeindex_entries = 0
    sane = True
    for suffix, reader in ((".index", read_offset_index), (".timeindex", read_time_index)):
        path = pdir / f"{base_offset:020d}{suffix}"
        if not path.is_file():
            continue
        index = reader(path)
        findings += index.findings
        # An active segment's indexes are preallocated (zeros at the end): judged as they will be once trimmed.
        failed = sanity_check(index, whole_file=not active)
        findings += failed
        sane = sane and not failed
        if suffix == ".index":
            index_entries = 0 if index.blank else len(index.entries)
        else:
            timeindex_entries = 0 if index.blank else len(index.entries)
    return SegmentSummary(
        base_offset=base_offset,
        log_bytes=log.stat().st_size,
        batches=scan.batches,
        first_offset=scan.first_offset,
        last_offset=scan.last_offset,
        first_timestamp=_first_timestamp(log) if scan.batches else None,
        last_timestamp=scan.max_timestamp if scan.batches else None,
        index_entries=index_entries,
        timeindex_entries=timeindex_entries,
        indexes_sane=sane,
        active=active,
        findings=findings,
    )


def _first_timestamp(log: Path) -> int | None:
    first = read_batch_at(log, 0)
    if first is None:
        return None
    return first.base_timestamp if first.magic >= 2 and first.base_timestamp >= 0 else first.max_timestamp


def list_segments(pdir: Path) -> list[SegmentSummary]:
    bases = segment_bases(pdir)
    return [summarize(pdir, base, active=i == len(bases) - 1) for i, base in enumerate(bases)]


# ---------------------------------------------------------------- batches


@dataclass(frozen=True)
class BatchPage:
    """Batches of a segment from a file position, and where the next page starts (None at the end)."""

    position: int
    batches: list[Batch]
    next_position: int | None
    file_size: int
    findings: list[Finding]


MAX_BATCHES = 500


def read_batches(log: Path, position: int = 0, limit: int = 50, offset: int | None = None) -> BatchPage:
    """Up to ``limit`` batch headers from the first batch at or after ``position`` (or, with ``offset``,
    the batch holding that offset, found from the offset index as Kafka finds it). Damage is in
    ``findings``; a position between batches moves to the next one."""
    if not 1 <= limit <= MAX_BATCHES:
        raise InvalidInput(f"limit is 1 to {MAX_BATCHES}, not {limit}.")
    if position < 0:
        raise InvalidInput(f"A file position is not negative ({position}).")
    findings: list[Finding] = []
    start: Batch | None
    if offset is not None:
        start = find_batch_by_offset(log, offset, _index_hint(log, offset), findings)
    else:
        start = find_batch_at_or_after(log, position, 0, findings)
    size = log.stat().st_size
    if start is None:
        return BatchPage(position, [], None, size, findings)
    reader = LogReader(log, start=start.position, findings=findings, max_entries=limit + 1)
    batches = list(reader)
    following = batches[limit].position if len(batches) > limit else None
    return BatchPage(start.position, batches[:limit], following, size, findings)


def _index_hint(log: Path, offset: int) -> int:
    index = log.with_suffix(".index")
    if not index.is_file():
        return 0
    return read_offset_index(index).lookup(offset).position


def batch_records(log: Path, position: int) -> tuple[Batch, list[Record], list[Finding]]:
    """The batch starting exactly at ``position`` with its records decoded. NotFound when none starts there."""
    findings: list[Finding] = []
    batch = read_batch_at(log, position, findings) if position >= 0 else None
    if batch is None:
        raise NotFound(f"No batch starts at byte {position} of {log.name}.")
    records, trouble = batch.records()
    return batch, records, findings + trouble


def segment_holding(pdir: Path, offset: int) -> int | None:
    """The base offset of the segment that would hold ``offset`` (the last one starting at or before it)."""
    bases = [b for b in segment_bases(pdir) if b <= offset]
    return bases[-1] if bases else None


def locate(log: Path, offset: int) -> Batch | None:
    """The batch holding ``offset`` in a segment (or the first after it, compacted away), from the offset
    index's hint as Kafka looks it up."""
    return find_batch_by_offset(log, offset, _index_hint(log, offset))


# ---------------------------------------------------------------- producers and aborted transactions


@dataclass(frozen=True)
class ProducerState:
    """A replica's newest producer snapshot and every aborted transaction its segments' .txnindex hold."""

    snapshot: ProducerSnapshot | None  # the newest .snapshot file, None when there is none yet
    snapshots: int
    aborted: list[AbortedTxn]
    findings: list[Finding]


def producer_state(pdir: Path) -> ProducerState:
    snapshots, txn_indexes = [], []
    for entry in os.scandir(pdir):
        named = parse_segment_file_name(entry.name)
        if named is None or named.transient:
            continue
        if named.suffix == ".snapshot":
            snapshots.append((named.base_offset, entry.name))
        elif named.suffix == ".txnindex":
            txn_indexes.append((named.base_offset, entry.name))
    findings: list[Finding] = []
    snapshot = read_producer_snapshot(inside(pdir, max(snapshots)[1])) if snapshots else None
    if snapshot is not None:
        findings += snapshot.findings
    aborted: list[AbortedTxn] = []
    for _, name in sorted(txn_indexes):
        index = read_txn_index(inside(pdir, name))
        aborted += index.entries
        findings += index.findings
    return ProducerState(snapshot, len(snapshots), aborted, findings)


# ---------------------------------------------------------------- checking every segment


@dataclass
class CheckProgress:
    """Where a check of a replica's segments is: bytes of .log read of ``total_bytes``."""

    segments: int = 0  # in the replica
    checked: int = 0  # segments done
    current: int | None = None  # base offset being read
    done_bytes: int = 0
    total_bytes: int = 0
    batches: int = 0
    records: int = 0
    findings: list[Finding] = field(default_factory=list)
    done: bool = False
    cancelled: bool = False


def check_replica(
    pdir: Path,
    on_progress: Callable[[CheckProgress], None] | None = None,
    cancel: threading.Event | None = None,
    report_every: float = 0.25,
) -> CheckProgress:
    """Read every segment of a replica whole: every batch's CRC, every record decoded and decompressed,
    offsets in order, and both indexes checked entry by entry against the log. ``on_progress`` hears
    where it is every ``report_every`` seconds and at the end (``done`` set)."""
    bases = segment_bases(pdir)
    progress = CheckProgress(segments=len(bases))
    progress.total_bytes = sum((pdir / f"{b:020d}.log").stat().st_size for b in bases)
    last_report = 0.0

    def report(force: bool = False) -> None:
        nonlocal last_report
        if on_progress is not None and (force or time.monotonic() - last_report >= report_every):
            last_report = time.monotonic()
            on_progress(progress)

    try:
        for i, base in enumerate(bases):
            progress.current = base
            log = segment_path(pdir, base)
            start_bytes = progress.done_bytes
            summaries = []
            for batch in LogReader(log, findings=progress.findings):
                if cancel is not None and cancel.is_set():
                    progress.cancelled = True
                    return progress
                records, trouble = batch.records()
                progress.findings += trouble
                progress.batches += 1
                progress.records += len(records)
                progress.done_bytes = start_bytes + batch.next_position
                summaries.append((batch.position, batch.base_offset, batch.last_offset, batch.max_timestamp))
                report()
            progress.findings += _index_findings(pdir, base, summaries, active=i == len(bases) - 1)
            progress.checked += 1
            progress.done_bytes = start_bytes + log.stat().st_size
            report()
    finally:
        progress.done = True
        progress.current = None
        report(force=True)
    return progress


def _index_findings(pdir: Path, base: int, summaries: list[tuple[int, int, int, int]], active: bool) -> list[Finding]:
    """Findings for a segment's indexes: the broker's startup check and every entry against the log."""
    found: list[Finding] = []
    offsets_path, times_path = pdir / f"{base:020d}.index", pdir / f"{base:020d}.timeindex"
    offsets = read_offset_index(offsets_path) if offsets_path.is_file() else None
    batch_at, holding = log_lookups(summaries, offsets)
    if offsets is not None:
        found += offsets.findings + sanity_check(offsets, whole_file=not active)
        for c in check_offset_index(offsets, batch_at):
            if not c.ok and not offsets.blank:
                found.append(
                    Finding(
                        str(offsets_path),
                        c.slot * 8,
                        "index_mismatch",
                        f"index entry {c.slot} says offset {c.offset} is in the batch at byte {c.position}, "
                        f"but the batch there ends at {c.log_offset}",
                        expected=str(c.offset),
                        found=str(c.log_offset),
                    )
                )
    if times_path.is_file():
        times = read_time_index(times_path)
        found += times.findings + sanity_check(times, whole_file=not active)
        for t in check_time_index(times, holding):
            if not t.ok and not times.blank:
                found.append(
                    Finding(
                        str(times_path),
                        t.slot * 12,
                        "timeindex_mismatch",
                        f"time index entry {t.slot} (timestamp {t.timestamp}, offset {t.offset}) does not match "
                        f"the log (batch ending at {t.log_offset}, max timestamp {t.log_timestamp})",
                    )
                )
    return found
