"""A topic's messages across partitions in real Chromium: newest first with a record from each partition, a row
opened in place and closed again, the next page, and no horizontal overflow at 800 px."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_messages_newest_first_across_partitions_open_in_place(console_url: str, page: Any, artifacts: Path) -> None:
    name = create_topic(unique("merged-page"), partitions=3)
    now = int(time.time() * 1000)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    try:
        for i in range(60):
            body = {"n": i, "user": f"u{i % 7}", "notes": "long " * (600 if i == 59 else 3)}
            producer.send(
                name, key=f"u{i % 7}".encode(), value=json.dumps(body).encode(), partition=i % 3, timestamp_ms=now + i
            )
        producer.flush(timeout=30)
    finally:
        producer.close(timeout=10)

    page.goto(f"{console_url}/clusters/local/topics/{name}/")
    page.click("text=Messages")
    page.wait_for_url(f"**/topics/{name}/messages/")
    rows = page.locator("#messages tbody tr.message-row")
    assert rows.count() == 50
    first = rows.first.inner_text()
    assert '"n":59' in first.replace(" ", "")  # the newest record first
    partitions = {rows.nth(i).locator("td").first.inner_text().split()[-1] for i in range(3)}
    assert partitions == {"p0", "p1", "p2"}  # the three newest come from the three partitions
    page.screenshot(path=str(artifacts / "merged-newest.png"), full_page=True)

    # The newest record's value is long: the row shows its start; opened in place, all of it.
    page.locator("#messages tbody tr.message-row").first.locator("button.expand").click()
    opened = page.locator("#messages tr.expanded-row")
    opened.wait_for(timeout=10_000)
    assert opened.locator("pre.payload").nth(1).inner_text().count("long") == 600
    assert page.locator("#messages button.expand").first.get_attribute("aria-expanded") == "true"
    page.screenshot(path=str(artifacts / "merged-expanded.png"), full_page=True)
    page.locator("#messages button.expand").first.press("Enter")  # the keyboard closes it too
    assert page.locator("#messages tr.expanded-row").count() == 0

    # Older: the last ten, oldest of them record 0.
    page.click("#next-page")
    page.wait_for_url("**cursor=b**")
    assert page.locator("#messages tbody tr.message-row").count() == 10
    assert '"n":0' in page.locator("#messages tbody tr.message-row").last.inner_text().replace(" ", "")

    # At 800 px the page scrolls nowhere sideways; the table scrolls inside its box if it must.
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"{console_url}/clusters/local/topics/{name}/messages/?order=oldest")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    page.screenshot(path=str(artifacts / "merged-800px.png"), full_page=True)
