"""A user walks from the topic list down to one message and back out to a live tail, in real Chromium."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from broker.messages.partitioners import murmur2_partition, placements
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_topic_list_to_message_to_find_by_key_to_live_tail(console_url: str, page: Any, artifacts: Path) -> None:
    name = create_topic(unique("walk"), partitions=3)
    produce(name, [(f"user-{i % 7}".encode(), json.dumps({"n": i, "page": f"/p/{i}"}).encode()) for i in range(150)])
    busy = murmur2_partition(b"user-1", 3)  # holds at least the 21 messages of user-1
    produce(
        name,
        [(b"<b>bold</b>", b"<script>window.__pwned = true</script><img src=x onerror='window.__pwned=1'>")],
        partition=busy,
        headers=[("x-html", b"<svg onload=alert(1)>")],
    )

    # The topic list, filtered down to our topic by typing.
    page.goto(f"{console_url}/clusters/local/topics/")
    page.fill("#topic-filter", name)
    page.locator(f'#topics-table a:text-is("{name}")').wait_for(timeout=10_000)
    page.screenshot(path=str(artifacts / "topics.png"), full_page=True)
    page.click(f'#topics-table a:text-is("{name}")')

    # The topic: three partitions with their offsets.
    page.wait_for_url(f"**/topics/{name}/")
    assert page.locator("#partitions tbody tr[data-partition]").count() == 3
    page.screenshot(path=str(artifacts / "topic.png"), full_page=True)
    page.click(f'#partitions tr[data-partition="{busy}"] a')

    # The partition's first page; then the next page.
    page.wait_for_url(f"**/topics/{name}/partitions/{busy}/")
    rows = page.locator("#messages tbody tr")
    assert rows.count() >= 1
    first_offset = rows.first.locator("td").first.inner_text().strip()
    assert first_offset == "0"
    page.screenshot(path=str(artifacts / "partition.png"), full_page=True)
    assert page.evaluate("window.__pwned") is None  # the hostile message rendered as text
    page.fill('input[name="limit"]', "10")
    page.press('input[name="limit"]', "Enter")
    page.wait_for_url("**limit=10**")
    page.click("#next-page")
    page.wait_for_url("**offset=10**")
    assert page.locator("#messages tbody tr").first.locator("td").first.inner_text().strip() == "10"

    # One message, by its own URL.
    page.locator("#messages tbody tr").first.locator("td a").first.click()
    page.wait_for_url(f"**/topics/{name}/partitions/{busy}/offsets/10/")
    assert '"n": ' in page.locator("#message-value").inner_text()
    page.screenshot(path=str(artifacts / "message.png"), full_page=True)

    # Find by key: only the partitions the two default partitioners give the key are read.
    page.click("text=Find by key")
    page.fill("#find-key", "user-3")
    page.press("#find-key", "Enter")
    expected = murmur2_partition(b"user-3", 3)
    placed = placements(b"user-3", 3)  # murmur2, crc32 and fnv1a, in that order
    named = sorted(set(placed.values()))
    by = [name for name, p in placed.items() if p == expected]
    page.locator("#key-partition").wait_for(timeout=10_000)
    said = page.locator("#key-partition").inner_text()
    if len(named) == 1:
        assert f"Searched partition {expected} only." in said
    else:
        assert f"Searched partitions {' and '.join(str(p) for p in named)}." in said
    assert f"Found in partition {expected}: where {' and '.join(by)} put{'s' if len(by) == 1 else ''} it." in said
    assert page.locator("#key-results tbody tr").count() == len([i for i in range(150) if i % 7 == 3])
    page.screenshot(path=str(artifacts / "find-by-key.png"), full_page=True)

    # Every partition: the search page reads them all, with progress, started at once.
    page.select_option("#find-partitioner", "all")
    page.press("#find-key", "Enter")
    page.wait_for_url("**/search/?*")
    assert page.locator("#search-q").input_value() == 'key == "user-3"'
    page.locator("#search-state:has-text('done')").wait_for(timeout=20_000)
    assert page.locator("#search-results tr").count() == len([i for i in range(150) if i % 7 == 3])
    page.screenshot(path=str(artifacts / "find-by-key-everywhere.png"), full_page=True)

    # Live tail: a message produced now appears without a reload.
    page.click("text=Live tail")
    page.locator("#tail-status:has-text('Waiting for new messages')").wait_for(timeout=15_000)
    page.evaluate("window.__sameDocument = true")
    time.sleep(1.0)
    produce(name, [(b"live-key", b'{"hello": "from the test"}')])
    page.locator("#tail-rows tr:has-text('from the test')").wait_for(timeout=15_000)
    assert page.evaluate("window.__sameDocument") is True
    page.screenshot(path=str(artifacts / "tail.png"), full_page=True)
    assert page.evaluate("window.__pwned") is None
    assert [e for e in page.errors if "favicon" not in e] == []
