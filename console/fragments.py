"""The partials a page, an htmx swap and a websocket push share, with the context each needs.

A fragment never raises for a cluster that does not answer: it draws the error in place,
so a live page turns red when brokers go away and back when they return.
"""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from broker.cluster import get_overview
from broker.errors import ClusterUnavailable
from console.clusters import get_connection


def overview_context(cluster: str) -> dict[str, Any]:
    """Context of ``overview/_overview.html``; raises UnknownCluster only."""
    conn = get_connection(cluster)
    try:
        return {"cluster": cluster, "overview": get_overview(conn), "error": None}
    except ClusterUnavailable as exc:
        return {"cluster": cluster, "overview": None, "error": str(exc)}


def render_overview(cluster: str) -> str:
    return render_to_string("overview/_overview.html", overview_context(cluster))


# What a websocket may subscribe to: view name -> renderer of its fragment.
LIVE_FRAGMENTS = {
    "overview": render_overview,
}
