"""HTML pages. Each has a URL that can be pasted; websockets only keep it fresh."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from broker.errors import InvalidInput
from console import changes
from console.changes import embedded
from console.config.clusters import get_configs, get_connection
from console.errors import page_view
from console.live.fragments import overview_context, quorum_context, replication_context


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
    state = changes.broker_stop_start(request, cluster, broker, request.POST.get("action", ""))
    messages.info(request, f"Broker {broker} is {state}.")
    return redirect("replication", cluster=cluster)
