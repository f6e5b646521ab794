"""A user opens the console in a real Chromium, sees the cluster, and watches a broker go down live."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from broker.local import launcher
from tests.conftest import BASE_PORT, KRAFT
from tests.integration.kafka_helpers import wait_healthy

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_a_user_sees_three_brokers_and_the_controller(console_url: str, page: Any, artifacts: Path) -> None:
    page.goto(console_url + "/")
    assert page.url == console_url + "/clusters/local/"
    rows = page.locator("#brokers tbody tr")
    assert rows.count() == 3
    for b in range(3):
        row = page.locator(f'tr[data-broker-id="{b}"]')
        assert f"127.0.0.1:{BASE_PORT + b}" in row.inner_text()
        assert row.locator(".pill-ok").inner_text() == "up"
    controller = page.locator(".pill-info")
    if KRAFT:  # the active controller runs apart from the brokers: no broker wears the badge
        assert controller.count() == 0
        assert page.locator("#controller").inner_text().startswith("controller 10")
        assert page.locator("#mode").inner_text() == "KRaft"
    else:
        assert controller.count() == 1
        assert controller.inner_text() == "controller"
        assert page.locator("#controller").inner_text().startswith("broker ")
        assert page.locator("#mode").inner_text() == "ZooKeeper"
    page.locator("#live-status:not([hidden])").wait_for(timeout=10_000)
    page.screenshot(path=str(artifacts / "overview.png"), full_page=True)
    assert page.errors == []


def test_a_stopped_broker_turns_down_on_the_open_page_without_a_reload(
    console_url: str, page: Any, artifacts: Path, kafka_cluster: launcher.ClusterLayout
) -> None:
    page.goto(console_url + "/clusters/local/")
    page.locator("#live-status:not([hidden])").wait_for(timeout=10_000)
    page.evaluate("window.__sameDocument = true")
    victim = 1
    launcher.stop_broker(victim, kafka_cluster.data, echo=lambda _: None)
    try:
        page.locator(f'tr[data-broker-id="{victim}"] .pill-bad').wait_for(timeout=15_000)
        assert page.evaluate("window.__sameDocument") is True  # updated in place, not reloaded
        assert "2 of 3 up" in page.locator("#brokers-up").inner_text()
        page.screenshot(path=str(artifacts / "overview-broker-down.png"), full_page=True)
    finally:
        launcher.start_broker(victim, kafka_cluster.data, echo=lambda _: None)
        wait_healthy()
    page.locator(f'tr[data-broker-id="{victim}"] .pill-ok').wait_for(timeout=30_000)
    assert page.evaluate("window.__sameDocument") is True
    assert page.errors == []


@pytest.mark.kraft_only
def test_on_kraft_the_overview_leads_to_the_quorum_page_naming_the_active_controller(
    console_url: str, page: Any, artifacts: Path
) -> None:
    from tests.integration.kafka_helpers import active_controller, admin

    kafka = admin()
    try:
        leader = active_controller(kafka)
    finally:
        kafka.close()
    page.goto(console_url + "/clusters/local/")
    assert page.locator("#mode").inner_text() == "KRaft"
    assert page.locator("#version").inner_text() == "4.3"
    assert page.locator("#features").is_visible()
    assert "ZooKeeper" not in page.content()
    page.screenshot(path=str(artifacts / "overview-kraft.png"), full_page=True)
    page.locator("#controller a").click()
    page.wait_for_url(console_url + "/clusters/local/quorum/")
    assert page.locator("#quorum-leader").inner_text().startswith(str(leader))
    assert page.locator("#voters tbody tr").count() == 3
    assert page.locator("#observers tbody tr").count() == 3
    assert page.locator(f'#voters tr[data-node-id="{leader}"] .pill-info').inner_text() == "leader"
    page.locator("#live-status:not([hidden])").wait_for(timeout=10_000)
    page.screenshot(path=str(artifacts / "quorum-kraft.png"), full_page=True)
    assert page.errors == []
