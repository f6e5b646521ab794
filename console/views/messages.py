"""Messages: browse a partition, one message, find by key, search, tail, produce, Avro schemas; the pages and
their JSON API twins, which read the same query parameters (:func:`_page_query`, :func:`_key_query`)."""

from __future__ import annotations

import functools
import io
import json
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages as flash
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.client.connection import ClusterConnection
from broker.decode import DECODINGS, InputError, SchemaError, encode_input, parse_avro_schema
from broker.errors import InvalidInput, KazamiError, NotFound
from broker.messages import merged
from broker.messages import read as messages
from broker.messages.masking import Masker, masked_labels
from broker.messages.partitioners import CHOICES, PARTITIONERS
from broker.messages.produce import Again, as_form, guess_formats
from broker.messages.query import describe_syntax
from broker.messages.scan import KeySearch, find_by_key
from broker.schemas.encode import parse_document
from broker.schemas.model import RegistryError
from broker.topics import read as topics
from console.access import needs
from console.changes import messages as message_changes
from console.config.clusters import get_connection
from console.errors import api_view, json_error, page_view, status_of
from console.forms import ProduceForm, SchemaForm, body_form
from console.live.search import (
    SearchesBusy,
    SearchSpec,
    run_search,
    search_slot,
    search_spec_from,
    searcher,
    until_client_leaves,
)
from console.params import choice_param, int_param, time_param
from console.present import spreadsheet
from console.present.masking import masker_for
from console.present.message_json import (
    CSV_COLUMNS,
    MASKED_COLUMN,
    csv_row,
    message_json,
    messages_json,
    raw_download,
    shown_json,
)
from console.present.messages import DETAIL_LIMIT, decoding_for, show
from console.present.schema_choices import produce_schemas
from console.views.schemas import registry_answers, registry_status


def _decoding(request: HttpRequest, cluster: str, topic: str, lazy: bool = False) -> Any:
    return decoding_for(
        cluster,
        topic,
        choice_param(request, "key_as", DECODINGS, "auto"),
        choice_param(request, "value_as", DECODINGS, "auto"),
        lazy=lazy,
    )


def _isolation(request: HttpRequest) -> str:
    """``isolation``: read_uncommitted (every record and marker, labelled) or read_committed."""
    return messages.check_isolation(request.GET.get("isolation"))


@dataclass(frozen=True)
class PageQuery:
    """Which page of a partition to read: from ``offset``, or from ``timestamp``, or the last page (``last=1``);
    ``limit`` rows; ``isolation``."""

    offset: int | None
    limit: int
    timestamp_ms: int | None
    from_end: bool
    isolation: str

    def read(self, conn: ClusterConnection, topic: str, partition: int) -> messages.Page:
        return messages.get_page(
            conn,
            topic,
            partition,
            offset=self.offset,
            limit=self.limit,
            timestamp_ms=self.timestamp_ms,
            from_end=self.from_end,
            isolation=self.isolation,
        )


def _page_query(request: HttpRequest) -> PageQuery:
    """The browse page's and ``GET /api/.../messages``'s parameters, checked."""
    return PageQuery(
        limit=messages.check_limit(int_param(request, "limit", messages.DEFAULT_PAGE)),
        offset=int_param(request, "offset", None),
        timestamp_ms=time_param(request, "timestamp"),
        from_end=request.GET.get("last") == "1",
        isolation=_isolation(request),
    )


@dataclass(frozen=True)
class MergedQuery:
    """Which page of a topic's messages across partitions: ``order`` (newest or oldest first), from ``cursor``
    (a page's next or previous one) or ``timestamp``, over ``partitions`` (None: all)."""

    order: str
    limit: int
    timestamp_ms: int | None
    partitions: list[int] | None
    cursor: merged.Cursor | None
    isolation: str

    def read(self, conn: ClusterConnection, topic: str) -> merged.MergedPage:
        return merged.get_merged(
            conn,
            topic,
            order=self.order,
            limit=self.limit,
            timestamp_ms=self.timestamp_ms,
            partitions=self.partitions,
            cursor=self.cursor,
            isolation=self.isolation,
        )

    def keep(self) -> dict[str, str]:
        """The parameters a link to another page of the same view keeps (not the cursor, nor the time)."""
        kept = {"order": self.order, "limit": str(self.limit)}
        if self.partitions is not None:
            kept["partitions"] = ",".join(str(p) for p in self.partitions)
        if self.isolation != "read_uncommitted":
            kept["isolation"] = self.isolation
        return kept


def _merged_query(request: HttpRequest) -> MergedQuery:
    """The topic messages page's and ``GET /api/.../topics/<t>/messages/``'s parameters, checked."""
    cursor = request.GET.get("cursor", "").strip()
    return MergedQuery(
        order=merged.check_order(request.GET.get("order")),
        limit=messages.check_limit(int_param(request, "limit", messages.DEFAULT_PAGE)),
        timestamp_ms=time_param(request, "timestamp"),
        partitions=merged.parse_partitions(request.GET.get("partitions")),
        cursor=merged.Cursor.parse(cursor) if cursor else None,
        isolation=_isolation(request),
    )


@dataclass(frozen=True)
class KeyQuery:
    """A find-by-key: the ``key`` as typed (None when not given), its ``key_format`` and the ``partitioner``
    that placed it."""

    raw: str | None
    key_format: str
    partitioner: str

    def key(self, cluster: str = "", topic: str = "") -> bytes:
        """The key's bytes; raises InvalidInput. As ``schema``: the key typed as a JSON document, encoded in the
        wire format with the latest schema of the topic's key subject (``<topic>-key``), as a producer using it
        writes it: records written with an older version carry another schema id, and are not found so."""
        if self.key_format == "schema":
            try:
                document = parse_document(self.raw or "", "key")
                return message_changes.schema_encoder(cluster).encode(f"{topic}-key", "latest", document, "key").data
            except RegistryError as exc:
                raise InvalidInput(f"key: the subject {topic}-key could not be used: {exc}") from None
        try:
            return encode_input(self.raw or "", self.key_format)
        except InputError as exc:
            raise InvalidInput(f"key: {exc}") from None


def _key_query(request: HttpRequest, required: bool = False) -> KeyQuery:
    """The find-key page's and ``GET /api/.../find-key/``'s parameters, checked; ``required``: a key must be
    given (the page without one shows its form)."""
    raw = request.GET.get("key")
    if required and (raw is None or raw == ""):
        raise InvalidInput("key is required.")
    return KeyQuery(
        raw=raw,
        key_format=choice_param(request, "key_format", ("text", "hex", "base64", "schema"), "text"),
        partitioner=choice_param(request, "partitioner", CHOICES, "auto"),
    )


# ---------------------------------------------------------------- pages


@require_GET
@page_view
def browse(request: HttpRequest, cluster: str, topic: str, partition: int) -> HttpResponse:
    conn = get_connection(cluster)
    query = _page_query(request)
    decoding = _decoding(request, cluster, topic, lazy=True)  # this view draws the page in its own thread
    page = query.read(conn, topic, partition)
    masker = masker_for(request.user, cluster, topic)
    shown = [show(cluster, masker.message(m), decoding) for m in page.messages]
    keep = {"limit": str(query.limit), "key_as": decoding.key_as, "value_as": decoding.value_as}
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
            "requested_offset": query.offset,
            "crumb": f"partition {partition}",
            # The partition picker's links: the address of partition 0 without its number, reversed once
            # rather than once per partition (a topic of 500 partitions made 500 reversals a page).
            "partition_prefix": reverse(
                "messages-browse", kwargs={"cluster": cluster, "topic": topic, "partition": 0}
            ).removesuffix("0/"),
        },
    )


@require_GET
@page_view
def topic_messages(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """The topic's messages across its partitions, newest first unless asked otherwise."""
    conn = get_connection(cluster)
    query = _merged_query(request)
    decoding = _decoding(request, cluster, topic, lazy=True)
    page = query.read(conn, topic)
    masker = masker_for(request.user, cluster, topic)
    shown = [show(cluster, masker.message(m), decoding) for m in page.messages]
    keep = {**query.keep(), "key_as": decoding.key_as, "value_as": decoding.value_as}
    keep_query = urlencode(keep)

    def link(cursor: merged.Cursor | None) -> str | None:
        return None if cursor is None else f"?{keep_query}&{urlencode({'cursor': cursor.text})}"

    restart = {k: v for k, v in keep.items() if k != "order"}
    return render(
        request,
        "messages/merged.html",
        {
            "cluster": cluster,
            "topic": topic,
            "page": page,
            "shown": shown,
            "decoding": decoding,
            "decodings": DECODINGS,
            "query": query,
            "next_link": link(page.next_cursor),
            "prev_link": link(page.prev_cursor),
            "newest_link": "?" + urlencode({"order": "newest", **restart}),
            "oldest_link": "?" + urlencode({"order": "oldest", **restart}),
            "chosen": set(page.shown),
            "filtered": query.partitions is not None,
            "crumb": "messages",
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
        as_json = decoding_for(cluster, topic) if request.GET.get("as") == "json" else None
        return raw_download(message, download, _isolation(request), found.last_stable_offset, as_json)
    decoding = _decoding(request, cluster, topic)
    if request.GET.get("part") == "expanded":  # a row of a list, opened in place
        shown = show(cluster, message, decoding, limit=DETAIL_LIMIT)
        return render(request, "messages/_expanded.html", {"cluster": cluster, "topic": topic, "m": shown})
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
    asked = _key_query(request)
    raw_key, key_format, partitioner = asked.raw, asked.key_format, asked.partitioner
    context: dict[str, Any] = {
        "cluster": cluster,
        "topic": topic,
        "key": raw_key or "",
        "key_format": key_format,
        "partitioner": partitioner,
        "partitioners": PARTITIONERS.values(),
    }
    if raw_key is not None and raw_key != "":
        key = asked.key(cluster, topic)
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


def _stops_when_client_leaves(
    view: Callable[..., HttpResponse],
) -> Callable[..., Coroutine[Any, Any, HttpResponse]]:
    """An async view around ``view(request, …, cancel=event)``, which runs in a thread of its own: when the client
    goes away, Django cancels the async view and ``cancel`` is set, so the search stops (console.live.search's
    until_client_leaves)."""

    @functools.wraps(view)
    async def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        def work(cancel: threading.Event) -> HttpResponse:
            return view(request, *args, cancel=cancel, **kwargs)

        return await until_client_leaves(work, f"{request.method} {request.path}")

    return wrapper


def _searcher(request: HttpRequest) -> str:
    return searcher(request.user, request.META.get("REMOTE_ADDR"))


@require_GET
@_stops_when_client_leaves
@page_view
def search(request: HttpRequest, cluster: str, topic: str, cancel: threading.Event | None = None) -> HttpResponse:
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
        try:
            with search_slot(_searcher(request)):
                if output in ("json", "csv"):
                    return _download(cluster, topic, spec, output, masker, cancel)
                result = run_search(conn, cluster, topic, spec, masker=masker, cancel=cancel)
        except SearchesBusy as exc:
            return render(request, "errors/error.html", {"status": 429, "message": str(exc)}, status=429)
        context.update(result=result)
    return render(request, "messages/search.html", context)


def _download(
    cluster: str, topic: str, spec: SearchSpec, output: str, masker: Masker, cancel: threading.Event | None = None
) -> HttpResponse:
    """The search's matches as a file: masked as the user's pages show them (the CSV then ends with a
    ``masked`` column); a key or value a registry's schema reads as its document's JSON (encoding ``json``)."""
    result = run_search(get_connection(cluster), cluster, topic, spec, masker=masker, cancel=cancel)
    if output == "json":
        body = json.dumps(
            {
                "topic": topic,
                "query": spec.query,
                "scanned": result.progress.scanned,
                "matched": result.progress.matched,
                "stopped": result.progress.stopped,
                "stop_reason": result.stop_reason,
                "messages": [shown_json(s) for s in result.shown],  # registry records as their documents
            },
            indent=2,
        )
        response = HttpResponse(body, content_type="application/json")
    else:
        buffer = io.StringIO()
        writer = spreadsheet.writer(buffer)
        writer.writerow([*CSV_COLUMNS, MASKED_COLUMN] if masker.active else CSV_COLUMNS)
        writer.writerows(csv_row(s.message, masker.active, shown_json(s)) for s in result.shown)
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
    schemas = produce_schemas(cluster, topic)  # the registry's subjects; the topic's own chosen first
    again = _produce_again(request, conn, cluster, topic)
    initial = {**_guessed_formats(conn, topic), **schemas.initial, **(again.fields if again else {})}
    form = ProduceForm(request.POST or None, initial=initial)
    context: dict[str, Any] = {"cluster": cluster, "topic": topic, "partitions": infos, "form": form, "again": again}
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                context["produced"] = message_changes.produce(request, conn, cluster, topic, form)
                # The form stays as sent: the next message is often this one, a little changed.
                context["form"] = ProduceForm(initial={name: form.data.get(name) for name in form.fields})
            except KazamiError as exc:
                status = registry_status(exc)[0] if isinstance(exc, RegistryError) else status_of(exc)[0]
                form.add_error(message_changes.error_field(exc), str(exc))
        else:
            status = 400
    shown = context["form"]
    context["schemas"] = schemas
    context["chosen"] = schemas.chosen(shown.data if shown.is_bound else shown.initial)
    return render(request, "messages/produce.html", context, status=status)


def _produce_again(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str) -> Again | None:
    """``?from=P:O``: that record in the form, to send again (what masking hides from the user left out)."""
    spot = request.GET.get("from", "").strip()
    if not spot or request.method != "GET":
        return None
    try:
        partition, offset = (int(part) for part in spot.split(":", 1))
    except ValueError:
        raise InvalidInput(f"from must be a record's partition:offset, like 0:42, not {spot[:40]!r}.") from None
    found = messages.get_message(conn, topic, partition, offset).message
    shown = masker_for(request.user, cluster, topic).message(found)
    return as_form(found, masked_labels(shown))


def _guessed_formats(conn: ClusterConnection, topic: str) -> dict[str, str]:
    """The formats the topic's five newest records suggest (nothing when they cannot be read now)."""
    try:
        return guess_formats(merged.get_merged(conn, topic, limit=5).messages)
    except KazamiError:
        return {}


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
            message_changes.save_schema(request, cluster, topic, form.cleaned_data["part"], form.cleaned_data["schema"])
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


# ---------------------------------------------------------------- API


@require_GET
@api_view
def api_messages(request: HttpRequest, cluster: str, topic: str, partition: int) -> Any:
    conn = get_connection(cluster)
    page = _page_query(request).read(conn, topic, partition)
    masker = masker_for(request.user, cluster, topic)
    return {
        "topic": topic,
        "partition": partition,
        "offset": page.offset,
        "limit": page.limit,
        "start_offset": page.start_offset,
        "end_offset": page.end_offset,
        "last_stable_offset": page.last_stable_offset,
        "isolation": page.isolation,
        "notes": page.notes,
        "complete": page.complete,
        "next_offset": page.next_offset,
        "prev_offset": page.prev_offset,
        "messages": messages_json(cluster, topic, [masker.message(m) for m in page.messages]),
    }


@require_GET
@api_view
def api_topic_messages(request: HttpRequest, cluster: str, topic: str) -> Any:
    page = _merged_query(request).read(get_connection(cluster), topic)
    masker = masker_for(request.user, cluster, topic)
    return {
        "topic": topic,
        "order": page.order,
        "limit": page.limit,
        "isolation": page.isolation,
        "partitions": page.shown,
        "unreadable_partitions": {str(p): why for p, why in sorted(page.unreadable.items())},
        "notes": page.notes,
        "complete": page.complete,
        "next_cursor": page.next_cursor.text if page.next_cursor is not None else None,
        "prev_cursor": page.prev_cursor.text if page.prev_cursor is not None else None,
        "messages": messages_json(cluster, topic, [masker.message(m) for m in page.messages]),
    }


@require_GET
@api_view
def api_message(request: HttpRequest, cluster: str, topic: str, partition: int, offset: int) -> Any:
    found = messages.get_message(get_connection(cluster), topic, partition, offset)
    shown = masker_for(request.user, cluster, topic).message(found.message)
    download = request.GET.get("download")
    isolation = _isolation(request)
    if download is not None:
        as_json = decoding_for(cluster, topic) if request.GET.get("as") == "json" else None
        return raw_download(shown, download, isolation, found.last_stable_offset, as_json)
    hidden = found.hidden_reason(isolation)
    if hidden is not None and isolation == "read_committed":
        # Asked as a read_committed consumer would read it: what such a consumer is not given is not there.
        raise NotFound(hidden)
    return {
        **message_json(shown, decoding_for(cluster, topic)),
        "prev_offset": found.prev_offset,
        "next_offset": found.next_offset,
    }


@require_GET
@api_view
def api_find_key(request: HttpRequest, cluster: str, topic: str) -> Any:
    asked = _key_query(request, required=True)
    key = asked.key(cluster, topic)
    masked = masker_for(request.user, cluster, topic).message
    found = find_by_key(get_connection(cluster), topic, key, asked.partitioner, masked=masked)
    decoding = decoding_for(cluster, topic)
    return {
        "partitioner": found.partitioner,
        "partition": found.partition,
        "partitions": found.partitions,
        "placements": found.placements,
        "searched": found.searched,
        "unreadable": found.unreadable,
        "found_in": {str(p): names for p, names in found.found_in.items()},
        "reason": found.reason,
        "scanned": found.scanned,
        "stopped": found.stopped,
        "suggestion": _key_miss_suggestion(found, request),
        "messages": [message_json(m, decoding) for m in found.matches],
    }


def _key_miss_suggestion(found: KeySearch, request: HttpRequest) -> str | None:
    """What the page offers when a find-by-key on some partitions finds nothing (its "Search every partition"
    link), in a sentence with the query to ask; None when something was found or every partition was read."""
    if found.matches or found.partitioner == "all":
        return None
    where = " and ".join(str(p) for p in found.searched) or "none"
    by = (
        f"the {found.partitioner} partitioner puts"
        if found.partitioner in PARTITIONERS
        else f"the default partitioners ({', '.join(found.placements)}) put"
    )
    query = urlencode({**request.GET.dict(), "partitioner": "all"})
    return (
        f"No message with this key in partition {where}, where {by} it. A "
        "producer that chose the partition itself, or used another partitioner, may have written it elsewhere: "
        f"ask again with partitioner=all to read every partition: {request.path}?{query}"
    )


@require_GET
@_stops_when_client_leaves
@api_view
def api_search(request: HttpRequest, cluster: str, topic: str, cancel: threading.Event | None = None) -> Any:
    spec = search_spec_from(request.GET)
    conn = get_connection(cluster)
    masker = masker_for(request.user, cluster, topic)
    try:
        with search_slot(_searcher(request)):
            result = run_search(conn, cluster, topic, spec, masker=masker, cancel=cancel)
    except SearchesBusy as exc:
        return json_error(429, "too_many_searches", str(exc))
    return {
        "query": spec.query,
        "scanned": result.progress.scanned,
        "matched": result.progress.matched,
        "stopped": result.progress.stopped,
        "stop_reason": result.stop_reason,
        "budget": result.budget(),
        "unreadable_partitions": result.progress.unreadable,
        "cut": result.cut,
        "messages": [shown_json(s) for s in result.shown],  # decoded under auto by the search
    }


def _produce_defaults(body: dict[str, Any]) -> dict[str, str]:
    """The formats a produce body leaves out: a key or value without its format is text (UTF-8); no key, or a
    null one, is a null key; a null value without a format is a tombstone."""
    return {
        "key_format": "none" if body.get("key") is None else "text",
        "value_format": "null" if "value" in body and body["value"] is None else "text",
    }


@require_POST
@api_view
@registry_answers
@needs("message.produce")
def api_produce(request: HttpRequest, cluster: str, topic: str) -> Any:
    form = body_form(ProduceForm, request, defaults=_produce_defaults, prepare=ProduceForm.schema_body)
    done = message_changes.produce(request, get_connection(cluster), cluster, topic, form)
    return JsonResponse(
        {
            "topic": done.topic,
            "partition": done.partition,
            "offset": done.offset,
            "timestamp": done.timestamp,
            **message_changes.schema_answer(form.encoded),
        },
        status=201,
    )
