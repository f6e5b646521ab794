"""Websocket consumers: subscription routers that forward pushed fragments, nothing more.

Each accepts, checks the session may read the console (console.live.sessions), joins what feeds it and forwards
what it pushes: a live view's poller (console.live.pollers), a shared tail (console.live.tails), a search run
for this browser alone (console.live.search, on console.live.tasks).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from broker.errors import KazamiError
from console.config.clusters import get_configs, get_connection
from console.live import pollers, tails
from console.live.fragments import LIVE_FRAGMENTS
from console.live.search import search_spec_from, stream_search
from console.live.sessions import CLOSE_MASKING, CLOSE_UNKNOWN, Rechecked, fresh_scope, live_refusal, refusal
from console.live.tasks import TaskConsumer
from console.present.masking import masker_for


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
        if code := await database_sync_to_async(live_refusal)(self.scope["user"], cluster, view, params):
            await self.close(code=code)
            return
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


class SearchConsumer(TaskConsumer):
    """``/ws/clusters/<cluster>/topics/<topic>/search/``: runs one search at a time, pushing progress and
    matches as they come; {"action": "stop"} (or closing the page) stops it."""

    PROGRESS_TEMPLATE = "messages/_search_progress.html"

    topic: str

    def route(self, kwargs: dict[str, Any]) -> None:
        self.cluster, self.topic = kwargs["cluster"], kwargs["topic"]

    async def on_start(self, data: dict[str, Any]) -> None:
        try:
            spec = search_spec_from(data)
        except KazamiError as exc:
            await self.send_error(str(exc))
            return
        self.run_task(lambda cancel: stream_search(self, self.topic, spec, cancel))


class TailConsumer(Rechecked):
    """``/ws/clusters/<cluster>/topics/<topic>/tail/[?partition=N]``: new messages as they arrive, at most
    ``tails.ROWS_PER_PUSH`` every ``tails.PUSH_EVERY`` seconds; what a fast topic produces beyond that is skipped
    and counted. {"action": "pause"} / {"action": "resume"}. Browsers tailing the same partitions share one
    reader (console.live.tails.SharedTail)."""

    shared: tails.SharedTail | None = None

    async def connect(self) -> None:
        if code := await refusal(self.scope):
            await self.close(code=code)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.topic = kwargs["cluster"], kwargs["topic"]
        self.paused = False
        self.shared: tails.SharedTail | None = None
        if self.cluster not in get_configs():
            await self.close(code=CLOSE_UNKNOWN)
            return
        await self.accept()
        self.start_rechecking()
        query = parse_qs(self.scope.get("query_string", b"").decode())
        conn = get_connection(self.cluster)
        try:
            wanted, isolation = await tails.tailed(conn, self.topic, query)
        except (KazamiError, ValueError) as exc:
            await self.show_status(f"Cannot tail: {exc}")
            await self.close()
            return
        masker = await database_sync_to_async(masker_for)(self.scope["user"], self.cluster, self.topic)
        self.key: tails.TailKey = (self.cluster, self.topic, tuple(wanted), isolation, masker)
        self.shown = 0
        self.shared = shared = await tails.join(self.key, conn, self)
        self.received_before = shared.tail.received
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
        await self.show_status("Your role changed what you may see of this topic: reload the page to tail it again.")
        return CLOSE_MASKING

    async def disconnect(self, code: int) -> None:
        self.stop_rechecking()
        if self.shared is not None:
            tails.leave(self.key, self.shared, self)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        try:
            data = json.loads(text_data or "{}")
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            return
        action = data.get("action") if isinstance(data, dict) else None
        if action in ("pause", "resume"):
            self.paused = action == "pause"
            if self.paused:
                await self.show_status("Paused: new messages are not shown.")
            else:
                await self.show_status("Live again.", self.shared.trouble if self.shared else None)

    async def show_status(self, text: str, trouble: str | None = None) -> None:
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
            await self.show_status(self._counts(), self.shared.trouble)

    async def push(self, rows: str, count: int, skipped: int) -> None:
        """Send rows drawn by the shared reader, with this browser's own counts."""
        assert self.shared is not None
        self.shown += count
        await self.send(text_data=rows + self._status_html(self._counts(skipped), self.shared.trouble))

    async def redraw(self, rows: str) -> None:
        """Send rows drawn again by the shared reader (a transaction ended): swapped in place by their ids."""
        await self.send(text_data=rows)
