"""Browsers watching the same live view or tail share the work: one render for a burst of browsers opening
a view, one reader and one drawing of new messages for every browser tailing a topic."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from broker.local import launcher
from console.asgi import application
from console.live import fragments, tails
from tests.conftest import websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def headers(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> list[tuple[bytes, bytes]]:
    return websocket_headers()  # a logged-in admin's browser


def test_browsers_opening_a_watched_view_share_one_render(
    headers: list[tuple[bytes, bytes]], settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.KAZAMI_LIVE_INTERVAL = 60  # no poll during the test: every fragment sent is a first one
    renders: list[str] = []
    original = fragments.LIVE_FRAGMENTS["overview"]

    def counted(cluster: str, params: Mapping[str, str]) -> str:
        renders.append(cluster)
        return original(cluster, params)

    monkeypatch.setitem(fragments.LIVE_FRAGMENTS, "overview", counted)

    async def scenario() -> list[str]:
        path = "/ws/clusters/local/overview/"
        browsers = [WebsocketCommunicator(application, path, headers=headers) for _ in range(6)]
        for ws in browsers[:3]:  # a burst: the first render may still run when the others open
            assert (await ws.connect())[0]
        first = [await ws.receive_from(timeout=10) for ws in browsers[:3]]
        for ws in browsers[3:]:  # later: they get what the others were sent
            assert (await ws.connect())[0]
            first.append(await ws.receive_from(timeout=10))
        for ws in browsers:
            await ws.disconnect()
        return first

    first = async_to_sync(scenario)()
    assert len(renders) == 1
    assert len(set(first)) == 1
    assert first[0].lstrip().startswith('<section id="overview"')


def test_browsers_tailing_a_topic_share_one_reader(headers: list[tuple[bytes, bytes]]) -> None:
    name = create_topic(unique("shared-tail"), partitions=2)

    async def scenario() -> tuple[list[str], int, int]:
        path = f"/ws/clusters/local/topics/{name}/tail/"
        browsers = [WebsocketCommunicator(application, path, headers=headers) for _ in range(3)]
        for ws in browsers:
            assert (await ws.connect())[0]
            assert "Waiting for new messages" in await ws.receive_from(timeout=15)
        readers = len([key for key in tails._tails if key[1] == name])
        await asyncio.sleep(1.0)  # the reader has reached the end of the topic
        await asyncio.get_running_loop().run_in_executor(None, produce, name, [(b"k", b"seen-by-all")])
        pushed = []
        for ws in browsers:
            text = ""
            while "seen-by-all" not in text:
                text = await ws.receive_from(timeout=15)
            pushed.append(text)
        for ws in browsers:
            await ws.disconnect()
        await asyncio.sleep(0.05)
        return pushed, readers, len([key for key in tails._tails if key[1] == name])

    pushed, readers, readers_after = async_to_sync(scenario)()
    assert readers == 1
    assert readers_after == 0  # the last browser to leave stops it
    for text in pushed:
        assert '<tbody id="tail-rows" hx-swap-oob="afterbegin">' in text
        assert "1 received, 1 shown" in text
