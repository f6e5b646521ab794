"""A user with scoped roles in Chromium (issue 33): an admin makes the user on the Users page, leaves it without a
global role ("grants only") and gives it a grant; the user then sees only its topics and groups, live lists
included, the navigation offers only the pages that follow grants, and a page of the whole cluster says why not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import log_in
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_groups import commit

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.browser,
    pytest.mark.zookeeper("what grants reach does not depend on the cluster's mode: run once"),
]

SAM = ("scoped-sam", "kz-Scoped-Sams-Pass-2!")


def test_an_admin_gives_grants_on_the_users_page_and_the_user_sees_only_what_they_reach(
    page: Any, browser: Any, console_url: str, artifacts: Path
) -> None:
    team = unique("squad")
    ours, theirs = f"{team}.orders", unique("elsewhere")
    for topic in (ours, theirs):
        create_topic(topic, partitions=1, replication=1)
    produce(ours, [(b"k", b'{"n": 1}')])
    commit(f"{team}-app", {(ours, 0): 1})
    commit(f"{theirs}-app", {(theirs, 0): 0})

    page.goto(f"{console_url}/users/")
    page.fill(".new-user #id_username", SAM[0])
    page.fill(".new-user #id_password", SAM[1])
    page.click(".new-user button[type=submit]")
    page.wait_for_url(f"{console_url}/users/")
    row = page.locator("tr", has_text=SAM[0])
    row.locator("select[name=role]").select_option("")
    row.locator("button[type=submit]").click()
    page.wait_for_url(f"{console_url}/users/")
    for spec in ((SAM[0], "topic", f"{team}.*", "operator"), (SAM[0], "group", f"{team}-*", "viewer")):
        page.fill("#new-grant #id_user", spec[0])
        page.fill("#new-grant #id_cluster", "local")
        page.select_option("#new-grant #id_resource", spec[1])
        page.fill("#new-grant #id_pattern", spec[2])
        page.select_option("#new-grant #id_role", spec[3])
        page.click("#new-grant button[type=submit]")
        page.wait_for_url(f"{console_url}/users/")
    granted = page.locator("tr", has_text=SAM[0]).text_content() or ""
    assert f"local:topic:{team}.*:operator" in granted
    assert f"local:group:{team}-*:viewer" in granted

    context = browser.new_context(viewport={"width": 1280, "height": 800})
    sam = context.new_page()
    errors: list[str] = []
    sam.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        log_in(sam, console_url, SAM)
        assert sam.url.endswith("/clusters/local/topics/")  # its landing page: the whole cluster's is not its
        assert "(scoped)" in (sam.text_content(".who") or "")
        sections = sam.locator("nav.sections a").all_text_contents()
        assert sections == ["Topics", "Groups", "Schemas", "Connect", "Analytics"]
        listed = sam.text_content("#topics-table") or ""
        assert ours in listed
        assert theirs not in listed

        sam.goto(f"{console_url}/clusters/local/groups/")
        sam.wait_for_timeout(1500)  # a push or two of the live list, drawn for the grants
        groups = sam.text_content("main") or ""
        assert f"{team}-app" in groups
        assert f"{theirs}-app" not in groups
        assert not sam.is_visible("text=/metrics")  # every cluster's figures, and every group's report: not its
        assert not sam.is_visible("button:has-text('Lag report')")
        sam.screenshot(path=str(artifacts / "scoped-groups.png"), full_page=True)

        sam.goto(f"{console_url}/clusters/local/topics/{ours}/")
        assert sam.is_visible("text=Produce")
        assert sam.goto(f"{console_url}/clusters/local/topics/{theirs}/").status == 404
        refused = sam.goto(f"{console_url}/clusters/local/brokers/configs/")
        assert refused.status == 403
        assert "scoped to some of its resources" in (sam.text_content("main") or "")
        sam.screenshot(path=str(artifacts / "scoped-refused.png"), full_page=True)
        assert errors == []
    finally:
        context.close()
