"""Logging in and out, the audit log, and the users page (admins give roles)."""

from __future__ import annotations

import math
from typing import Any

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import User
from django.core.cache import cache
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, NotFound
from console import access
from console.errors import api_view, page_view
from console.forms import NewUserForm, UserRoleForm
from console.models import AuditEntry
from console.params import int_param
from console.present.listing import Listing

# Failed logins per user name, counted in Django's cache for a quarter of an hour. (Not per address:
# behind a reverse proxy every user shares one, and a stranger could lock everybody out.)
LOGIN_FAILURES_ALLOWED = 10
LOGIN_LOCK_SECONDS = 15 * 60


class LoginView(auth_views.LoginView):
    """Django's login, refusing with 429 after LOGIN_FAILURES_ALLOWED failures for the same user name,
    until LOGIN_LOCK_SECONDS pass without one."""

    template_name = "access/login.html"
    redirect_authenticated_user = True

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        keys = _failure_keys(request)
        if any(cache.get(key, 0) >= LOGIN_FAILURES_ALLOWED for key in keys):
            message = f"Too many failed logins; try again in {LOGIN_LOCK_SECONDS // 60} minutes."
            context = {"form": AuthenticationForm(request), "locked": message}
            return render(request, self.template_name, context, status=429)
        response: HttpResponse = super().post(request, *args, **kwargs)
        if response.status_code == 200:  # the form again: a failure
            for key in keys:
                cache.set(key, cache.get(key, 0) + 1, LOGIN_LOCK_SECONDS)
        return response


def _failure_keys(request: HttpRequest) -> list[str]:
    name = str(request.POST.get("username", "")).strip().lower()[:150]
    return [f"kazami-login-user:{name}"]


login = access.public(LoginView.as_view())
logout = access.public(auth_views.LogoutView.as_view())

AUDIT_FILTERS = ("user", "cluster", "action", "outcome")
AUDIT_PER_PAGE = 50


def audit_entries(params: Any) -> tuple[QuerySet[AuditEntry], dict[str, str]]:
    """Entries matching the ?user, ?cluster, ?action, ?outcome and ?q (target contains) filters."""
    chosen = {name: params.get(name, "").strip() for name in AUDIT_FILTERS}
    query = params.get("q", "").strip()
    entries = AuditEntry.objects.all()
    if chosen["user"]:
        entries = entries.filter(username=chosen["user"])
    if chosen["cluster"]:
        entries = entries.filter(cluster=chosen["cluster"])
    if chosen["action"]:
        entries = entries.filter(action=chosen["action"])
    if chosen["outcome"]:
        entries = entries.filter(outcome=chosen["outcome"])
    if query:
        entries = entries.filter(target__icontains=query)
    return entries, {**chosen, "q": query}


def _page(entries: QuerySet[AuditEntry], params: Any, chosen: dict[str, str]) -> Listing[AuditEntry]:
    total = entries.count()
    pages = max(1, math.ceil(total / AUDIT_PER_PAGE))
    page = int_param(params, "page", 1, minimum=1) or 1
    if page > pages:
        raise InvalidInput(f"page {page} is past the last page ({pages}).")
    start = (page - 1) * AUDIT_PER_PAGE
    return Listing(
        rows=list(entries[start : start + AUDIT_PER_PAGE]),
        total=total,
        page=page,
        pages=pages,
        per_page=AUDIT_PER_PAGE,
        sort="at",
        direction="desc",
        query=chosen["q"],
        params={k: v for k, v in chosen.items() if v},
        labels={},
    )


@require_GET
@page_view
def audit_log(request: HttpRequest) -> HttpResponse:
    entries, chosen = audit_entries(request.GET)
    context = {
        "listing": _page(entries, request.GET, chosen),
        "chosen": chosen,
        "actions": sorted(access.ACTIONS),
        "outcomes": [AuditEntry.DONE, AuditEntry.FAILED, AuditEntry.REFUSED],
        "users": AuditEntry.objects.order_by().values_list("username", flat=True).distinct(),
        "clusters": AuditEntry.objects.order_by().exclude(cluster="").values_list("cluster", flat=True).distinct(),
    }
    return render(request, "access/audit.html", context)


def entry_json(e: AuditEntry) -> dict[str, Any]:
    return {
        "id": e.pk,
        "at": e.at.isoformat(),
        "user": e.username,
        "cluster": e.cluster or None,
        "action": e.action,
        "target": e.target,
        "params": e.params,
        "outcome": e.outcome,
        "result": e.result,
        "remote_addr": e.remote_addr,
    }


@require_GET
@api_view
def audit_api(request: HttpRequest) -> dict[str, Any]:
    entries, chosen = audit_entries(request.GET)
    listing = _page(entries, request.GET, chosen)
    return {
        "total": listing.total,
        "page": listing.page,
        "pages": listing.pages,
        "entries": [entry_json(e) for e in listing.rows],
    }


def _users_page(request: HttpRequest, form: NewUserForm | None = None, status: int = 200) -> HttpResponse:
    users = User.objects.order_by("username").prefetch_related("groups")
    rows = [{"user": u, "role": access.role_of(u)} for u in users]
    context = {"rows": rows, "form": form or NewUserForm(), "roles": list(access.ROLES)}
    return render(request, "access/users.html", context, status=status)


@require_http_methods(["GET", "POST"])
@page_view
@access.needs("user.change")
def users(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return _users_page(request)
    form = NewUserForm(request.POST)
    if not form.is_valid():
        return _users_page(request, form, status=400)
    data = form.cleaned_data

    def create() -> User:
        user = User.objects.create_user(data["username"], password=data["password"])
        access.set_role(user, data["role"])
        return user

    access.perform(request, "user.create", None, data["username"], {"role": data["role"]}, create)
    messages.success(request, f"User {data['username']} created with the {data['role']} role.")
    return redirect("users")


@require_POST
@page_view
@access.needs("user.change")
def user_change(request: HttpRequest, username: str) -> HttpResponse:
    user = User.objects.filter(username=username).first()
    if user is None:
        raise NotFound(f"No user named {username!r}.")
    form = UserRoleForm(request.POST)
    if not form.is_valid():
        raise InvalidInput("; ".join(f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items()))
    data = form.cleaned_data
    if user == request.user and (data["role"] != access.ADMIN or not data["active"]):
        raise InvalidInput("You cannot take the admin role or the login away from yourself.")

    def change() -> None:
        access.set_role(user, data["role"])
        user.is_active = data["active"]
        user.save(update_fields=["is_active"])

    access.perform(request, "user.change", None, username, {"role": data["role"], "active": data["active"]}, change)
    messages.success(request, f"{username}: {data['role']}, {'active' if data['active'] else 'login disabled'}.")
    return redirect("users")
