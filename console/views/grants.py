"""Scoped roles on the Users page and in the API (admins): give a user or a team a role on a cluster, or on its
topics, groups, connectors or subjects matching a glob; take one away. The changes are console.changes.grants'."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods, require_POST

from broker.errors import InvalidInput, NotFound
from console import access
from console.changes import grants as grant_changes
from console.errors import api_view, page_view
from console.forms import GrantForm
from console.models import Grant
from console.params import json_object
from console.views.access import users_page


@require_POST
@page_view
@access.needs("user.grant")
def grant_new(request: HttpRequest) -> HttpResponse:
    form = GrantForm(request.POST)
    if not form.is_valid():
        return users_page(request, grant_form=form, status=400)
    data = form.cleaned_data
    try:
        grant_changes.add(request, data["user"].strip(), data["team"].strip(), form.spec)
    except (InvalidInput, NotFound) as exc:  # said beside the form, which keeps what was typed
        form.add_error(None, str(exc))
        return users_page(request, grant_form=form, status=400)
    holder = f"user {data['user'].strip()}" if data["user"].strip() else f"team {data['team'].strip()}"
    messages.success(request, f"{holder}: {form.spec} given.")
    return redirect("users")


@require_POST
@page_view
@access.needs("user.revoke")
def grant_delete(request: HttpRequest, grant: int) -> HttpResponse:
    grant_changes.remove(request, grant)
    messages.success(request, "Grant taken away.")
    return redirect("users")


@require_http_methods(["GET", "POST"])
@api_view
@access.needs("user.grant")
def api_grants(request: HttpRequest) -> Any:
    """GET: every grant (``?user=``, ``?team=`` to narrow). POST ``{"user" or "team", "grant":
    "CLUSTER:RESOURCE:GLOB:ROLE"}``: 201 with the grant."""
    if request.method == "POST":
        body = json_object(request)
        text = body.get("grant")
        if not isinstance(text, str):
            raise InvalidInput('"grant" is CLUSTER:RESOURCE:GLOB:ROLE, e.g. "local:topic:orders.*:operator".')
        found = grant_changes.add(request, str(body.get("user") or ""), str(body.get("team") or ""), text)
        return JsonResponse(grant_changes.grant_json(found), status=201)
    listed = Grant.objects.select_related("user")
    if request.GET.get("user"):
        listed = listed.filter(user__username=request.GET["user"])
    if request.GET.get("team"):
        listed = listed.filter(team=request.GET["team"])
    return {"grants": [grant_changes.grant_json(g) for g in listed]}


@require_http_methods(["DELETE"])
@api_view
@access.needs("user.revoke")
def api_grant(request: HttpRequest, grant: int) -> Any:
    grant_changes.remove(request, grant)
    return {"deleted": grant}
