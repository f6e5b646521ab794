"""The replication page open in a real Chromium while a broker stops and comes back: the change arrives
without a reload, in the broker table and in the timeline."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from broker.local import launcher
from tests.integration.kafka_helpers import create_topic, unique, wait_healthy

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_a_stopped_broker_shows_on_the_open_replication_page_and_in_its_timeline(
    console_url: str, page: Any, artifacts: Path, kafka_cluster: launcher.ClusterLayout
) -> None:
    create_topic(unique("replpage"), partitions=3, replication=3)
    failed_503: list[str] = []
    page.on("response", lambda r: failed_503.append(r.url) if r.status == 503 else None)
    page.goto(console_url + "/clusters/local/replication/")
    page.locator("#live-status:not([hidden])").wait_for(timeout=10_000)
    page.evaluate("window.__sameDocument = true")
    victim = 2
    page.on("dialog", lambda dialog: dialog.accept())  # the Stop button asks for confirmation
    page.fill("#embedded-broker", str(victim))
    page.click("#broker-stop-start button[value=stop]")  # an admin stops it from the page
    page.locator(".flash").wait_for(timeout=10_000)
    assert f"Broker {victim} is stopping." in page.locator(".flash").inner_text()
    page.evaluate("window.__sameDocument = true")
    try:
        page.locator(f'#replication-brokers tr[data-broker-id="{victim}"] .pill-bad').wait_for(timeout=20_000)
        page.locator('#events li[data-kind="broker_gone"]').first.wait_for(timeout=20_000)
        page.locator('#events li[data-kind="isr_shrank"]').first.wait_for(timeout=20_000)
        assert page.locator("#replication-partitions tbody tr").count() > 0
        assert page.evaluate("window.__sameDocument") is True  # updated in place
        page.screenshot(path=str(artifacts / "replication-broker-down.png"), full_page=True)
    finally:
        deadline = time.monotonic() + 60
        while launcher.status(kafka_cluster.data)["brokers"][victim]["alive"] and time.monotonic() < deadline:  # type: ignore[index]
            time.sleep(0.5)
        page.fill("#embedded-broker", str(victim))
        page.click("#broker-stop-start button[value=start]")
        page.locator(".flash").wait_for(timeout=10_000)
        page.evaluate("window.__sameDocument = true")
        wait_healthy()
    page.locator(f'#replication-brokers tr[data-broker-id="{victim}"] .pill-ok').wait_for(timeout=60_000)
    # The timeline's return events are checked by tests/integration/test_replication.py in one process: with
    # two console workers the watch's lease can move to a worker whose last look is older than the stop,
    # and that worker sees no change (noted in the issue; to be fixed by comparing with the stored state).
    assert page.evaluate("window.__sameDocument") is True
    page.screenshot(path=str(artifacts / "replication-recovered.png"), full_page=True)
    # While a broker is down, a request the open page makes in the background may be answered 503 (the cluster
    # is settling: a clear answer, not a fault), which Chromium logs as a failed resource; which request meets
    # the outage depends on timing. Any other console error, and every script error, fails the test.
    settling = "Failed to load resource: the server responded with a status of 503 (Service Unavailable)"
    unexpected = [e for e in page.errors if e != settling]
    assert unexpected == [], (unexpected, failed_503)
