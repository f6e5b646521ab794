"""Moving data through the API: copy a topic (or a range of it) to another topic or cluster, export records as a
file (streamed, masked for the caller), import a file, and the runs' progress (tasks), cancel and resume."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, KazamiError, NotFound
from broker.messages.filtering import predicate_for
from broker.messages.query import parse_query
from broker.messages.query_terms import QueryError
from broker.messages.read import check_isolation
from broker.messages.scan import plan_scan
from broker.times import parse_time
from broker.topics.read import get_topic_partitions
from broker.transfer.export import export_avro, export_lines
from broker.transfer.records import FORMATS, parse
from broker.transfer.redrive import scheme_named, survey
from console.access import NotVisible, scoped, sees_every
from console.background import transfers
from console.changes import transfers as transfer_changes
from console.config.clusters import get_configs, get_connection
from console.errors import api_view, page_view, status_of
from console.models import Transfer
from console.params import int_param, json_object
from console.present.masking import masker_for
from console.present.messages import decoding_for

MAX_IMPORT_BYTES = 256 * 1024 * 1024
PREVIEW = 10


@require_POST
@api_view
def api_copy(request: HttpRequest, cluster: str, topic: str) -> Any:
    get_connection(cluster)
    transfer = transfer_changes.start_copy(request, cluster, topic, json_object(request))
    return _accepted(transfer)


def _seen_task(request: HttpRequest, task: int) -> Transfer:
    """Task ``task``; NotFound for an unknown one, and for one moving a topic the user may not see."""
    try:
        found = Transfer.objects.get(pk=task)
    except Transfer.DoesNotExist:
        raise NotFound(f"No task {task}.") from None
    if not sees_every(request.user, found.cluster, "topic", [found.topic]):
        raise NotVisible(f"No task {task}.")
    return found


@require_GET
@api_view
@scoped
def api_task(request: HttpRequest, task: int) -> Any:
    return transfers.as_json(transfers.settled(_seen_task(request, task)))


@require_POST
@api_view
@scoped
def api_task_cancel(request: HttpRequest, task: int) -> Any:
    _seen_task(request, task)
    return transfers.as_json(transfer_changes.cancel(request, task))


@require_POST
@api_view
@scoped
def api_task_resume(request: HttpRequest, task: int) -> Any:
    _seen_task(request, task)
    return _accepted(transfer_changes.resume(request, task))


def _accepted(transfer: Transfer) -> JsonResponse:
    body = {**transfers.as_json(transfer), "url": f"/api/tasks/{transfer.pk}/"}
    response = JsonResponse(body, status=202)
    response["Location"] = body["url"]
    return response


@require_GET
@api_view
def api_export(request: HttpRequest, cluster: str, topic: str) -> Any:
    """The records of a range (partitions, from and to as offsets or times, a filter) as a file, streamed."""
    conn = get_connection(cluster)
    fmt = request.GET.get("format", "jsonl")
    if fmt not in ("jsonl", "csv", "avro"):
        raise InvalidInput(f"format must be jsonl, csv or avro, not {fmt[:20]!r}.")
    isolation = check_isolation(request.GET.get("isolation"))
    partitions = _partitions(request.GET.get("partitions"))
    start_ms, stop_ms = _time(request, "since"), _time(request, "until")
    ranges = plan_scan(
        conn,
        topic,
        partitions,
        start_ms=start_ms,
        stop_ms=stop_ms,
        start_offset=int_param(request, "from_offset", None, minimum=0),
        stop_offset=int_param(request, "to_offset", None, minimum=0),
        isolation=isolation,
    )
    try:
        query = parse_query(request.GET.get("filter", ""))
    except QueryError as exc:
        raise InvalidInput(f"filter: {exc}") from None
    masker = masker_for(request.user, cluster, topic)
    predicate = predicate_for(query, masker, decoding_for(cluster, topic).registry)
    most = int_param(request, "max", 10_000_000, minimum=1, maximum=100_000_000) or 10_000_000
    chunks: Any
    if fmt == "avro":
        chunks = export_avro(conn, topic, ranges, predicate, masker.message, most, isolation)
        content_type = "application/avro"
    else:
        chunks = export_lines(conn, topic, ranges, fmt, predicate, masker.message, most, isolation)
        content_type = "text/csv; charset=utf-8" if fmt == "csv" else "application/x-ndjson; charset=utf-8"
    response = StreamingHttpResponse(chunks, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{topic}.{fmt}"'
    return response


@require_POST
@api_view
def api_import(request: HttpRequest, cluster: str, topic: str) -> Any:
    """A file of records into the topic: checked whole first (bad lines refused with their numbers, nothing
    written), previewed with ``dry_run``, then written by a task."""
    get_connection(cluster)
    upload = request.FILES.get("file")
    if upload is None:
        raise InvalidInput("Send the records as a multipart form with a file field named file.")
    if upload.size is not None and upload.size > MAX_IMPORT_BYTES:
        raise InvalidInput(f"The file is {upload.size:,} bytes; at most {MAX_IMPORT_BYTES:,} are imported at once.")
    fmt = request.POST.get("format") or _format_of(upload.name or "")
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}, not {fmt[:20]!r}.")
    columns = _columns(request.POST.get("columns"))
    parsed = parse(upload.read(), fmt, columns)
    skip_bad = _flag(request, "skip_bad", False)
    bad = [{"line": b.line, "reason": b.reason} for b in parsed.bad]
    if parsed.bad_count and not skip_bad:
        refused = InvalidInput(
            f"{parsed.bad_count:,} line{'s' if parsed.bad_count != 1 else ''} cannot be imported; nothing was "
            f"written. First: line {parsed.bad[0].line}: {parsed.bad[0].reason}."
        )
        refused.fields = {"bad_lines": bad, "bad_count": parsed.bad_count}  # type: ignore[attr-defined]
        raise refused
    if _flag(request, "dry_run", False):
        return {
            "records": len(parsed.records),
            "bad_lines": bad,
            "bad_count": parsed.bad_count,
            "preview": [_preview(r) for r in parsed.records[:PREVIEW]],
        }
    per_s = _rate(request.POST.get("rate"))
    transfer = transfer_changes.start_import(
        request,
        cluster,
        topic,
        parsed.records,
        _flag(request, "keep_partition", False),
        _flag(request, "keep_timestamp", False),
        per_s,
        upload.name or "upload",
    )
    response = _accepted(transfer)
    if parsed.bad_count:
        body = json.loads(response.content)
        response = JsonResponse({**body, "skipped_lines": bad, "skipped_count": parsed.bad_count}, status=202)
        response["Location"] = body["url"]
    return response


def _preview(record: Any) -> dict[str, Any]:
    from broker.transfer.records import encode_bytes

    key, key_enc = encode_bytes(record.key)
    value, value_enc = encode_bytes(record.value)
    return {
        "key": key,
        "key_encoding": key_enc,
        "value": value if value is None or len(value) <= 500 else value[:500] + "…",
        "value_encoding": value_enc,
        "headers": [name for name, _ in record.headers],
        "partition": record.partition,
        "timestamp": record.timestamp,
    }


def _format_of(name: str) -> str:
    lowered = name.lower()
    if lowered.endswith((".jsonl", ".ndjson", ".json")):
        return "jsonl"
    if lowered.endswith(".csv"):
        return "csv"
    return "lines"


def _columns(raw: str | None) -> dict[str, str] | None:
    if not raw:
        return None
    try:
        given = json.loads(raw)
    except json.JSONDecodeError:
        raise InvalidInput('columns must be a JSON object such as {"key": "id", "value": "body"}.') from None
    if not isinstance(given, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in given.items()):
        raise InvalidInput('columns must be a JSON object such as {"key": "id", "value": "body"}.')
    return given


def _flag(request: HttpRequest, name: str, default: bool) -> bool:
    raw = request.POST.get(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise InvalidInput(f"{name} must be true or false, not {raw[:20]!r}.")


def _partitions(raw: str | None) -> list[int] | None:
    if not raw:
        return None
    try:
        found = sorted({int(p) for p in raw.split(",") if p.strip()})
    except ValueError:
        raise InvalidInput(f"partitions must be partition numbers separated by commas, not {raw[:40]!r}.") from None
    if any(p < 0 for p in found):
        raise InvalidInput("partitions must be partition numbers from 0.")
    return found or None


def _time(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name)
    return parse_time(raw, name) if raw else None


@require_GET
@api_view
def api_dead_letters(request: HttpRequest, cluster: str, topic: str) -> Any:
    """What a dead-letter topic holds, grouped by where each record came from, with samples (masked)."""
    conn = get_connection(cluster)
    scheme = scheme_named(
        request.GET.get("scheme"), request.GET.get("topic_header"), request.GET.get("partition_header")
    )
    most = int_param(request, "max", 100_000, minimum=1, maximum=1_000_000) or 100_000
    masker = masker_for(request.user, cluster, topic)
    found = survey(conn, topic, plan_scan(conn, topic), scheme, most, masker.message)
    return {
        "topic": topic,
        "scheme": found.scheme,
        "read": found.read,
        "unnamed": found.unnamed,
        "more": found.more,
        "origins": found.origins,
    }


@require_POST
@api_view
def api_redrive(request: HttpRequest, cluster: str, topic: str) -> Any:
    get_connection(cluster)
    return _accepted(transfer_changes.start_redrive(request, cluster, topic, json_object(request)))


# ---------------------------------------------------------------- pages


@require_http_methods(["GET", "POST"])
@page_view
def move_page(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """A topic's "Move data" tab: copy, export, import and, for a dead-letter topic, redrive."""
    conn = get_connection(cluster)
    partitions = len(get_topic_partitions(conn, topic))  # an unknown topic is a 404
    error = None
    if request.method == "POST":
        action = request.POST.get("action")
        try:
            if action == "copy":
                transfer = transfer_changes.start_copy(request, cluster, topic, _copy_body(request))
            elif action == "import":
                transfer = _page_import(request, cluster, topic)
            elif action == "redrive":
                transfer = transfer_changes.start_redrive(request, cluster, topic, _redrive_body(request))
            else:
                raise InvalidInput("Choose copy, import or redrive.")
            return redirect("task-page", cluster=cluster, topic=topic, task=transfer.pk)
        except KazamiError as exc:
            status, _code = status_of(exc)
            if status >= 500:
                raise
            error = str(exc)
    survey_found = None
    if request.GET.get("dead_letters") == "1":
        masker = masker_for(request.user, cluster, topic)
        scheme = scheme_named(
            request.GET.get("scheme"), request.GET.get("topic_header"), request.GET.get("partition_header")
        )
        survey_found = survey(conn, topic, plan_scan(conn, topic), scheme, 100_000, masker.message)
    context = {
        "cluster": cluster,
        "topic": topic,
        "partitions": partitions,
        "clusters": sorted(get_configs()),
        "error": error,
        "posted": request.POST if request.method == "POST" else {},
        "survey": survey_found,
        "recent": [transfers.settled(t) for t in Transfer.objects.filter(cluster=cluster, topic=topic)[:10]],
        "crumb": "move data",
    }
    return render(request, "transfers/move.html", context, status=400 if error else 200)


def _copy_body(request: HttpRequest) -> dict[str, Any]:
    data = request.POST

    def bound(text: str) -> Any:
        text = text.strip()
        if not text:
            return None
        return {"offset": int(text)} if text.isascii() and text.isdigit() else {"timestamp": text}

    body: dict[str, Any] = {
        "to_topic": data.get("to_topic", ""),
        "to_cluster": data.get("to_cluster") or None,
        "from": bound(data.get("from", "")),
        "to": bound(data.get("to", "")),
        "filter": data.get("filter", ""),
        "keep_partition": data.get("keep_partition") == "on",
        "keep_timestamp": data.get("keep_timestamp") == "on",
        "dry_run": data.get("dry_run") == "1",
    }
    if data.get("partitions", "").strip():
        body["partitions"] = _partitions(data["partitions"])
    rate = _rate(data.get("rate"))
    if rate is not None:
        body["rate"] = rate
    return body


def _rate(raw: str | None) -> float | None:
    """A rate in records a second from a form field (None when blank); InvalidInput for anything but a number > 0."""
    text = (raw or "").strip()
    if not text:
        return None
    try:
        rate = float(text)
    except ValueError:
        raise InvalidInput(f"rate must be a number of records a second, not {text[:20]!r}.") from None
    if not 0 < rate <= 10**9:
        raise InvalidInput("rate must be a number of records a second above 0.")
    return rate


def _redrive_body(request: HttpRequest) -> dict[str, Any]:
    data = request.POST
    body: dict[str, Any] = {
        "scheme": data.get("scheme") or "auto",
        "dry_run": data.get("dry_run") == "1",
        "keep_partition": data.get("keep_partition", "on") == "on",
    }
    if data.get("origin_topic"):
        origin: dict[str, Any] = {"topic": data["origin_topic"]}
        given = data.get("origin_partition", "").strip()
        if given.isascii() and given.isdigit():
            origin["partition"] = int(given)
        body["origins"] = [origin]
    if data.get("topic_header"):
        body["topic_header"] = data["topic_header"]
    return body


def _page_import(request: HttpRequest, cluster: str, topic: str) -> Transfer:
    upload = request.FILES.get("file")
    if upload is None:
        raise InvalidInput("Choose a file to import.")
    fmt = request.POST.get("format") or _format_of(upload.name or "")
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}.")
    parsed = parse(upload.read(), fmt, _columns(request.POST.get("columns")))
    if parsed.bad_count and request.POST.get("skip_bad") != "on":
        lines = "; ".join(f"line {b.line}: {b.reason}" for b in parsed.bad[:5])
        raise InvalidInput(f"{parsed.bad_count:,} line(s) cannot be imported, so nothing was written: {lines}.")
    return transfer_changes.start_import(
        request,
        cluster,
        topic,
        parsed.records,
        request.POST.get("keep_partition") == "on",
        request.POST.get("keep_timestamp") == "on",
        _rate(request.POST.get("rate")),
        upload.name or "upload",
    )


@require_http_methods(["GET", "POST"])
@page_view
def task_page(request: HttpRequest, cluster: str, topic: str, task: int) -> HttpResponse:
    """One run's progress (refreshed every second while it runs), with cancel and resume."""
    try:
        found = Transfer.objects.get(pk=task, cluster=cluster, topic=topic)
    except Transfer.DoesNotExist:
        raise NotFound(f"No task {task} of topic {topic!r} on cluster {cluster!r}.") from None
    if request.method == "POST":
        if request.POST.get("action") == "cancel":
            transfer_changes.cancel(request, task)
        elif request.POST.get("action") == "resume":
            resumed = transfer_changes.resume(request, task)
            return redirect("task-page", cluster=cluster, topic=topic, task=resumed.pk)
        return redirect("task-page", cluster=cluster, topic=topic, task=task)
    found = transfers.settled(found)
    context = {
        "cluster": cluster,
        "topic": found.topic,
        "task": found,
        "p": found.progress,
        "crumb": f"task {found.pk}",
    }
    if request.GET.get("part") == "progress":
        return render(request, "transfers/_progress.html", context)
    return render(request, "transfers/task.html", context)
