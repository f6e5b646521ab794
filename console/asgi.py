"""ASGI entry point served by Daphne: HTTP (with static files) and websockets.

Every HTTP request's synchronous work (the middleware, the views, the ORM) runs on one of a fixed set of
threads (:class:`RequestThreads`, ``KAZAMI_REQUEST_THREADS`` a process, 32 by default) rather than on a
thread started for the request, as Django does by itself (a ``ThreadSensitiveContext`` per request, each
with an executor of its own, joined by one more thread when the request ends). Two threads started and
joined per request cost the event loop a thread start each time, and under more requests than the process
can answer, the threads of requests still waiting piled up by the hundred (each with its stack): on a
busy machine (load average 13 on 2 cores) the load benchmark's workers held 2,000 threads each, their RSS
grew 105 MB a minute and they answered 1.9 requests a second of 50. With the set, a request waits on the
event loop for a free thread instead: 48 threads, RSS +1.7 MB a minute, 31 answers a second on the same
machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import inspect
import os
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

from asgiref.sync import ThreadSensitiveContext
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application

from console.config.env import env_int

django_app = get_asgi_application()

from console.background import lag_sampler, replication_watch  # noqa: E402
from console.errors import StaticFiles  # noqa: E402
from console.live.origin import SameOrigin  # noqa: E402
from console.live.routing import websocket_urlpatterns  # noqa: E402

REQUEST_THREADS = env_int("KAZAMI_REQUEST_THREADS", 32, minimum=1)
# asgiref 3.13 lets a ThreadSensitiveContext be given its executor; with an older one, requests run as Django
# runs them.
GIVEN_EXECUTORS = "executor" in inspect.signature(ThreadSensitiveContext).parameters


class RequestThreads:
    """Runs each HTTP request of ``app`` in a ``ThreadSensitiveContext`` given one of at most ``size``
    single-thread executors, made as needed and kept: Django's own context (inside) then uses it for the
    request's synchronous work. A request arriving while all are taken waits for one.

    An executor goes back to the set when the request is answered (or its client left): work a left client's
    view still does runs first, on the same thread, before the next request's (a thread runs one request's
    work at a time, as Django's own per-request executor does)."""

    def __init__(self, app: Any, size: int) -> None:
        self.app = app
        self.size = size
        self.made = 0
        self._free: list[ThreadPoolExecutor] = []
        self._waiting: deque[asyncio.Future[ThreadPoolExecutor]] = deque()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not GIVEN_EXECUTORS:
            await self.app(scope, receive, send)
            return
        executor = self._take_now()
        if executor is None:
            early: list[dict[str, Any]] = []
            executor = await self._wait(receive, early)
            if executor is None:
                return  # the client left while its request waited: nothing to answer
            receive = _replayed(early, receive)
        try:
            async with ThreadSensitiveContext(executor=executor):
                await self.app(scope, receive, send)
        finally:
            self._give(executor)

    def _take_now(self) -> ThreadPoolExecutor | None:
        if self._free:
            return self._free.pop()
        if self.made < self.size:
            self.made += 1
            return ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"request-{self.made}")
        return None

    async def _wait(self, receive: Any, early: list[dict[str, Any]]) -> ThreadPoolExecutor | None:
        """A thread when one is free, reading meanwhile what the client sends (kept in ``early``); None when the
        client goes away first (``http.disconnect``): under more requests than the process answers, a request
        whose client gave up is not worked on after the wait."""
        waiter: asyncio.Future[ThreadPoolExecutor] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)

        async def listen() -> None:
            while True:
                message = await receive()
                early.append(message)
                if message["type"] == "http.disconnect":
                    return

        listening = asyncio.ensure_future(listen())
        either: list[asyncio.Future[Any]] = [waiter, listening]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # the request itself was stopped (the server stops): no thread kept
            listening.cancel()
            self._drop(waiter)
            raise
        left = listening.done()  # the client sent http.disconnect (or its messages could not be read)
        listening.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await listening
        if left:
            self._drop(waiter)
            return None
        return waiter.result()

    def _drop(self, waiter: asyncio.Future[ThreadPoolExecutor]) -> None:
        """Stop waiting with ``waiter``; a thread it was given meanwhile goes to the next request."""
        if waiter.done() and not waiter.cancelled():
            self._give(waiter.result())
        else:
            waiter.cancel()

    def _give(self, executor: ThreadPoolExecutor) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done() and not waiter.get_loop().is_closed():
                waiter.set_result(executor)
                return
        self._free.append(executor)


def _replayed(early: list[dict[str, Any]], receive: Any) -> Any:
    """``receive`` that first gives back the messages read while the request waited."""
    pending = deque(early)

    async def replayed() -> dict[str, Any]:
        if pending:
            return pending.popleft()
        return await receive()  # type: ignore[no-any-return]

    return replayed


lag_sampler.start()  # only when serving: management commands never import this module
replication_watch.start()

application = ProtocolTypeRouter(
    {
        "http": RequestThreads(StaticFiles(django_app), REQUEST_THREADS),
        "websocket": SameOrigin(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# What starting made (Django, the apps, kafka-python: ~100,000 objects) lives as long as the process: frozen
# out of the cyclic collector, so the full collections that come every few hundred requests walk only what
# the requests made. Walking it all took tens of milliseconds, a page's p99 (the message_page benchmark).
gc.collect()
gc.freeze()
