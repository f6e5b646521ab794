"""Logging in and out, the audit log, and the users page (admins give roles)."""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, NotFound
from console import access
from console.errors import api_view, page_view
from console.forms import GrantForm, NewUserForm, UserRoleForm
from console.identity import oidc
from console.models import AuditEntry, Grant
from console.params import int_param
from console.present.listing import Listing, csv_file, wants_csv

# Failed logins, counted in Django's cache (shared by every console process) until KAZAMI_LOGIN_LOCK_SECONDS pass
# without one: per person (every spelling Django would log in as one user counts as that user), and per address
# with a larger allowance (KAZAMI_LOGIN_ADDRESS_FAILURES; behind a reverse proxy every user shares the proxy's
# address, which is why it is larger, and 0 turns it off).
LOGIN_FAILURES_ALLOWED = 10


class LoginView(auth_views.LoginView):
    """Django's login, refusing with 429 after LOGIN_FAILURES_ALLOWED failures for one user name however it is
    spelled, or KAZAMI_LOGIN_ADDRESS_FAILURES from one address, until KAZAMI_LOGIN_LOCK_SECONDS pass without one."""

    template_name = "access/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context: dict[str, Any] = super().get_context_data(**kwargs)
        context["sso"] = oidc.enabled()
        context["sso_name"] = settings.KAZAMI_OIDC_NAME
        context["sso_only"] = oidc.enabled() and settings.KAZAMI_OIDC_ONLY
        context["sso_refused"] = self.request.GET.get("sso") == "refused"
        return context

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not oidc.local_login_allowed(str(request.POST.get("username", ""))):
            context = {
                **self.get_context_data(form=AuthenticationForm(request)),
                "locked": f"Sign in with {settings.KAZAMI_OIDC_NAME}: local accounts are turned off here.",
            }
            return render(request, self.template_name, context, status=403)
        limits = _failure_limits(request)
        # Counted before the password is checked (and taken back when it was right), in one transaction (which
        # holds SQLite's write lock), so tries sent at once cannot all pass the check before any is counted.
        with transaction.atomic():
            locked = any(cache.get(key, 0) >= allowed for key, allowed in limits)
            if not locked:
                _count(limits, +1)
        if locked:
            message = f"Too many failed logins; try again in {_duration(settings.KAZAMI_LOGIN_LOCK_SECONDS)}."
            context = {"form": AuthenticationForm(request), "locked": message}
            return render(request, self.template_name, context, status=429)
        response: HttpResponse = super().post(request, *args, **kwargs)
        if request.user.is_authenticated:  # logged in: not a failure after all
            with transaction.atomic():
                _count(limits, -1)
        return response


def login_name(username: str) -> str:
    """The user name as Django looks it up (stripped, NFKC-normalised), case-folded: every spelling that logs in
    as one user (full-width letters, mathematical letters, another case) gives the same name."""
    name = unicodedata.normalize("NFKC", username.strip())
    return unicodedata.normalize("NFKC", name.casefold())


def _failure_limits(request: HttpRequest) -> list[tuple[str, int]]:
    """The cache keys counting this login's failures, each with the failures it allows."""
    name = login_name(str(request.POST.get("username", ""))[:1000])
    limits = [(_key("user", name), LOGIN_FAILURES_ALLOWED)]
    if settings.KAZAMI_LOGIN_ADDRESS_FAILURES:
        address = str(request.META.get("REMOTE_ADDR") or "")
        limits.append((_key("address", address), settings.KAZAMI_LOGIN_ADDRESS_FAILURES))
    return limits


def _key(kind: str, value: str) -> str:
    # Hashed: a name may be long or hold spaces and control characters, which cache keys may not.
    return f"kazami-login-{kind}:{hashlib.sha256(value.encode()).hexdigest()}"


def _count(limits: list[tuple[str, int]], step: int) -> None:
    for key, _ in limits:
        cache.set(key, max(0, cache.get(key, 0) + step), settings.KAZAMI_LOGIN_LOCK_SECONDS)


def _duration(seconds: int) -> str:
    if seconds % 60:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    return f"{seconds // 60} minute{'s' if seconds != 60 else ''}"


class LogoutView(auth_views.LogoutView):
    """Django's logout; signed in through the identity provider, its session is ended there too (when it offers)."""

    def post(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        there = oidc.logout_url(request) if oidc.enabled() and request.session.get("oidc_id_token") else None
        response: HttpResponse = super().post(request, *args, **kwargs)
        return redirect(there) if there else response


login = access.public(LoginView.as_view())
logout = access.public(LogoutView.as_view())
sso_start = access.public(oidc.SignIn.as_view())
sso_callback = access.public(oidc.Callback.as_view())

AUDIT_FILTERS = ("user", "cluster", "action", "outcome")
AUDIT_PER_PAGE = 50
# The audit log as CSV (?format=csv, every entry the filters keep, newest first).
AUDIT_COLUMNS: dict[str, Any] = {
    "at": lambda e: e.at.isoformat(),
    "user": lambda e: e.username,
    "cluster": lambda e: e.cluster,
    "action": lambda e: e.action,
    "target": lambda e: e.target,
    "params": lambda e: json.dumps(e.params, ensure_ascii=False, sort_keys=True, default=str),
    "outcome": lambda e: e.outcome,
    "result": lambda e: e.result,
    "remote_addr": lambda e: e.remote_addr,
}


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
        columns=AUDIT_COLUMNS,  # for the pager's CSV link; the file itself is streamed by audit_log
    )


@require_GET
@page_view
def audit_log(request: HttpRequest) -> HttpResponse:
    entries, chosen = audit_entries(request.GET)
    if wants_csv(request.GET):
        return csv_file(AUDIT_COLUMNS, entries.order_by("-at", "-id").iterator(), "kazami-audit.csv")
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


def users_page(
    request: HttpRequest, form: NewUserForm | None = None, status: int = 200, grant_form: GrantForm | None = None
) -> HttpResponse:
    """The Users page: every user with its role, teams and grants; the grants of teams; the forms."""
    users = User.objects.order_by("username").prefetch_related("groups")
    stored = list(Grant.objects.select_related("user"))
    by_user: dict[int, list[Grant]] = {}
    for g in stored:
        if g.user_id is not None:
            by_user.setdefault(g.user_id, []).append(g)
    rows = [
        {
            "user": u,
            "role": access.role_of(u),
            "teams": sorted(g.name for g in u.groups.all() if g.name not in access.ROLES),
            "grants": by_user.get(u.pk, []),
        }
        for u in users
    ]
    context = {
        "rows": rows,
        "form": form or NewUserForm(),
        "roles": list(access.ROLES),
        "team_grants": [g for g in stored if g.team],
        "grant_form": grant_form or GrantForm(),
    }
    return render(request, "access/users.html", context, status=status)


@require_http_methods(["GET", "POST"])
@page_view
@access.needs("user.change")
def users(request: HttpRequest) -> HttpResponse:
    if request.method == "GET":
        return users_page(request)
    form = NewUserForm(request.POST)
    if not form.is_valid():
        return users_page(request, form, status=400)
    data = form.cleaned_data
    try:
        validate_password(data["password"], User(username=data["username"]))
    except ValidationError as exc:
        form.add_error("password", exc)
        return users_page(request, form, status=400)

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
        if data["role"]:
            access.set_role(user, data["role"])
        else:
            access.take_role(user)
        user.is_active = data["active"]
        user.save(update_fields=["is_active"])

    access.perform(request, "user.change", None, username, {"role": data["role"], "active": data["active"]}, change)
    shown = data["role"] or "grants only"
    messages.success(request, f"{username}: {shown}, {'active' if data['active'] else 'login disabled'}.")
    return redirect("users")
