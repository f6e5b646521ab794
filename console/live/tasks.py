"""One cancellable piece of work at a time for a websocket's browser: a search, a check of a replica's segments.

:class:`TaskConsumer` opens the socket (session checked, cluster known) and speaks the protocol both pages use:
``{"action": "start", …}`` stops the work under way and starts another (:meth:`TaskConsumer.on_start` checks what it
asks and calls :meth:`TaskConsumer.run_task`), ``{"action": "stop"}`` stops it, and so does closing the socket;
other messages are ignored. The work gets a :class:`threading.Event` it stops at, runs its blocking part in a
worker thread (:meth:`TaskConsumer.in_thread`) and reports progress from there
(:meth:`TaskConsumer.from_thread`); a KazamiError it raises is sent as the progress partial's error.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.template.loader import render_to_string

from broker.errors import KazamiError
from console.config.clusters import get_configs
from console.live.sessions import CLOSE_UNKNOWN, Rechecked, refusal

P = ParamSpec("P")
T = TypeVar("T")

Work = Callable[[threading.Event], Awaitable[None]]


class TaskConsumer(Rechecked):
    """The base of a consumer that runs cancellable work in the background (see the module's docstring)."""

    PROGRESS_TEMPLATE = ""  # the partial that draws the work's progress; {"error": text} says why it failed

    cluster: str
    cancel: threading.Event | None = None  # set to stop the work under way
    task: asyncio.Task[None] | None = None
    loop: asyncio.AbstractEventLoop | None = None

    def route(self, kwargs: dict[str, Any]) -> None:
        """Keep what the URL names: ``self.cluster`` and what the work is about."""
        raise NotImplementedError

    async def on_start(self, data: dict[str, Any]) -> None:
        """``{"action": "start", …}`` (the work before is stopped): check what ``data`` asks, then
        :meth:`run_task` it or :meth:`send_error` why not."""
        raise NotImplementedError

    async def connect(self) -> None:
        if code := await refusal(self.scope):
            await self.close(code=code)
            return
        self.route(self.scope["url_route"]["kwargs"])
        if self.cluster not in get_configs():
            await self.close(code=CLOSE_UNKNOWN)
            return
        await self.accept()
        self.start_rechecking()

    async def disconnect(self, code: int) -> None:
        self.stop_rechecking()
        self.stop_task()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            data = json.loads(text_data or "{}")
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            return
        action = data.get("action") if isinstance(data, dict) else None
        if action == "stop":
            self.stop_task()
        elif action == "start":
            self.stop_task()
            await self.on_start(data)

    def run_task(self, work: Work) -> None:
        """Start ``work(cancel)`` in the background; ``cancel`` is set when it should stop."""
        self.cancel = cancel = threading.Event()
        self.loop = asyncio.get_running_loop()
        self.task = self.loop.create_task(self._run(work, cancel))

    def stop_task(self) -> None:
        if self.cancel is not None:
            self.cancel.set()

    async def _run(self, work: Work, cancel: threading.Event) -> None:
        try:
            await work(cancel)
        except KazamiError as exc:
            await self.send_error(str(exc))

    async def send_error(self, error: str) -> None:
        await self.send(text_data=render_to_string(self.PROGRESS_TEMPLATE, {"error": error}))

    @staticmethod
    async def in_thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` in a worker thread of its own, off the event loop."""
        return await sync_to_async(function, thread_sensitive=False)(*args, **kwargs)

    def from_thread(self, sending: str | Coroutine[Any, Any, None]) -> None:
        """From the work's worker thread: send ``sending`` (a fragment), or run it (a coroutine) on the socket's
        event loop, without waiting for it."""
        assert self.loop is not None
        coroutine = self.send(text_data=sending) if isinstance(sending, str) else sending
        asyncio.run_coroutine_threadsafe(coroutine, self.loop)
