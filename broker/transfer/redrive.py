"""Send dead letters back where they came from: each record of a dead-letter topic to the topic (and partition) its
headers name (broker.transfer.dead_letters), without the headers the dead-letter writer added, exactly-once where the
cluster allows it (as copies are)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import kafka.errors

from broker.client.connection import ClusterConnection
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError
from broker.messages.log import Message
from broker.messages.scan import ScanRange, scan
from broker.topics.read import get_topic_partitions
from broker.transfer.copy import Writer, target_partition
from broker.transfer.dead_letters import CONNECT, KNOWN, SPRING, Scheme, origin_of
from broker.transfer.progress import Pace, Reporter, RunProgress

__all__ = ["RedriveProgress", "run_redrive", "scheme_named", "strip"]

# The headers each writer adds, by prefix: left out of a record sent back (unless asked to keep them).
_ADDED = {CONNECT.name: "__connect.errors.", SPRING.name: "kafka_dlt-"}


def scheme_named(
    name: str | None, topic_header: str | None = None, partition_header: str | None = None
) -> Scheme | None:
    """The scheme asked for: a known one by name, one made of headers chosen by hand, or None for "find out"
    (broker.transfer.dead_letters.detect). Raises InvalidInput for an unknown name."""
    if topic_header:
        return Scheme("chosen", topic_header, partition_header or None)
    if name in (None, "", "auto"):
        return None
    for scheme in KNOWN:
        if scheme.name == name:
            return scheme
    raise InvalidInput(
        f"scheme must be auto, {', '.join(s.name for s in KNOWN)}, or a topic_header, not {name[:40]!r}."
    )


def strip(headers: Sequence[tuple[str, bytes | None]], scheme: Scheme) -> list[tuple[str, bytes | None]]:
    """The record's own headers: those the dead-letter writer added left out."""
    prefix = _ADDED.get(scheme.name)
    added = {scheme.topic, scheme.partition, scheme.offset}
    return [(n, v) for n, v in headers if n not in added and not (prefix and n.startswith(prefix))]


@dataclass
class RedriveProgress(RunProgress):
    read: int = 0
    by_origin: dict[str, int] = field(default_factory=dict)  # "topic/partition" -> records sent (would be)
    unnamed: int = 0  # records that name no origin (left where they are)
    missing_topics: list[str] = field(default_factory=list)  # origins that are no topic of the cluster now
    positions: dict[int, int] = field(default_factory=dict)
    saved: dict[int, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            **super().as_dict(),
            "read": self.read,
            "sent": self.written,
            "by_origin": dict(sorted(self.by_origin.items())),
            "unnamed": self.unnamed,
            "missing_topics": self.missing_topics,
            "positions": {str(p): o for p, o in sorted(self.positions.items())},
            "saved_positions": {str(p): o for p, o in sorted(self.saved.items())},
        }


def run_redrive(
    conn: ClusterConnection,
    topic: str,
    ranges: list[ScanRange],
    scheme: Scheme,
    wanted: Callable[[str, int | None], bool],
    predicate: Callable[[Message], bool],
    keep_partition: bool,
    keep_error_headers: bool,
    rate: float | None,
    dry_run: bool,
    transactional_id: str | None,
    cancel: threading.Event | None = None,
    on_progress: Callable[[RedriveProgress], None] | None = None,
) -> RedriveProgress:
    """Send every dead letter of ``ranges`` whose origin ``wanted`` accepts (and ``predicate`` passes) back to its
    origin; records naming a topic the cluster does not have are left and listed."""
    progress = RedriveProgress(
        total=sum(r.stop - r.start for r in ranges if r.readable),
        positions={r.partition: r.start for r in ranges if r.readable},
    )
    progress.saved = dict(progress.positions)
    counts: dict[str, int | None] = {}  # origin topic -> its partitions (None: no such topic)
    writer = None if dry_run else Writer(conn, "redrive", transactional_id)
    progress.guarantee = "exactly-once" if writer is not None and writer.transactional else "at-least-once"
    pace = Pace(rate)
    report = Reporter(progress, pace, on_progress)

    def partitions_of(name: str) -> int | None:
        if name not in counts:
            try:
                counts[name] = len(get_topic_partitions(conn, name))
            except KazamiError:
                counts[name] = None
                progress.missing_topics.append(name)
        return counts[name]

    try:
        for message in scan(
            conn,
            topic,
            ranges,
            predicate,
            max_scan=2**62,
            max_matches=2**62,
            cancel=cancel,
            deadline_s=10**9,
            on_progress=lambda _scanned: report(),  # also while nothing is sent: the run is alive
            report_every=1000,
        ):
            progress.read += 1
            progress.positions[message.partition] = message.offset + 1
            origin = origin_of(message.headers, scheme)
            if origin is None:
                progress.unnamed += 1
                continue
            if not wanted(origin.topic, origin.partition):
                continue
            count = partitions_of(origin.topic)
            if count is None:
                continue
            kept = (
                origin.partition
                if keep_partition and origin.partition is not None and origin.partition < count
                else None
            )
            headers = list(message.headers) if keep_error_headers else strip(message.headers, scheme)
            placed = target_partition(message.key, kept, count)
            if writer is not None and not writer.send(origin.topic, message.key, message.value, headers, placed, None):
                continue  # neither key nor value: the Python client sends no such record
            label = f"{origin.topic}/{origin.partition if origin.partition is not None else '-'}"
            progress.by_origin[label] = progress.by_origin.get(label, 0) + 1
            progress.written += 1
            if pace.one_more(progress.written) and writer is not None:
                writer.checkpoint()
                progress.saved = dict(progress.positions)
            report()
        if cancel is not None and cancel.is_set():
            progress.stopped = "cancelled"
        if writer is not None:
            writer.close()
            writer = None
        if progress.stopped is None:
            progress.positions = {r.partition: r.stop for r in ranges if r.readable}
        progress.saved = dict(progress.positions)
    except (kafka.errors.KafkaError, KazamiError) as exc:
        progress.error = str(exc) or type(exc).__name__
        if isinstance(exc, KazamiError) and not isinstance(exc, ClusterUnavailable):
            raise
    finally:
        if writer is not None:
            writer.abandon()
        progress.done = True
        report(force=True)
    return progress


@dataclass
class Survey:
    """What a dead-letter topic holds, by origin."""

    scheme: str | None  # the scheme found or asked for (None: no record names an origin)
    read: int
    unnamed: int
    origins: list[dict[str, Any]]
    more: bool  # the topic holds more than was read


def survey(
    conn: ClusterConnection,
    topic: str,
    ranges: list[ScanRange],
    scheme: Scheme | None,
    max_records: int,
    shown: Callable[[Message], Message],
    samples: int = 3,
) -> Survey:
    """Read up to ``max_records`` dead letters and group them by where they came from (``scheme`` None: the known
    scheme most of them follow), with a few samples of each group as ``shown`` gives them (masked)."""
    from broker.transfer.dead_letters import detect, group_by_origin
    from broker.transfer.records import encode_bytes

    letters: list[Message] = []
    for message in scan(conn, topic, ranges, lambda _m: True, max_scan=max_records, max_matches=max_records):
        letters.append(message)
    total = sum(r.stop - r.start for r in ranges if r.readable)
    chosen = scheme or detect(m.headers for m in letters[:1000])
    if chosen is None:
        return Survey(None, len(letters), len(letters), [], total > len(letters))
    groups, unnamed = group_by_origin(((m.partition, m.offset, m.headers) for m in letters), chosen)
    by_place = {(m.partition, m.offset): m for m in letters}
    origins = []
    for g in groups:
        picked = []
        for place in g.offsets[:samples]:
            m = shown(by_place[place])
            value, encoding = encode_bytes(m.value)
            picked.append(
                {
                    "partition": m.partition,
                    "offset": m.offset,
                    "key": encode_bytes(m.key)[0] if m.key is not None else None,
                    "value": (value[:300] if encoding == "text" else f"({len(m.value or b'')} bytes)")
                    if value is not None
                    else None,
                }
            )
        origins.append(
            {
                "topic": g.topic,
                "partition": g.partition,
                "count": g.count,
                "first_offset": g.first_offset,
                "last_offset": g.last_offset,
                "errors": [{"error": e, "count": n} for e, n in g.errors.items()],
                "samples": picked,
            }
        )
    return Survey(chosen.name, len(letters), unnamed, origins, total > len(letters))
