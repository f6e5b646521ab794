"""Topics: the list, a topic's page and the forms that change topics, and their JSON API twins."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import AlreadyExists, ClusterUnavailable, KafkaRefused, KazamiError
from broker.groups.lag import get_groups
from broker.topics import read as topics
from broker.topics.read import TopicSummary
from console.access import guard, needs, scoped, visible
from console.changes import topics as topic_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.forms import (
    AddPartitionsForm,
    ConfigForm,
    CreateTopicForm,
    DeleteRecordsForm,
    DeleteTopicForm,
    body_form,
)
from console.params import choice_param, is_htmx
from console.present import throughput
from console.present.lag import TopicConsumer, TopicReaders, readers_by_topic, topic_consumers
from console.present.listing import csv_download, make_listing, wants_csv
from console.present.schema_choices import topic_schemas

COLUMNS: dict[str, Any] = {
    "name": lambda t: t.name,
    "partitions": lambda t: t.partitions,
    "replication": lambda t: t.replication_factor,
    "messages": lambda t: t.messages,
    "size": lambda t: t.size,
    "under_replicated": lambda t: t.under_replicated,
    "offline": lambda t: t.offline,
    "under_min_isr": lambda t: t.under_min_isr,
    "consumers": lambda t: t.groups,
    "lag": lambda t: t.lag,
}


LABELS = {
    "name": "Topic",
    "partitions": "Partitions",
    "replication": "Replicas",
    "messages": "Messages",
    "size": "Size",
    "under_replicated": "Under-replicated",
    "offline": "Offline",
    "under_min_isr": "Under min ISR",
    "consumers": "Groups",
    "lag": "Lag",
}


class ListedTopic:
    """A row of the topics list: the topic's summary, with its consuming groups and their total lag from the
    lag sampler's latest sample (None: not known)."""

    def __init__(self, summary: TopicSummary, readers: TopicReaders | None, sampled: bool) -> None:
        self.summary = summary
        self.groups = (readers.groups if readers else 0) if sampled else None
        self.lag = readers.lag if readers else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.summary, name)


def _name(topic: TopicSummary) -> str:
    return topic.name


def _internal(request: HttpRequest) -> bool:
    """``internal=1``: the list shows Kafka's internal topics too (__consumer_offsets, ...)."""
    return request.GET.get("internal") == "1"


# ---------------------------------------------------------------- pages


@require_GET
@page_view
@scoped
def topic_list(request: HttpRequest, cluster: str) -> HttpResponse:
    internal = _internal(request)
    found: list[TopicSummary] = visible(
        request, cluster, "topic", topics.get_topics(get_connection(cluster), include_internal=internal), _name
    )
    readers, sampled_at = readers_by_topic(cluster)
    rows = [ListedTopic(t, readers.get(t.name), sampled_at is not None) for t in found]
    listing = make_listing(
        request.GET,
        rows,
        COLUMNS,
        search=lambda t: t.name,
        default_sort="name",
        labels=LABELS,
        extra={"internal": "1" if internal else ""},
        exportable=True,
    )
    if wants_csv(request.GET):
        return csv_download(listing, f"{cluster}-topics.csv")
    context = {
        "cluster": cluster,
        "listing": listing,
        "internal": internal,
        "all_count": len(rows),
        "sampled_at": sampled_at,
    }
    template = "topics/_table.html" if is_htmx(request) else "topics/list.html"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
@page_view
@scoped
@needs("topic.create")
def topic_new(request: HttpRequest, cluster: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = CreateTopicForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid() and not confirmed(request):
            data = form.cleaned_data
            lines = [
                f"Name: {data['name']}",
                f"Partitions: {data['partitions']}",
                f"Replication factor: {data['replication_factor']}",
            ]
            lines += [f"{k} = {v}" for k, v in form.topic_configs().items()] or [
                "Every other setting: the broker's default"
            ]
            return confirm_page(
                request, cluster, f"Create topic {data['name']}?", lines, reverse("topic-list", args=[cluster])
            )
        if form.is_valid():
            data = form.cleaned_data
            try:
                topic_changes.create_topic(request, conn, cluster, form)
            except (AlreadyExists, KafkaRefused) as exc:
                form.add_error(None, str(exc))
                status = status_of(exc)[0]
            else:
                messages.success(request, f"Topic {data['name']} created.")
                return redirect("topic-detail", cluster=cluster, topic=data["name"])
        else:
            status = 400
    return render(request, "topics/new.html", {"cluster": cluster, "form": form}, status=status)


def _detail(request: HttpRequest, cluster: str, topic: str, status: int = 200, **forms: Any) -> HttpResponse:
    detail = topics.get_topic(get_connection(cluster), topic)
    context = {
        "cluster": cluster,
        "topic": detail,
        "non_default": sum(1 for c in detail.configs if not c.is_default),
        "partitions_form": forms.get("partitions_form")
        or AddPartitionsForm(initial={"total": len(detail.partitions) + 1}),
        "config_form": forms.get("config_form") or ConfigForm(),
        "records_form": forms.get("records_form") or DeleteRecordsForm(),
        "delete_form": forms.get("delete_form") or DeleteTopicForm(topic=topic),
        "open_form": forms.get("open_form"),
        # The subjects its records use in the cluster's schema registry (none configured: one line saying how)
        "schemas": topic_schemas(cluster, topic),
        "throughput": throughput.topic_throughput(cluster, topic),
        "throughput_history": throughput.history(cluster, "topic", topic),
        "interval": settings.KAZAMI_LAG_SAMPLE_INTERVAL,
    }
    return render(request, "topics/detail.html", context, status=status)


@require_GET
@page_view
def topic_detail(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    return _detail(request, cluster, topic)


def _consumers(cluster: str, topic: str) -> tuple[list[TopicConsumer] | None, str | None]:
    """The groups reading ``topic`` (from the one batched listing of every group the groups page makes, shared
    while fresh), or None and why not."""
    try:
        return topic_consumers(cluster, get_groups(get_connection(cluster)), topic), None
    except ClusterUnavailable as exc:
        return None, str(exc)


@require_GET
@page_view
def topic_consumers_part(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """The topic page's consumers, drawn after the page (listing every group may take a moment)."""
    topics.get_topic_partitions(get_connection(cluster), topic)  # 404 for an unknown topic
    consumers, error = _consumers(cluster, topic)
    if consumers is not None:  # only the groups the user may see (its grants)
        consumers = visible(request, cluster, "group", consumers, lambda c: c.group_id)
    context = {"cluster": cluster, "consumers": consumers, "error": error}
    return render(request, "topics/_consumers.html", context)


def confirmed(request: HttpRequest) -> bool:
    return request.POST.get("confirmed") == "1"


def confirm_page(
    request: HttpRequest, cluster: str, title: str, lines: list[str], cancel: str, danger: bool = False
) -> HttpResponse:
    """The page that says what a change will do and asks to go ahead: the same POST again, confirmed."""
    fields = [(k, v) for k, v in request.POST.items() if k not in ("csrfmiddlewaretoken", "confirmed")]
    return render(
        request,
        "topics/confirm.html",
        {"cluster": cluster, "title": title, "lines": lines, "fields": fields, "cancel": cancel, "danger": danger},
    )


def _change(
    request: HttpRequest,
    cluster: str,
    topic: str,
    form: Any,
    name: str,
    action: Any,
    done: str,
    summary: Any,
) -> HttpResponse:
    """Validate ``form``; show ``summary(form.cleaned_data)`` for confirmation; then run
    ``action(form.cleaned_data)`` (one of console.changes.topics); a refusal goes back onto the form."""
    if not form.is_valid():
        return _detail(request, cluster, topic, status=400, **{name: form, "open_form": name})
    if not confirmed(request):
        title, lines, danger = summary(form.cleaned_data)
        return confirm_page(request, cluster, title, lines, reverse("topic-detail", args=[cluster, topic]), danger)
    try:
        action(form.cleaned_data)
    except KazamiError as exc:
        status = status_of(exc)[0]
        if status in (404, 503):
            raise
        form.add_error(None, str(exc))
        return _detail(request, cluster, topic, status=status, **{name: form, "open_form": name})
    messages.success(request, done)
    return redirect("topic-detail", cluster=cluster, topic=topic)


@require_POST
@page_view
@needs("topic.add_partitions")
def topic_add_partitions(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = AddPartitionsForm(request.POST)

    def summary(d: dict[str, Any]) -> tuple[str, list[str], bool]:
        now = len(topics.get_topic_partitions(conn, topic))
        return (
            f"Add partitions to {topic}?",
            [
                f"{now} → {d['total']} partitions.",
                "Messages with a key go to other partitions from now on: the default partitioner takes the key's "
                "hash modulo the number of partitions. Partitions cannot be removed later.",
            ],
            False,
        )

    return _change(
        request,
        cluster,
        topic,
        form,
        "partitions_form",
        lambda d: topic_changes.add_partitions(request, conn, cluster, topic, d["total"]),
        f"Topic {topic} now has {request.POST.get('total')} partitions.",
        summary,
    )


@require_POST
@page_view
@needs("topic.configs")
def topic_configs(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = ConfigForm(request.POST)
    return _change(
        request,
        cluster,
        topic,
        form,
        "config_form",
        lambda d: topic_changes.alter_configs(request, conn, cluster, topic, d["set_configs"], d["reset"]),
        "Configuration changed.",
        lambda d: (
            f"Change the configuration of {topic}?",
            [f"Set {k} = {v}" for k, v in d["set_configs"].items()]
            + [f"Reset {k} to the broker's default" for k in d["reset"]],
            False,
        ),
    )


@require_POST
@page_view
@needs("topic.delete_records")
def topic_delete_records(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = DeleteRecordsForm(request.POST)

    def delete(data: dict[str, Any]) -> None:
        plan = records_plan(conn, topic, data["partition"], data["before_offset"])
        topic_changes.delete_records(request, conn, cluster, topic, plan)

    def summary(data: dict[str, Any]) -> tuple[str, list[str], bool]:
        plan = records_plan(conn, topic, data["partition"], data["before_offset"])
        starts = {p.partition: p.start_offset or 0 for p in topics.get_topic_partitions(conn, topic)}
        lines = []
        for p, before in sorted(plan.items()):
            count = max(0, before - starts[p])
            lines.append(
                f"Partition {p}: delete offsets {starts[p]} to {before - 1} ({count:,} messages)"
                if count
                else f"Partition {p}: nothing below offset {before}"
            )
        return f"Delete records of {topic}?", [*lines, "Deleted records cannot be brought back."], True

    return _change(
        request,
        cluster,
        topic,
        form,
        "records_form",
        delete,
        "Records deleted.",
        summary,
    )


def records_plan(conn: Any, topic: str, partition: int | None, before: int) -> dict[int, int]:
    """{partition: offset} for deleting records: one partition, or every partition (each clamped to its end)."""
    parts = topics.get_topic_partitions(conn, topic)
    if partition is not None:
        topics.get_partition(conn, topic, partition)  # 404 for an unknown partition
        return {partition: before}
    return {p.partition: min(before, p.end_offset or 0) for p in parts if p.available}


@require_POST
@page_view
@needs("topic.delete")
def topic_delete(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = DeleteTopicForm(request.POST, topic=topic)
    if not form.is_valid():
        return _detail(request, cluster, topic, status=400, delete_form=form, open_form="delete_form")
    topic_changes.delete_topic(request, conn, cluster, topic)
    messages.success(request, f"Topic {topic} deleted.")
    return redirect("topic-list", cluster=cluster)


# ---------------------------------------------------------------- API


@require_http_methods(["GET", "POST"])
@api_view
@scoped
def api_topic_list(request: HttpRequest, cluster: str) -> Any:
    if request.method == "POST":
        guard(request, "topic.create", cluster, "")
        return _api_create_topic(request, cluster)
    rows = visible(
        request,
        cluster,
        "topic",
        topics.get_topics(get_connection(cluster), include_internal=_internal(request)),
        _name,
    )
    query = request.GET.get("q", "").lower()
    kept = [t for t in rows if query in t.name.lower()]
    readers, sampled_at = readers_by_topic(cluster)

    def listed(t: TopicSummary) -> dict[str, Any]:
        found = readers.get(t.name)
        known = sampled_at is not None
        return {
            **t.as_dict(),
            "consumer_groups": (found.groups if found else 0) if known else None,
            "lag": found.lag if found else None,
        }

    return {
        "count": len(kept),
        "topics": [listed(t) for t in kept],
        "lag_sampled_at": sampled_at.isoformat() if sampled_at else None,
    }


@require_GET
@api_view
def api_topic_detail(request: HttpRequest, cluster: str, topic: str) -> Any:
    detail = topics.get_topic(get_connection(cluster), topic).as_dict()
    # ?consumers=0: a script that wants the partitions only does not pay for the listing of every group.
    consumers: list[TopicConsumer] | None
    error: str | None
    if choice_param(request, "consumers", ("1", "0"), "1") == "0":
        consumers, error = None, "not asked for (consumers=0)"
    else:
        consumers, error = _consumers(cluster, topic)
    return {
        **detail,
        "consumers": [c.as_dict() for c in consumers] if consumers is not None else None,
        "consumers_error": error,
        "throughput": throughput.topic_throughput(cluster, topic),
    }


def _api_create_topic(request: HttpRequest, cluster: str) -> JsonResponse:
    conn = get_connection(cluster)
    form = body_form(CreateTopicForm, request)
    data = form.cleaned_data
    topic_changes.create_topic(request, conn, cluster, form)
    return JsonResponse(topics.get_topic(conn, data["name"]).as_dict(), status=201)


@require_POST
@api_view
@needs("topic.delete")
def api_topic_delete(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    body_form(DeleteTopicForm, request, topic=topic)
    topic_changes.delete_topic(request, conn, cluster, topic)
    return {"deleted": topic}


@require_POST
@api_view
@needs("topic.add_partitions")
def api_topic_add_partitions(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    form = body_form(AddPartitionsForm, request)
    topic_changes.add_partitions(request, conn, cluster, topic, form.cleaned_data["total"])
    return {"topic": topic, "partitions": form.cleaned_data["total"]}


@require_POST
@api_view
@needs("topic.configs")
def api_topic_configs(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    form = body_form(ConfigForm, request)
    topic_changes.alter_configs(
        request, conn, cluster, topic, form.cleaned_data["set_configs"], form.cleaned_data["reset"]
    )
    return {"topic": topic, "set": form.cleaned_data["set_configs"], "reset": form.cleaned_data["reset"]}


@require_POST
@api_view
@needs("topic.delete_records")
def api_topic_delete_records(request: HttpRequest, cluster: str, topic: str) -> Any:
    conn = get_connection(cluster)
    form = body_form(DeleteRecordsForm, request)
    plan = records_plan(conn, topic, form.cleaned_data["partition"], form.cleaned_data["before_offset"])
    low = topic_changes.delete_records(request, conn, cluster, topic, plan)
    return {"topic": topic, "start_offsets": {str(p): o for p, o in sorted(low.items())}}
