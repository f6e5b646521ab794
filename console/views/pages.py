"""HTML pages. Each has a URL that can be pasted; websockets only keep it fresh."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from broker.zookeeper import zookeeper_serving
from console.clusters import get_configs, get_connection
from console.errors import page_view
from console.fragments import overview_context, quorum_context


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
def zookeeper(request: HttpRequest, cluster: str) -> HttpResponse:
    """ZooKeeper as the cluster uses it: its address and whether it serves; on KRaft, that there is none."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {"cluster": cluster, "mode": conn.mode(), "error": None}
    if context["mode"] is None:
        context["error"] = f"Cluster {cluster!r} does not answer, so whether it runs on ZooKeeper is not known yet."
    elif context["mode"] == "zookeeper":
        address = conn.zookeeper_connect
        context["address"] = address
        context["serving"] = zookeeper_serving(address, conn.config.timeout) if address else None
        context["configured"] = bool(conn.config.zookeeper_connect)
    else:
        context["ignored"] = conn.config.zookeeper_connect
    return render(request, "zookeeper/page.html", context, status=503 if context["error"] else 200)
