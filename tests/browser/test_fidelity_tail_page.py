"""The live tail's transaction labels in real Chromium (issue 27): a record shown open is relabelled in place when
its transaction aborts (the pushed row swaps the one on the page by its id), markers are rows of their own, and
the pills are the partition page's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_the_tail_relabels_an_open_record_when_its_transaction_aborts(
    console_url: str, page: Any, artifacts: Path
) -> None:
    name = create_topic(unique("fid-tail-page"), partitions=1)
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("tx-tail-page"))
    producer.init_transactions()
    try:
        page.goto(f"{console_url}/clusters/local/topics/{name}/tail/")
        page.locator("#tail-status:has-text('Waiting for new messages')").wait_for(timeout=15_000)
        page.wait_for_timeout(1000)  # the reader has found where the partition ends
        producer.begin_transaction()
        producer.send(name, key=b"k", value=b"held-back", partition=0)
        producer.flush()
        page.locator("#msg-0-0 .tx:has-text('open')").wait_for(timeout=15_000)
        producer.abort_transaction()
        page.locator("#msg-0-0 .tx:has-text('aborted')").wait_for(timeout=15_000)
        page.locator("#msg-0-1.marker-abort").wait_for(timeout=15_000)
        producer.begin_transaction()
        producer.send(name, key=b"k", value=b"kept", partition=0)
        producer.flush()
        producer.commit_transaction()
        page.locator("#msg-0-2 .tx:has-text('committed')").wait_for(timeout=15_000)
        page.locator("#msg-0-3.marker-commit").wait_for(timeout=15_000)
    finally:
        producer.close(timeout=5)
    # One row per entry, newest first: the aborted record's row was swapped in place, not added again.
    ids = page.locator("#tail-rows tr").evaluate_all("rows => rows.map(r => r.id)")
    assert ids == ["msg-0-3", "msg-0-2", "msg-0-1", "msg-0-0"]
    assert page.locator("#msg-0-0").get_attribute("class") == "message-row tx-aborted"
    assert page.errors == []
    page.screenshot(path=str(artifacts / "tail-transactions.png"), full_page=True)
