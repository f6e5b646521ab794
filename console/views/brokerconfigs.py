"""Broker configurations: every broker side by side, one broker with its sources and edit forms, and the JSON
API; changes per broker or as the cluster default (domain in broker/cluster/broker_configs.py)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from broker.cluster import broker_configs
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError
from console.changes import cluster as cluster_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.params import is_htmx, json_object


def _only(request: HttpRequest) -> str | None:
    only = request.GET.get("only") or None
    if only is not None and only not in broker_configs.FILTERS:
        raise InvalidInput(f"only must be one of {', '.join(broker_configs.FILTERS)}.")
    return only


def _change_of(body: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """``{"set": {name: value}, "delete": [names]}`` checked for shape."""
    chosen, delete = body.get("set") or {}, body.get("delete") or []
    if not isinstance(chosen, dict) or not isinstance(delete, list):
        raise InvalidInput('The body must be {"set": {"name": "value"}, "delete": ["name"]}.')
    chosen = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in chosen.items()}
    broker_configs.check_change(chosen, delete)
    return chosen, delete


# ---------------------------------------------------------------- API


@require_http_methods(["GET", "POST"])
@api_view
def api_cluster(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """GET: every broker's configs side by side (``?only=dynamic|differs``, ``?q=`` a part of the name);
    POST ``{"set": {...}, "delete": [...]}``: change the cluster default (admins)."""
    conn = get_connection(cluster)
    if request.method == "POST":
        chosen, delete = _change_of(json_object(request))
        cluster_changes.alter_broker_configs(request, conn, cluster, None, chosen, delete)
    answer = broker_configs.get_broker_configs(conn)
    only, query = _only(request), request.GET.get("q", "")
    shown = {r.name for r in answer.rows(only, query)}
    result = answer.as_dict()
    result["configs"] = [c for c in result["configs"] if c["name"] in shown]
    return result


@require_http_methods(["GET", "POST"])
@api_view
def api_broker(request: HttpRequest, cluster: str, broker: int) -> dict[str, Any]:
    """GET: one broker's configs (``configs``: name, value, source, read_only, sensitive, synonyms); POST
    ``{"set": {...}, "delete": [...]}``: change them for this broker (admins). A broker that does not answer:
    503 with the reason."""
    conn = get_connection(cluster)
    if request.method == "POST":
        chosen, delete = _change_of(json_object(request))
        cluster_changes.alter_broker_configs(request, conn, cluster, broker, chosen, delete)
    [found] = broker_configs.get_broker_configs(conn, [broker]).brokers
    if found.error is not None:
        raise ClusterUnavailable(f"Broker {broker}: {found.error}.")
    return {"broker": broker, "configs": [e.as_dict() for _, e in sorted(found.configs.items())]}


# ---------------------------------------------------------------- pages


@require_GET
@page_view
def cluster_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """Every broker's configs side by side, rows that differ marked; a filter box, ``?only=dynamic|differs``."""
    conn = get_connection(cluster)
    only, query = _only(request), request.GET.get("q", "")
    context: dict[str, Any] = {"cluster": cluster, "only": only or "", "query": query, "error": None, "broker": None}
    try:
        answer = broker_configs.get_broker_configs(conn)
    except ClusterUnavailable as exc:
        context.update(error=str(exc), brokers=[], rows=[], total=0)
    else:
        rows = answer.rows(only, query)
        table = [(r, [r.entries.get(b.broker) for b in answer.brokers]) for r in rows]
        context.update(brokers=answer.brokers, rows=rows, table=table, total=len(answer.rows()))
    template = "brokerconfigs/_compare.html" if is_htmx(request) else "brokerconfigs/cluster.html"
    return render(request, template, context, status=503 if context["error"] else 200)


@require_http_methods(["GET", "POST"])
@page_view
def broker_page(request: HttpRequest, cluster: str, broker: int) -> HttpResponse:
    """One broker's configs with their sources and marks; admins change a dynamic one for this broker or as
    the cluster default (POST ``name``, ``value``, ``action`` set|delete, ``scope`` broker|default)."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {
        "cluster": cluster,
        "broker": broker,
        "only": _only(request) or "",
        "query": request.GET.get("q", ""),
        "error": None,
        "refused": None,
    }
    status = 200
    if request.method == "POST":
        name, value = request.POST.get("name", "").strip(), request.POST.get("value", "")
        action, scope = request.POST.get("action", ""), request.POST.get("scope", "broker")
        target = None if scope == "default" else broker
        try:
            if action not in ("set", "delete") or scope not in ("broker", "default"):
                raise InvalidInput("Unknown action.")
            chosen, delete = ({name: value}, []) if action == "set" else ({}, [name])
            cluster_changes.alter_broker_configs(request, conn, cluster, target, chosen, delete)
        except KazamiError as exc:
            status, _ = status_of(exc)
            context["refused"] = {"name": name, "value": value, "scope": scope, "message": str(exc)}
        else:
            where = "as the cluster default" if target is None else f"for broker {broker}"
            done = f"{name} set to {value!r}" if action == "set" else f"{name} deleted"
            messages.success(request, f"{done} {where}.")
            return redirect(request.get_full_path())  # the same filter
    try:
        [found] = broker_configs.get_broker_configs(conn, [broker]).brokers
    except ClusterUnavailable as exc:
        context["error"] = str(exc)
        status = 503
    else:
        context["found"] = found
        if found.error is not None:
            context["error"] = f"Broker {broker} {found.error}."
            status = 503
        else:
            entries = sorted(found.configs.values(), key=lambda e: e.name)
            needle = context["query"].lower()
            context["entries"] = [
                e
                for e in entries
                if (not needle or needle in e.name.lower()) and (context["only"] != "dynamic" or e.dynamic)
            ]
            context["editable"] = [e.name for e in entries if not e.read_only]
            context["total"] = len(entries)
    htmx = request.method == "GET" and is_htmx(request) and not context["error"]
    template = "brokerconfigs/_broker_configs.html" if htmx else "brokerconfigs/broker.html"
    return render(request, template, context, status=status)
