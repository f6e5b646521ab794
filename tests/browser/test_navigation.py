"""The navigation in real Chromium: every section of the three groups opens and marks itself current, the skip
link reaches the page, and a live page does not move when its websocket connects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.kafka_helpers import create_topic, unique

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


def test_every_section_opens_from_the_navigation_and_marks_itself(console_url: str, page: Any, artifacts: Path) -> None:
    page.goto(f"{console_url}/clusters/local/")
    groups = page.locator("nav.sections .nav-group")
    assert [groups.nth(i).get_attribute("aria-label") for i in range(groups.count())] == ["Cluster", "Data", "Security"]
    links = page.locator("nav.sections a")
    found = [(links.nth(i).inner_text(), links.nth(i).get_attribute("href")) for i in range(links.count())]
    titles = [title for title, _ in found]
    # The admin sees every section; a ZooKeeper-mode cluster has ZooKeeper and no Controllers (KRaft: the reverse).
    for expected in (
        "Overview",
        "Replication",
        "Disks",
        "Broker configs",
        "Quotas",
        "Topics",
        "Groups",
        "Transactions",
    ):
        assert expected in titles
    for expected in ("Schemas", "Connect", "Analytics", "ACLs", "SCRAM users", "Masking", "Users", "Audit log"):
        assert expected in titles
    assert ("ZooKeeper" in titles) != ("Controllers" in titles)
    page.screenshot(path=str(artifacts / "navigation.png"))
    for title, href in found:
        answer = page.goto(f"{console_url}{href}")
        assert answer is not None
        assert answer.status in (200, 503), (title, answer.status)  # 503: a service this run does not start
        if answer.status == 200:
            current = page.locator("nav.sections a[aria-current='page']")
            assert current.count() == 1, title
            assert current.inner_text() == title

    # A page under a section marks that section: a topic's messages mark Topics.
    topic = create_topic(unique("nav"), partitions=1)
    page.goto(f"{console_url}/clusters/local/topics/{topic}/messages/")
    assert page.locator("nav.sections a[aria-current='page']").inner_text() == "Topics"


def test_the_skip_link_and_a_live_page_that_does_not_move(console_url: str, page: Any, artifacts: Path) -> None:
    # Where the heading is as the page is parsed, before any script or websocket ran; then once it is live.
    page.add_init_script(
        "document.addEventListener('DOMContentLoaded', () => {"
        " const r = document.querySelector('main h1').getBoundingClientRect(); window.__before = [r.x, r.y]; });"
    )
    page.goto(f"{console_url}/clusters/local/")
    page.locator("#live-status:not([hidden])").wait_for(timeout=15_000)  # the websocket is open
    page.wait_for_timeout(1000)  # and has pushed
    after = page.evaluate(
        "(() => { const r = document.querySelector('main h1').getBoundingClientRect(); return [r.x, r.y]; })()"
    )
    assert page.evaluate("window.__before") == after
    page.screenshot(path=str(artifacts / "live-overview.png"))

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    page.keyboard.press("Enter")
    assert page.evaluate("location.hash") == "#main"


def test_dark_mode_follows_the_system_setting(
    console_url: str, browser: Any, admin_state: str, artifacts: Path
) -> None:
    colours = {}
    for scheme in ("light", "dark"):
        context = browser.new_context(
            viewport={"width": 1280, "height": 800}, storage_state=admin_state, color_scheme=scheme
        )
        try:
            page = context.new_page()
            page.goto(f"{console_url}/clusters/local/topics/")
            page.locator("#topics-table").wait_for(timeout=15_000)
            colours[scheme] = page.evaluate(
                """() => ({
                    page: getComputedStyle(document.body).backgroundColor,
                    text: getComputedStyle(document.body).color,
                    head: getComputedStyle(document.querySelector('#topics-table th')).backgroundColor,
                })"""
            )
            page.screenshot(path=str(artifacts / f"topics-{scheme}.png"))
        finally:
            context.close()
    assert colours["light"]["page"] == "rgb(246, 247, 249)"
    assert colours["dark"]["page"] == "rgb(15, 20, 28)"
    assert colours["dark"]["text"] == "rgb(227, 232, 240)"  # light text on the dark page
    assert colours["dark"]["head"] != colours["light"]["head"]


@pytest.mark.parametrize("path", ["groups/", "topics/", "analytics/", "acls/"])
def test_nothing_scrolls_sideways_at_800_px(console_url: str, page: Any, artifacts: Path, path: str) -> None:
    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"{console_url}/clusters/local/{path}")
    page.wait_for_load_state("networkidle")
    widest = page.evaluate("document.documentElement.scrollWidth")
    assert widest <= 800, f"{path} is {widest} px wide at 800 px"
    page.screenshot(path=str(artifacts / f"800px-{path.strip('/')}.png"), full_page=True)
