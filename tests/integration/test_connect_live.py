"""The Connect pages' websockets: the connector list and a connector's status now, then again at each poll,
with a state change made elsewhere (the worker's own REST API) in the next push."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator

import console.urls  # noqa: F401 - what a console process has loaded once it served a page
from console.asgi import application
from console.config import connect
from tests.conftest import CONNECT_URL, websocket_headers
from tests.integration.connect_files import worker_folder
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tmp_path() -> Path:
    """The files this module hands the worker live where its user can reach them (connect_files.py)."""
    return worker_folder()


def worker(method: str, path: str, body: Any = None) -> None:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(  # noqa: S310 - the test worker on loopback
        CONNECT_URL + path, data=data, method=method, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30):  # noqa: S310
        pass


def test_the_list_and_the_status_are_pushed_with_a_state_change(
    connect_worker: str, settings: Any, tmp_path: Path
) -> None:
    settings.KAZAMI_LIVE_INTERVAL = 0.3
    connect.reset_for_tests()
    headers = websocket_headers()
    topic = create_topic(unique("connect-live"), partitions=1)
    name = unique("live-source")
    source = tmp_path / "in.txt"
    source.write_text("x\n")
    config = {"connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": str(source)}
    worker("PUT", f"/connectors/{name}/config", {**config, "topic": topic})

    async def pushes(path: str, until_text: str, action: str | None = None, timeout: float = 30) -> list[str]:
        ws = WebsocketCommunicator(application, path, headers=headers)
        assert (await ws.connect())[0]
        seen = [await ws.receive_from(timeout=10)]
        if action:
            worker("PUT", f"/connectors/{name}/{action}")
        deadline = time.monotonic() + timeout
        while until_text not in seen[-1] and time.monotonic() < deadline:
            seen.append(await ws.receive_from(timeout=10))
        await ws.disconnect()
        return seen

    listed = async_to_sync(pushes)("/ws/clusters/local/connectors/", f'data-connector="{name}"')
    assert listed[0].lstrip().startswith('<section id="connectors"')
    assert f'data-connector="{name}"' in listed[-1]

    path = f"/ws/clusters/local/connector/?connect=local&name={name}"
    running = async_to_sync(pushes)(path, '<strong id="connector-state">RUNNING</strong>')
    assert running[0].lstrip().startswith('<section id="connector-status"')
    paused = async_to_sync(pushes)(path, '<strong id="connector-state">PAUSED</strong>', action="pause")
    assert '<strong id="connector-state">PAUSED</strong>' in paused[-1]
    worker("DELETE", f"/connectors/{name}")
