"""Disk pages and their JSON API: the brokers' log dirs, and, where they can be read from here, a
partition's segments, a segment's batches, a batch's records, and a segment's indexes checked against it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from broker.cluster import logdirs
from broker.decode import RecordDecoder, decode, wire_value
from broker.errors import KazamiError, NotFound
from broker.schemas import wire
from broker.segments import (
    LogReader,
    check_offset_index,
    check_time_index,
    log_lookups,
    read_offset_index,
    read_time_index,
    scan_log,
)
from broker.topics import read as topics
from console.config.clusters import get_connection
from console.errors import api_view, page_view
from console.params import int_param
from console.present.masking import masker_for
from console.present.message_json import schema_fields
from console.present.messages import record_decoder

INDEX_PAGE = 200


# ---------------------------------------------------------------- log dirs


def _disks(cluster: str, broker: int | None) -> list[logdirs.BrokerDisks]:
    return logdirs.describe_log_dirs(get_connection(cluster), [broker] if broker is not None else None)


def _by_topic(disks: list[logdirs.BrokerDisks]) -> list[tuple[str, int]]:
    sizes: dict[str, int] = defaultdict(int)
    for b in disks:
        for d in b.log_dirs:
            for r in d.replicas:
                sizes[r.topic] += r.size
    return sorted(sizes.items(), key=lambda kv: (-kv[1], kv[0]))


@require_GET
@page_view
def logdirs_page(request: HttpRequest, cluster: str, broker: int | None = None) -> HttpResponse:
    disks = _disks(cluster, broker)
    wanted = request.GET.get("q", "").strip()  # only the partitions of topics whose name holds it
    largest = sorted(
        ((b.broker, d, r) for b in disks for d in b.log_dirs for r in d.replicas if wanted in r.topic),
        key=lambda t: (-t[2].size, t[2].topic, t[2].partition),
    )[:100]
    topics = _by_topic(disks)
    return render(
        request,
        "disks/logdirs.html",
        {
            "cluster": cluster,
            "broker": broker,
            "disks": disks,
            "largest": largest,
            "q": wanted,
            "topics": topics[:30],
            "max_broker": max((b.used_bytes for b in disks), default=0) or 1,
            "max_topic": topics[0][1] if topics and topics[0][1] else 1,
            "crumb": f"broker {broker} disks" if broker is not None else "disks",
        },
    )


@require_GET
@api_view
def logdirs_api(request: HttpRequest, cluster: str, broker: int) -> Any:
    [disks] = _disks(cluster, broker)
    return {
        "broker": disks.broker,
        "error": disks.error,
        "log_dirs": [
            {
                "path": d.path,
                "error": d.error,
                "total_bytes": d.total_bytes,
                "usable_bytes": d.usable_bytes,
                "used_bytes": d.used_bytes,
                "readable": d.local is not None,
                "partitions": [asdict(r) for r in d.replicas],
            }
            for d in disks.log_dirs
        ],
    }


# ---------------------------------------------------------------- segments


def _segments(cluster: str, broker: int, topic: str, partition: int) -> list[logdirs.SegmentSummary]:
    return logdirs.list_segments(logdirs.replica_dir(get_connection(cluster), broker, topic, partition))


@require_GET
@page_view
def segments_page(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int) -> HttpResponse:
    segments = _segments(cluster, broker, topic, partition)
    return render(
        request,
        "disks/segments.html",
        {
            "cluster": cluster,
            "broker": broker,
            "topic": topic,
            "partition": partition,
            "segments": segments,
            "findings": [f for s in segments for f in s.findings],
            "crumb": f"{topic}-{partition} on broker {broker}",
        },
    )


@require_GET
@api_view
def segments_api(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int) -> Any:
    return {
        "broker": broker,
        "topic": topic,
        "partition": partition,
        "segments": [
            {**asdict(s), "findings": [f.as_dict() for f in s.findings]}
            for s in _segments(cluster, broker, topic, partition)
        ],
    }


def _log(cluster: str, broker: int, topic: str, partition: int, base: int) -> Any:
    pdir = logdirs.replica_dir(get_connection(cluster), broker, topic, partition)
    return logdirs.segment_path(pdir, base)


def _batch_page(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int) -> Any:
    """The segment's file and a page of its batches, whose findings include the whole segment's (one pass
    over its batch headers: what is damaged anywhere in it shows at the top of any page)."""
    log = _log(cluster, broker, topic, partition, base)
    page = logdirs.read_batches(
        log,
        position=int_param(request, "position", 0, minimum=0) or 0,
        limit=int_param(request, "limit", 50, minimum=1, maximum=logdirs.MAX_BATCHES) or 50,
        offset=int_param(request, "offset", None, minimum=0),
    )
    seen = {(f.position, f.kind) for f in page.findings}
    page.findings.extend(f for f in scan_log(log).findings if (f.position, f.kind) not in seen)
    return log, page


@require_GET
@page_view
def segment_page(
    request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int
) -> HttpResponse:
    log, page = _batch_page(request, cluster, broker, topic, partition, base)
    return render(
        request,
        "disks/segment.html",
        {
            "cluster": cluster,
            "broker": broker,
            "topic": topic,
            "partition": partition,
            "base": base,
            "file": log.name,
            "page": page,
            "limit": int_param(request, "limit", 50) or 50,
            "crumb": log.name,
        },
    )


@require_GET
@api_view
def batches_api(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int) -> Any:
    _, page = _batch_page(request, cluster, broker, topic, partition, base)
    return {
        "position": page.position,
        "next_position": page.next_position,
        "file_size": page.file_size,
        "batches": [_batch_json(b) for b in page.batches],
        "findings": [f.as_dict() for f in page.findings],
    }


def _batch_json(batch: Any) -> dict[str, Any]:
    return {k: v for k, v in batch.as_dict().items() if k != "file"}


def _masked_records(
    request: HttpRequest, cluster: str, topic: str, records: list[Any]
) -> list[tuple[Any, tuple[str, ...]]]:
    """A batch's records as the user may see them (broker.messages.masking), each with what masking hid of it."""
    masker = masker_for(request.user, cluster, topic)
    return [(r, ()) if r.is_control else masker.record(r) for r in records]


def _record_json(
    record: Any, masked: tuple[str, ...] = (), registry: RecordDecoder | None = None, topic: str = ""
) -> dict[str, Any]:
    key, value = wire_value(record.key), wire_value(record.value)
    decoded: dict[str, Any] = {}
    for part, raw in (("key", record.key), ("value", record.value)):
        if registry is not None and wire.is_framed(raw) and not record.is_control:
            found = decode(raw, "auto", limit=0, registry=registry, subject=f"{topic}-{part}")
            if found.schema is not None:
                decoded.update(schema_fields(part, found))
    return {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": record.timestamp_type,
        "key": key["data"],
        "key_encoding": key["encoding"],
        "value": value["data"],
        "value_encoding": value["encoding"],
        "headers": [{"name": n, **_named(wire_value(v))} for n, v in record.headers],
        "sequence": record.sequence,
        "control_type": record.control_type,
        "coordinator_epoch": record.coordinator_epoch,
        "crc_valid": record.crc_valid,
        "masked": list(masked),
        **decoded,  # a registry record's key or value: its kind, schema and document (console.present.message_json)
    }


def _named(wire: dict[str, Any]) -> dict[str, Any]:
    return {"value": wire["data"], "value_encoding": wire["encoding"]}


@require_GET
@page_view
def batch_page(
    request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int, position: int
) -> HttpResponse:
    log = _log(cluster, broker, topic, partition, base)
    batch, records, findings = logdirs.batch_records(log, position)
    registry = record_decoder(cluster)
    shown = [
        (
            r,
            decode(r.key, "auto", limit=2000, registry=registry),
            decode(r.value, "auto", limit=2000, registry=registry),
            masked,
        )
        for r, masked in _masked_records(request, cluster, topic, records)
    ]
    return render(
        request,
        "disks/batch.html",
        {
            "cluster": cluster,
            "broker": broker,
            "topic": topic,
            "partition": partition,
            "base": base,
            "file": log.name,
            "batch": batch,
            "records": shown,
            "findings": findings,
            "crumb": f"batch at byte {position}",
        },
    )


@require_GET
@api_view
def records_api(
    request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int, position: int
) -> Any:
    batch, records, findings = logdirs.batch_records(_log(cluster, broker, topic, partition, base), position)
    return {
        "batch": _batch_json(batch),
        "records": [
            _record_json(r, masked, record_decoder(cluster), topic)
            for r, masked in _masked_records(request, cluster, topic, records)
        ],
        "findings": [f.as_dict() for f in findings],
    }


def _producers(cluster: str, broker: int, topic: str, partition: int) -> logdirs.ProducerState:
    return logdirs.producer_state(logdirs.replica_dir(get_connection(cluster), broker, topic, partition))


@require_GET
@page_view
def producers_page(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int) -> HttpResponse:
    state = _producers(cluster, broker, topic, partition)
    return render(
        request,
        "disks/producers.html",
        {
            "cluster": cluster,
            "broker": broker,
            "topic": topic,
            "partition": partition,
            "state": state,
            "findings": state.findings,
            "crumb": f"{topic}-{partition} producers on broker {broker}",
        },
    )


@require_GET
@api_view
def producers_api(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int) -> Any:
    state = _producers(cluster, broker, topic, partition)
    snapshot = state.snapshot
    return {
        "snapshot_offset": snapshot.offset if snapshot else None,
        "producers": [e._asdict() for e in snapshot.entries] if snapshot else [],
        "aborted_transactions": [t._asdict() for t in state.aborted],
        "findings": [f.as_dict() for f in state.findings],
    }


@require_GET
@page_view
def on_disk(request: HttpRequest, cluster: str, topic: str, partition: int, offset: int) -> HttpResponse:
    """The message page's "on disk" part (loaded after the page): for each replica of the partition, a
    link to the batch holding ``offset`` in its files, or why they cannot be opened."""
    conn = get_connection(cluster)
    try:
        info = next((p for p in topics.get_topic_partitions(conn, topic) if p.partition == partition), None)
    except KazamiError as exc:
        return render(request, "disks/_on_disk.html", {"error": str(exc)})
    if info is None:
        raise NotFound(f"Topic {topic!r} has no partition {partition}.")
    replicas: list[tuple[int, str | None, str]] = []
    for broker in info.replicas:
        try:
            pdir = logdirs.replica_dir(conn, broker, topic, partition)
        except KazamiError as exc:
            replicas.append((broker, None, str(exc)))
            continue
        url = reverse(
            "replica-offset",
            kwargs={"cluster": cluster, "broker": broker, "topic": topic, "partition": partition, "offset": offset},
        )
        replicas.append((broker, url, str(pdir)))
    return render(request, "disks/_on_disk.html", {"replicas": replicas, "offset": offset})


@require_GET
@page_view
def replica_offset(
    request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, offset: int
) -> HttpResponse:
    """Redirect to the batch holding ``offset`` in broker ``broker``'s files of the partition."""
    pdir = logdirs.replica_dir(get_connection(cluster), broker, topic, partition)
    base = logdirs.segment_holding(pdir, offset)
    batch = logdirs.locate(logdirs.segment_path(pdir, base), offset) if base is not None else None
    if base is None or batch is None:
        raise NotFound(f"Broker {broker}'s files of {topic}-{partition} hold no batch with offset {offset}.")
    kwargs = {"cluster": cluster, "broker": broker, "topic": topic, "partition": partition, "base": base}
    return redirect(reverse("segment-batch", kwargs={**kwargs, "position": batch.position}) + f"#rec-{offset}")


# ---------------------------------------------------------------- indexes


def _index_checks(cluster: str, broker: int, topic: str, partition: int, base: int, kind: str) -> tuple[Any, Any]:
    log = _log(cluster, broker, topic, partition, base)
    summaries = ((b.position, b.base_offset, b.last_offset, b.max_timestamp) for b in LogReader(log))
    path = logdirs.segment_path(log.parent, base, ".index" if kind == "index" else ".timeindex")
    if kind == "index":
        index = read_offset_index(path)
        batch_at, _ = log_lookups(summaries)
        return index, check_offset_index(index, batch_at)
    timeindex = read_time_index(path)
    offsets = log.with_suffix(".index")
    _, holding = log_lookups(summaries, read_offset_index(offsets) if offsets.is_file() else None)
    return timeindex, check_time_index(timeindex, holding)


@require_GET
@page_view
def index_page(
    request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int, kind: str
) -> HttpResponse:
    index, checks = _index_checks(cluster, broker, topic, partition, base, kind)
    start = int_param(request, "start", 0, minimum=0) or 0
    return render(
        request,
        "disks/index.html",
        {
            "cluster": cluster,
            "broker": broker,
            "topic": topic,
            "partition": partition,
            "base": base,
            "kind": kind,
            "index": index,
            "checks": checks[start : start + INDEX_PAGE],
            "start": start,
            "next_start": start + INDEX_PAGE if start + INDEX_PAGE < len(checks) else None,
            "bad": sum(1 for c in checks if not c.ok),
            "total": len(checks),
            "crumb": f"{base:020d}.{'index' if kind == 'index' else 'timeindex'}",
        },
    )


@require_GET
@api_view
def index_api(request: HttpRequest, cluster: str, broker: int, topic: str, partition: int, base: int, kind: str) -> Any:
    index, checks = _index_checks(cluster, broker, topic, partition, base, kind)
    return {
        "file": f"{base:020d}.{kind}",
        "entries": [{**asdict(c), "ok": c.ok} for c in checks],
        "preallocated_bytes": index.preallocated_bytes,
        "findings": [f.as_dict() for f in index.findings],
    }
