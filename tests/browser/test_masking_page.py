"""Data masking in real Chromium: a viewer's message page and live tail show masked values with their
marker, an admin's the values whole, and the admin's masking page lists the rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.local import launcher
from console.devserver import running_console
from tests.browser.conftest import ADMIN, VIEWER, log_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.browser,
    pytest.mark.zookeeper("masking does not depend on the cluster's mode: run once"),
]

EMAIL = "ann.secret@example.com"
RULES = [
    {"name": "emails", "topics": "bmasked-*", "paths": ["$.user.email"]},
    {"name": "cards", "topics": "bmasked-*", "parts": ["value", "headers"], "regex": r"\d{4}(-\d{4}){3}"},
]


@pytest.fixture(scope="module")
def masked_console(kafka_cluster: launcher.ClusterLayout, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A console of its own whose settings hold masking rules (the session's console has none)."""
    settings = {"KAZAMI_LIVE_INTERVAL": "0.5", "KAZAMI_LAG_SAMPLER": "0", "KAZAMI_MASKING": json.dumps(RULES)}
    users = {ADMIN[0]: ("admin", ADMIN[1]), VIEWER[0]: ("viewer", VIEWER[1])}
    with running_console(tmp_path_factory.mktemp("masking-var"), settings, users) as url:
        yield url


def opened(browser: Any, url: str, user: tuple[str, str]) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    log_in(page, url, user)
    return page


def test_a_viewer_sees_masked_values_and_says_so(masked_console: str, browser: Any, artifacts: Path) -> None:
    name = create_topic(unique("bmasked"), partitions=1)
    value = {"user": {"email": EMAIL, "name": "Ann"}, "note": "paid with 4111-2222-3333-4444"}
    produce(
        name, [(b"user-1", json.dumps(value).encode())], partition=0, headers=[("auth", b"card 4111-2222-3333-4444")]
    )

    viewer = opened(browser, masked_console, VIEWER)
    viewer.goto(f"{masked_console}/clusters/local/topics/{name}/partitions/0/")
    marker = viewer.locator("#msg-0-0 .masked-note")
    marker.wait_for()
    assert "$.user.email" in marker.inner_text()
    assert EMAIL not in viewer.content()
    assert "4111" not in viewer.content()
    viewer.screenshot(path=str(artifacts / "masking-viewer-browse.png"), full_page=True)

    viewer.goto(f"{masked_console}/clusters/local/topics/{name}/partitions/0/offsets/0/")
    assert viewer.locator("#message-masked").is_visible()
    assert "masked" in viewer.locator("#message-value").inner_text() or "••••" in viewer.content()
    assert EMAIL not in viewer.content()
    viewer.screenshot(path=str(artifacts / "masking-viewer-message.png"), full_page=True)

    viewer.goto(f"{masked_console}/clusters/local/topics/{name}/tail/")
    viewer.wait_for_timeout(2000)  # the tail's reader has reached the end
    produce(name, [(b"user-2", json.dumps({"user": {"email": "fresh." + EMAIL}}).encode())], partition=0)
    row = viewer.locator("#tail-rows tr .masked-note")
    row.first.wait_for(timeout=20_000)
    assert "fresh." not in viewer.content()
    viewer.screenshot(path=str(artifacts / "masking-viewer-tail.png"), full_page=True)
    assert viewer.errors == []

    admin = opened(browser, masked_console, ADMIN)
    admin.goto(f"{masked_console}/clusters/local/topics/{name}/partitions/0/offsets/0/")
    assert EMAIL in admin.locator("#message-value").inner_text()
    assert admin.locator("#message-masked").count() == 0
    admin.click("text=Masking")
    admin.wait_for_url("**/masking/")
    assert admin.locator("#masking-rules tbody tr").count() == 2
    admin.fill("input[name=topic]", name)
    admin.fill("input[name=offset]", "0")
    admin.click("text=Show it as each role sees it")
    admin.locator("#masking-trial").wait_for()
    assert admin.locator("#masking-trial tr[data-role=viewer] .masked-note").is_visible()
    admin.screenshot(path=str(artifacts / "masking-admin-page.png"), full_page=True)
    assert admin.errors == []
