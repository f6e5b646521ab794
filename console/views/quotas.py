"""Client quotas: the page and its JSON API (domain in broker/security/quotas.py)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from broker.errors import InvalidInput, KazamiError
from broker.security import quotas
from console.access import guard
from console.changes import quotas as quota_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.params import json_object

# The page's entity fields: form field -> entity type.
_FIELDS = {"user": quotas.USER, "client_id": quotas.CLIENT_ID, "ip": quotas.IP}


def _api_change(body: dict[str, Any]) -> tuple[quotas.Entity, dict[str, Any], list[str]]:
    """``{"entity": {...}, "set": {key: value}, "remove": [keys]}``; ``"key"`` with ``"value"`` (or with
    ``"remove": true``) is the short form for one quota."""
    entity = quotas.parse_entity(body.get("entity") or {})
    set_values, remove = body.get("set") or {}, body.get("remove") or []
    if "key" in body:
        key = str(body["key"])
        if remove is True:
            set_values, remove = {}, [key]
        else:
            set_values, remove = {key: body.get("value")}, []
    if not isinstance(set_values, dict) or not isinstance(remove, list):
        raise InvalidInput('"set" must be an object of quota values and "remove" a list of quota keys.')
    return entity, set_values, [str(k) for k in remove]


def entity_fields(entity: quotas.Entity) -> list[tuple[str, str]]:
    """The page form's fields naming ``entity`` (the inverse of form_entity)."""
    field = {kind: name for name, kind in _FIELDS.items()}
    return [(f"{field[t]}_default", "1") if n is None else (field[t], n) for t, n in entity if t in field]


def form_entity(data: QueryDict) -> quotas.Entity:
    """The entity of the page's form: a name, or the default box ticked, for each of user, client id, IP."""
    raw: dict[str, str | None] = {}
    for field, kind in _FIELDS.items():
        name = data.get(field, "").strip()
        if data.get(f"{field}_default"):
            if name:
                raise InvalidInput(f"Give a {kind} name or tick its default, not both.")
            raw[kind] = None
        elif name:
            raw[kind] = name
    if not raw:
        raise InvalidInput("Give a user, a client id or an IP (a name, or its default).")
    return quotas.parse_entity(raw)


# ---------------------------------------------------------------- API


@require_http_methods(["GET", "POST"])
@api_view
def api_quotas(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """GET: every entity with its quotas. POST (admins): set or remove quotas of one entity."""
    conn = get_connection(cluster)
    if request.method == "POST":
        guard(request, "quotas.change", cluster, "client quotas")  # 403 before the body is read
        return _api_post(request, cluster)
    return {"entities": [q.as_dict() for q in quotas.list_quotas(conn)], "keys": _keys()}


def _api_post(request: HttpRequest, cluster: str) -> dict[str, Any]:
    entity, set_values, remove = _api_change(json_object(request))
    changed = quota_changes.alter_quotas(request, get_connection(cluster), cluster, entity, set_values, remove)
    return {"entity": dict(entity), "label": changed.label, "set": dict(changed.items()), "removed": remove}


def _keys() -> dict[str, list[str]]:
    return {"user": list(quotas.CLIENT_KEYS), "client-id": list(quotas.CLIENT_KEYS), "ip": list(quotas.IP_KEYS)}


# ---------------------------------------------------------------- page


@require_http_methods(["GET", "POST"])
@page_view
def page(request: HttpRequest, cluster: str) -> HttpResponse:
    """Every entity with its quotas; admins set one (user, client id, their pair or an IP, or a default) and
    remove them. A GET with the form's fields fills the form in (each row's "edit" link)."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {"cluster": cluster, "chosen": request.GET, "keys": quotas.KEYS, "error": None}
    status = 200
    if request.method == "POST":
        try:
            entity = form_entity(request.POST)
            key = request.POST.get("key", "")
            if request.POST.get("action") == "remove":
                quota_changes.alter_quotas(request, conn, cluster, entity, {}, [key])
                messages.success(request, f"{key} removed from {quotas.describe_entity(entity)}.")
            else:
                value = request.POST.get("value", "")
                quota_changes.alter_quotas(request, conn, cluster, entity, {key: value}, [])
                messages.success(request, f"{key} of {quotas.describe_entity(entity)} set to {value}.")
            return redirect("quotas", cluster=cluster)
        except KazamiError as exc:
            status, _ = status_of(exc)
            context["error"] = str(exc)
            if request.POST.get("action") != "remove":
                context["chosen"] = request.POST  # the form as it was sent, to correct
    rows: list[dict[str, Any]] | None = None
    try:
        rows = [
            {"quota": q, "fields": fields, "query": urlencode(fields)}
            for q in quotas.list_quotas(conn)
            for fields in [entity_fields(q.entity)]
        ]
    except KazamiError as exc:
        if context["error"] is None:
            status, _ = status_of(exc)
        context["error"] = context["error"] or str(exc)
    context["rows"] = rows
    return render(request, "quotas/page.html", context, status=status)
