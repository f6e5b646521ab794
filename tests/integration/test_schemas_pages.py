"""The schemas pages against the session's real registry: the list (search, global level), a subject's page
(versions, the schema pretty-printed, references both ways, topics, compatibility), the diff and check partials,
and the page's changes (register, compatibility, deletes) by role, confirmed and audited; no registry and a
registry that does not answer get a clear page, never an error page."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from console.config import registry as registry_settings
from console.models import AuditEntry
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.test_schemas_api import (
    ORDER_BAD,
    ORDER_V1,
    ORDER_V2,
    PROTO_X,
    PROTO_Y,
    direct,
    register_directly,
)
from tests.integration.test_schemas_api import no_registry as no_registry
from tests.integration.test_schemas_api import silent_registry as silent_registry

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

PAGES = "/clusters/local/schemas/"


@pytest.fixture
def registry(schema_registry: str, kafka_cluster: Any) -> Iterator[str]:
    registry_settings.reset_for_tests()
    yield schema_registry
    registry_settings.reset_for_tests()


def text(response: Any) -> str:
    return str(response.content.decode())


def test_the_list_searches_subjects_and_shows_the_global_level(registry: str) -> None:
    prefix = unique("kzpage")
    schema_id = register_directly(registry, f"{prefix}-orders-value", ORDER_V1)
    register_directly(registry, f"{prefix}-other-value", PROTO_X, "PROTOBUF")
    client = logged_in("viewer")
    page = client.get(PAGES, {"q": f"{prefix}-orders"})
    assert page.status_code == 200
    html = text(page)
    assert f'data-subject="{prefix}-orders-value"' in html
    assert f"{prefix}-other-value" not in html
    assert f'<td class="num mono">{schema_id}</td>' in html
    assert 'id="global-level">BACKWARD<' in html
    # A viewer gets no form to change the global level; an operator does.
    assert 'name="compatibility"' not in html
    assert 'name="compatibility"' in text(logged_in("operator").get(PAGES))
    # The search as htmx asks it: the table alone.
    partial = client.get(PAGES, {"q": f"{prefix}-other"}, HTTP_HX_REQUEST="true")
    assert text(partial).lstrip().startswith("{#") is False
    assert 'id="subjects"' in text(partial)
    assert "<html" not in text(partial)
    assert f"{prefix}-other-value" in text(partial)
    none = client.get(PAGES, {"q": f"{prefix}-nothing"})
    assert 'id="no-subjects"' in text(none)
    # "Open" goes to the subject's page.
    opened = client.get(PAGES, {"subject": f"{prefix}-orders-value"})
    assert opened.status_code == 302
    assert opened["Location"] == f"{PAGES}{prefix}-orders-value/"


def test_a_subjects_page_versions_references_topics_and_diff(registry: str) -> None:
    topic = create_topic(unique("kzpg"), partitions=1, replication=1)
    register_directly(registry, f"{topic}-key", PROTO_X, "PROTOBUF")
    ref = [{"name": "x.proto", "subject": f"{topic}-key", "version": 1}]
    register_directly(registry, f"{topic}-value", PROTO_Y, "PROTOBUF", ref)
    client = logged_in("viewer")
    key_page = text(client.get(f"{PAGES}{topic}-key/"))
    assert "message X { string id = 1; }" in key_page
    assert f'href="{PAGES}{topic}-value/?version=1">{topic}-value v1</a>' in key_page
    assert f'href="/clusters/local/topics/{topic}/">{topic}</a>' in key_page
    value_page = text(client.get(f"{PAGES}{topic}-value/"))
    assert f'<span class="mono">x.proto</span> → <a class="mono" href="{PAGES}{topic}-key/?version=1">' in value_page
    # Avro versions: pretty-printed, and the diff between them.
    subject = f"{topic}-avro"
    register_directly(registry, subject, ORDER_V1)
    register_directly(registry, subject, ORDER_V2)
    page = text(client.get(f"{PAGES}{subject}/", {"version": "1"}))
    assert "&quot;namespace&quot;: &quot;shop&quot;," in page
    assert 'aria-current="page" data-version="1"' in page
    diff = client.get(f"{PAGES}{subject}/diff/", {"from": "1", "to": "2"}, HTTP_HX_REQUEST="true")
    assert diff.status_code == 200
    rows = text(diff).split("<tr")
    added = [row for row in rows if row.startswith(' class="diff-added"')]
    removed = [row for row in rows if row.startswith(' class="diff-removed"')]
    # v2 adds the field qty: 5 lines more pretty-printed, nothing of v1 lost but a comma.
    assert any("&quot;qty&quot;" in row for row in added)
    assert len(added) - len(removed) == 5
    assert not any("&quot;id&quot;" in row for row in removed)
    same = client.get(f"{PAGES}{subject}/diff/", {"from": "2", "to": "2"}, HTTP_HX_REQUEST="true")
    assert 'id="diff-same"' in text(same)
    assert client.get(f"{PAGES}{subject}/diff/", {"from": "x", "to": "2"}).status_code == 400


def test_unknown_subject_and_version_pages_are_404s_with_the_register_form(registry: str) -> None:
    subject = f"{unique('kznew')}-value"
    page = logged_in("operator").get(f"{PAGES}{subject}/")
    assert page.status_code == 404
    assert 'id="subject-missing"' in text(page)
    assert 'id="register-button"' in text(page)
    register_directly(registry, subject, ORDER_V1)
    missing_version = logged_in("viewer").get(f"{PAGES}{subject}/", {"version": "7"})
    assert missing_version.status_code == 404
    assert "has no version &#x27;7&#x27;" in text(missing_version)


def test_check_and_register_from_the_page(registry: str) -> None:
    subject = f"{unique('kzform')}-value"
    register_directly(registry, subject, ORDER_V1)
    viewer = logged_in("viewer")
    form = {"schema": json.dumps(ORDER_BAD), "schema_type": "AVRO", "references": "", "against": "latest"}
    check = viewer.post(f"{PAGES}{subject}/check/", form, HTTP_HX_REQUEST="true")
    assert check.status_code == 200
    assert 'id="check-incompatible"' in text(check)
    ok = viewer.post(f"{PAGES}{subject}/check/", {**form, "schema": json.dumps(ORDER_V2), "against": "all"})
    assert 'id="check-compatible"' in text(ok)
    # A viewer may check, not register.
    refused = viewer.post(f"{PAGES}{subject}/action/", {**form, "action": "register"})
    assert refused.status_code == 403
    assert direct(f"{registry}/subjects/{subject}/versions")[1] == [1]
    operator = logged_in("operator")
    bad = operator.post(f"{PAGES}{subject}/action/", {**form, "action": "register"})
    assert bad.status_code == 409
    assert 'id="register-error"' in text(bad)
    assert "incompatible" in text(bad)
    assert "&quot;type&quot;: &quot;int&quot;" in text(bad) or '"type": "int"' in text(bad)
    made = operator.post(f"{PAGES}{subject}/action/", {**form, "schema": json.dumps(ORDER_V2), "action": "register"})
    assert made.status_code == 302
    assert made["Location"] == f"{PAGES}{subject}/?version=2"
    assert direct(f"{registry}/subjects/{subject}/versions")[1] == [1, 2]
    shown = text(operator.get(made["Location"]))
    assert "Registered under" in shown
    outcomes = AuditEntry.objects.filter(action="schemas.register", target=subject).values_list("outcome", flat=True)
    assert sorted(outcomes) == ["done", "failed", "refused"]


def test_compatibility_and_deletes_from_the_page(registry: str) -> None:
    subject = f"{unique('kzlevel')}-value"
    register_directly(registry, subject, ORDER_V1)
    register_directly(registry, subject, ORDER_V2)
    action = f"{PAGES}{subject}/action/"
    operator = logged_in("operator")
    assert operator.post(action, {"action": "compatibility", "compatibility": "FORWARD"}).status_code == 302
    assert direct(f"{registry}/config/{subject}")[1]["compatibilityLevel"] == "FORWARD"
    page = text(operator.get(f"{PAGES}{subject}/"))
    assert 'id="effective-level">FORWARD<' in page
    assert "(the subject's own level; global: " in page
    assert 'id="delete-section"' not in page
    # Operators may not delete; the refusal is shown and audited, nothing deleted.
    refused = operator.post(action, {"action": "delete_version", "version": "1"}, follow=True)
    assert "may not delete schemas" in text(refused)
    assert direct(f"{registry}/subjects/{subject}/versions")[1] == [1, 2]
    admin = logged_in("admin")
    assert 'id="delete-section"' in text(admin.get(f"{PAGES}{subject}/"))
    assert admin.post(action, {"action": "delete_version", "version": "1"}).status_code == 302
    assert direct(f"{registry}/subjects/{subject}/versions")[1] == [2]
    page = text(admin.get(f"{PAGES}{subject}/"))
    assert "v1 (soft-deleted)" in page
    # The subject's name must be typed to delete it.
    wrong = admin.post(action, {"action": "delete_subject", "confirm": "nope"}, follow=True)
    assert f"Type the subject&#x27;s name, {subject}" in text(wrong)
    assert direct(f"{registry}/subjects/{subject}/versions")[1] == [2]
    gone = admin.post(action, {"action": "delete_subject", "confirm": subject, "permanent": "1"})
    assert gone.status_code == 302
    assert gone["Location"] == PAGES
    assert direct(f"{registry}/subjects/{subject}/versions?deleted=true")[0] == 404
    done = set(AuditEntry.objects.filter(action="schemas.delete").values_list("target", "outcome"))
    assert {(f"{subject} v1", "refused"), (f"{subject} v1", "done"), (subject, "done")} <= done


def test_without_a_registry_the_pages_say_how_to_configure_one(no_registry: None, kafka_cluster: Any) -> None:
    client = logged_in("viewer")
    page = client.get(PAGES)
    assert page.status_code == 200
    assert 'id="no-registry"' in text(page)
    assert "SCHEMA_REGISTRY_URL" in text(page)
    subject = client.get(f"{PAGES}orders-value/")
    assert subject.status_code == 200
    assert 'id="no-registry"' in text(subject)
    # The navigation leads here.
    assert f'href="{PAGES}"' in text(client.get("/clusters/local/topics/"))


def test_a_registry_that_does_not_answer_is_said_so_without_waiting(silent_registry: str) -> None:
    client = logged_in("viewer")
    started = time.monotonic()
    page = client.get(PAGES)
    assert time.monotonic() - started < 5
    assert page.status_code == 503
    assert 'id="registry-down"' in text(page)
    assert "did not answer within 1 s" in text(page)
    started = time.monotonic()
    subject = client.get(f"{PAGES}orders-value/")
    assert time.monotonic() - started < 1  # left alone after the first time-out: said at once
    assert subject.status_code == 503
    assert 'id="registry-down"' in text(subject)
