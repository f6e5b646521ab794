"""The overview's throughput in real Chromium: while a topic is written at a steady rate, it shows among the
busiest topics with about that rate, and the chart gains points."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]
RATE = 100


def test_the_overview_charts_a_topic_written_at_a_known_rate(console_url: str, page: Any, artifacts: Path) -> None:
    name = create_topic(unique("busy"), partitions=3)
    stop = threading.Event()

    def write() -> None:
        producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks=1, linger_ms=5)
        started, sent = time.monotonic(), 0
        try:
            while not stop.is_set():
                producer.send(name, value=b"event %d" % sent)
                sent += 1
                time.sleep(max(0.0, started + sent / RATE - time.monotonic()))
        finally:
            producer.close(timeout=10)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        page.goto(f"{console_url}/clusters/local/")
        row = page.locator(f'#busiest-topics tr[data-topic="{name}"]')
        row.wait_for(timeout=60_000)
        # Two looks a few seconds apart while it writes: the rate shown is about RATE.
        deadline = time.monotonic() + 40
        shown = 0.0
        while time.monotonic() < deadline:
            cells = page.locator(f'#busiest-topics tr[data-topic="{name}"] td')
            if cells.count():
                shown = float(cells.nth(1).inner_text().replace(",", ""))
                if abs(shown - RATE) <= 0.25 * RATE:
                    break
            page.wait_for_timeout(1000)
        assert abs(shown - RATE) <= 0.25 * RATE, shown
        page.wait_for_function(
            "() => { const c = Chart.getChart(document.getElementById('throughput-chart')); "
            "return c && c.data.datasets[0].data.length >= 2; }",
            timeout=40_000,
        )
        page.locator("#throughput").screenshot(path=str(artifacts / "overview-throughput.png"))
        page.screenshot(path=str(artifacts / "overview-throughput-page.png"), full_page=True)
    finally:
        stop.set()
        writer.join(timeout=15)
