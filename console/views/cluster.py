"""The clusters and each cluster as a whole: the list of clusters, the overview, the KRaft quorum, replication
with its timeline of events, stopping and starting the embedded cluster's brokers; each page with its JSON API
twin, and the console's own health check. Each page has a URL that can be pasted; websockets only keep it
fresh."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from broker.cluster.overview import get_overview
from broker.cluster.quorum import get_quorum
from broker.errors import InvalidInput
from broker.replication.health import EVENT_KINDS, get_replication
from broker.times import as_datetime
from console.access import on_cluster, public, scoped, sees_all
from console.changes import cluster as cluster_changes
from console.changes import embedded
from console.config.clusters import get_configs, get_connection
from console.errors import api_view, page_view
from console.live.fragments import overview_context, quorum_context, replication_context
from console.params import int_param, time_param
from console.present import throughput

# ---------------------------------------------------------------- pages


@page_view
@scoped
def index(request: HttpRequest) -> HttpResponse:
    configs = {name: c for name, c in get_configs().items() if on_cluster(request.user, name)}
    if len(configs) == 1:
        name = next(iter(configs))
        # Someone whose roles there are scoped lands on the topics they may see; the overview is the whole cluster's.
        return redirect("cluster-overview" if sees_all(request.user, name) else "topic-list", cluster=name)
    return render(request, "clusters.html", {"clusters": list(configs.values())})


@page_view
def cluster_overview(request: HttpRequest, cluster: str) -> HttpResponse:
    get_connection(cluster)  # 404 for an unknown name before anything else
    context = overview_context(cluster)
    context["live_interval"] = settings.KAZAMI_LIVE_INTERVAL
    context.update(_throughput_context(cluster), throughput_history=throughput.history(cluster))
    return render(request, "overview/page.html", context, status=503 if context["error"] else 200)


def _throughput_context(cluster: str) -> dict[str, Any]:
    return {
        "cluster": cluster,
        "throughput": throughput.cluster_throughput(cluster),
        "interval": settings.KAZAMI_LAG_SAMPLE_INTERVAL,
    }


@require_GET
@page_view
def cluster_throughput(request: HttpRequest, cluster: str) -> HttpResponse:
    """The overview's throughput numbers, fetched again every sampling interval."""
    get_connection(cluster)  # 404 for an unknown name
    return render(request, "overview/_throughput.html", _throughput_context(cluster))


@page_view
def quorum(request: HttpRequest, cluster: str) -> HttpResponse:
    """The KRaft metadata quorum: leader, epoch, voters and observers with their lag; on a ZooKeeper-mode
    cluster, a page that says it has none."""
    context = quorum_context(cluster)
    context["live_interval"] = settings.KAZAMI_LIVE_INTERVAL
    return render(request, "quorum/page.html", context, status=503 if context["error"] else 200)


@page_view
def replication(request: HttpRequest, cluster: str) -> HttpResponse:
    """Per broker what it leads and follows, the partitions short of replicas (``?all=1``: every
    partition), and the timeline of changes; live."""
    context = replication_context(cluster, request.GET.get("all") == "1")
    context["live_interval"] = settings.KAZAMI_LIVE_INTERVAL
    context["embedded"] = embedded.data_folder(cluster) is not None
    return render(request, "replication/page.html", context, status=503 if context["error"] else 200)


@require_POST
@page_view
def broker_stop_start(request: HttpRequest, cluster: str) -> HttpResponse:
    """Stop or start a broker of the embedded cluster (admins); back to the replication page, which shows it."""
    try:
        broker = int(request.POST.get("broker", ""))
    except ValueError:
        raise InvalidInput("Give the broker's number.") from None
    state = cluster_changes.broker_stop_start(request, cluster, broker, request.POST.get("action", ""))
    messages.info(request, f"Broker {broker} is {state}.")
    return redirect("replication", cluster=cluster)


# ---------------------------------------------------------------- API


@require_GET
@api_view
@scoped
def api_clusters(request: HttpRequest) -> list[dict[str, Any]]:
    return [
        {
            "name": c.name,
            "bootstrap_servers": list(c.bootstrap_servers),
            "read_only": c.read_only,
            "url": request.build_absolute_uri(reverse("api-cluster", kwargs={"cluster": c.name})),
        }
        for c in get_configs().values()
        if on_cluster(request.user, c.name)
    ]


@require_GET
@api_view
def api_cluster(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """The overview, with ``throughput``: the latest measured rates (None until two looks were made)."""
    return {
        **get_overview(get_connection(cluster)).as_dict(),
        "throughput": throughput.cluster_throughput(cluster, None),
    }


@require_GET
@api_view
def api_quorum(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """The KRaft metadata quorum; 409 not_supported on a ZooKeeper-mode cluster."""
    return get_quorum(get_connection(cluster)).as_dict()


@require_GET
@api_view
def api_replication(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Leader, replicas, ISR and preferred leader of every partition, with flags, and per broker counts."""
    return get_replication(get_connection(cluster)).as_dict()


@require_GET
@api_view
def api_events(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """The replication timeline, newest first; ``?since=`` (ISO or epoch ms) for what came after, ``?kind=``
    (repeated, or separated by commas) and ``?topic=`` to keep only those."""
    from console.background import replication_watch

    get_connection(cluster)  # 404 for an unknown cluster
    since = time_param(request, "since")
    kinds = [k for raw in request.GET.getlist("kind") for k in raw.split(",") if k]
    unknown = sorted(set(kinds) - set(EVENT_KINDS))
    if unknown:
        raise InvalidInput(f"kind must be among {', '.join(EVENT_KINDS)}; not {', '.join(unknown)}.")
    found = replication_watch.events_of(
        cluster,
        since=as_datetime(since, "since") if since is not None else None,
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
def api_broker_stop_start(request: HttpRequest, cluster: str, broker: int, action: str) -> JsonResponse:
    """Stop or start a broker of the embedded cluster (admins): 202, it happens in the background."""
    state = cluster_changes.broker_stop_start(request, cluster, broker, action)
    return JsonResponse({"broker": broker, "action": action, "state": state}, status=202)


@public
@require_GET
@api_view
def health(request: HttpRequest) -> dict[str, Any]:
    """Liveness of the console itself (not of any cluster), and which worker process answered
    (console.serve)."""
    return {"status": "ok", "worker": int(os.environ.get("KAZAMI_WORKER", "0"))}
