"""The Connect pages' partials and what each needs, shared by the page, an htmx swap and the live push.

A fragment never raises for a worker that does not answer: it draws the note in place, so a live page
says so while the worker is away and recovers when it is back. The two live views (``connectors`` and
``connector``) are in console.live.fragments.LIVE_FRAGMENTS with the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.template.loader import render_to_string

from broker.connect import connectors as connect
from broker.connect.connectors import ConnectClient
from broker.errors import ClusterUnavailable, KazamiError, NotFound
from console.access import grants
from console.config.clusters import get_configs
from console.config.connect import connect_config, connect_configs


def client_for(cluster: str, name: str) -> ConnectClient:
    """The client of Connect cluster ``name`` beside ``cluster``; raises UnknownCluster, NotFound."""
    if cluster not in get_configs():
        from console.config.clusters import get_connection

        get_connection(cluster)  # raises UnknownCluster
    return ConnectClient(connect_config(cluster, name))


def clients_of(cluster: str) -> list[ConnectClient]:
    return [ConnectClient(c) for c in connect_configs(cluster).values()]


def connectors_context(
    cluster: str, params: Mapping[str, str] | None = None, keep: Callable[[str], bool] | None = None
) -> dict[str, Any]:
    """Context of ``connect/_connectors.html``: every connector of every Connect cluster of ``cluster`` (those
    ``keep`` keeps, by name; one request each, at once), and the Connect clusters that did not answer."""
    state = (params or {}).get("state", "")
    clients = clients_of(cluster)
    found = connect.list_all(clients)
    every = [c for c in found.connectors if keep is None or keep(c.name)]
    connectors = [c for c in every if not state or c.state == state or (state == "FAILED" and c.troubled)]
    return {
        "cluster": cluster,
        "connectors": connectors,
        "total": len(every),
        "unanswered": found.unanswered,
        "connect_names": found.asked,
        "configured": bool(clients),
        "state_filter": state,
        "all_down": bool(clients) and len(found.unanswered) == len(clients),
    }


def render_connectors(cluster: str, params: Mapping[str, str]) -> str:
    keep = grants.kept_in(params, cluster, "connector")
    return render_to_string("connect/_connectors.html", connectors_context(cluster, params, keep))


def status_context(cluster: str, connect_name: str, name: str) -> dict[str, Any]:
    """Context of ``connect/_status.html``: the connector's state and tasks, or why they are not known."""
    context: dict[str, Any] = {"cluster": cluster, "connect": connect_name, "name": name, "connector": None}
    context["error"] = None
    context["gone"] = False
    try:
        context["connector"] = connect.get_status(client_for(cluster, connect_name), name)
    except NotFound as exc:
        context["gone"] = True
        context["error"] = str(exc)
    except (ClusterUnavailable, KazamiError) as exc:
        context["error"] = str(exc)
    return context


def render_status(cluster: str, params: Mapping[str, str]) -> str:
    return render_to_string(
        "connect/_status.html", status_context(cluster, params.get("connect", ""), params.get("name", ""))
    )
