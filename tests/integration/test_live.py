"""The live overview websocket: the fragment now, then again at every poll; one poller per view."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

from broker.local import launcher
from console.asgi import application
from console.live import pollers
from tests.conftest import BOOTSTRAP, websocket_headers

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

HEADERS: list[tuple[bytes, bytes]] = []


def communicator(path: str) -> Any:
    return WebsocketCommunicator(application, path, headers=HEADERS)


@pytest.fixture
def fast_live(settings: Any, kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> None:
    settings.KAZAMI_LIVE_INTERVAL = 0.3
    HEADERS[:] = websocket_headers()  # a logged-in admin's browser


def test_it_sends_the_overview_at_once_and_again_at_each_poll(fast_live: None) -> None:
    async def scenario() -> tuple[str, str, dict[tuple[str, str], int], dict[tuple[str, str], int]]:
        first_ws, second_ws = communicator("/ws/clusters/local/overview/"), communicator("/ws/clusters/local/overview/")
        assert (await first_ws.connect())[0]
        assert (await second_ws.connect())[0]
        first = await first_ws.receive_from(timeout=10)
        await second_ws.receive_from(timeout=10)
        watched = pollers.active()
        pushed = await first_ws.receive_from(timeout=10)
        await first_ws.disconnect()
        await second_ws.disconnect()
        await asyncio.sleep(0.05)
        return first, pushed, watched, pollers.active()

    first, pushed, watched, after = async_to_sync(scenario)()
    for html in (first, pushed):
        assert html.lstrip().startswith('<section id="overview"')
        assert BOOTSTRAP.split(",")[0] in html  # the first broker, whichever test slot runs
    assert watched == {("local", "overview"): 2}  # two browsers, one poller
    assert after == {}


async def close_code(ws: Any) -> Any:
    """The code a refused socket is closed with (it is accepted first, so that the page reads the code)."""
    connected, _ = await ws.connect()
    assert connected
    closed = await ws.receive_output(timeout=10)
    assert closed["type"] == "websocket.close"
    return closed["code"]


def test_an_unknown_cluster_or_view_is_refused(fast_live: None) -> None:
    async def scenario(path: str) -> Any:
        return await close_code(communicator(path))

    assert async_to_sync(scenario)("/ws/clusters/nope/overview/") == 4404
    assert async_to_sync(scenario)("/ws/clusters/local/nothing/") == 4404


def test_a_foreign_origin_is_refused(fast_live: None) -> None:
    async def scenario() -> Any:
        ws = WebsocketCommunicator(
            application, "/ws/clusters/local/overview/", headers=[(b"origin", b"http://evil.example"), *HEADERS[1:]]
        )
        return await close_code(ws)

    assert async_to_sync(scenario)() == 4400


def test_the_live_group_list_shows_how_lag_moved_since_the_last_push(fast_live: None) -> None:
    from tests.integration.kafka_helpers import create_topic, produce, unique
    from tests.integration.test_groups import commit

    name = create_topic(unique("live-groups"), partitions=1)
    produce(name, [(None, b"x")] * 3, partition=0)
    group = unique("g-live")
    commit(group, {(name, 0): 0})

    async def scenario() -> tuple[str, str]:
        ws = communicator(f"/ws/clusters/local/groups/?q={group}")
        assert (await ws.connect())[0]
        first = await ws.receive_from(timeout=15)
        await asyncio.get_running_loop().run_in_executor(None, produce, name, [(None, b"y")] * 4, 0)
        pushed = ""
        while 'class="delta up"' not in pushed:
            pushed = await ws.receive_from(timeout=15)
        await ws.disconnect()
        return first, pushed

    first, pushed = async_to_sync(scenario)()
    assert first.lstrip().startswith('<section id="groups-table">')
    assert group in first
    assert 'title="since the last update">+4</span>' in pushed
