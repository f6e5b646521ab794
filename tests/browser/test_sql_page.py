# ruff: noqa: S608 - the queries are the subject under test, over topics the test names itself
"""SQL over topics in real Chromium against a real console whose jobs run on the session's Spark Connect server:
a query typed with the editor's completion (a topic after a backquote, a field after ``fields.``), run with
Ctrl+Enter; its 300 rows sorted by a column (numbers as numbers, nulls last), paged, and charted (a line over
time, bars by category); a query that returns nothing. Screenshots in var/test-artifacts/."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = [pytest.mark.browser, pytest.mark.kafka, pytest.mark.spark]

MINUTE = 60_000
BASE = (int(time.time() * 1000) // MINUTE - 400) * MINUTE
KINDS = ("buy", "view", "refund", "share")


@pytest.fixture(scope="module")
def orders(kafka_cluster: Any) -> tuple[str, list[dict[str, Any]]]:
    """300 JSON records a minute apart over 3 partitions: n (0..299, shuffled over time), kind, price (none
    on every tenth)."""
    topic = create_topic(unique("sqlb-orders"), partitions=3)
    docs: list[dict[str, Any]] = []
    for i in range(300):
        doc: dict[str, Any] = {"n": (i * 7) % 300, "kind": KINDS[i % 4]}
        if i % 10:
            doc["price"] = round(10 + (i % 37) * 1.5, 2)
        docs.append(doc)
    produce_timed(topic, [(None, json.dumps(d).encode(), BASE + i * MINUTE) for i, d in enumerate(docs)])
    return topic, docs


def column(page: Any, index: int) -> list[str]:
    """The texts of the table's column ``index`` (0-based) on the page shown."""
    return list(
        page.eval_on_selector_all("#sql-rows tbody tr", f"rows => rows.map(r => r.cells[{index}].textContent.trim())")
    )


def run_and_wait(page: Any) -> int:
    page.wait_for_url(re.compile(r"/analytics/jobs/\d+/$"), timeout=30_000)
    job_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    page.wait_for_selector("#job-result", timeout=240_000)  # the page reloads itself when the job ends
    return job_id


@pytest.mark.timeout(900)
def test_a_query_typed_run_sorted_paged_and_charted(
    page: Any, console_url: str, orders: Any, artifacts: Path, spark_server: str
) -> None:
    topic, docs = orders
    page.goto(f"{console_url}/clusters/local/analytics/sql/")
    editor = page.locator("#sql")
    # A backquote offers the topics; Enter takes the one chosen and closes its backquote.
    editor.click()
    editor.press_sequentially("SELECT  FROM `" + topic[:9])
    page.wait_for_selector("#sql-complete:not([hidden]) li")
    assert topic in page.locator("#sql-complete li").all_inner_texts()[0]
    for _ in range(page.locator("#sql-complete li").count()):
        if page.locator("#sql-complete li[aria-selected=true]").inner_text().startswith(topic):
            break
        editor.press("ArrowDown")
    editor.press("Enter")
    assert editor.input_value() == f"SELECT  FROM `{topic}`"
    # fields. offers the fields of the topics the query names, with their types.
    page.evaluate("() => { const e = document.getElementById('sql'); e.focus(); e.setSelectionRange(7, 7); }")
    editor.press_sequentially("fields.pr")
    page.wait_for_selector("#sql-complete:not([hidden]) li")
    offered = page.locator("#sql-complete li").all_inner_texts()
    assert [o.split()[0] for o in offered] == ["price"]
    assert "double" in offered[0]
    page.screenshot(path=str(artifacts / "sql-editor-completion.png"))
    editor.press("Tab")
    editor.press_sequentially(" AS price, fields.n AS n, fields.kind AS kind, timestamp")
    editor.press("Escape")
    expected_sql = f"SELECT fields.price AS price, fields.n AS n, fields.kind AS kind, timestamp FROM `{topic}`"
    assert editor.input_value() == expected_sql
    page.select_option("#sql-range", "all")
    # Saved, shared: the page opens it by its link, listed beside the editor.
    page.click("details.sql-save summary")
    page.fill("#sql-name", "orders by price")
    page.check("#sql-shared")
    page.click("#save-sql")
    page.wait_for_selector("#sql-saved")
    assert re.search(r"\?q=\d+&range=all&saved=1$", page.url)
    assert page.locator("#sql").input_value() == expected_sql
    assert page.locator("#sql-range").input_value() == "all"  # the range chosen stays
    assert "orders by price" in page.inner_text("#saved-queries")
    page.screenshot(path=str(artifacts / "sql-page-saved.png"))
    editor = page.locator("#sql")
    editor.focus()
    editor.press("Control+Enter")
    run_and_wait(page)
    page.wait_for_selector("#sql-result-app[data-ready='1']")
    assert page.inner_text("#sql-page-info").startswith("Rows 1–50 of 300")
    assert len(column(page, 0)) == 50

    # Sorted by n: numbers as numbers (0, 1, 2 ... not 0, 1, 10), then descending.
    page.click("th button[data-column=n]")
    assert column(page, 1)[:12] == [str(i) for i in range(12)]
    page.click("th button[data-column=n]")
    assert column(page, 1)[:3] == ["299", "298", "297"]
    assert page.get_attribute("th:has(button[data-column=n])", "aria-sort") == "descending"
    # Sorted by price: nulls last, whichever way; paged to the last page, where they are.
    page.click("th button[data-column=price]")
    prices = sorted(d["price"] for d in docs if "price" in d)
    first_page = [float(v.replace(",", "")) for v in column(page, 0)]
    assert first_page == prices[:50]
    page.click("#sql-next")
    assert page.inner_text("#sql-page-info").startswith("Rows 51–100 of 300")
    for _ in range(4):
        page.click("#sql-next")
    assert page.inner_text("#sql-page-info").startswith("Rows 251–300 of 300")
    assert page.is_disabled("#sql-next")
    last_page = column(page, 0)
    assert last_page[-30:] == ["null"] * 30
    assert "null" not in last_page[:-30]

    # The chart: price and n over timestamp, a line on the time axis.
    page.click("#chart-builder-card summary")
    page.select_option("#chart-x", "timestamp")
    page.check("#chart-y input[value=n]")
    page.check("#chart-y input[value=price]")
    page.click("#draw-chart")
    page.wait_for_selector("#sql-chart[data-drawn=line]")
    assert "Line of price, n by timestamp" in page.inner_text("#chart-note")
    page.screenshot(path=str(artifacts / "sql-result-many-rows.png"), full_page=True)

    # Bars by category: a grouped query, from the job page's "Edit and run again".
    page.click("#edit-sql")
    editor = page.locator("#sql")
    editor.fill(
        f"SELECT fields.kind AS kind, count(*) AS records, avg(fields.price) AS avg_price FROM `{topic}` GROUP BY 1"
    )
    page.select_option("#sql-range", "all")
    page.click("#run-sql")
    run_and_wait(page)
    page.wait_for_selector("#sql-result-app[data-ready='1']")
    page.click("th button[data-column=kind]")
    assert column(page, 0) == sorted(KINDS)
    assert [int(v) for v in column(page, 1)] == [sum(1 for d in docs if d["kind"] == k) for k in sorted(KINDS)]
    page.click("#chart-builder-card summary")
    page.select_option("#chart-x", "kind")
    page.click("#draw-chart")
    page.wait_for_selector("#sql-chart[data-drawn=bar]")
    page.screenshot(path=str(artifacts / "sql-result-bars.png"), full_page=True)

    # A query that returns nothing says so.
    page.goto(f"{console_url}/clusters/local/analytics/sql/")
    page.fill("#sql", f"SELECT * FROM `{topic}` WHERE fields.n < 0")
    page.select_option("#sql-range", "all")
    page.click("#run-sql")
    run_and_wait(page)
    assert "The query returned no rows." in page.inner_text("#sql-empty")
    page.screenshot(path=str(artifacts / "sql-result-empty.png"), full_page=True)
    assert page.errors == []
