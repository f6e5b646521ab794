"""A connector's page in real Chromium: pausing it from the page changes its state without a reload, and a
change made elsewhere (the worker's own REST API) arrives over the websocket."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.conftest import CONNECT_URL
from tests.integration.connect_files import worker_folder
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


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


def test_pausing_a_connector_shows_its_new_state_live(
    connect_worker: str, console_url: str, page: Any, artifacts: Path, tmp_path: Path
) -> None:
    topic = create_topic(unique("connect-browser"), partitions=1)
    name = unique("browser-source")
    source = tmp_path / "lines.txt"
    source.write_text("one\ntwo\n")
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
        "file": str(source),
        "topic": topic,
        "consumer.sasl.jaas.config": "secret-jaas-value",
    }
    worker("PUT", f"/connectors/{name}/config", config)
    try:
        page.goto(f"{console_url}/clusters/local/connectors/")
        row = page.locator(f"#connector-table tr[data-connector='{name}']")
        row.wait_for(timeout=30_000)
        page.locator(f"#connector-table tr[data-connector='{name}'] [data-state='RUNNING']").wait_for(timeout=30_000)
        page.screenshot(path=str(artifacts / "connect-list.png"), full_page=True)

        row.locator("a").click()
        page.wait_for_url(f"**/connectors/local/{name}/")
        state = page.locator("#connector-state")
        expect(state).to_have_text("RUNNING", timeout=30_000)
        assert "secret-jaas-value" not in page.content()
        page.evaluate("window.kazamiSamePage = true")

        page.click("#action-pause")
        expect(state).to_have_text("PAUSED", timeout=20_000)
        assert page.evaluate("window.kazamiSamePage") is True  # no reload
        assert "pause sent" in page.locator("#connector-flash").inner_text()
        expect(page.locator("#action-pause")).to_be_disabled()  # offered again only once it runs
        expect(page.locator("#action-resume")).to_be_enabled()

        # A change made elsewhere arrives over the websocket.
        worker("PUT", f"/connectors/{name}/resume")
        expect(state).to_have_text("RUNNING", timeout=20_000)
        expect(page.locator("#action-pause")).to_be_enabled()
        expect(page.locator("#action-resume")).to_be_disabled()
        page.locator("#connector-tasks tr[data-state='RUNNING']").wait_for(timeout=20_000)
        assert page.evaluate("window.kazamiSamePage") is True
        assert state.inner_text() == "RUNNING"
        page.screenshot(path=str(artifacts / "connect-detail.png"), full_page=True)
        assert page.errors == []
    finally:
        worker("DELETE", f"/connectors/{name}")
