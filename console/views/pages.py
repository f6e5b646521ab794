"""HTML pages. Each has a URL that can be pasted; websockets only keep it fresh."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from console.clusters import get_configs, get_connection
from console.errors import page_view
from console.fragments import overview_context, quorum_context, replication_context


@page_view
def index(request: HttpRequest) -> HttpResponse:
    configs = get_configs()
    if len(configs) == 1:
        return redirect("cluster-overview", cluster=next(iter(configs)))
    return render(request, "clusters.html", {"clusters": list(configs.values())})


@page_view
def cluster_overview(request: HttpRequest, cluster: str) -> HttpResponse:
    get_connection(cluster)  # 404 for an unknown name before anything else
    context = overview_context(cluster)
    context["live_interval"] = settings.KAZAMI_LIVE_INTERVAL
    return render(request, "overview/page.html", context, status=503 if context["error"] else 200)


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
    return render(request, "replication/page.html", context, status=503 if context["error"] else 200)
