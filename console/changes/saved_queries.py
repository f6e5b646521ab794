"""Saved SQL queries over topics: saved, changed and deleted by their owner, checked (the operator's
run_analytics, as running one) and audited through console.access.perform; listed and opened by
whoever may see them (the owner, and everyone when shared)."""

from __future__ import annotations

from typing import Any, cast

from django.contrib.auth.models import User
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from analytics.sql import check_sql
from broker.errors import InvalidInput, KazamiError, NotFound
from console.access import Forbidden, perform, record, require
from console.models import SavedQuery

MAX_NAME = 120


def visible(user: Any, cluster: str) -> QuerySet[SavedQuery]:
    """The user's own queries on ``cluster`` and those others shared, by name."""
    shared = Q(shared=True)
    mine = Q(owner=user) if user.is_authenticated else Q(pk__in=[])
    return SavedQuery.objects.filter(Q(cluster=cluster) & (mine | shared)).order_by("name", "id")


def get_visible(user: Any, cluster: str, query_id: Any) -> SavedQuery:
    """The saved query ``query_id`` if ``user`` may open it (theirs, or shared); else NotFound."""
    try:
        wanted = int(query_id)
    except (TypeError, ValueError):
        raise InvalidInput(f"A saved query is named by its number, not {str(query_id)[:40]!r}.") from None
    found = visible(user, cluster).filter(pk=wanted).first()
    if found is None:
        raise NotFound(f"No saved query {wanted} on cluster {cluster!r} that you may open.")
    return found


def query_json(query: SavedQuery, user: Any) -> dict[str, Any]:
    return {
        "id": query.pk,
        "name": query.name,
        "sql": query.sql,
        "owner": query.owner_name,
        "mine": bool(user.is_authenticated and query.owner_id == user.pk),
        "shared": query.shared,
        "created_at": query.created_at.isoformat(),
        "updated_at": query.updated_at.isoformat(),
    }


def save(request: HttpRequest, cluster: str, name: Any, sql: Any, shared: bool) -> SavedQuery:
    """Save ``sql`` as ``name`` (the user's query of that name on ``cluster`` is replaced): the query must be one
    that reads (analytics.sql.check_sql). Raises Forbidden, InvalidInput (audited)."""
    text = sql.strip() if isinstance(sql, str) else ""
    title = " ".join(name.split()) if isinstance(name, str) else ""
    params = {"name": title[:MAX_NAME], "sql": text[:2000], "shared": bool(shared)}

    def change() -> SavedQuery:
        if not isinstance(name, str) or not isinstance(sql, str):
            raise InvalidInput("name and sql must be text.")
        if not title:
            raise InvalidInput("Give the query a name to save it.")
        if any(ord(c) < 32 or ord(c) == 127 for c in title):
            raise InvalidInput("A name cannot hold control characters.")
        if len(title) > MAX_NAME:
            raise InvalidInput(f"A name is at most {MAX_NAME} characters; this one is {len(title)}.")
        check_sql(text)  # a query that would be refused is not kept
        now = timezone.now()
        user = cast(User, request.user)  # perform let it through: a signed-in operator
        query = SavedQuery.objects.filter(cluster=cluster, owner=user, name=title).first()
        if query is None:
            query = SavedQuery(cluster=cluster, owner=user, owner_name=user.get_username(), name=title, created_at=now)
        query.sql, query.shared, query.updated_at = text, bool(shared), now
        query.save()
        return query

    return perform(request, "sql.save", cluster, title, params, change, lambda q: f"saved query {q.pk}")


def delete(request: HttpRequest, cluster: str, query_id: Any) -> None:
    """Delete the saved query ``query_id``: only its owner may. Raises Forbidden, NotFound (audited)."""
    query = get_visible(request.user, cluster, query_id)
    target = query.name
    if query.owner_id != request.user.pk:
        message = f"{request.user.get_username()} may not delete {query.owner_name}'s saved query {query.name!r}."
        try:
            require(request, "sql.delete", cluster)  # a viewer is refused for the role first
        except KazamiError as exc:
            message = str(exc)
        record(request, "sql.delete", cluster, target, {"id": query.pk}, "refused", message)
        raise Forbidden(message)
    params = {"id": query.pk}
    perform(request, "sql.delete", cluster, target, params, query.delete, lambda _: f"deleted query {params['id']}")
