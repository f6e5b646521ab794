"""Websocket consumers: subscription routers that forward pushed fragments, nothing more."""

from __future__ import annotations

from typing import Any

from channels.generic.websocket import AsyncWebsocketConsumer

from console import live
from console.clusters import get_configs
from console.fragments import LIVE_FRAGMENTS

CLOSE_UNKNOWN = 4404


class LiveConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no types
    """``/ws/clusters/<cluster>/<view>/``: the view's fragment now, then at every poll."""

    cluster: str
    view: str
    subscribed = False

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        self.cluster, self.view = kwargs["cluster"], kwargs["view"]
        if self.cluster not in get_configs() or self.view not in LIVE_FRAGMENTS:
            await self.close(code=CLOSE_UNKNOWN)
            return
        await self.channel_layer.group_add(live.group_name(self.cluster, self.view), self.channel_name)
        await self.accept()
        live.subscribe(self.cluster, self.view)
        self.subscribed = True
        await self.send(text_data=await live.render(self.cluster, self.view))

    async def disconnect(self, code: int) -> None:
        if self.subscribed:
            live.unsubscribe(self.cluster, self.view)
            await self.channel_layer.group_discard(live.group_name(self.cluster, self.view), self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """Browsers have nothing to say on a live view; whatever they send is ignored."""

    async def live_fragment(self, event: dict[str, Any]) -> None:
        await self.send(text_data=event["html"])
