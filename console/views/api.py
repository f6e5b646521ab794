"""The JSON API; it mirrors the pages (see the README for the endpoints)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import reverse
from django.views.decorators.http import require_GET

from broker.cluster import get_overview
from console.clusters import get_configs, get_connection
from console.errors import api_view


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
def health(request: HttpRequest) -> dict[str, Any]:
    """Liveness of the console itself (not of any cluster)."""
    return {"status": "ok"}
