"""ACLs and SCRAM users: the pages and their JSON API (domain in broker/security/acls.py and
broker/security/scram.py, audited changes in console/changes/acls.py)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, KazamiError, NotFound
from broker.security import acls, authorizer, scram
from console.access import guard
from console.changes import acls as acl_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.params import is_htmx, json_object

MAX_IMPORT_BYTES = 1024 * 1024


def _choices() -> dict[str, Any]:
    return {
        "resource_types": acls.RESOURCE_TYPES,
        "operations": acls.ALL_OPERATIONS,
        "operations_for": acls.OPERATIONS,
        "pattern_types": ("LITERAL", "PREFIXED", "MATCH"),
        "permissions": acls.PERMISSIONS,
        "helpers": acls.HELPERS,
    }


def _bindings_from_form(data: QueryDict) -> list[acls.AclBinding]:
    """The previewed bindings a form carries back (one hidden ``binding`` field each, as JSON)."""
    found = []
    for raw in data.getlist("binding"):
        try:
            fields = json.loads(raw)
        except ValueError:
            raise InvalidInput("A binding of the form is not valid JSON.") from None
        if not isinstance(fields, dict):
            raise InvalidInput("A binding of the form is not an object.")
        found.append(acls.parse_binding(fields))
    return found


# ---------------------------------------------------------------- API


@require_http_methods(["GET", "POST", "DELETE"])
@api_view
def api_acls(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """GET: the bindings the query's filter matches. POST (admins): create ``{"acls": [...]}`` or a helper's
    ``{"helper": "consumer", "principal": ..., "topic": ..., "group": ...}``; ``"dry_run": true`` only shows
    them. DELETE (admins): delete what the query's filter matches (``dry_run=1``: only show it)."""
    conn = get_connection(cluster)
    if request.method == "POST":
        guard(request, "acls.create", cluster, "ACLs")  # 403 before the body is read
        body = json_object(request)
        if body.get("helper"):
            bindings = acls.helper_bindings(str(body["helper"]), body)
        else:
            raw = body.get("acls")
            if not isinstance(raw, list) or not raw:
                raise InvalidInput('Give "acls": a list of bindings, or a "helper" with its fields.')
            bindings = [acls.parse_binding(b if isinstance(b, dict) else {}) for b in raw]
        if body.get("dry_run"):
            return {"would_create": [b.as_dict() for b in bindings]}
        created = acl_changes.create_acls(request, conn, cluster, bindings)
        return {"created": [b.as_dict() for b in created]}
    acl_filter = acls.parse_filter(request.GET)
    if request.method == "DELETE":
        guard(request, "acls.delete", cluster, "ACLs")
        if acl_filter.is_everything:
            raise InvalidInput("Narrow the filter: one that matches every ACL would delete them all.")
        matched = acls.list_acls(conn, acl_filter)
        if request.GET.get("dry_run") in ("1", "true"):
            return {"would_delete": [b.as_dict() for b in matched], "filter": acl_filter.as_dict()}
        if not matched:
            return {"deleted": [], "filter": acl_filter.as_dict()}
        deleted = acl_changes.delete_acls(request, conn, cluster, matched)
        return {"deleted": [b.as_dict() for b in deleted], "filter": acl_filter.as_dict()}
    return {"acls": [b.as_dict() for b in acls.list_acls(conn, acl_filter)], "filter": acl_filter.as_dict()}


@require_GET
@api_view
def api_principal(request: HttpRequest, cluster: str, principal: str) -> dict[str, Any]:
    """What ``principal`` may do, decided as the authorizer would (``host``: the client's address)."""
    who = acls.parse_principal(principal)
    host = acls.check_host(request.GET.get("host")) if request.GET.get("host") else None
    conn = get_connection(cluster)
    bindings = acls.list_acls(conn)
    settings = authorizer.get_authorizer_settings(conn)
    rights = authorizer.principal_rights(bindings, who, host if host != acls.WILDCARD else None, settings)
    return {
        "principal": who,
        "super_user": who in settings.super_users,
        "authorizer": {
            "super_users": list(settings.super_users),
            "allow_everyone_if_no_acl_found": settings.allow_if_no_acl,
            "hidden": list(settings.hidden),  # settings Kafka does not show (super.users: always)
            "known": settings.known,
        },
        "acls": [b.as_dict() for b in bindings if b.principal in (who, acls.WILDCARD_PRINCIPAL)],
        "rights": [r.as_dict() for r in rights],
    }


@require_http_methods(["GET", "POST"])
@api_view
def api_users(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """GET: the SCRAM users (mechanisms and iterations). POST (admins): ``{"name", "password", "mechanisms",
    "iterations"}`` creates one."""
    conn = get_connection(cluster)
    if request.method == "POST":
        guard(request, "scram.create", cluster, "SCRAM users")
        body = json_object(request)
        user = _set_password(request, cluster, body, create=True)
        return {"created": user.as_dict()}
    return {"users": [u.as_dict() for u in scram.list_users(conn)]}


@require_http_methods(["GET", "POST", "DELETE"])
@api_view
def api_user(request: HttpRequest, cluster: str, name: str) -> dict[str, Any]:
    """GET: one user. POST (admins): ``{"password", "mechanisms", "iterations"}`` changes its password.
    DELETE (admins): deletes its credentials."""
    conn = get_connection(cluster)
    name = scram.check_name(name)
    if request.method == "POST":
        guard(request, "scram.password", cluster, f"User:{name}")
        body = {**json_object(request), "name": name}
        return {"changed": _set_password(request, cluster, body, create=False).as_dict()}
    if request.method == "DELETE":
        guard(request, "scram.delete", cluster, f"User:{name}")
        return {"deleted": name, "mechanisms": acl_changes.delete_scram_user(request, conn, cluster, name)}
    user = scram.get_user(conn, name)
    if user is None:
        raise NotFound(f"User {name!r} has no SCRAM credentials.")
    return user.as_dict()


def _set_password(request: HttpRequest, cluster: str, data: Any, create: bool) -> scram.ScramUser:
    name = scram.check_name(data.get("name"))
    password = scram.check_password(data.get("password"))
    raw_mechanisms = data.getlist("mechanisms") if isinstance(data, QueryDict) else data.get("mechanisms")
    mechanisms = scram.check_mechanisms(raw_mechanisms)
    iterations = scram.check_iterations(data.get("iterations"))
    conn = get_connection(cluster)
    return acl_changes.set_scram_password(request, conn, cluster, name, password, mechanisms, iterations, create)


# ---------------------------------------------------------------- pages


def _list_context(request: HttpRequest, cluster: str, source: QueryDict) -> tuple[dict[str, Any], int]:
    """The list's filter and the bindings it matches; an error (a bad filter, no authorizer) in ``error``."""
    context: dict[str, Any] = {"cluster": cluster, "chosen": source, "error": None, "bindings": None, **_choices()}
    status = 200
    try:
        acl_filter = acls.parse_filter(source)
        context["filter"] = acl_filter
        context["query"] = urlencode(acl_filter.query())
        context["bindings"] = acls.list_acls(get_connection(cluster), acl_filter)
    except acls.NoAuthorizer as exc:
        context["no_authorizer"] = str(exc)
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["error"] = str(exc)
    return context, status


@require_GET
@page_view
def acl_list(request: HttpRequest, cluster: str) -> HttpResponse:
    """Every ACL the filter (query parameters, so a link can be pasted) matches."""
    context, status = _list_context(request, cluster, request.GET)
    template = "acls/_table.html" if is_htmx(request) else "acls/list.html"
    return render(request, template, context, status=status)


@require_GET
@page_view
def topic_acls(request: HttpRequest, cluster: str, topic: str) -> HttpResponse:
    """Every rule that applies to one topic: literal, prefixed and wildcard (a MATCH filter)."""
    source = QueryDict(mutable=True)
    source.update({"resource_type": "TOPIC", "resource_name": topic, "pattern_type": "MATCH"})
    context, status = _list_context(request, cluster, source)
    context["topic"] = topic
    return render(request, "acls/topic.html", context, status=status)


@require_GET
@page_view
def acl_export(request: HttpRequest, cluster: str) -> HttpResponse:
    """The filter's bindings as CSV (the import's format)."""
    bindings = acls.list_acls(get_connection(cluster), acls.parse_filter(request.GET))
    response = HttpResponse(acls.to_csv(bindings), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{cluster}-acls.csv"'
    return response


@require_http_methods(["GET", "POST"])
@page_view
def acl_new(request: HttpRequest, cluster: str) -> HttpResponse:
    """Create ACLs: one binding by hand, or a helper's set for the usual cases. A GET with the form's fields
    (the Preview button, or htmx as they are typed) shows exactly the bindings that would be created; the POST
    creates those shown."""
    source = request.POST if request.method == "POST" else request.GET
    helper = source.get("helper") or "consumer"
    context: dict[str, Any] = {"cluster": cluster, "chosen": source, "helper": helper, "error": None, **_choices()}
    status = 200
    if request.method == "POST":
        guard(request, "acls.create", cluster, "ACLs")
    try:
        if source.get("principal") or request.method == "POST":
            if helper == "binding":
                context["preview"] = [acls.parse_binding(source)]
            else:
                context["preview"] = acls.helper_bindings(helper, source)
        if request.method == "POST":
            created = acl_changes.create_acls(request, get_connection(cluster), cluster, context["preview"])
            messages.success(request, f"{len(created)} ACL{'s' if len(created) != 1 else ''} created.")
            principal = created[0].principal if created else ""
            return redirect(
                reverse("acl-list", kwargs={"cluster": cluster}) + "?" + urlencode({"principal": principal})
            )
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["error"] = str(exc)
    template = "acls/_preview.html" if is_htmx(request) else "acls/new.html"
    return render(request, template, context, status=status if not is_htmx(request) else 200)


@require_http_methods(["GET", "POST"])
@page_view
def acl_delete(request: HttpRequest, cluster: str) -> HttpResponse:
    """GET: the bindings a filter would delete (exactly those). POST (admins): delete the bindings the
    preview showed, carried back by the form; a row's own delete button sends its one binding."""
    conn = get_connection(cluster)
    if request.method == "POST":
        guard(request, "acls.delete", cluster, "ACLs")
        try:
            bindings = _bindings_from_form(request.POST)
            deleted = acl_changes.delete_acls(request, conn, cluster, bindings)
            messages.success(request, f"{len(deleted)} ACL{'s' if len(deleted) != 1 else ''} deleted.")
        except KazamiError as exc:
            messages.error(request, f"Not deleted: {exc}")
        back = request.POST.get("next") or ""
        if back.startswith("/") and not back.startswith("//"):
            return redirect(back)
        return redirect("acl-list", cluster=cluster)
    context, status = _list_context(request, cluster, request.GET)
    if context.get("filter") is not None and context["filter"].is_everything:
        context["error"], status = "Narrow the filter: one that matches every ACL would delete them all.", 400
        context["bindings"] = None
    context["encoded"] = [json.dumps(b.as_dict()) for b in context["bindings"] or []]
    return render(request, "acls/delete.html", context, status=status)


@require_POST
@page_view
def acl_import(request: HttpRequest, cluster: str) -> HttpResponse:
    """Create the bindings of a CSV file (or pasted text) in the export's format: all checked first, so a
    file with a mistake creates nothing."""
    guard(request, "acls.create", cluster, "ACLs")
    upload = request.FILES.get("file")
    try:
        if upload is not None:
            if upload.size and upload.size > MAX_IMPORT_BYTES:
                raise InvalidInput("The CSV is larger than 1 MB.")
            text = upload.read().decode("utf-8", errors="replace")
        else:
            text = request.POST.get("csv", "")
        bindings = acls.from_csv(text)
        created = acl_changes.create_acls(request, get_connection(cluster), cluster, bindings)
        messages.success(request, f"{len(created)} ACL{'s' if len(created) != 1 else ''} imported.")
    except KazamiError as exc:
        messages.error(request, f"Nothing imported: {exc}")
    return redirect("acl-list", cluster=cluster)


@require_GET
@page_view
def principal_page(request: HttpRequest, cluster: str, principal: str) -> HttpResponse:
    """Everything a principal may do, decided as the authorizer would, and a check of one request."""
    who = acls.parse_principal(principal)
    conn = get_connection(cluster)
    host_raw = request.GET.get("host", "").strip()
    context: dict[str, Any] = {"cluster": cluster, "principal": who, "chosen": request.GET, "error": None, **_choices()}
    try:
        host = acls.check_host(host_raw) if host_raw else None
        host = None if host == acls.WILDCARD else host
        bindings = acls.list_acls(conn)
        settings = authorizer.get_authorizer_settings(conn)
        context.update(
            settings=settings,
            host=host,
            super_user=who in settings.super_users,
            own=[b for b in bindings if b.principal in (who, acls.WILDCARD_PRINCIPAL)],
            rights=authorizer.principal_rights(bindings, who, host, settings),
        )
        if request.GET.get("check_type"):
            kind = acls.check_choice(request.GET.get("check_type"), acls.RESOURCE_TYPES, "resource type")
            name = request.GET.get("check_name", "").strip() or (acls.CLUSTER_NAME if kind == "CLUSTER" else "")
            if not name:
                raise InvalidInput("Name the resource to check.")
            operation = acls.check_operation(kind, request.GET.get("check_operation"))
            ops = acls.OPERATIONS[kind] if operation == "ALL" else (operation,)
            context["check"] = {
                "label": f"{kind.lower().replace('_', ' ')} {name}",
                "decisions": {op: authorizer.decide(bindings, who, op, kind, name, host, settings) for op in ops},
            }
    except acls.NoAuthorizer as exc:
        context["no_authorizer"] = str(exc)
    except KazamiError as exc:
        context["error"] = str(exc)
    return render(request, "acls/principal.html", context)


@require_http_methods(["GET", "POST"])
@page_view
def users_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """SCRAM users: list (never a password); admins create one, change a password, delete one."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {
        "cluster": cluster,
        "error": None,
        "mechanisms": list(scram.MECHANISMS),
        "iterations": scram.DEFAULT_ITERATIONS,
        "chosen": {},
    }
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "create")
        name = request.POST.get("name", "")
        try:
            if action == "delete":
                guard(request, "scram.delete", cluster, f"User:{name}")
                removed = acl_changes.delete_scram_user(request, conn, cluster, scram.check_name(name))
                messages.success(request, f"User {name} deleted ({', '.join(removed)}).")
            else:
                create = action == "create"
                guard(request, "scram.create" if create else "scram.password", cluster, f"User:{name}")
                user = _set_password(request, cluster, request.POST, create=create)
                done = "created" if create else "has a new password"
                messages.success(request, f"User {user.name} {done} ({', '.join(user.mechanisms)}).")
            return redirect("acl-users", cluster=cluster)
        except KazamiError as exc:
            status, _ = status_of(exc)
            context["error"] = str(exc)
            context["chosen"] = {k: v for k, v in request.POST.items() if k != "password"}
    try:
        context["users"] = scram.list_users(conn)
    except KazamiError as exc:
        context["users"] = None
        if context["error"] is None:
            status, _ = status_of(exc)
            context["error"] = str(exc)
    return render(request, "acls/users.html", context, status=status)
