"""The partials a page, an htmx swap and a websocket push share, with the context each needs.

A fragment never raises for a cluster that does not answer: it draws the error in place,
so a live page turns red when brokers go away and back when they return.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from django.template.loader import render_to_string

from analytics.reports import JOB_LABELS
from broker.cluster.overview import get_overview
from broker.cluster.quorum import NotKRaft, get_quorum
from broker.errors import ClusterUnavailable, KazamiError
from broker.groups import lag as groups
from broker.replication.health import get_replication
from console.access import grants
from console.background import jobs
from console.background.job_spec import job_reads
from console.config.clusters import get_connection
from console.live.connect import render_connectors, render_status
from console.models import AnalyticsJob
from console.present.lag import verdicts
from console.present.listing import make_listing
from console.present.messages import ShownMessage


def overview_context(cluster: str) -> dict[str, Any]:
    """Context of ``overview/_overview.html``; raises UnknownCluster only."""
    conn = get_connection(cluster)
    try:
        return {"cluster": cluster, "overview": get_overview(conn), "error": None}
    except ClusterUnavailable as exc:
        return {"cluster": cluster, "overview": None, "error": str(exc)}


def render_overview(cluster: str, params: Mapping[str, str]) -> str:
    return render_to_string("overview/_overview.html", overview_context(cluster))


def quorum_context(cluster: str) -> dict[str, Any]:
    """Context of ``quorum/_quorum.html``: the KRaft metadata quorum, or why there is none (a ZooKeeper-mode
    cluster, with its controller from the overview). Raises UnknownCluster only."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {"cluster": cluster, "quorum": None, "overview": None, "error": None, "not_kraft": None}
    try:
        context["quorum"] = get_quorum(conn)
    except NotKRaft as exc:
        context["not_kraft"] = str(exc)
        with contextlib.suppress(ClusterUnavailable):  # the page still says why there is no quorum
            context["overview"] = get_overview(conn)
    except ClusterUnavailable as exc:
        context["error"] = str(exc)
    return context


def render_quorum(cluster: str, params: Mapping[str, str]) -> str:
    return render_to_string("quorum/_quorum.html", quorum_context(cluster))


def replication_context(cluster: str, show_all: bool = False) -> dict[str, Any]:
    """Context of ``replication/_replication.html``: the snapshot and the event timeline. When no process
    runs the replication watch (it holds the sampler's lease), the page's own refresh records the events.
    Raises UnknownCluster only."""
    from console.background import replication_watch
    from console.background.lag_sampler import acquire_lease

    conn = get_connection(cluster)
    context: dict[str, Any] = {"cluster": cluster, "replication": None, "error": None, "show_all": show_all}
    try:
        if acquire_lease():
            replication_watch.observe(cluster)
        replication = get_replication(conn)
    except ClusterUnavailable as exc:
        context["error"] = str(exc)
    else:
        shown = replication.partitions if show_all else replication.troubled
        context.update(
            replication=replication,
            counts=replication.counts(),
            loads=replication.loads(),
            partitions=shown[:MAX_PARTITION_ROWS],
            partitions_cut=max(0, len(shown) - MAX_PARTITION_ROWS),
        )
    context["events"] = replication_watch.events_of(cluster, limit=100)
    return context


MAX_PARTITION_ROWS = 500


def render_replication(cluster: str, params: Mapping[str, str]) -> str:
    return render_to_string("replication/_replication.html", replication_context(cluster, params.get("all") == "1"))


GROUP_COLUMNS: dict[str, Any] = {
    "group": lambda r: r["group"].group_id,
    "state": lambda r: r["group"].state,
    "protocol": lambda r: r["group"].protocol,
    "members": lambda r: len(r["group"].members),
    "topics": lambda r: len(r["group"].topics),
    "lag": lambda r: r["group"].total_lag,
    "lag_ms": lambda r: r["group"].max_lag_ms,
    "status": lambda r: {"ERR": 2, "WARN": 1}.get(r["verdict"].status, 0),
}
# The groups list as CSV: what its table shows, a column each (the status as its word, not its sort rank).
GROUP_CSV: dict[str, Any] = {
    **GROUP_COLUMNS,
    "topics": lambda r: " ".join(sorted(r["group"].topics)),
    "status": lambda r: r["verdict"].status,
}
GROUP_LABELS = {
    "group": "Group",
    "state": "State",
    "protocol": "Assignor",
    "members": "Members",
    "topics": "Topics",
    "lag": "Lag",
    "lag_ms": "Lag in time",
    "status": "Status",
}


# The total lag last pushed for each group of a cluster, to show how it moved since (per console process).
_last_totals: dict[str, dict[str, int]] = {}


def groups_context(
    cluster: str, params: Mapping[str, str], track: bool = False, keep: Callable[[str], bool] | None = None
) -> dict[str, Any]:
    """Context of ``groups/_table.html``: the listing of groups with their status (those ``keep`` keeps, by id);
    with ``track``, each row carries how its total lag moved since the previous tracked render. Raises
    UnknownCluster, InvalidInput (bad list parameters)."""
    conn = get_connection(cluster)
    hide_empty = params.get("hide_empty") == "1"
    try:
        found = groups.get_groups(conn)
    except ClusterUnavailable as exc:
        return {
            "cluster": cluster,
            "error": str(exc),
            "listing": None,
            "status": 503,
            "hide_empty": hide_empty,
            "query_string": "",
        }
    if keep is not None:
        found = [g for g in found if keep(g.group_id)]
    judged = verdicts(cluster, found)
    previous = _last_totals.get(cluster, {}) if track else {}
    rows: list[dict[str, Any]] = [
        {
            "group": g,
            "verdict": judged[g.group_id],
            # Not while part of its lag is unknown: a partial total is no movement.
            "moved": g.total_lag - previous[g.group_id] if g.group_id in previous and not g.unknown_lag else None,
        }
        for g in found
        if not (hide_empty and g.empty)
    ]
    if track:
        _last_totals[cluster] = {g.group_id: g.total_lag for g in found if not g.unknown_lag}
    listing = make_listing(
        params,
        rows,
        GROUP_COLUMNS,
        search=lambda r: r["group"].group_id,
        default_sort="group",
        labels=GROUP_LABELS,
        extra={"hide_empty": "1" if hide_empty else ""},
        exportable=True,  # the pager links to ?format=csv (views.groups.group_list writes it, with GROUP_CSV)
    )
    return {
        "cluster": cluster,
        "error": None,
        "listing": listing,
        "status": 200,
        "hide_empty": hide_empty,
        "all_count": len(found),
        "query_string": listing.link()[1:],
        # Brokers that did not answer lately: the groups they coordinate are not listed (broker.groups.lag).
        "silent_brokers": sorted(conn.silent_brokers()),
    }


def render_groups(cluster: str, params: Mapping[str, str]) -> str:
    keep = grants.kept_in(params, cluster, "group")
    return render_to_string("groups/_table.html", groups_context(cluster, params, track=keep is None, keep=keep))


# The last numbers pushed for each group, to show how they moved since (per console process).
_last_pushed: dict[tuple[str, str], dict[tuple[str, int], tuple[int | None, int | None]]] = {}


def group_context(cluster: str, group_id: str, track: bool = False) -> dict[str, Any]:
    """Context of ``groups/_group.html``; raises GroupNotFound, UnknownCluster. With ``track``, each row
    carries how its committed and log-end offsets moved since the previous tracked render."""
    conn = get_connection(cluster)
    try:
        found = groups.get_group(conn, group_id)
    except ClusterUnavailable as exc:
        return {"cluster": cluster, "group_id": group_id, "group": None, "error": str(exc)}
    verdict = verdicts(cluster, [found])[group_id]
    by_tp = {(v.topic, v.partition): v for v in verdict.partitions}
    previous = _last_pushed.get((cluster, group_id), {}) if track else {}
    rows = []
    for p in found.partitions:
        before = previous.get((p.topic, p.partition))
        moved = None
        if before is not None:
            moved = {
                "committed": (p.committed - before[0]) if p.committed is not None and before[0] is not None else None,
                "log_end": (p.log_end - before[1]) if p.log_end is not None and before[1] is not None else None,
            }
        rows.append({"p": p, "verdict": by_tp.get((p.topic, p.partition)), "moved": moved})
    if track:
        _last_pushed[(cluster, group_id)] = {(p.topic, p.partition): (p.committed, p.log_end) for p in found.partitions}
    return {"cluster": cluster, "group_id": group_id, "group": found, "verdict": verdict, "rows": rows, "error": None}


def render_group(cluster: str, params: Mapping[str, str]) -> str:
    return render_to_string("groups/_group.html", group_context(cluster, params.get("group", ""), track=True))


def message_rows(shown: list[ShownMessage], target: str, how: str, show_partition: bool = True) -> str:
    """Message rows pushed over a websocket: the ``<tbody id=target>`` they go into, swapped ``how`` (htmx's
    out-of-band swap: innerHTML, beforeend, afterbegin). A transaction marker is drawn as the pages draw it."""
    rows = "".join(message_row(s, show_partition) for s in shown)
    return f'<tbody id="{target}" hx-swap-oob="{how}">{rows}</tbody>'


def message_row(shown: ShownMessage, show_partition: bool = True, oob: bool = False) -> str:
    """One row of a list of messages, or of a transaction marker, as the pages draw it; with ``oob``, swapped in
    place of the row of the same message already shown (htmx's out-of-band swap by its ``id``)."""
    template = "messages/_marker_row.html" if shown.message.control else "messages/_message_row.html"
    return render_to_string(template, {"s": shown, "show_partition": show_partition, "oob": oob})


def jobs_context(cluster: str, keep: Callable[[AnalyticsJob], bool] | None = None) -> dict[str, Any]:
    """Context of ``analytics/_jobs.html``: the cluster's latest jobs (queued and running ones first; those
    ``keep`` keeps)."""
    jobs.dispatch()
    recent = list(AnalyticsJob.objects.filter(cluster=cluster).order_by("-created_at", "-id")[:50])
    if keep is not None:
        recent = [j for j in recent if keep(j)]
    return {"cluster": cluster, "jobs": recent, "labels": JOB_LABELS}


def render_jobs(cluster: str, params: Mapping[str, str]) -> str:
    scope = grants.scope_in(params)
    keep = None if scope is None else (lambda j: scope.sees_every(cluster, *job_reads(j)))
    return render_to_string("analytics/_jobs.html", jobs_context(cluster, keep))


def job_status_context(job: AnalyticsJob) -> dict[str, Any]:
    return {"job": job, "labels": JOB_LABELS}


def render_job_status(cluster: str, params: Mapping[str, str]) -> str:
    try:
        job = jobs.get_job(int(params.get("id", "0")))
    except (ValueError, KazamiError):
        job = None
    if job is None or job.cluster != cluster:
        return '<div id="job-status"><p class="empty">No such job.</p></div>'
    if not job.finished:
        jobs.dispatch()
        job.refresh_from_db()
    return render_to_string("analytics/_job_status.html", job_status_context(job))


def live_context(cluster: str) -> dict[str, Any]:
    """Context of ``analytics/_live.html``: the live query's state and its figures (restarting its process
    when it should run and is gone)."""
    import time

    from analytics.present import live_summary
    from console.background.live_analytics import supervise
    from console.models import LiveFigure

    live = supervise(cluster)
    now_ms = int(time.time() * 1000)
    since = now_ms - now_ms % 60_000 - 59 * 60_000
    rows = list(
        LiveFigure.objects.filter(cluster=cluster, minute_ms__gte=since).values_list(
            "minute_ms", "metric", "key", "count", "users"
        )
    )
    return {"cluster": cluster, "live": live, "figures": live_summary(rows, now_ms), "has_figures": bool(rows)}


def render_live(cluster: str, params: Mapping[str, str]) -> str:
    return render_to_string("analytics/_live.html", live_context(cluster))


# What a websocket may subscribe to: view name -> renderer of its fragment (cluster, query parameters).
LIVE_FRAGMENTS = {
    "overview": render_overview,
    "quorum": render_quorum,
    "replication": render_replication,
    "groups": render_groups,
    "group": render_group,
    "jobs": render_jobs,
    "job": render_job_status,
    "analytics-live": render_live,
    "connectors": render_connectors,
    "connector": render_status,
}
