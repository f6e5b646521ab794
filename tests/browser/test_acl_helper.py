"""The ACL helper in real Chromium against a real authorizer (tests/acl_cluster.py): an admin chooses
"consumer of topic T in group G", sees exactly the bindings it will create as the form is filled in, creates
them, finds them in the list, and opens the principal's page, which says what it may do."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from console.devserver import running_console
from tests.acl_cluster import NAME, PASSWORD_ENV, AclCluster
from tests.browser.conftest import ADMIN, log_in

pytestmark = [pytest.mark.kafka, pytest.mark.browser]


@pytest.fixture(scope="module")
def acl_console(acl_cluster: AclCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A console of its own that knows the secured cluster as ``secure`` (as its SASL_SSL user)."""
    var = tmp_path_factory.mktemp("acl-console")
    settings = {
        "KAZAMI_CLUSTERS_FILE": str(acl_cluster.write_clusters_file(var)),
        PASSWORD_ENV: acl_cluster.admin_password,
    }
    with running_console(var, settings, {ADMIN[0]: ("admin", ADMIN[1])}) as url:
        yield url


@pytest.fixture
def admin_page(browser: Any, acl_console: str) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    log_in(page, acl_console, ADMIN)
    yield page
    context.close()


def test_the_consumer_helper_previews_creates_and_lists_the_bindings(
    acl_console: str, admin_page: Any, artifacts: Path
) -> None:
    page = admin_page
    who = f"User:shop-{secrets.token_hex(3)}"
    topic, group = f"orders-{secrets.token_hex(3)}", f"billing-{secrets.token_hex(3)}"
    page.goto(f"{acl_console}/clusters/{NAME}/acls/")
    page.click("#acl-new-link")
    page.click("#acl-helpers a[data-helper=consumer]")
    page.wait_for_url("**helper=consumer**")
    assert page.locator("#acl-preview-empty").is_visible()

    page.fill("#acl-principal", who)
    page.fill("#acl-topic", topic)
    page.fill("#acl-group", group)
    rows = page.locator("#acl-preview-table tbody tr")
    expect(rows).to_have_count(3)
    shown = set(rows.evaluate_all("rows => rows.map(r => r.dataset.resource + ' ' + r.dataset.operation)"))
    assert shown == {f"TOPIC:{topic} READ", f"TOPIC:{topic} DESCRIBE", f"GROUP:{group} READ"}
    page.screenshot(path=str(artifacts / "acl-helper.png"), full_page=True)

    # A typo in the principal's type: the preview says why, before anything is created.
    page.fill("#acl-principal", "user:" + who.split(":", 1)[1])
    page.wait_for_selector("#acl-new-error")
    assert "Did you mean User:" in page.locator("#acl-new-error").inner_text()
    page.fill("#acl-principal", who)
    expect(rows).to_have_count(3)

    page.click("#acl-create")
    page.wait_for_url("**/acls/?principal=**")
    assert "3 ACLs created." in page.locator(".flash").inner_text()
    listed = page.locator(f'#acls tbody tr[data-principal="{who}"]')
    assert listed.count() == 3
    page.screenshot(path=str(artifacts / "acl-list.png"), full_page=True)

    page.click(f'#acls tbody tr[data-principal="{who}"] >> nth=0 >> a:has-text("{who}")')
    page.wait_for_url("**/principals/**")
    topic_row = page.locator(f'#rights tr[data-resource="TOPIC:{topic}:LITERAL"]')
    assert topic_row.locator("[data-allowed]").evaluate_all("e => e.map(x => x.dataset.allowed)") == [
        "READ",
        "DESCRIBE",
    ]
    page.screenshot(path=str(artifacts / "acl-principal.png"), full_page=True)
    assert page.errors == []
