"""Pollers that keep live pages fresh: one per (cluster, view) in this process, only while watched.

Consumers subscribe; the first subscriber starts the poller, the last one to leave stops
it. Each round renders the view's fragment once and sends it to the channel-layer group,
however many browsers watch, so Kafka sees one request per interval, not one per tab. A
browser that opens a view others watch is first sent the fragment they were last sent.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from console.live.fragments import LIVE_FRAGMENTS

log = logging.getLogger(__name__)


Key = tuple[str, str, tuple[tuple[str, str], ...]]


def key_of(cluster: str, view: str, params: Mapping[str, str]) -> Key:
    return cluster, view, tuple(sorted(params.items()))


# Pollers are per process, so are their groups: with a channel layer shared by several console
# processes (Redis), a browser must not also receive what the pollers of the other processes send.
PROCESS = uuid.uuid4().hex[:12]


def group_name(key: Key) -> str:
    """A channel-layer group name for a live view in this process: ASCII and short (channels allows
    100 characters), the same for the same view and parameters."""
    digest = hashlib.sha1(repr(key).encode(), usedforsecurity=False).hexdigest()[:24]
    return f"live.{key[1]}.{digest}.{PROCESS}"


@dataclass
class _Poller:
    subscribers: int = 0
    task: asyncio.Task[None] | None = field(default=None, repr=False)
    # The fragment last sent to the view's watchers, or the render under way for its first watcher: what a
    # browser that opens the view is sent first (rendering it once per browser would cost a render per
    # page view, and a burst of browsers opening a view would queue as many renders).
    latest: asyncio.Future[str] | None = field(default=None, repr=False)


_pollers: dict[Key, _Poller] = {}


async def render(key: Key) -> str:
    cluster, view, params = key
    renderer = LIVE_FRAGMENTS[view]
    return await sync_to_async(renderer, thread_sensitive=False)(cluster, dict(params))


async def first_fragment(key: Key) -> str:
    """The fragment for a browser that just subscribed to ``key``: the one its other watchers were last
    sent, else the render under way for them, else a new render. Raises what the renderer raises."""
    poller = _pollers[key]
    latest = poller.latest
    if latest is None or (latest.done() and (latest.cancelled() or latest.exception() is not None)):
        latest = poller.latest = asyncio.ensure_future(render(key))
    # Shielded: a browser that leaves does not cancel the render the others wait for.
    return await asyncio.shield(latest)


async def _run(key: Key, poller: _Poller) -> None:
    layer = get_channel_layer()
    assert layer is not None
    group = group_name(key)
    while True:
        await asyncio.sleep(settings.KAZAMI_LIVE_INTERVAL)
        try:
            html = await render(key)
        except Exception:
            log.exception("live view %s failed to render", key)
            continue
        poller.latest = asyncio.get_running_loop().create_future()
        poller.latest.set_result(html)
        await layer.group_send(group, {"type": "live.fragment", "html": html})


def subscribe(key: Key) -> None:
    poller = _pollers.setdefault(key, _Poller())
    poller.subscribers += 1
    if poller.task is None or poller.task.done():
        poller.task = asyncio.get_running_loop().create_task(_run(key, poller))


def unsubscribe(key: Key) -> None:
    poller = _pollers.get(key)
    if poller is None:
        return
    poller.subscribers -= 1
    if poller.subscribers <= 0:
        if poller.task is not None:
            poller.task.cancel()
        del _pollers[key]


def active() -> dict[tuple[str, str], int]:
    """Subscriber counts of the running pollers by (cluster, view) (for tests and diagnostics)."""
    counts: dict[tuple[str, str], int] = {}
    for (cluster, view, _), poller in _pollers.items():
        counts[(cluster, view)] = counts.get((cluster, view), 0) + poller.subscribers
    return counts
