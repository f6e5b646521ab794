"""Consumer groups: list, detail with history, exports, Prometheus metrics, resets and deletions; the pages
and their JSON API twins."""

from __future__ import annotations

import io
import json
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, KazamiError, NotFound
from broker.groups import lag as groups
from broker.groups.changes import do_reset_offsets
from broker.replication.health import get_replication
from broker.topics.read import retention_ms_of
from console.access import needs, scoped, seen, token_allowed, visible
from console.changes import groups as group_changes
from console.config.clusters import get_configs, get_connection
from console.errors import api_view, page_view, status_of
from console.forms import DeleteGroupForm, DeleteOffsetsForm, ResetForm, reset_spec
from console.live.fragments import GROUP_CSV, group_context, groups_context
from console.params import choice_param, is_htmx, json_object
from console.present import spreadsheet
from console.present.lag import RANGES, group_forecast, history_series, verdicts
from console.present.listing import csv_file, wants_csv

# The lag report's formats; the URL's extension must be one of them (it names the download too).
EXPORT_FORMATS = ("csv", "json")
EXPORT_COLUMNS = [
    "group",
    "state",
    "topic",
    "partition",
    "committed_offset",
    "log_end_offset",
    "lag",
    "lag_ms",
    "member",
    "host",
    "client_id",
    "status",
]


@require_GET
@page_view
@scoped
def group_list(request: HttpRequest, cluster: str) -> HttpResponse:
    context = groups_context(cluster, request.GET, keep=seen(request, cluster, "group"))
    if wants_csv(request.GET) and context.get("listing") is not None:
        return csv_file(GROUP_CSV, context["listing"].everything, f"{cluster}-groups.csv")
    template = "groups/_table.html" if is_htmx(request) else "groups/list.html"
    return render(
        request, template, {**context, "live_interval": settings.KAZAMI_LIVE_INTERVAL}, status=context["status"]
    )


@require_GET
@page_view
def group_detail(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    window = choice_param(request, "range", tuple(RANGES), "1h")
    context = group_context(cluster, group)
    found = context.get("group")
    ahead = group_forecast(cluster, found, retention_ms_of(get_connection(cluster), found.topics)) if found else None
    history = history_series(cluster, group, window)
    catch_up_ms = int(ahead.catch_up_s * 1000) if ahead is not None and ahead.catch_up_s is not None else None
    if ahead is not None and catch_up_ms and found is not None:
        history["projection"] = [[found.fetched_at_ms, ahead.lag], [found.fetched_at_ms + catch_up_ms, 0]]
    context.update(
        forecast=ahead,
        catch_up_ms=catch_up_ms,
        window=window,
        ranges=list(RANGES),
        history=history,
        live_interval=settings.KAZAMI_LIVE_INTERVAL,
    )
    return render(request, "groups/detail.html", context, status=503 if context["error"] else 200)


def _chosen(cluster: str, request: HttpRequest) -> list[groups.GroupLag]:
    conn = get_connection(cluster)
    wanted = [g for g in request.GET.get("groups", "").split(",") if g]
    found = visible(request, cluster, "group", groups.get_groups(conn), lambda g: g.group_id)
    if wanted:
        known = {g.group_id for g in found}
        missing = [g for g in wanted if g not in known]
        if missing:
            raise InvalidInput(f"Unknown group(s): {', '.join(missing)}.")
        found = [g for g in found if g.group_id in wanted]
    return found


def _rows(cluster: str, chosen: list[groups.GroupLag]) -> list[dict[str, Any]]:
    judged = verdicts(cluster, chosen)
    return [
        {"group": g.group_id, "state": g.state, **p.as_dict(), "status": judged[g.group_id].status}
        for g in chosen
        for p in g.partitions
    ]


@require_GET
@page_view
@scoped
def export(request: HttpRequest, cluster: str, fmt: str) -> HttpResponse:
    """The lag report of every group (or ?groups=a,b) as CSV or JSON; any other extension is a 404."""
    if fmt not in EXPORT_FORMATS:
        raise NotFound(f"No lag report as {fmt[:40]!r}: {' or '.join(EXPORT_FORMATS)}.")
    chosen = _chosen(cluster, request)
    if fmt == "json":
        judged = verdicts(cluster, chosen)
        body = json.dumps(
            {
                "cluster": cluster,
                "groups": [
                    {
                        **g.as_dict(),
                        "status": judged[g.group_id].status,
                        "reason": judged[g.group_id].reason,
                        "partitions": [p.as_dict() for p in g.partitions],
                    }
                    for g in chosen
                ],
            },
            indent=2,
        )
        response = HttpResponse(body, content_type="application/json")
    else:
        buffer = io.StringIO()
        writer = spreadsheet.DictWriter(buffer, fieldnames=EXPORT_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        for row in _rows(cluster, chosen):
            writer.writerow({**row, "committed_offset": row["committed_offset"], "member": row["member"]})
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{cluster}-lag.{fmt}"'
    return response


def _label(value: object) -> str:
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


STATUS_VALUE = {"OK": 0, "WARN": 1, "ERR": 2}


@token_allowed
@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus text format: lag, lag in time and status per group and partition, for every cluster."""
    lines = [
        "# HELP kazami_consumer_lag Messages the group has not consumed yet (log end - committed).",
        "# TYPE kazami_consumer_lag gauge",
    ]
    time_lines = [
        "# HELP kazami_consumer_lag_seconds Age of the oldest message the group has not consumed.",
        "# TYPE kazami_consumer_lag_seconds gauge",
    ]
    status_lines = [
        "# HELP kazami_consumer_group_status Group status: 0 OK, 1 WARN, 2 ERR.",
        "# TYPE kazami_consumer_group_status gauge",
    ]
    up_lines = ["# HELP kazami_cluster_up Whether the cluster answered.", "# TYPE kazami_cluster_up gauge"]
    replication: list[tuple[str, str, int]] = []
    for cluster in get_configs():
        try:
            found = groups.get_groups(get_connection(cluster))
        except Exception:  # noqa: BLE001 - one cluster down must not hide the others
            up_lines.append(f'kazami_cluster_up{{cluster="{_label(cluster)}"}} 0')
            continue
        up_lines.append(f'kazami_cluster_up{{cluster="{_label(cluster)}"}} 1')
        replication += _replication_metrics(cluster)
        judged = verdicts(cluster, found)
        for g in found:
            base = f'cluster="{_label(cluster)}",group="{_label(g.group_id)}"'
            status_lines.append(
                f"kazami_consumer_group_status{{{base}}} {STATUS_VALUE.get(judged[g.group_id].status, 0)}"
            )
            for p in g.partitions:
                labels = f'{base},topic="{_label(p.topic)}",partition="{p.partition}"'
                if p.lag is not None:
                    lines.append(f"kazami_consumer_lag{{{labels}}} {p.lag}")
                if p.lag_ms is not None:
                    time_lines.append(f"kazami_consumer_lag_seconds{{{labels}}} {p.lag_ms / 1000:.3f}")
    body = "\n".join([*up_lines, *lines, *time_lines, *status_lines, *_replication_lines(replication)]) + "\n"
    return HttpResponse(body, content_type="text/plain; version=0.0.4; charset=utf-8")


# Replication, per topic and broker, for the alerting rules of console.views.alerts' Prometheus export.
REPLICATION_METRICS = {
    "kazami_partitions_offline": "Partitions of the topic without a leader.",
    "kazami_partitions_under_replicated": "Partitions of the topic missing an in-sync replica.",
    "kazami_partitions_under_min_isr": "Partitions of the topic with fewer in-sync replicas than min.insync.replicas.",
    "kazami_broker_up": "Whether the broker is registered (and not fenced): 1, or 0 when gone.",
}


def _replication_lines(samples: list[tuple[str, str, int]]) -> list[str]:
    """The replication metrics in text format, each family's HELP and TYPE before its samples ((name, labels,
    value) of every cluster)."""
    lines = []
    for name, text in REPLICATION_METRICS.items():
        lines += [f"# HELP {name} {text}", f"# TYPE {name} gauge"]
        lines += [f"{name}{{{labels}}} {value}" for metric, labels, value in samples if metric == name]
    return lines


def _replication_metrics(cluster: str) -> list[tuple[str, str, int]]:
    try:
        snapshot = get_replication(get_connection(cluster))
    except KazamiError:
        return []
    c = _label(cluster)
    counts: dict[str, list[int]] = {}
    for p in snapshot.partitions:
        row = counts.setdefault(p.topic, [0, 0, 0])
        row[0] += p.offline
        row[1] += p.under_replicated
        row[2] += p.under_min_isr
    samples = []
    for topic, values in sorted(counts.items()):
        labels = f'cluster="{c}",topic="{_label(topic)}"'
        for name, value in zip(list(REPLICATION_METRICS)[:3], values, strict=True):
            samples.append((name, labels, value))
    known = set(snapshot.brokers) | {r for p in snapshot.partitions for r in p.replicas}
    for b in sorted(known):
        samples.append(("kazami_broker_up", f'cluster="{c}",broker="{b}"', int(snapshot.brokers.get(b, False))))
    return samples


@require_http_methods(["GET", "POST"])
@page_view
@needs("group.reset_offsets")
def reset(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    """Reset offsets: the form; a dry run that shows current and new offsets; then the execution."""
    conn = get_connection(cluster)
    found = groups.get_group(conn, group, with_time=False)
    consumed = sorted({p.topic for p in found.partitions if p.committed is not None})
    form = ResetForm(request.POST or None, consumed=consumed)
    context: dict[str, Any] = {
        "cluster": cluster,
        "group": found,
        "form": form,
        "delete_form": DeleteGroupForm(group=group),
        "consumed": consumed,
    }
    status = 200
    if request.method == "POST" and form.is_valid():
        execute = request.POST.get("execute") == "1"
        chosen, spec = form.cleaned_data["topics"] or None, form.cleaned_data["spec"]
        try:
            if execute:
                result = group_changes.reset_offsets(
                    request, conn, cluster, group, chosen, spec, request.POST.get("value")
                )
            else:
                result = do_reset_offsets(conn, group, chosen, spec, dry_run=True)
        except KazamiError as exc:
            status = status_of(exc)[0]
            if status == 404:
                raise
            form.add_error(None, str(exc))
        else:
            if execute:
                messages.success(request, f"Offsets of {group} reset on {len(result.planned)} partitions.")
                return redirect("group-detail", cluster=cluster, group=group)
            context["result"] = result
            context["fields"] = [(k, v) for k, v in request.POST.lists() if k not in ("csrfmiddlewaretoken", "execute")]
    elif request.method == "POST":
        status = 400
    return render(request, "groups/reset.html", context, status=status)


@require_POST
@page_view
@needs("group.delete")
def delete_group(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = DeleteGroupForm(request.POST, group=group)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
        return redirect("group-reset", cluster=cluster, group=group)
    group_changes.delete_group(request, conn, cluster, group)
    messages.success(request, f"Group {group} deleted.")
    return redirect("group-list", cluster=cluster)


@require_POST
@page_view
@needs("group.delete_offsets")
def delete_offsets(request: HttpRequest, cluster: str, group: str) -> HttpResponse:
    conn = get_connection(cluster)
    form = DeleteOffsetsForm(request.POST)
    if not form.is_valid():
        raise InvalidInput("topic is required.")
    topic = form.cleaned_data["topic"]
    count = group_changes.delete_offsets(request, conn, cluster, group, topic)
    messages.success(
        request, f"Committed offsets of {group} on {form.cleaned_data['topic']} deleted ({count} partitions)."
    )
    return redirect("group-detail", cluster=cluster, group=group)


# ---------------------------------------------------------------- API


def _group_json(g: groups.GroupLag, verdict: Any) -> dict[str, Any]:
    return {**g.as_dict(), "status": verdict.status, "status_reason": verdict.reason}


@require_GET
@api_view
@scoped
def api_group_list(request: HttpRequest, cluster: str) -> Any:
    conn = get_connection(cluster)
    found = visible(request, cluster, "group", groups.get_groups(conn), lambda g: g.group_id)
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
def api_group_detail(request: HttpRequest, cluster: str, group: str) -> Any:
    conn = get_connection(cluster)
    found = groups.get_group(conn, group)
    verdict = verdicts(cluster, [found])[group]
    by_tp = {(v.topic, v.partition): v for v in verdict.partitions}
    ahead = group_forecast(cluster, found, retention_ms_of(conn, found.topics))
    return {
        **_group_json(found, verdict),
        "forecast": ahead.as_dict() if ahead is not None else None,
        "members": [m.as_dict() for m in found.members],
        "partitions": [
            {
                **p.as_dict(),
                "status": (judged := by_tp.get((p.topic, p.partition))) and judged.status,
                "status_reason": judged and judged.reason,
            }
            for p in found.partitions
        ],
    }


@require_POST
@api_view
@needs("group.reset_offsets")
def api_group_reset(request: HttpRequest, cluster: str, group: str) -> Any:
    body = json_object(request, forms=True)
    topics_wanted = body.get("topics") or None
    if topics_wanted is not None and not (
        isinstance(topics_wanted, list) and all(isinstance(t, str) for t in topics_wanted)
    ):
        raise InvalidInput("topics must be a list of topic names.")
    dry_run = body.get("dry_run", True)
    if not isinstance(dry_run, bool):
        raise InvalidInput("dry_run must be true or false.")
    value = body.get("value")
    spec = reset_spec(str(body.get("strategy", "")), None if value is None else str(value))
    conn = get_connection(cluster)
    if dry_run:
        result = do_reset_offsets(conn, group, topics_wanted, spec, dry_run=True)
    else:
        result = group_changes.reset_offsets(request, conn, cluster, group, topics_wanted, spec, value)
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
def api_group_delete(request: HttpRequest, cluster: str, group: str) -> Any:
    group_changes.delete_group(request, get_connection(cluster), cluster, group)
    return {"deleted": group}


@require_POST
@api_view
@needs("group.delete_offsets")
def api_group_delete_offsets(request: HttpRequest, cluster: str, group: str) -> Any:
    topic = json_object(request, forms=True).get("topic")
    if not isinstance(topic, str) or not topic:
        raise InvalidInput("topic is required.")
    count = group_changes.delete_offsets(request, get_connection(cluster), cluster, group, topic)
    return {"group_id": group, "topic": topic, "partitions": count}
