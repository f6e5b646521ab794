"""Message pages: browse a partition, one message, find by key, search, tail, produce, Avro schemas."""

from __future__ import annotations

import csv
import io
import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.decode import DECODINGS, SchemaError, parse_avro_schema
from broker.errors import InvalidInput, KazamiError
from broker.messages import read as messages
from broker.messages.masking import Masker
from broker.messages.partitioners import CHOICES, PARTITIONERS
from broker.messages.query import describe_syntax
from broker.messages.scan import find_by_key
from broker.topics import read as topics
from console import changes
from console.access import needs, perform
from console.config.clusters import get_connection
from console.present.masking import masker_for
from console.errors import page_view, status_of
from console.forms import ProduceForm, SchemaForm
from console.live.search import SearchSpec, run_search, search_spec_from
from console.models import TopicSchema
from console.params import choice_param, int_param, time_param
from console.present.message_json import CSV_COLUMNS, MASKED_COLUMN, csv_row, message_json, raw_download
from console.present.messages import DETAIL_LIMIT, decoding_for, show


def _decoding(request: HttpRequest, cluster: str, topic: str) -> Any:
    return decoding_for(
        cluster,
        topic,
        choice_param(request, "key_as", DECODINGS, "auto"),
        choice_param(request, "value_as", DECODINGS, "auto"),
    )


def _isolation(request: HttpRequest) -> str:
    """``isolation``: read_uncommitted (every record and marker, labelled) or read_committed."""
    return messages.check_isolation(request.GET.get("isolation"))


@require_GET
@page_view
def browse(request: HttpRequest, cluster: str, topic: str, partition: int) -> HttpResponse:
    conn = get_connection(cluster)
    limit = messages.check_limit(int_param(request, "limit", messages.DEFAULT_PAGE))
    offset = int_param(request, "offset", None)
    decoding = _decoding(request, cluster, topic)
    page = messages.get_page(
        conn,
        topic,
        partition,
        offset=offset,
        limit=limit,
        timestamp_ms=time_param(request, "timestamp"),
        from_end=request.GET.get("last") == "1",
        isolation=_isolation(request),
    )
    masker = masker_for(request.user, cluster, topic)
    shown = [show(cluster, masker.message(m), decoding) for m in page.messages]
    keep = {"limit": str(limit), "key_as": decoding.key_as, "value_as": decoding.value_as}
    if page.isolation != "read_uncommitted":
        keep["isolation"] = page.isolation
    return render(
        request,
        "messages/browse.html",
        {
            "cluster": cluster,
            "topic": topic,
            "page": page,
            "shown": shown,
            "decoding": decoding,
            "keep": keep,
            "keep_query": "&" + urlencode(keep),
            "decodings": DECODINGS,
            "requested_offset": offset,
            "crumb": f"partition {partition}",
        },
    )


@require_GET
@page_view
def detail(request: HttpRequest, cluster: str, topic: str, partition: int, offset: int) -> HttpResponse:
    conn = get_connection(cluster)
    found = messages.get_message(conn, topic, partition, offset)
    message = masker_for(request.user, cluster, topic).message(found.message)
    download = request.GET.get("download")
    if download is not None:
        return raw_download(message, download, _isolation(request))
    decoding = _decoding(request, cluster, topic)
    return render(
        request,
        "messages/detail.html",
        {
            "cluster": cluster,
            "topic": topic,
            "m": show(cluster, message, decoding, limit=DETAIL_LIMIT),
            "info": found.info,
            "decoding": decoding,
            "decodings": DECODINGS,
            "prev_offset": found.prev_offset,
            "next_offset": found.next_offset,
        },
    )


@require_GET
@page_view
def find_key(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    raw_key = request.GET.get("key")
    key_format = choice_param(request, "key_format", ("text", "hex", "base64"), "text")
    partitioner = choice_param(request, "partitioner", CHOICES, "auto")
    context: dict[str, Any] = {
        "cluster": cluster,
        "topic": topic,
        "key": raw_key or "",
        "key_format": key_format,
        "partitioner": partitioner,
        "partitioners": PARTITIONERS.values(),
    }
    if raw_key is not None and raw_key != "":
        from broker.decode import InputError, encode_input

        try:
            key = encode_input(raw_key, key_format)
        except InputError as exc:
            raise InvalidInput(f"key: {exc}") from None
        # The same key as a search filter: a text key only (search compares keys as decoded text).
        search_query = f"key == {json.dumps(raw_key)}" if key_format == "text" else None
        if partitioner == "all" and search_query and raw_key.strip()[:1] not in ("{", "["):
            # Every partition: the search page reads them with progress and can be stopped.
            query = urlencode({"q": search_query, "start": "1"})
            return redirect(f"{reverse('topic-search', kwargs={'cluster': cluster, 'topic': topic})}?{query}")
        found = find_by_key(conn, topic, key, partitioner, masked=masker_for(request.user, cluster, topic).message)
        decoding = _decoding(request, cluster, topic)
        context.update(
            found=found, shown=[show(cluster, m, decoding) for m in found.matches], search_query=search_query
        )
    else:
        topics.get_topic_partitions(conn, topic)  # 404 for an unknown topic
    return render(request, "messages/find_key.html", context)


@require_GET
@page_view
def search(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """The search page. With ?run=1 (no JavaScript, or a pasted link) it searches now, bounded; the
    websocket version shows progress and can be stopped. ?format=json|csv downloads the results."""
    conn = get_connection(cluster)
    infos = topics.get_topic_partitions(conn, topic)
    context: dict[str, Any] = {
        "cluster": cluster,
        "topic": topic,
        "partitions": infos,
        "syntax": describe_syntax(),
        "values": request.GET,
    }
    if request.GET.get("run") == "1" or request.GET.get("format"):
        spec = search_spec_from(request.GET)
        output = request.GET.get("format")
        masker = masker_for(request.user, cluster, topic)
        if output in ("json", "csv"):
            return _download(cluster, topic, spec, output, masker)
        result = run_search(conn, cluster, topic, spec, masker=masker)
        context.update(result=result)
    return render(request, "messages/search.html", context)


def _download(cluster: str, topic: str, spec: SearchSpec, output: str, masker: Masker) -> HttpResponse:
    """The search's matches as a file: masked as the user's pages show them (the CSV then ends with a
    ``masked`` column)."""
    result = run_search(get_connection(cluster), cluster, topic, spec, masker=masker)
    found = [s.message for s in result.shown]
    if output == "json":
        body = json.dumps(
            {
                "topic": topic,
                "query": spec.query,
                "scanned": result.progress.scanned,
                "matched": result.progress.matched,
                "stopped": result.progress.stopped,
                "messages": [message_json(m) for m in found],
            },
            indent=2,
        )
        response = HttpResponse(body, content_type="application/json")
    else:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow([*CSV_COLUMNS, MASKED_COLUMN] if masker.active else CSV_COLUMNS)
        writer.writerows(csv_row(m, masker.active) for m in found)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{topic}-search.{output}"'
    return response


@require_GET
@page_view
def tail(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    infos = topics.get_topic_partitions(conn, topic)
    partition = int_param(request, "partition", None, minimum=0)
    if partition is not None and partition >= len(infos):
        raise InvalidInput(f"Topic {topic!r} has no partition {partition} (it has 0 to {len(infos) - 1}).")
    isolation = _isolation(request)
    params = {"partition": str(partition)} if partition is not None else {}
    if isolation != "read_uncommitted":
        params["isolation"] = isolation
    return render(
        request,
        "messages/tail.html",
        {
            "cluster": cluster,
            "topic": topic,
            "partitions": infos,
            "partition": partition,
            "isolation": isolation,
            "isolation_query": urlencode({"isolation": isolation}) if isolation != "read_uncommitted" else "",
            "ws_query": f"?{urlencode(params)}" if params else "",
        },
    )


@require_http_methods(["GET", "POST"])
@page_view
@needs("message.produce")
def produce(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    infos = topics.get_topic_partitions(conn, topic)
    form = ProduceForm(request.POST or None)
    context: dict[str, Any] = {"cluster": cluster, "topic": topic, "partitions": infos, "form": form}
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                context["produced"] = changes.produce(request, conn, cluster, topic, form)
                context["form"] = ProduceForm(initial={k: data.get(k) for k in ("key_format", "value_format")})
            except KazamiError as exc:
                status = status_of(exc)[0]
                form.add_error(None, str(exc))
        else:
            status = 400
    return render(request, "messages/produce.html", context, status=status)


@require_POST
@page_view
@needs("topic.schema")
def upload_schema(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    get_connection(cluster)
    form = SchemaForm(request.POST)
    if form.is_valid():
        try:
            parse_avro_schema(form.cleaned_data["schema"])
        except SchemaError as exc:
            flash.error(request, f"The Avro schema was not saved: {exc}")
        else:
            part, schema = form.cleaned_data["part"], form.cleaned_data["schema"]
            perform(
                request,
                "topic.schema",
                cluster,
                topic,
                {"part": part, "schema_chars": len(schema)},
                lambda: TopicSchema.objects.update_or_create(
                    cluster=cluster, topic=topic, part=part, defaults={"schema": schema}
                ),
            )
            flash.success(request, f"Avro schema for the {form.cleaned_data['part']}s of {topic} saved.")
    else:
        flash.error(
            request,
            "The Avro schema was not saved: " + "; ".join(str(e) for errors in form.errors.values() for e in errors),
        )
    back = request.POST.get("next") or ""
    if back.startswith("/clusters/"):
        return redirect(back)
    return redirect("topic-detail", cluster=cluster, topic=topic)
