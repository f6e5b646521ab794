"""Scoped roles given and taken away (admins), each audited: to a user, or to a team its identity provider or
directory names. What a grant reaches is console.access.grants'."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.http import HttpRequest

from broker.errors import InvalidInput, NotFound
from console.access import grants, perform
from console.models import Grant


def holder_of(user: User | None, team: str) -> str:
    return f"user {user.get_username()}" if user is not None else f"team {team}"


def add(request: HttpRequest, username: str, team: str, text: str) -> Grant:
    """Give the grant ``text`` (CLUSTER:RESOURCE:GLOB:ROLE) to user ``username`` or to ``team``; InvalidInput for a
    malformed grant, NotFound for an unknown user."""
    user = None
    if username:
        user = User.objects.filter(username=username).first()
        if user is None:
            raise NotFound(f"No user named {username!r}.")
    try:  # refused as any invalid input is, before the audit log
        grants.check_grant(user, team, text)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None
    params: dict[str, Any] = {"grant": text.strip()}

    def give() -> Grant:
        found: Grant = grants.do_add_grant(user, team, text)
        return found

    return perform(request, "user.grant", None, f"{holder_of(user, team.strip())}: {text.strip()}"[:500], params, give)


def remove(request: HttpRequest, grant_id: int) -> None:
    """Take grant ``grant_id`` away; NotFound for an unknown one."""
    found = Grant.objects.select_related("user").filter(pk=grant_id).first()
    if found is None:
        raise NotFound(f"No grant {grant_id}.")
    target = f"{holder_of(found.user, found.team)}: {found.spec}"
    perform(request, "user.revoke", None, target, {"id": grant_id}, found.delete, lambda _: "taken away")


def grant_json(found: Grant) -> dict[str, Any]:
    return {
        "id": found.pk,
        "user": found.user.get_username() if found.user else None,
        "team": found.team or None,
        "grant": found.spec,
        "cluster": found.cluster,
        "resource": found.resource,
        "pattern": found.pattern,
        "role": found.role,
        "created_at": found.created_at.isoformat(),
    }
