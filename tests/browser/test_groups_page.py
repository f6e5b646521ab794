"""A user watches the task-queue demo fall behind on the group page, without reloading it."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from broker.demo import tasks
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import until

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def _has_group(group: str) -> bool:
    import kafka.errors

    from tests.integration.kafka_helpers import admin

    client = admin()
    try:
        return bool(client.list_group_offsets(group))  # it has committed: the groups list shows it
    except kafka.errors.KafkaError:
        return False  # its coordinator is still being found
    finally:
        client.close()


def total_lag(page: Any) -> int:
    return int(re.sub(r"\D", "", page.locator("#total-lag").inner_text()) or 0)


def test_the_task_queue_lag_rises_on_the_page_without_a_reload(console_url: str, page: Any, artifacts: Path) -> None:
    stop = threading.Event()
    demo = threading.Thread(target=tasks.run, args=(BOOTSTRAP.split(","), None, 0, lambda _: None, stop), daemon=True)
    demo.start()
    try:
        # The demo's workers join their group first (on a KRaft cluster a CI run once took over a minute there).
        until("the demo's group", lambda: _has_group(tasks.GROUP), timeout=120)
        # Filtered to it: after a whole test run the cluster holds hundreds of groups, more than a page lists.
        page.goto(f"{console_url}/clusters/local/groups/?q={tasks.GROUP}")
        page.locator(f'#groups-table tr[data-group="{tasks.GROUP}"]').wait_for(timeout=60_000)
        page.screenshot(path=str(artifacts / "groups.png"), full_page=True)
        page.click(f'#groups-table a:text-is("{tasks.GROUP}")')
        page.wait_for_url(f"**/groups/{tasks.GROUP}/")
        page.locator("#live-status:not([hidden])").wait_for(timeout=10_000)
        page.evaluate("window.__sameDocument = true")
        deadline = time.monotonic() + 30
        while total_lag(page) < 1 and time.monotonic() < deadline:
            time.sleep(0.5)
        first = total_lag(page)
        deadline = time.monotonic() + 30
        while total_lag(page) <= first and time.monotonic() < deadline:
            time.sleep(0.5)
        assert total_lag(page) > first, "the lag did not rise on the open page"
        assert page.evaluate("window.__sameDocument") is True
        assert page.locator("#group-partitions tbody tr").count() == 2
        time.sleep(2)  # a few history samples for the chart
        page.reload()
        page.locator("#lag-chart").wait_for(timeout=10_000)
        assert page.locator("#chart-empty").is_hidden()
        page.screenshot(path=str(artifacts / "group.png"), full_page=True)
        assert [e for e in page.errors if "favicon" not in e] == []
    finally:
        stop.set()
        demo.join(timeout=15)
