"""Subjects whose names hold "/": confluent-kafka's Protobuf serializer registers an imported .proto under its path
("shop/common/money.proto"). The list shows them, and their pages, diff, check and API answer at the addresses
the pages link to (a list holding one such subject was a 500: no route took the name)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from console.config import registry as registry_settings
from tests.conftest import logged_in
from tests.integration.kafka_helpers import unique
from tests.integration.test_schemas_api import PROTO_X, direct

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def registry(schema_registry: str, kafka_cluster: Any) -> Iterator[str]:
    registry_settings.reset_for_tests()
    yield schema_registry
    registry_settings.reset_for_tests()


def test_a_subject_named_by_a_path_is_listed_and_its_pages_answer(registry: str) -> None:
    prefix = unique("kzpath")
    subject = f"{prefix}/common/money.proto"
    status, answer = direct(
        f"{registry}/subjects/{quote(subject, safe='')}/versions", "POST", {"schema": PROTO_X, "schemaType": "PROTOBUF"}
    )
    assert status == 200, answer
    client = logged_in("admin")
    listed = client.get("/clusters/local/schemas/", {"q": prefix})
    assert listed.status_code == 200
    links = re.findall(r'href="(/clusters/local/schemas/[^"]+)"', listed.content.decode())
    own = [link for link in links if prefix in link]
    assert own, links
    page = client.get(own[0])
    assert page.status_code == 200
    assert subject in page.content.decode()
    api = client.get(f"/api/clusters/local/schemas/{subject}/")
    assert api.status_code == 200, api.content[:300]
    assert api.json()["subject"] == subject
    version = client.get(f"/api/clusters/local/schemas/{subject}/versions/1/")
    assert version.status_code == 200, version.content[:300]
    assert "message X" in version.json()["schema"]
    diff = client.get(f"/clusters/local/schemas/{subject}/diff/", {"from": "1", "to": "1"})
    assert diff.status_code == 200, diff.content[:300]
    unknown = client.get(f"/clusters/local/schemas/{prefix}/no/such.proto/")
    assert unknown.status_code == 404
