"""The schemas pages in real Chromium against the session's registry (Apicurio): a subject found by the search,
its page, the diff between two versions, a compatibility check of an incompatible and a compatible draft (no
reload), and registering the compatible one; then a console with no registry and one whose registry does not
answer. Screenshots in var/test-artifacts/schemas-*.png."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from console.devserver import running_console
from tests.browser.conftest import ADMIN, log_in
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.test_schemas_api import direct

pytestmark = [pytest.mark.kafka, pytest.mark.browser]

ORDER_V1 = {"type": "record", "name": "Order", "namespace": "shop", "fields": [{"name": "id", "type": "string"}]}
ORDER_V2 = {**ORDER_V1, "fields": [*ORDER_V1["fields"], {"name": "qty", "type": "int", "default": 1}]}
ORDER_V3 = {**ORDER_V2, "fields": [*ORDER_V2["fields"], {"name": "note", "type": ["null", "string"], "default": None}]}
ORDER_BAD = {**ORDER_V1, "fields": [{"name": "id", "type": "long"}]}


def registry_call(base: str, path: str, body: Any = None) -> Any:
    """The registry's own answer (through the integration tests' helper, which repeats a dropped request)."""
    status, answer = direct(base + path, "GET" if body is None else "POST", body)
    assert status == 200, answer
    return answer


def test_subject_diff_check_and_register(schema_registry: str, console_url: str, page: Any, artifacts: Path) -> None:
    topic = create_topic(unique("schemas-browser"), partitions=1)
    subject = f"{topic}-value"
    for schema in (ORDER_V1, ORDER_V2):
        registry_call(schema_registry, f"/subjects/{subject}/versions", {"schema": json.dumps(schema)})
    page.on("dialog", lambda dialog: dialog.accept())

    # A busy registry: a search matching 30 subjects shows them 25 a page.
    busy = unique("busy")
    for i in range(30):
        kind = ("PROTOBUF", "JSON", "AVRO")[i % 3]
        text = {
            "PROTOBUF": f'syntax = "proto3";\nmessage M{i} {{ string id = 1; }}\n',
            "JSON": json.dumps({"type": "object", "title": f"T{i}", "properties": {"id": {"type": "string"}}}),
            "AVRO": json.dumps({**ORDER_V1, "name": f"Order{i}"}),
        }[kind]
        registry_call(schema_registry, f"/subjects/{busy}-{i:02d}-value/versions", {"schema": text, "schemaType": kind})
    page.goto(f"{console_url}/clusters/local/schemas/?q={busy}")
    expect(page.locator("#subject-table tbody tr")).to_have_count(25)
    expect(page.locator(".pager")).to_contain_text("1–25 of 30")
    expect(page.locator(f"#subject-table tr[data-subject='{busy}-01-value'] td").nth(1)).to_have_text("JSON")
    page.screenshot(path=str(artifacts / "schemas-busy.png"), full_page=True)

    page.goto(f"{console_url}/clusters/local/schemas/")
    expect(page.locator("nav.sections a[aria-current='page']")).to_have_text("Schemas")
    page.fill("#subject-search", topic)
    row = page.locator(f"#subject-table tr[data-subject='{subject}']")
    row.wait_for(timeout=20_000)
    expect(row.locator("td").nth(1)).to_have_text("AVRO")
    expect(row.locator("td").nth(2)).to_have_text("2")
    page.screenshot(path=str(artifacts / "schemas-list.png"), full_page=True)

    row.locator("a").click()
    page.wait_for_url(f"**/schemas/{subject}/")
    expect(page.locator("#schema-text")).to_contain_text('"name": "qty"')
    expect(page.locator("#topics-using")).to_contain_text(topic)
    page.evaluate("window.kazamiSamePage = true")

    # The diff between v1 and v2, drawn in place.
    page.select_option("#diff-from", "1")
    page.select_option("#diff-to", "2")
    page.click("#diff-button")
    added = page.locator("#diff-lines tr.diff-added")
    added.first.wait_for(timeout=20_000)
    expect(page.locator("#diff-lines")).to_contain_text('"qty"')
    assert page.evaluate("window.kazamiSamePage") is True

    # An incompatible draft, then a compatible one: the registry's verdict, in place.
    page.fill("#draft-text", json.dumps(ORDER_BAD, indent=2))
    page.click("#check-button")
    expect(page.locator("#check-incompatible")).to_be_visible(timeout=20_000)
    page.fill("#draft-text", json.dumps(ORDER_V3, indent=2))
    page.select_option("#check-against", "all")
    page.click("#check-button")
    expect(page.locator("#check-compatible")).to_be_visible(timeout=20_000)
    assert page.evaluate("window.kazamiSamePage") is True
    page.screenshot(path=str(artifacts / "schemas-subject.png"), full_page=True)

    # Register it (confirmed): version 3, shown.
    page.click("#register-button")
    page.wait_for_url(f"**/schemas/{subject}/?version=3")
    expect(page.locator(".flash")).to_contain_text("version 3")
    expect(page.locator("#schema-text")).to_contain_text('"name": "note"')
    assert registry_call(schema_registry, f"/subjects/{subject}/versions") == [1, 2, 3]
    assert page.errors == []


@pytest.fixture
def console_without_registries(
    kafka_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, float]]:
    """A console whose default cluster has no registry, and whose cluster ``other`` (the same brokers) has one
    that accepts connections and never answers (a 1 s time-out)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    var = tmp_path_factory.mktemp("console-no-registry")
    clusters = var / "clusters.toml"
    servers = json.dumps(BOOTSTRAP.split(","))
    clusters.write_text(
        f"[clusters.other]\nbootstrap_servers = {servers}\n"
        f"[clusters.other.schema_registry]\nurl = 'http://127.0.0.1:{listener.getsockname()[1]}'\ntimeout = 1\n"
    )
    settings = {"SCHEMA_REGISTRY_URL": "", "KAZAMI_CLUSTERS_FILE": str(clusters)}
    try:
        with running_console(var, settings, {ADMIN[0]: ("admin", ADMIN[1])}) as url:
            yield url, 1.0
    finally:
        listener.close()


def test_no_registry_and_a_registry_that_does_not_answer(
    console_without_registries: tuple[str, float], browser: Any, artifacts: Path
) -> None:
    url, timeout = console_without_registries
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        log_in(page, url, ADMIN)
        answer = page.goto(f"{url}/clusters/local/schemas/")
        assert answer is not None
        assert answer.status == 200
        expect(page.locator("#no-registry")).to_contain_text("SCHEMA_REGISTRY_URL")
        page.screenshot(path=str(artifacts / "schemas-no-registry.png"), full_page=True)
        started = time.monotonic()
        answer = page.goto(f"{url}/clusters/other/schemas/")
        assert time.monotonic() - started < timeout + 4
        assert answer is not None
        assert answer.status == 503
        expect(page.locator("#registry-down")).to_contain_text("did not answer within 1 s")
        page.screenshot(path=str(artifacts / "schemas-registry-down.png"), full_page=True)
        assert errors == []
    finally:
        context.close()
