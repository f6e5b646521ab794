"""Runs that move data, started through console.access.perform (checked against the cluster written to, refused
on a read-only one, audited) and run by console.background.transfers: copies of topics and ranges."""

from __future__ import annotations

import threading
import uuid
from dataclasses import asdict
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from broker.errors import InvalidInput, NotFound
from broker.messages.filtering import predicate_for
from broker.messages.query import parse_query
from broker.messages.query_terms import QueryError
from broker.messages.scan import ScanRange, plan_scan
from broker.topics.read import get_topic_partitions
from broker.transfer.copy import (
    CopyPlan,
    CopyRequest,
    check_copy_request,
    plan_ranges,
    plan_targets,
    run_copy,
    shift_ranges,
)
from broker.transfer.importing import check_partitions, run_import
from broker.transfer.records import Record
from broker.transfer.redrive import run_redrive, scheme_named, survey
from broker.transfer.schemas import SchemaMover
from console.access import perform
from console.background import transfers
from console.config.clusters import get_connection
from console.config.registry import registry_for
from console.models import Transfer
from console.present.masking import masker_for
from console.present.messages import decoding_for


def _user(request: HttpRequest) -> tuple[Any, str]:
    user = request.user if request.user.is_authenticated else None
    return user, user.get_username() if user else "anonymous"


def start_copy(request: HttpRequest, cluster: str, topic: str, body: Any) -> Transfer:
    """Check and start a copy of ``topic`` (a range of it, the records a filter passes) to another topic."""
    asked = check_copy_request(body)
    to_cluster = asked.to_cluster or cluster
    target = f"{cluster}/{topic} -> {to_cluster}/{asked.to_topic}"

    def change() -> Transfer:
        source = get_connection(cluster)
        destination = get_connection(to_cluster)
        if masker_for(request.user, cluster, topic).active:
            raise InvalidInput(
                f"Masking hides parts of {topic!r} from you: a copy would write them where they could be read. "
                "An admin can copy it."
            )
        try:
            query = parse_query(asked.filter)
        except QueryError as exc:
            raise InvalidInput(f"filter: {exc}") from None
        if asked.schemas == "register":
            _schema_mover(cluster, to_cluster, asked.to_topic)  # both clusters have a registry
        ranges = plan_ranges(source, topic, asked)
        count = plan_targets(source, destination, topic, asked.to_topic, ranges, asked.keep_partition)
        user, name = _user(request)
        transfer = Transfer.objects.create(
            kind="copy",
            cluster=cluster,
            topic=topic,
            spec={
                **_request_json(asked),
                "to_cluster": to_cluster,
                "ranges": _ranges_json(ranges),
                "target_partitions": count,
            },
            created_by=user,
            username=name,
            created_at=timezone.now(),
        )
        _run_copy(transfer, cluster, topic, to_cluster, asked, ranges, count, query.source)
        return transfer

    return perform(request, "topic.copy", to_cluster, target, body if isinstance(body, dict) else {}, change, _started)


def resume(request: HttpRequest, transfer_id: int) -> Transfer:
    """A new run of an interrupted, failed or cancelled copy, from its last saved position."""
    before = _get(transfer_id)
    if before.kind != "copy":
        raise InvalidInput(f"Only a copy can be resumed; transfer {transfer_id} is a {before.kind}.")
    before = transfers.settled(before)
    if not before.finished:
        raise InvalidInput(f"Transfer {transfer_id} is still {before.status}: cancel it first, or let it end.")
    if before.status == Transfer.SUCCEEDED:
        raise InvalidInput(f"Transfer {transfer_id} already copied everything it was asked to.")
    spec = before.spec
    asked = check_copy_request(spec)
    saved = {int(p): int(o) for p, o in (before.progress.get("saved_positions") or {}).items()}
    ranges = shift_ranges([ScanRange(**r) for r in spec["ranges"]], saved)
    to_cluster = spec["to_cluster"]

    def change() -> Transfer:
        user, name = _user(request)
        transfer = Transfer.objects.create(
            kind="copy",
            cluster=before.cluster,
            topic=before.topic,
            spec={**spec, "ranges": _ranges_json(ranges)},
            created_by=user,
            username=name,
            created_at=timezone.now(),
            resumed_from=before,
        )
        _run_copy(
            transfer, before.cluster, before.topic, to_cluster, asked, ranges, spec["target_partitions"], asked.filter
        )
        return transfer

    target = f"{before.cluster}/{before.topic} -> {to_cluster}/{asked.to_topic}"
    return perform(request, "topic.copy", to_cluster, target, {"resume": transfer_id}, change, _started)


def cancel(request: HttpRequest, transfer_id: int) -> Transfer:
    transfer = transfers.settled(_get(transfer_id))
    if transfer.finished:
        return transfer

    def change() -> Transfer:
        transfers.retried(
            lambda: Transfer.objects.filter(pk=transfer.pk, cancel_requested_at__isnull=True).update(
                cancel_requested_at=timezone.now()
            )
        )
        transfer.refresh_from_db()
        return transfer

    to_cluster = str(transfer.spec.get("to_cluster") or transfer.cluster)
    return perform(
        request,
        "topic.copy",
        to_cluster,
        f"transfer {transfer_id}",
        {"cancel": transfer_id},
        change,
        lambda _: "cancel asked",
    )


def _get(transfer_id: int) -> Transfer:
    try:
        return Transfer.objects.get(pk=transfer_id)
    except Transfer.DoesNotExist:
        raise NotFound(f"No transfer {transfer_id}.") from None


def _started(transfer: Transfer) -> str:
    return f"{transfer.kind} {transfer.pk} started" + (" (dry run)" if transfer.spec.get("dry_run") else "")


def _run_copy(
    transfer: Transfer,
    cluster: str,
    topic: str,
    to_cluster: str,
    asked: CopyRequest,
    ranges: list[ScanRange],
    count: int,
    filter_text: str,
) -> None:
    plan = CopyPlan(
        topic=topic,
        to_topic=asked.to_topic,
        ranges=ranges,
        target_partitions=count,
        keep_partition=asked.keep_partition,
        keep_timestamp=asked.keep_timestamp,
        rate=asked.rate,
        exactly_once=asked.exactly_once,
        dry_run=asked.dry_run,
        filtered=bool(filter_text.strip()),
    )
    predicate = predicate_for(parse_query(filter_text), registry=decoding_for(cluster, topic).registry)
    transactional_id = f"kazami-copy-{transfer.pk}-{uuid.uuid4().hex[:8]}"
    mover = _schema_mover(cluster, to_cluster, asked.to_topic) if asked.schemas == "register" else None

    def work(cancelled: threading.Event, report: transfers.Report) -> dict[str, Any]:
        final = run_copy(
            get_connection(cluster).background,
            get_connection(to_cluster),
            plan,
            predicate,
            transactional_id,
            cancel=cancelled,
            on_progress=lambda p: report(p.as_dict()),
            mover=mover,
        )
        return final.as_dict()

    def describe(final: dict[str, Any]) -> str:
        verb = "would copy" if asked.dry_run else f"copied ({final.get('guarantee')})"
        counts = f"{final.get('written', 0):,} of {final.get('read', 0):,} records read"
        return f"{verb} {counts} to {to_cluster}/{asked.to_topic}"

    transfers.start(transfer, work, "topic.copy", describe)


def _schema_mover(cluster: str, to_cluster: str, to_topic: str) -> SchemaMover:
    """What rewrites the schema ids of a copy asked with ``schemas: "register"``; InvalidInput unless both clusters
    have a schema registry."""
    source, target = registry_for(cluster), registry_for(to_cluster)
    if source is None or target is None:
        name = cluster if source is None else to_cluster
        raise InvalidInput(
            f'schemas "register" needs a schema registry for both clusters; {name!r} has none configured '
            "(SCHEMA_REGISTRY_URL, or the cluster's schema_registry table in the clusters file)."
        )
    return SchemaMover(source, target, to_topic)


def _request_json(asked: CopyRequest) -> dict[str, Any]:
    raw = asdict(asked)

    def bound(b: dict[str, Any]) -> Any:
        if b["timestamp_ms"] is not None:
            return {"timestamp": str(b["timestamp_ms"])}
        if b["offsets"]:
            return {"offsets": {str(p): o for p, o in b["offsets"].items()}}
        if b["offset"] is not None:
            return {"offset": b["offset"]}
        return None

    return {**raw, "from": bound(raw.pop("start")), "to": bound(raw.pop("stop"))}


def _ranges_json(ranges: list[ScanRange]) -> list[dict[str, Any]]:
    return [
        {"partition": r.partition, "start": r.start, "stop": r.stop, "readable": r.readable, "leader": r.leader}
        for r in ranges
    ]


def start_import(
    request: HttpRequest,
    cluster: str,
    topic: str,
    records: list[Record],
    keep_partition: bool,
    keep_timestamp: bool,
    rate: float | None,
    source_name: str,
) -> Transfer:
    """Start writing ``records`` (a whole file, checked) into ``topic``."""
    target = f"{cluster}/{topic}"
    params = {
        "file": source_name[:200],
        "records": len(records),
        "keep_partition": keep_partition,
        "keep_timestamp": keep_timestamp,
        "rate": rate,
    }

    def change() -> Transfer:
        conn = get_connection(cluster)
        partitions = len(get_topic_partitions(conn, topic))
        check_partitions(records, partitions, keep_partition)
        user, name = _user(request)
        transfer = Transfer.objects.create(
            kind="import",
            cluster=cluster,
            topic=topic,
            spec={**params, "partitions": partitions},
            created_by=user,
            username=name,
            created_at=timezone.now(),
        )
        transactional_id = f"kazami-import-{transfer.pk}-{uuid.uuid4().hex[:8]}"

        def work(cancelled: threading.Event, report: transfers.Report) -> dict[str, Any]:
            final = run_import(
                get_connection(cluster),
                topic,
                records,
                partitions,
                keep_partition,
                keep_timestamp,
                rate,
                transactional_id,
                cancel=cancelled,
                on_progress=lambda p: report(p.as_dict()),
            )
            return final.as_dict()

        def describe(final: dict[str, Any]) -> str:
            counts = f"{final.get('written', 0):,} of {len(records):,} records"
            return f"imported {counts} ({final.get('guarantee')}) from {source_name[:100]}"

        transfers.start(transfer, work, "topic.import", describe)
        return transfer

    return perform(request, "topic.import", cluster, target, params, change, _started)


def start_redrive(request: HttpRequest, cluster: str, topic: str, body: Any) -> Transfer:
    """Send the dead letters of ``topic`` back to their origins (all, the origins listed, those a filter passes)."""
    if not isinstance(body, dict):
        raise InvalidInput("The body must be a JSON object.")
    scheme = scheme_named(body.get("scheme"), body.get("topic_header"), body.get("partition_header"))
    origins = body.get("origins")
    if origins is not None and (
        not isinstance(origins, list)
        or not all(isinstance(o, dict) and isinstance(o.get("topic"), str) for o in origins)
    ):
        raise InvalidInput('origins must be a list of {"topic", "partition"} (partition optional).')
    picked = {(o["topic"], o.get("partition")) for o in origins or []}
    flags = {}
    for name, default in (("dry_run", False), ("keep_partition", True), ("keep_error_headers", False)):
        value = body.get(name, default)
        if not isinstance(value, bool):
            raise InvalidInput(f"{name} must be true or false.")
        flags[name] = value
    rate = body.get("rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or rate <= 0):
        raise InvalidInput("rate must be a number of records a second above 0.")
    try:
        query = parse_query(body.get("filter") or "")
    except QueryError as exc:
        raise InvalidInput(f"filter: {exc}") from None

    def change() -> Transfer:
        conn = get_connection(cluster)
        if masker_for(request.user, cluster, topic).active:
            raise InvalidInput(f"Masking hides parts of {topic!r} from you: an admin can redrive it.")
        ranges = plan_scan(conn, topic)
        chosen = scheme
        if chosen is None:
            found = survey(conn, topic, ranges, None, 1000, lambda m: m)
            chosen = scheme_named(found.scheme) if found.scheme else None
            if chosen is None:
                raise InvalidInput(
                    f"No record of {topic!r} names where it came from by Kafka Connect's or Spring's headers: "
                    "name the header that does (topic_header)."
                )
        user, name = _user(request)
        transfer = Transfer.objects.create(
            kind="redrive",
            cluster=cluster,
            topic=topic,
            spec={**body, "scheme": chosen.name, "ranges": _ranges_json(ranges)},
            created_by=user,
            username=name,
            created_at=timezone.now(),
        )
        predicate = predicate_for(query, registry=decoding_for(cluster, topic).registry)
        transactional_id = f"kazami-redrive-{transfer.pk}-{uuid.uuid4().hex[:8]}"
        scheme_used = chosen

        def wanted(origin: str, partition: int | None) -> bool:
            return not picked or (origin, partition) in picked or (origin, None) in picked

        def work(cancelled: threading.Event, report: transfers.Report) -> dict[str, Any]:
            final = run_redrive(
                get_connection(cluster),
                topic,
                ranges,
                scheme_used,
                wanted,
                predicate,
                flags["keep_partition"],
                flags["keep_error_headers"],
                float(rate) if rate else None,
                flags["dry_run"],
                transactional_id,
                cancel=cancelled,
                on_progress=lambda p: report(p.as_dict()),
            )
            return final.as_dict()

        def describe(final: dict[str, Any]) -> str:
            verb = "would send back" if flags["dry_run"] else f"sent back ({final.get('guarantee')})"
            origins_text = ", ".join(f"{k}: {v}" for k, v in (final.get("by_origin") or {}).items())[:300]
            return f"{verb} {final.get('sent', 0):,} of {final.get('read', 0):,} dead letters ({origins_text})"

        transfers.start(transfer, work, "topic.redrive", describe)
        return transfer

    return perform(request, "topic.redrive", cluster, f"{cluster}/{topic}", body, change, _started)
