"""Pollers that keep live pages fresh: one per (cluster, view) in this process, only while watched.

Consumers subscribe; the first subscriber starts the poller, the last one to leave stops
it. Each round renders the view's fragment once and sends it to the channel-layer group,
however many browsers watch, so Kafka sees one request per interval, not one per tab.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from console.fragments import LIVE_FRAGMENTS

log = logging.getLogger(__name__)


def group_name(cluster: str, view: str) -> str:
    return f"live.{cluster}.{view}"


@dataclass
class _Poller:
    subscribers: int = 0
    task: asyncio.Task[None] | None = field(default=None, repr=False)


_pollers: dict[tuple[str, str], _Poller] = {}


async def render(cluster: str, view: str) -> str:
    renderer = LIVE_FRAGMENTS[view]
    return await sync_to_async(renderer, thread_sensitive=False)(cluster)


async def _run(cluster: str, view: str) -> None:
    layer = get_channel_layer()
    assert layer is not None
    group = group_name(cluster, view)
    while True:
        await asyncio.sleep(settings.KAZAMI_LIVE_INTERVAL)
        try:
            html = await render(cluster, view)
        except Exception:
            log.exception("live %s for cluster %s failed to render", view, cluster)
            continue
        await layer.group_send(group, {"type": "live.fragment", "html": html})


def subscribe(cluster: str, view: str) -> None:
    key = (cluster, view)
    poller = _pollers.setdefault(key, _Poller())
    poller.subscribers += 1
    if poller.task is None or poller.task.done():
        poller.task = asyncio.get_running_loop().create_task(_run(cluster, view))


def unsubscribe(cluster: str, view: str) -> None:
    poller = _pollers.get((cluster, view))
    if poller is None:
        return
    poller.subscribers -= 1
    if poller.subscribers <= 0:
        if poller.task is not None:
            poller.task.cancel()
        del _pollers[(cluster, view)]


def active() -> dict[tuple[str, str], int]:
    """Subscriber counts of the running pollers (for tests and diagnostics)."""
    return {key: p.subscribers for key, p in _pollers.items()}
