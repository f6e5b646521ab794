"""Producing with a registry schema in real Chromium, by keyboard, against the session's registry (Apicurio): the
produce page chooses the topic's own subject and shows its schema, a refused document is shown under its field
with the input kept, a good one is sent; then the topic page names the subject and the messages page the share
of its schema id. Screenshots in var/test-artifacts/produce-schema*.png, topic-schemas.png,
messages-schema-shares.png."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.test_schemas_page import registry_call
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.test_schema_records import ORDER

pytestmark = [pytest.mark.kafka, pytest.mark.browser]

GOOD = {
    "id": 7,
    "customer": {"id": "42"},
    "amount": "1234.50",
    "at": "2026-11-27T03:01:05.678Z",
    "day": "2026-11-27",
    "ref": "7f1c0000-0000-4000-8000-000000000001",
    "status": "PAID",
    "note": None,
}


def test_produce_with_a_schema_by_keyboard(schema_registry: str, console_url: str, page: Any, artifacts: Path) -> None:
    topic = create_topic(unique("produce-schema"), partitions=1)
    subject = f"{topic}-value"
    schema_id = registry_call(schema_registry, f"/subjects/{subject}/versions", {"schema": json.dumps(ORDER)})["id"]

    page.goto(f"{console_url}/clusters/local/topics/{topic}/produce/")
    expect(page.locator("#id_value_format")).to_have_value("schema")
    expect(page.locator("#id_value_subject")).to_have_value(subject)
    expect(page.locator("#chosen-value summary")).to_contain_text(f"schema id {schema_id}")
    page.locator("#chosen-value summary").press("Enter")  # opens the schema, by keyboard
    expect(page.locator("#chosen-value pre")).to_contain_text('"name": "amount"')
    page.locator("#id_value").focus()
    page.keyboard.insert_text(json.dumps({**GOOD, "customer": {"id": 42}}, indent=2))
    page.screenshot(path=str(artifacts / "produce-schema.png"), full_page=True)
    page.locator(".produce-form button[type=submit]").focus()
    page.keyboard.press("Enter")
    page.wait_for_load_state()
    error = page.locator("#value-part .field.has-error .error")
    expect(error).to_have_text("value.customer.id: expected a string, got 42")
    expect(page.locator("#id_value")).to_have_value(json.dumps({**GOOD, "customer": {"id": 42}}, indent=2))
    expect(page.locator("#id_value")).to_be_focused()  # the field to fix has the focus
    error.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "produce-schema-error.png"), full_page=True)

    page.locator("#id_value").fill(json.dumps(GOOD, indent=2))
    page.locator(".produce-form button[type=submit]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#produced")).to_contain_text("Written to partition 0 at offset 0")
    expect(page.locator("#id_value_subject")).to_have_value(subject)  # the next message is written the same way

    page.goto(f"{console_url}/clusters/local/topics/{topic}/")
    link = page.locator(f"#topic-schemas a[href='/clusters/local/schemas/{subject}/']")
    expect(link).to_have_text(subject)
    page.locator("#topic-schemas").screenshot(path=str(artifacts / "topic-schemas.png"))

    page.goto(f"{console_url}/clusters/local/topics/{topic}/partitions/0/")
    expect(page.locator(f"#schema-shares tr[data-schema-id='{schema_id}']")).to_contain_text("1 of 1")
    expect(page.locator("#messages")).to_contain_text('"amount": "1234.50"')
    page.screenshot(path=str(artifacts / "messages-schema-shares.png"), full_page=True)
