"""Websocket consumers: subscription routers that forward pushed fragments, nothing more."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any
from urllib.parse import parse_qs, urlencode

from asgiref.sync import sync_to_async
from channels.auth import get_user
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.template.loader import render_to_string
from django.urls import reverse

from broker.errors import KazamiError
from broker.messages import read as messages
from broker.messages.log import Message
from broker.messages.masking import Masker
from broker.messages.scan import ScanProgress
from broker.messages.tail import Tail
from broker.topics import read as topics
from console.access import has
from console.config.clusters import get_configs, get_connection
from console.present.masking import masker_for
from console.live import pollers
from console.live.fragments import LIVE_FRAGMENTS
from console.live.search import SearchSpec, run_search, search_spec_from
from console.present.messages import Decoding, ShownMessage, decoding_for, show

log = logging.getLogger(__name__)

CLOSE_UNKNOWN = 4404
CLOSE_LOGIN = 4401  # no session: log in first
CLOSE_FORBIDDEN = 4403  # logged in without the viewer role
CLOSE_MASKING = 4409  # the user's role now sees a tailed topic masked differently: reload to tail again


async def refusal(scope: dict[str, Any]) -> int | None:
    """The close code for a websocket whose session may not read the console, or None. (The origin is
    checked before: console.asgi wraps every consumer in AllowedHostsOriginValidator.)"""
    user = scope.get("user")
    if user is None:
        return CLOSE_LOGIN
    if await database_sync_to_async(has)(user, "view_console"):
        return None
    return CLOSE_FORBIDDEN if user.is_authenticated else CLOSE_LOGIN


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
    socket is closed (4401 logged out, 4403 no role any more) when it may no longer read the console."""

    rechecking: asyncio.Task[None] | None = None

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


class LiveConsumer(Rechecked):
    """``/ws/clusters/<cluster>/<view>/[?params]``: the view's fragment now, then at every poll.

    Browsers watching the same view with the same parameters share one poller.
    """

    subscribed = False

    async def connect(self) -> None:
        if code := await refusal(self.scope):
            await self.close(code=code)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        cluster, view = kwargs["cluster"], kwargs["view"]
        if cluster not in get_configs() or view not in LIVE_FRAGMENTS:
            await self.close(code=CLOSE_UNKNOWN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode(), keep_blank_values=False)
        params = {k: v[0] for k, v in query.items() if v}
        self.key = pollers.key_of(cluster, view, params)
        await self.channel_layer.group_add(pollers.group_name(self.key), self.channel_name)
        await self.accept()
        self.start_rechecking()
        pollers.subscribe(self.key)
        self.subscribed = True
        try:
            await self.send(text_data=await pollers.first_fragment(self.key))
        except KazamiError:
            await self.close(code=CLOSE_UNKNOWN)

    async def disconnect(self, code: int) -> None:
        self.stop_rechecking()
        if self.subscribed:
            pollers.unsubscribe(self.key)
            await self.channel_layer.group_discard(pollers.group_name(self.key), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Browsers have nothing to say on a live view; whatever they send is ignored."""

    async def live_fragment(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["html"])


def _rows(shown: list[ShownMessage], target: str, how: str, show_partition: bool = True) -> str:
    rows = "".join(
        render_to_string("messages/_message_row.html", {"s": s, "show_partition": show_partition}) for s in shown
    )
    return f'<tbody id="{target}" hx-swap-oob="{how}">{rows}</tbody>'


class SearchConsumer(Rechecked):
    """``/ws/clusters/<cluster>/topics/<topic>/search/``: runs one search at a time, pushing progress and
    matches as they come; {"action": "stop"} (or closing the page) stops it."""

    PUSH_EVERY = 0.25  # seconds between pushes: progress and matches are batched in between

    cluster: str
    topic: str
    cancel: threading.Event | None = None

    async def connect(self) -> None:
        if code := await refusal(self.scope):
            await self.close(code=code)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.topic = kwargs["cluster"], kwargs["topic"]
        self.cancel: threading.Event | None = None
        self.task: asyncio.Task[None] | None = None
        if self.cluster not in get_configs():
            await self.close(code=CLOSE_UNKNOWN)
            return
        await self.accept()
        self.start_rechecking()

    async def disconnect(self, code: int) -> None:
        self.stop_rechecking()
        if self.cancel is not None:
            self.cancel.set()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            data = json.loads(text_data or "{}")
        except ValueError:
            return
        action = data.get("action")
        if action == "stop":
            if self.cancel is not None:
                self.cancel.set()
            return
        if action != "start":
            return
        if self.cancel is not None:
            self.cancel.set()
        try:
            spec = search_spec_from(data)
        except KazamiError as exc:
            await self.send(text_data=render_to_string("messages/_search_progress.html", {"error": str(exc)}))
            return
        self.cancel = threading.Event()
        self.task = asyncio.get_running_loop().create_task(self._run(spec, self.cancel))

    async def _run(self, spec: SearchSpec, cancel: threading.Event) -> None:
        loop = asyncio.get_running_loop()
        pending: list[ShownMessage] = []
        state: dict[str, Any] = {"progress": ScanProgress(), "last_push": 0.0}
        lock = threading.Lock()

        def on_match(shown: ShownMessage) -> None:
            with lock:
                pending.append(shown)

        def on_progress(progress: ScanProgress) -> None:
            state["progress"] = progress
            now = time.monotonic()
            if progress.done or now - state["last_push"] >= self.PUSH_EVERY:
                state["last_push"] = now
                asyncio.run_coroutine_threadsafe(self._push(pending, lock, progress, spec), loop)

        await self.send(
            text_data=_rows([], "search-results", "innerHTML")
            + render_to_string("messages/_search_progress.html", {"progress": ScanProgress()})
        )
        conn = get_connection(self.cluster)
        try:
            # The user's masking, as the search page's: the query sees masked messages only.
            masker = await database_sync_to_async(masker_for)(self.scope["user"], self.cluster, self.topic)
            await sync_to_async(run_search, thread_sensitive=False)(
                conn, self.cluster, self.topic, spec, cancel, on_progress, on_match, masker
            )
        except KazamiError as exc:
            await self.send(text_data=render_to_string("messages/_search_progress.html", {"error": str(exc)}))

    async def _push(
        self, pending: list[ShownMessage], lock: threading.Lock, progress: ScanProgress, spec: SearchSpec
    ) -> None:
        with lock:
            batch = pending[:]
            pending.clear()
        downloads = None
        if progress.done:
            base = reverse("topic-search", kwargs={"cluster": self.cluster, "topic": self.topic})
            params = spec.as_params()
            downloads = {
                "json": f"{base}?{urlencode({**params, 'format': 'json'})}",
                "csv": f"{base}?{urlencode({**params, 'format': 'csv'})}",
                "link": f"{base}?{urlencode({**params, 'run': '1'})}",
            }
        html: str = render_to_string("messages/_search_progress.html", {"progress": progress, "downloads": downloads})
        if batch:
            html = _rows(batch, "search-results", "beforeend") + html
        await self.send(text_data=html)


# cluster, topic, partitions, isolation, and the masking of the watchers' role: browsers whose roles see
# different values do not share rows.
TailKey = tuple[str, str, tuple[int, ...], str, Masker]


@dataclass(eq=False)
class SharedTail:
    """One reader of a topic (or of one partition) for every browser tailing it in this process: new
    messages are read, decoded and drawn once however many watch, and the rows sent to each."""

    cluster: str
    tail: Tail
    decoding: Decoding
    masker: Masker
    watchers: set[TailConsumer] = field(default_factory=set)
    pump: asyncio.Task[None] | None = None
    trouble: str | None = None  # why new messages may not be arriving now (Tail.trouble), None if none

    def current(self) -> bool:
        """Still reading for this event loop (a loop that ended, as in tests, leaves its task behind)."""
        return self.pump is not None and not self.pump.done() and self.pump.get_loop() is asyncio.get_running_loop()


_tails: dict[TailKey, SharedTail] = {}


def _tail_rows(cluster: str, batch: list[Message], decoding: Decoding, masker: Masker) -> str:
    return _rows([show(cluster, masker.message(m), decoding) for m in reversed(batch)], "tail-rows", "afterbegin")


class TailConsumer(Rechecked):
    """``/ws/clusters/<cluster>/topics/<topic>/tail/[?partition=N]``: new messages as they arrive, at most
    ``ROWS_PER_PUSH`` every ``PUSH_EVERY`` seconds; what a fast topic produces beyond that is skipped and
    counted. {"action": "pause"} / {"action": "resume"}. Browsers tailing the same partitions share one
    reader (SharedTail)."""

    PUSH_EVERY = 0.5
    ROWS_PER_PUSH = 25
    CHECK_EVERY = 3.0  # how often the shared reader asks whether its partitions can be read
    shared: SharedTail | None = None

    async def connect(self) -> None:
        if code := await refusal(self.scope):
            await self.close(code=code)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.topic = kwargs["cluster"], kwargs["topic"]
        self.paused = False
        self.shared: SharedTail | None = None
        if self.cluster not in get_configs():
            await self.close(code=CLOSE_UNKNOWN)
            return
        await self.accept()
        self.start_rechecking()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        conn = get_connection(self.cluster)
        try:
            infos = await sync_to_async(topics.get_topic_partitions, thread_sensitive=False)(conn, self.topic)
            wanted = [int(query["partition"][0])] if query.get("partition") else [p.partition for p in infos]
            if any(p not in {i.partition for i in infos} for p in wanted):
                raise KazamiError(f"Topic {self.topic!r} has no partition {wanted[0]}.")
            isolation = messages.check_isolation((query.get("isolation") or [""])[0])
        except (KazamiError, ValueError) as exc:
            await self._status(f"Cannot tail: {exc}")
            await self.close()
            return
        masker = await database_sync_to_async(masker_for)(self.scope["user"], self.cluster, self.topic)
        self.key: TailKey = (self.cluster, self.topic, tuple(wanted), isolation, masker)
        shared = _tails.get(self.key)
        if shared is None or not shared.current():
            decoding = await sync_to_async(decoding_for, thread_sensitive=False)(self.cluster, self.topic)
            shared = _tails.get(self.key)  # another browser may have started it meanwhile
            if shared is None or not shared.current():
                shared = _tails[self.key] = SharedTail(
                    self.cluster, Tail(conn, self.topic, wanted, isolation=isolation), decoding, masker
                )
                shared.tail.start()
                shared.pump = asyncio.get_running_loop().create_task(_pump(self.key, shared))
        self.shared = shared
        self.received_before = shared.tail.received
        self.shown = 0
        shared.watchers.add(self)
        self.where = f"partition {wanted[0]}" if query.get("partition") else f"all {len(wanted)} partitions"
        if isolation == "read_committed":
            self.where += " (read_committed: records show once their transaction commits)"
        await self.show_state()

    async def changed_since_open(self) -> int | None:
        """CLOSE_MASKING when the user's role changed what masking hides of this topic, after saying so (a
        reload opens the tail again with the new role's masking)."""
        if self.shared is None:
            return None
        user = (await fresh_scope(self.scope)).get("user")
        masker = await database_sync_to_async(masker_for)(user, self.cluster, self.topic)
        if masker == self.shared.masker:
            return None
        await self._status("Your role changed what you may see of this topic: reload the page to tail it again.")
        return CLOSE_MASKING

    async def disconnect(self, code: int) -> None:
        self.stop_rechecking()
        shared = self.shared
        if shared is None:
            return
        shared.watchers.discard(self)
        if not shared.watchers:
            shared.tail.stop()
            if shared.pump is not None:
                shared.pump.cancel()
            if _tails.get(self.key) is shared:
                del _tails[self.key]

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            action = json.loads(text_data or "{}").get("action")
        except ValueError:
            return
        if action in ("pause", "resume"):
            self.paused = action == "pause"
            if self.paused:
                await self._status("Paused: new messages are not shown.")
            else:
                await self._status("Live again.", self.shared.trouble if self.shared else None)

    async def _status(self, text: str, trouble: str | None = None) -> None:
        await self.send(text_data=self._status_html(text, trouble))

    def _status_html(self, text: str, trouble: str | None = None) -> str:
        return render_to_string("messages/_tail_status.html", {"status": text, "trouble": trouble})

    def _counts(self, skipped: int = 0) -> str:
        """This browser's counts, or what it waits for when nothing came yet."""
        assert self.shared is not None
        received = self.shared.tail.received - self.received_before
        if not received:
            return f"Waiting for new messages on {self.where}…"
        note = f" · {skipped} skipped to keep up" if skipped else ""
        return f"{received} received, {self.shown} shown{note}"

    async def show_state(self) -> None:
        """The counts, with the shared reader's trouble if it has one (a change of trouble is sent at once)."""
        assert self.shared is not None
        if not self.paused:
            await self._status(self._counts(), self.shared.trouble)

    async def push(self, rows: str, count: int, skipped: int) -> None:
        """Send rows drawn by the shared reader, with this browser's own counts."""
        assert self.shared is not None
        self.shown += count
        await self.send(text_data=rows + self._status_html(self._counts(skipped), self.shared.trouble))


async def _watch(shared: SharedTail) -> None:
    """Every CHECK_EVERY: whether the tailed partitions can be read now (Tail.trouble, off the event loop).
    A change is shown to every watcher at once: the cluster gone away, a partition without a leader, and
    when it is over. The reader itself goes on meanwhile."""
    while True:
        await asyncio.sleep(TailConsumer.CHECK_EVERY)
        if await _recheck(shared):
            for watcher in list(shared.watchers):
                try:
                    await watcher.show_state()
                except Exception:  # one browser gone wrong does not keep the others uninformed
                    log.warning("a tail status to one browser failed", exc_info=True)


async def _recheck(shared: SharedTail) -> bool:
    """Ask whether the tailed partitions can be read now (Tail.trouble, off the event loop) and keep the
    answer; True when it changed."""
    try:
        trouble = await sync_to_async(shared.tail.trouble, thread_sensitive=False)()
    except Exception:  # an unforeseen failure of the check must not end the tail
        log.warning("checking a tail's partitions failed", exc_info=True)
        return False
    changed = trouble != shared.trouble
    shared.trouble = trouble
    return changed


async def _pump(key: TailKey, shared: SharedTail) -> None:
    """Every PUSH_EVERY: what the reader got since, drawn once (in a worker thread, off the event loop),
    to every watcher that is not paused. Runs ``_watch`` beside it."""
    watch = asyncio.get_running_loop().create_task(_watch(shared))
    try:
        await _push_forever(key, shared)
    finally:
        watch.cancel()


async def _push_forever(key: TailKey, shared: SharedTail) -> None:
    tail = shared.tail
    while True:
        await asyncio.sleep(TailConsumer.PUSH_EVERY)
        if tail.error:
            for watcher in list(shared.watchers):
                await watcher._status(tail.error)
            if _tails.get(key) is shared:
                del _tails[key]
            return
        if not any(not w.paused for w in shared.watchers):
            tail.discard()  # nobody shows them
            continue
        batch, dropped = tail.drain(TailConsumer.ROWS_PER_PUSH)
        skipped = dropped + tail.discard() if len(batch) == TailConsumer.ROWS_PER_PUSH else dropped
        if not batch and not skipped:
            continue
        rows = await sync_to_async(_tail_rows, thread_sensitive=False)(
            shared.cluster, batch, shared.decoding, shared.masker
        )
        if shared.trouble and batch:
            # Messages came in, so the trouble last seen (up to CHECK_EVERY ago) may be over: a partition
            # said to have no leader just delivered. Ask again before saying it beside them.
            await _recheck(shared)
        for watcher in list(shared.watchers):
            if not watcher.paused:
                try:
                    await watcher.push(rows, len(batch), skipped)
                except Exception:  # one browser gone wrong does not stop the others' tail
                    log.warning("a tail push to one browser failed", exc_info=True)
