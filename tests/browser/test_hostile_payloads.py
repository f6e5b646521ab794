"""A corpus of hostile keys, values, headers and group ids, shown on every page that draws them, in
real Chromium: nothing runs, the content-security policy is never even tested (no violation), the
text is shown as text, and a 10 MB value never reaches the browser whole."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer

from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.test_groups import commit

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.browser,
    pytest.mark.zookeeper("escaping payloads does not depend on the cluster's mode: run once"),
]

# Each payload, if it ever ran, would set window.__pwned to its own name.
MARKUP = [
    "<script>window.__pwned='script'</script>",
    "<img src=x onerror=\"window.__pwned='img'\">",
    '"><svg onload="window.__pwned=\'svg\'">',
    "'><body onload=\"window.__pwned='body'\">",
    "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
    '<a href="javascript:window.__pwned=\'link\'" id="evil-link">click me</a>',
    "javascript:window.__pwned='url'",
    "</textarea></pre></td><script>window.__pwned='breakout'</script>",
    "<style>body{display:none}</style><link rel=stylesheet href=//evil.example/x.css>",
    "{{ 7|add:7 }} {% csrf_token %} ${7*7} #{7*7}",
    '<meta http-equiv="refresh" content="0;url=javascript:window.__pwned=\'meta\'">',
]
BIDI = "invoice\u202egnp.exe\u202c and \u2066isolated\u2069 \u200b zero-width"
BROKEN_UTF8 = b"\xff\xfe\xc3(<script>window.__pwned='binary'</script>\x00\x01\x7f"
JSON_VALUE = json.dumps({"html": "<script>window.__pwned='json'</script>", "onclick": "window.__pwned='attr'"})
BIG = b"<script>window.__pwned='big'</script>" * (10 * 1024 * 1024 // 38)  # about 10 MB
GROUPS = [
    "<img src=x onerror=\"window.__pwned='group'\">",
    "\"><script>window.__pwned='group2'</script>",  # holds "/": its pages must still be reachable
]

WATCH = """
window.__pwned = undefined;
window.__violations = [];
document.addEventListener('securitypolicyviolation',
    (e) => window.__violations.push(e.violatedDirective + ' ' + e.blockedURI));
for (const name of ['alert', 'confirm', 'prompt']) { window[name] = () => { window.__pwned = name; }; }
"""


def produce_corpus(topic: str) -> int:
    """Every payload as key, value and header; returns the offset of the 10 MB message."""
    producer = KafkaProducer(
        bootstrap_servers=BOOTSTRAP.split(","), acks="all", max_request_size=12 * 1024 * 1024, linger_ms=0
    )
    try:
        records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes]]]] = []
        for text in MARKUP:
            records.append((text.encode(), text.encode(), [(text, text.encode()), ("x-bidi", BIDI.encode())]))
        records.append((BIDI.encode(), BIDI.encode(), []))
        records.append((BROKEN_UTF8, BROKEN_UTF8, [("x-binary", BROKEN_UTF8)]))
        records.append((b"json", JSON_VALUE.encode(), []))
        for key, value, headers in records:
            producer.send(topic, key=key, value=value, headers=headers, partition=0).get(timeout=30)
        big = producer.send(topic, key=b"big", value=BIG, partition=0).get(timeout=60)
        producer.send(topic, key=b"after-big", value=b"still here", partition=0).get(timeout=30)
        return int(big.offset)
    finally:
        producer.close(timeout=10)


@pytest.fixture
def watched(page: Any) -> Any:
    page.add_init_script(WATCH)
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    return page


def assert_nothing_ran(page: Any, where: str) -> None:
    assert page.evaluate("window.__pwned") is None, f"{where}: a payload ran"
    assert page.evaluate("window.__violations") == [], f"{where}: the page broke its content-security policy"
    assert page.dialogs == [], where
    assert [e for e in page.errors if "favicon" not in e] == [], where


def test_no_payload_runs_on_any_page_that_shows_it(console_url: str, watched: Any, artifacts: Path) -> None:
    page = watched
    topic = create_topic(unique("hostile"), partitions=1, replication=1, configs={"max.message.bytes": "12582912"})
    big_offset = produce_corpus(topic)
    for group in GROUPS:
        commit(group + unique(""), {(topic, 0): 3})
    base = f"{console_url}/clusters/local/topics/{topic}"

    # The partition's page: every payload as text, the 10 MB value cut short on the server.
    sizes: list[int] = []
    page.on("response", lambda r: sizes.append(len(r.body())) if "/partitions/0/" in r.url else None)
    page.goto(f"{base}/partitions/0/?limit=100")
    rows = page.locator("#messages tbody tr")
    assert rows.count() == big_offset + 2
    text = page.locator("#messages").inner_text()
    for payload in MARKUP:
        assert payload[:40] in text, payload
    assert "gnp.exe" in text
    assert max(sizes) < 2 * 1024 * 1024, "the 10 MB value was sent to the browser"
    page.screenshot(path=str(artifacts / "hostile-partition.png"), full_page=True)
    assert_nothing_ran(page, "partition page")

    # Each message's own page, in every decoding.
    for offset in range(big_offset + 1):
        for how in ("auto", "text", "hex"):
            page.goto(f"{base}/partitions/0/offsets/{offset}/?value_as={how}&key_as={how}")
            assert_nothing_ran(page, f"message {offset} as {how}")
    page.goto(f"{base}/partitions/0/offsets/0/")
    assert MARKUP[0] in page.locator("#message-value").inner_text()
    page.screenshot(path=str(artifacts / "hostile-message.png"), full_page=True)

    # Find by key, with a hostile key typed in.
    page.goto(f"{base}/find-key/")
    page.fill("#find-key", MARKUP[1])
    page.press("#find-key", "Enter")
    page.locator("#key-results tbody tr").first.wait_for(timeout=10_000)
    assert_nothing_ran(page, "find by key")

    # Search over the websocket: the matches arrive as fragments.
    page.goto(f"{base}/search/")
    page.fill("#search-q", 'value like "%script%"')
    page.click("#search-start")
    page.locator("#search-results tr").nth(4).wait_for(timeout=20_000)
    page.screenshot(path=str(artifacts / "hostile-search.png"), full_page=True)
    assert_nothing_ran(page, "search")

    # Live tail: hostile messages produced while the page watches.
    page.goto(f"{base}/tail/")
    page.locator("#tail-status:has-text('Waiting for new messages')").wait_for(timeout=15_000)
    time.sleep(1.0)
    produce_corpus(topic)
    page.locator("#tail-rows tr:has-text('still here')").wait_for(timeout=30_000)
    assert_nothing_ran(page, "tail")

    # Produce through the form: the echo of what was written, and the audit log that records it.
    page.goto(f"{base}/produce/")
    page.fill("#id_key", MARKUP[2])
    page.fill("#id_value", MARKUP[0])
    page.click("main button[type=submit]")
    page.locator("text=Written to partition").wait_for(timeout=10_000)
    assert_nothing_ran(page, "produce")
    page.goto(f"{console_url}/audit/?action=message.produce")
    assert MARKUP[2][:20] in page.locator("table.audit").inner_text()
    assert_nothing_ran(page, "audit log")

    # Groups with hostile ids: the list, and each group's page reached by its link.
    page.goto(f"{console_url}/clusters/local/groups/?q=pwned")
    links = page.locator("#groups-table tbody a")
    assert links.count() == len(GROUPS)
    assert_nothing_ran(page, "group list")
    hrefs = [links.nth(index).get_attribute("href") or "" for index in range(len(GROUPS))]
    for index, href in enumerate(hrefs):
        # Followed by address, not clicked: the list's live refresh can redraw the table under a click (a CI
        # rehearsal's click landed on a replaced row and never navigated).
        assert "/groups/" in href
        page.goto(console_url + href)
        assert "pwned" in page.locator("h1").inner_text()
        assert_nothing_ran(page, f"group page {index}")
    page.screenshot(path=str(artifacts / "hostile-group.png"), full_page=True)
