"""The JSON API; it mirrors the pages (see the README for the endpoints)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.cluster.overview import get_overview
from broker.cluster.quorum import get_quorum
from broker.decode import InputError, encode_input
from broker.errors import InvalidInput
from broker.groups import lag as groups
from broker.groups.changes import do_reset_offsets
from broker.groups.resets import parse_spec
from broker.messages import read as messages
from broker.messages.partitioners import CHOICES
from broker.messages.scan import find_by_key
from broker.replication.health import get_replication
from broker.topics import read as topics
from console import changes
from console.access import guard, needs, public
from console.config.clusters import get_configs, get_connection
from console.present.masking import masker_for
from console.errors import api_view
from console.forms import (
    AddPartitionsForm,
    ConfigForm,
    CreateTopicForm,
    DeleteRecordsForm,
    DeleteTopicForm,
    ProduceForm,
    form_errors,
)
from console.live.search import run_search, search_spec_from
from console.params import choice_param, int_param, json_object, time_param
from console.present.lag import verdicts
from console.present.message_json import message_json, raw_download, shown_json
from console.present.messages import decoding_for
from console.views.topics import records_plan


@require_GET
@api_view
def clusters(request: HttpRequest) -> list[dict[str, Any]]:
    return [
        {
            "name": c.name,
            "bootstrap_servers": list(c.bootstrap_servers),
            "read_only": c.read_only,
            "url": request.build_absolute_uri(reverse("api-cluster", kwargs={"cluster": c.name})),
        }
        for c in get_configs().values()
    ]


@require_GET
@api_view
def cluster(request: HttpRequest, cluster: str) -> dict[str, Any]:
    return get_overview(get_connection(cluster)).as_dict()


@require_GET
@api_view
def replication(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Leader, replicas, ISR and preferred leader of every partition, with flags, and per broker counts."""
    return get_replication(get_connection(cluster)).as_dict()


@require_GET
@api_view
def events(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """The replication timeline, newest first; ``?since=`` (ISO or epoch ms) for what came after, ``?kind=``
    (repeated, or separated by commas) and ``?topic=`` to keep only those."""
    from broker.replication.health import EVENT_KINDS
    from console.background import replication_watch

    get_connection(cluster)  # 404 for an unknown cluster
    since = time_param(request, "since")
    kinds = [k for raw in request.GET.getlist("kind") for k in raw.split(",") if k]
    unknown = sorted(set(kinds) - set(EVENT_KINDS))
    if unknown:
        raise InvalidInput(f"kind must be among {', '.join(EVENT_KINDS)}; not {', '.join(unknown)}.")
    found = replication_watch.events_of(
        cluster,
        since=datetime.fromtimestamp(since / 1000, tz=UTC) if since is not None else None,
        limit=int_param(request, "limit", 200, 1, 1000) or 200,
        kinds=kinds or None,
        topic=request.GET.get("topic") or None,
    )
    return {
        "events": [
            {
                "at": int(e.at.timestamp() * 1000),
                "kind": e.kind,
                "text": e.text,
                "topic": e.topic or None,
                "partition": e.partition,
                "broker": e.broker,
                "details": e.details,
            }
            for e in found
        ]
    }


@require_POST
@api_view
def broker_stop_start(request: HttpRequest, cluster: str, broker: int, action: str) -> JsonResponse:
    """Stop or start a broker of the embedded cluster (admins): 202, it happens in the background."""
    state = changes.broker_stop_start(request, cluster, broker, action)
    return JsonResponse({"broker": broker, "action": action, "state": state}, status=202)


@require_GET
@api_view
def quorum(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """The KRaft metadata quorum; 409 not_supported on a ZooKeeper-mode cluster."""
    return get_quorum(get_connection(cluster)).as_dict()


@public
@require_GET
@api_view
def health(request: HttpRequest) -> dict[str, Any]:
    """Liveness of the console itself (not of any cluster), and which worker process answered
    (console.serve)."""
    return {"status": "ok", "worker": int(os.environ.get("KAZAMI_WORKER", "0"))}


# ---------------------------------------------------------------- topics


def _body(request: HttpRequest) -> dict[str, Any]:
    """The JSON object of a POST (a form-encoded body is taken too); raises InvalidInput."""
    return json_object(request, forms=True)


def _form(form_class: Any, request: HttpRequest, defaults: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """A bound, valid form from the request body (over ``defaults``); invalid -> a 400 answer with every
    field's errors."""
    data = {**(defaults or {}), **_body(request)}
    # Lists and numbers in JSON arrive as they are; forms want text.
    data = {
        k: (
            _header_lines(v)
            if k == "headers" and isinstance(v, list)
            else "\n".join(f"{a}={b}" for a, b in v.items())
            if isinstance(v, dict)
            else ",".join(str(x) for x in v)
            if isinstance(v, list)
            else v
        )
        for k, v in data.items()
    }
    form = form_class(data, **kwargs)
    if not form.is_valid():
        raise FormInvalid(form)
    return form


def _header_lines(headers: list[Any]) -> str:
    """Headers given as a JSON list, in order ([name, value] pairs or {"name": ..., "value": ...}), as the
    form's ``name=value`` lines. Raises InvalidInput."""
    lines = []
    for number, item in enumerate(headers, start=1):
        pair = (item.get("name"), item.get("value")) if isinstance(item, dict) else item
        if not isinstance(pair, list | tuple) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise InvalidInput(f'headers: item {number} must be ["name", "value"] or {{"name": ..., "value": ...}}.')
        name, value = pair
        if "\n" in name or "\r" in name or "\n" in value or "\r" in value or "=" in name:
            raise InvalidInput(
                f"headers: item {number} has a line break (or a name with '='): send its value with "
                '"header_format": "base64".'
            )
        lines.append(f"{name}={value}")
    return "\n".join(lines)


class FormInvalid(InvalidInput):
    """A request body that fails its form; the API answer lists each field's errors under "fields"."""

    def __init__(self, form: Any) -> None:
        self.fields = form_errors(form)
        super().__init__("; ".join(f"{field}: {' '.join(errors)}" for field, errors in form_errors(form).items()))


@require_http_methods(["GET", "POST"])
@api_view
def topic_list(request: HttpRequest, cluster: str) -> Any:
    if request.method == "POST":
        guard(request, "topic.create", cluster, "")
        return _create_topic(request, cluster)
    rows = topics.get_topics(get_connection(cluster), include_internal=request.GET.get("internal") == "1")
    query = request.GET.get("q", "").lower()
    kept = [t for t in rows if query in t.name.lower()]
    return {"count": len(kept), "topics": [t.as_dict() for t in kept]}


@require_GET
@api_view
def topic_detail(request: HttpRequest, cluster: str, topic: str) -> Any:
    return topics.get_topic(get_connection(cluster), topic).as_dict()


def _create_topic(request: HttpRequest, cluster: str) -> JsonResponse:
    conn = get_connection(cluster)
    form = _form(CreateTopicForm, request)
    data = form.cleaned_data
    changes.create_topic(request, conn, cluster, form)
    return JsonResponse(topics.get_topic(conn, data["name"]).as_dict(), status=201)


@require_POST
@api_view
@needs("topic.delete")
def topic_delete(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    _form(DeleteTopicForm, request, topic=topic)
    changes.delete_topic(request, conn, cluster, topic)
    return {"deleted": topic}


@require_POST
@api_view
@needs("topic.add_partitions")
def topic_add_partitions(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    form = _form(AddPartitionsForm, request)
    changes.add_partitions(request, conn, cluster, topic, form.cleaned_data["total"])
    return {"topic": topic, "partitions": form.cleaned_data["total"]}


@require_POST
@api_view
@needs("topic.configs")
def topic_configs(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    form = _form(ConfigForm, request)
    changes.alter_configs(request, conn, cluster, topic, form.cleaned_data["set_configs"], form.cleaned_data["reset"])
    return {"topic": topic, "set": form.cleaned_data["set_configs"], "reset": form.cleaned_data["reset"]}


@require_POST
@api_view
@needs("topic.delete_records")
def topic_delete_records(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    form = _form(DeleteRecordsForm, request)
    plan = records_plan(conn, topic, form.cleaned_data["partition"], form.cleaned_data["before_offset"])
    low = changes.delete_records(request, conn, cluster, topic, plan)
    return {"topic": topic, "start_offsets": {str(p): o for p, o in sorted(low.items())}}


# ---------------------------------------------------------------- messages


@require_GET
@api_view
def messages_page(request: HttpRequest, cluster: str, topic: str, partition: int) -> Any:
    conn = get_connection(cluster)
    limit = messages.check_limit(int_param(request, "limit", messages.DEFAULT_PAGE))
    page = messages.get_page(
        conn,
        topic,
        partition,
        offset=int_param(request, "offset", None),
        limit=limit,
        timestamp_ms=time_param(request, "timestamp"),
        from_end=request.GET.get("last") == "1",
        isolation=messages.check_isolation(request.GET.get("isolation")),
    )
    decoding = decoding_for(cluster, topic)  # the topic's schemas, for each message's kind
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
        "messages": [message_json(masker.message(m), decoding) for m in page.messages],
    }


@require_GET
@api_view
def message(request: HttpRequest, cluster: str, topic: str, partition: int, offset: int) -> Any:
    found = messages.get_message(get_connection(cluster), topic, partition, offset)
    shown = masker_for(request.user, cluster, topic).message(found.message)
    download = request.GET.get("download")
    if download is not None:
        return raw_download(shown, download, messages.check_isolation(request.GET.get("isolation")))
    return {
        **message_json(shown, decoding_for(cluster, topic)),
        "prev_offset": found.prev_offset,
        "next_offset": found.next_offset,
    }


@require_GET
@api_view
def find_key(request: HttpRequest, cluster: str, topic: str) -> Any:
    raw = request.GET.get("key")
    if raw is None or raw == "":
        raise InvalidInput("key is required.")
    key_format = choice_param(request, "key_format", ("text", "hex", "base64"), "text")
    try:
        key = encode_input(raw, key_format)
    except InputError as exc:
        raise InvalidInput(f"key: {exc}") from None
    partitioner = choice_param(request, "partitioner", CHOICES, "auto")
    masked = masker_for(request.user, cluster, topic).message
    found = find_by_key(get_connection(cluster), topic, key, partitioner, masked=masked)
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
        "messages": [message_json(m, decoding) for m in found.matches],
    }


@require_GET
@api_view
def search(request: HttpRequest, cluster: str, topic: str) -> Any:
    spec = search_spec_from(request.GET)
    result = run_search(get_connection(cluster), cluster, topic, spec, masker=masker_for(request.user, cluster, topic))
    return {
        "query": spec.query,
        "scanned": result.progress.scanned,
        "matched": result.progress.matched,
        "stopped": result.progress.stopped,
        "unreadable_partitions": result.progress.unreadable,
        "cut": result.cut,
        "messages": [shown_json(s) for s in result.shown],  # decoded under auto by the search
    }


@require_POST
@api_view
@needs("message.produce")
def produce(request: HttpRequest, cluster: str, topic: str) -> Any:
    # A body without formats means text, and no key at all means a null key.
    form = _form(ProduceForm, request, defaults={"value_format": "text", "key_format": "none"})
    done = changes.produce(request, get_connection(cluster), cluster, topic, form)
    return JsonResponse(
        {"topic": done.topic, "partition": done.partition, "offset": done.offset, "timestamp": done.timestamp},
        status=201,
    )


# ---------------------------------------------------------------- consumer groups


def _group_json(g: groups.GroupLag, verdict: Any) -> dict[str, Any]:
    return {**g.as_dict(), "status": verdict.status, "status_reason": verdict.reason}


@require_GET
@api_view
def group_list(request: HttpRequest, cluster: str) -> Any:
    conn = get_connection(cluster)
    found = groups.get_groups(conn)
    judged = verdicts(cluster, found)
    if request.GET.get("hide_empty") == "1":
        found = [g for g in found if not g.empty]
    return {
        "count": len(found),
        "groups": [_group_json(g, judged[g.group_id]) for g in found],
        # Brokers that did not answer lately: the groups they coordinate are missing from this list.
        "unanswered_brokers": sorted(conn.silent_brokers()),
    }


@require_GET
@api_view
def group_detail(request: HttpRequest, cluster: str, group: str) -> Any:
    found = groups.get_group(get_connection(cluster), group)
    verdict = verdicts(cluster, [found])[group]
    by_tp = {(v.topic, v.partition): v for v in verdict.partitions}
    return {
        **_group_json(found, verdict),
        "members": [m.as_dict() for m in found.members],
        "partitions": [
            {**p.as_dict(), "status": by_tp[(p.topic, p.partition)].status if (p.topic, p.partition) in by_tp else None}
            for p in found.partitions
        ],
    }


@require_POST
@api_view
@needs("group.reset_offsets")
def group_reset(request: HttpRequest, cluster: str, group: str) -> Any:
    body = _body(request)
    topics_wanted = body.get("topics") or None
    if topics_wanted is not None and not (
        isinstance(topics_wanted, list) and all(isinstance(t, str) for t in topics_wanted)
    ):
        raise InvalidInput("topics must be a list of topic names.")
    dry_run = body.get("dry_run", True)
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false.")
    value = body.get("value")
    spec = parse_spec(str(body.get("strategy", "")), None if value is None else str(value), int(time.time() * 1000))
    conn = get_connection(cluster)
    if dry_run:
        result = do_reset_offsets(conn, group, topics_wanted, spec, dry_run=True)
    else:
        result = changes.reset_offsets(request, conn, cluster, group, topics_wanted, spec, value)
    return {
        "group_id": group,
        "dry_run": not result.executed,
        "strategy": spec.strategy,
        "partitions": [
            {
                "topic": r.topic,
                "partition": r.partition,
                "current_offset": r.current,
                "new_offset": r.new,
                "log_start_offset": r.log_start,
                "log_end_offset": r.log_end,
                "note": r.note,
            }
            for r in result.planned
        ],
    }


@require_POST
@api_view
@needs("group.delete")
def group_delete(request: HttpRequest, cluster: str, group: str) -> Any:
    changes.delete_group(request, get_connection(cluster), cluster, group)
    return {"deleted": group}


@require_POST
@api_view
@needs("group.delete_offsets")
def group_delete_offsets(request: HttpRequest, cluster: str, group: str) -> Any:
    topic = _body(request).get("topic")
    if not isinstance(topic, str) or not topic:
        raise InvalidInput("topic is required.")
    count = changes.delete_offsets(request, get_connection(cluster), cluster, group, topic)
    return {"group_id": group, "topic": topic, "partitions": count}
