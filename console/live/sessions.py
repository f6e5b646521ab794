"""What every websocket checks of its session: whether it may read the console when it opens, and again while it
stays open (:class:`Rechecked`, the base of every consumer), with the close codes that say why not.

A refused socket is accepted and then closed with its code, so the page reads why (a close before the handshake
would reach it as a bare HTTP 403)."""

from __future__ import annotations

import asyncio
import logging
from importlib import import_module
from typing import Any

from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from console.access import has, scope_of, scoped_refusal, sees_all
from console.access.grants import GRANTS_PARAM
from console.background.job_spec import job_reads
from console.models import AnalyticsJob

log = logging.getLogger(__name__)

CLOSE_UNKNOWN = 4404  # no such cluster or view
CLOSE_ORIGIN = 4400  # opened by a page of another origin (console.live.origin)
CLOSE_LOGIN = 4401  # no session: log in first
CLOSE_FORBIDDEN = 4403  # logged in without the viewer role
CLOSE_MASKING = 4409  # the user's role now sees a tailed topic masked differently: reload to tail again


async def refusal(scope: dict[str, Any]) -> int | None:
    """The close code for a websocket whose session may not read the console, or what its route names (a topic
    outside the user's grants: CLOSE_UNKNOWN, as for one that does not exist), or None. (The origin is checked
    before: console.asgi wraps every consumer in console.live.origin.SameOrigin.)"""
    user = scope.get("user")
    if user is None:
        return CLOSE_LOGIN
    kwargs = scope.get("url_route", {}).get("kwargs", {})
    code: int | None = await database_sync_to_async(_refusal)(user, kwargs)
    return code


def _refusal(user: Any, kwargs: dict[str, Any]) -> int | None:
    if has(user, "view_console"):
        return None
    if not user.is_authenticated:
        return CLOSE_LOGIN
    held = scope_of(user)
    if not held.grants:
        return CLOSE_FORBIDDEN
    if "view" in kwargs:  # a live view: LiveConsumer asks live_refusal, which knows what each view shows
        cluster = kwargs.get("cluster")
        return None if cluster and held.on_cluster(cluster) else CLOSE_UNKNOWN
    refused = scoped_refusal(held, None, kwargs)
    if refused is None:
        return None
    return CLOSE_UNKNOWN if refused[0] == 404 else CLOSE_FORBIDDEN


# Live views of one thing: view -> (what it shows, the parameter naming it).
_LIVE_ONE = {"group": ("group", "group"), "connector": ("connector", "name")}
# Live views of a list, drawn for the grants of a user whose roles on the cluster are scoped.
_LIVE_LISTS = {"groups", "connectors", "jobs"}


def live_refusal(user: Any, cluster: str, view: str, params: dict[str, str]) -> int | None:
    """Whether a user may watch live ``view`` of ``cluster`` with ``params`` (a close code, or None). For a user
    whose roles there are scoped, a list is drawn for its grants (set in ``params``), one thing only when a grant
    reaches it, and a view of the whole cluster (overview, quorum, replication, the live query) is refused. A
    grants parameter the browser sent is dropped. Reads the database: call it off the event loop."""
    params.pop(GRANTS_PARAM, None)
    if sees_all(user, cluster):
        return None
    held = scope_of(user)
    if view in _LIVE_LISTS:
        params[GRANTS_PARAM] = "\n".join(str(g) for g in held.grants)
        return None
    if view in _LIVE_ONE:
        kind, param = _LIVE_ONE[view]
        return None if held.sees(cluster, kind, params.get(param, "")) else CLOSE_UNKNOWN
    if view == "job":
        try:
            job = AnalyticsJob.objects.get(pk=int(params.get("id", "0")))
        except (ValueError, AnalyticsJob.DoesNotExist):
            return None  # drawn as "No such job."
        return None if held.sees_every(job.cluster, *job_reads(job)) else CLOSE_UNKNOWN
    return CLOSE_FORBIDDEN


async def refusal_now(scope: dict[str, Any]) -> int | None:
    """:func:`refusal` for the session as it is in the session store now: a logout (the session is
    deleted), a password change, a user disabled or a role taken away since the websocket opened."""
    return await refusal(await fresh_scope(scope))


async def fresh_scope(scope: dict[str, Any]) -> dict[str, Any]:
    """``scope`` with its session and user as they are in the session store now."""
    session = scope.get("session")
    if session is None or session.session_key is None:
        return scope
    store = import_module(settings.SESSION_ENGINE).SessionStore
    fresh = {**scope, "session": store(session_key=session.session_key)}
    fresh["user"] = await get_user(fresh)
    return fresh


class Rechecked(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no types
    """A consumer whose session is checked again every KAZAMI_WS_RECHECK seconds while it is open; the
    socket is closed (4401 logged out, 4403 no role any more) when it may no longer read the console.

    A close before :meth:`accept` (a refusal in ``connect``) accepts first, so that the browser gets the close
    code rather than an HTTP 403."""

    rechecking: asyncio.Task[None] | None = None
    accepted = False

    async def accept(self, subprotocol: str | None = None, headers: Any = None) -> None:
        self.accepted = True
        await super().accept(subprotocol, headers)

    async def close(self, code: int | bool | None = None, reason: str | None = None) -> None:
        if not self.accepted:
            await self.accept()
        await super().close(code, reason)

    def start_rechecking(self) -> None:
        self.rechecking = asyncio.get_running_loop().create_task(self._recheck())

    def stop_rechecking(self) -> None:
        if self.rechecking is not None:
            self.rechecking.cancel()

    async def _recheck(self) -> None:
        while True:
            await asyncio.sleep(settings.KAZAMI_WS_RECHECK)
            try:
                code = await refusal_now(self.scope)
                if code is None:
                    code = await self.changed_since_open()
            except Exception:  # the database is away: check again next time
                log.warning("could not check a websocket's session again", exc_info=True)
                continue
            if code is not None:
                await self.close(code=code)
                return

    async def changed_since_open(self) -> int | None:
        """A close code when what the socket sends no longer fits its user (checked with the session)."""
        return None
