"""Client quotas against the session's cluster (ZooKeeper mode, and KRaft on the KRaft run): set through the
API and read back by the API and by Kafka's own kafka-configs; a producer throttled by a quota set in the
console and free again once it is removed; bad input refused before anything changes; defaults; roles and
the audit log. Every quota a test sets is removed before it ends."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaProducer

from broker.local import launcher
from console.models import AuditEntry
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, unique
from tests.integration.kafka_tools import run_tool

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

API = "/api/clusters/local/quotas/"
CONFIG_COMMAND = "kafka.admin.ConfigCommand"  # kafka-configs (in the core jar of 3.9 and 4.x)


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Iterator[Client]:
    admin = logged_in("admin")
    set_here: list[dict[str, Any]] = []
    admin.set_here = set_here  # type: ignore[attr-defined]
    yield admin
    for entity in set_here:  # clean up whatever a failed test left
        body = admin.get(API).json()
        for found in body["entities"]:
            if found["entity"] == entity:
                post(admin, {"entity": entity, "remove": list(found["quotas"])})


def post(client: Client, body: dict[str, Any]) -> Any:
    return client.post(API, body, content_type="application/json")


def set_quota(client: Client, entity: dict[str, Any], values: dict[str, Any]) -> Any:
    client.set_here.append(entity)  # type: ignore[attr-defined]
    answer = post(client, {"entity": entity, "set": values})
    assert answer.status_code == 200, answer.content
    return answer.json()


def quotas_of(client: Client, entity: dict[str, Any]) -> dict[str, Any] | None:
    answer = client.get(API)
    assert answer.status_code == 200, answer.content
    return next((e["quotas"] for e in answer.json()["entities"] if e["entity"] == entity), None)


def until(what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


def throttle_ms(client_id: str, topic: str, total: int = 1_000_000) -> tuple[float, float]:
    """(avg, max) produce throttle time a fresh producer with ``client_id`` reports after sending ``total``
    bytes as fast as it can."""
    producer = KafkaProducer(
        bootstrap_servers=BOOTSTRAP, client_id=client_id, batch_size=256 * 1024, linger_ms=20, acks=1
    )
    try:
        chunk = b"q" * 10_000
        for _ in range(total // len(chunk)):
            producer.send(topic, chunk)
        producer.flush(timeout=120)
        metrics = producer.metrics().get("producer-metrics", {})
    finally:
        producer.close(timeout=10)
    avg = metrics.get("produce-throttle-time-avg", metrics.get("throttle-time-avg"))
    peak = metrics.get("produce-throttle-time-max", metrics.get("throttle-time-max"))
    assert avg is not None, sorted(metrics)
    assert peak is not None, sorted(metrics)
    return float(avg), float(peak)


def throttled_or_none(client_id: str, topic: str, throttled: bool) -> tuple[float, float] | None:
    # 200 KB is twenty seconds' worth at the 10 KB/s quota, sent at once: throttled from its first responses, and
    # drained far sooner than a megabyte is under the quota.
    found = throttle_ms(client_id, topic, 200_000)
    return found if (found[1] > 0) == throttled else None


def test_a_client_quota_set_in_the_console_is_what_kafka_configs_describes(client: Client) -> None:
    client_id = unique("quota-app")
    entity = {"client-id": client_id}
    done = set_quota(client, entity, {"producer_byte_rate": 10240, "request_percentage": 150.5})
    assert done["set"] == {"producer_byte_rate": 10240, "request_percentage": 150.5}
    assert until("the quota listed", lambda: quotas_of(client, entity)) == {
        "producer_byte_rate": 10240,
        "request_percentage": 150.5,
    }
    described = run_tool(CONFIG_COMMAND, "--describe", "--entity-type", "clients", "--entity-name", client_id)
    assert "producer_byte_rate=10240.0" in described, described
    assert "request_percentage=150.5" in described, described

    removed = post(client, {"entity": entity, "key": "request_percentage", "remove": True})
    assert removed.status_code == 200, removed.content
    assert until("one quota left", lambda: quotas_of(client, entity) == {"producer_byte_rate": 10240})
    assert post(client, {"entity": entity, "remove": ["producer_byte_rate"]}).status_code == 200
    assert until("no quota left", lambda: quotas_of(client, entity) is None)
    described = run_tool(CONFIG_COMMAND, "--describe", "--entity-type", "clients", "--entity-name", client_id)
    assert "producer_byte_rate" not in described, described

    audit = list(AuditEntry.objects.filter(action="quotas.change", target=f"client-id {client_id}").order_by("id"))
    assert [e.outcome for e in audit] == ["done"] * 3
    assert audit[0].params["set"] == {"producer_byte_rate": 10240, "request_percentage": 150.5}


def test_a_producer_is_throttled_by_a_quota_and_free_again_after_its_removal(client: Client) -> None:
    topic = create_topic(unique("quota"), partitions=1, replication=1)
    client_id = unique("throttled")
    entity = {"client-id": client_id}
    assert throttle_ms(client_id, topic, 200_000) == (0.0, 0.0)  # no quota: never throttled

    set_quota(client, entity, {"producer_byte_rate": 10240})
    # Brokers learn of the quota from ZooKeeper or the metadata log: a fresh producer until one is throttled.
    throttled = until("a throttled producer", lambda: throttled_or_none(client_id, topic, throttled=True))
    print(f"throttle under 10 KB/s: avg {throttled[0]:.0f} ms, max {throttled[1]:.0f} ms")
    assert throttled[1] > 0

    assert post(client, {"entity": entity, "remove": ["producer_byte_rate"]}).status_code == 200
    free = until("an unthrottled producer", lambda: throttled_or_none(client_id, topic, throttled=False))
    print(f"after removal: avg {free[0]:.0f} ms, max {free[1]:.0f} ms")
    assert free == (0.0, 0.0)


def test_bad_quotas_are_refused_with_the_reason_and_nothing_changes(client: Client) -> None:
    client_id = unique("refused")
    entity = {"client-id": client_id}
    negative = post(client, {"entity": entity, "key": "producer_byte_rate", "value": -5})
    assert negative.status_code == 400
    assert "cannot be negative" in negative.json()["message"]
    unknown = post(client, {"entity": entity, "key": "connection_creation_rate", "value": 5})
    assert unknown.status_code == 400
    assert "Unknown quota 'connection_creation_rate'" in unknown.json()["message"]
    made_up = post(client, {"entity": {"user": "bob"}, "set": {"bytes_per_fortnight": 1}})
    assert made_up.status_code == 400
    assert "bytes_per_fortnight" in made_up.json()["message"]
    mixed = post(client, {"entity": {"ip": "10.0.0.1", "user": "bob"}, "key": "connection_creation_rate", "value": 1})
    assert mixed.status_code == 400
    assert "IP quota stands alone" in mixed.json()["message"]
    # Kafka's own validation (validate_only first): not an IP address.
    kafka_says = post(client, {"entity": {"ip": "not-an-ip"}, "key": "connection_creation_rate", "value": 5})
    assert kafka_says.status_code == 422, kafka_says.content
    assert "Kafka refused" in kafka_says.json()["message"]
    listed = client.get(API).json()["entities"]
    assert not [e for e in listed if client_id in str(e["entity"]) or e["entity"] in ({"ip": "not-an-ip"},)]


def test_defaults_of_users_of_user_client_pairs_and_of_ips(client: Client) -> None:
    user_default: dict[str, Any] = {"user": None}
    pair = {"user": "quota-alice", "client-id": None}
    ip_default: dict[str, Any] = {"ip": None}
    set_quota(client, user_default, {"consumer_byte_rate": 50_000_000})
    set_quota(client, pair, {"controller_mutation_rate": 12.5})
    set_quota(client, ip_default, {"connection_creation_rate": 1000})
    until("the defaults listed", lambda: len(client.get(API).json()["entities"]) >= 3)
    found = {e["label"]: e for e in client.get(API).json()["entities"]}
    assert found["user <default>"]["quotas"] == {"consumer_byte_rate": 50_000_000}
    assert found["user <default>"]["default"] is True
    assert found["user quota-alice, client-id <default>"]["quotas"] == {"controller_mutation_rate": 12.5}
    assert found["ip <default>"]["quotas"] == {"connection_creation_rate": 1000}
    described = run_tool(CONFIG_COMMAND, "--describe", "--entity-type", "users", "--entity-default")
    assert "consumer_byte_rate=5.0E7" in described, described
    # The page lists them, and removes one.
    page = client.get("/clusters/local/quotas/")
    assert page.status_code == 200
    assert b"quota-alice" in page.content
    assert b"connection_creation_rate" in page.content
    removed = client.post(
        "/clusters/local/quotas/",
        {"action": "remove", "ip_default": "1", "key": "connection_creation_rate"},
        follow=True,
    )
    assert removed.status_code == 200
    assert b"removed from ip &lt;default&gt;" in removed.content
    for entity, key in ((user_default, "consumer_byte_rate"), (pair, "controller_mutation_rate")):
        assert post(client, {"entity": entity, "remove": [key]}).status_code == 200
    assert until("the defaults gone", lambda: not client.get(API).json()["entities"])


def test_the_page_sets_a_quota_and_a_viewer_may_only_look(client: Client) -> None:
    client_id = unique("paged")
    client.set_here.append({"client-id": client_id})  # type: ignore[attr-defined]
    answer = client.post(
        "/clusters/local/quotas/",
        {"action": "set", "client_id": client_id, "key": "producer_byte_rate", "value": "2048"},
        follow=True,
    )
    assert answer.status_code == 200
    assert b"set to 2048" in answer.content, answer.content
    assert until("the quota listed", lambda: quotas_of(client, {"client-id": client_id})) == {
        "producer_byte_rate": 2048
    }

    viewer = logged_in("viewer", "quota-viewer")
    assert viewer.get(API).status_code == 200
    page = viewer.get("/clusters/local/quotas/")
    assert page.status_code == 200
    assert client_id.encode() in page.content
    assert b'id="quota-form"' not in page.content
    refused = post(viewer, {"entity": {"client-id": client_id}, "remove": ["producer_byte_rate"]})
    assert refused.status_code == 403
    assert "change client quotas" in refused.json()["message"]
    assert quotas_of(client, {"client-id": client_id}) == {"producer_byte_rate": 2048}
    assert AuditEntry.objects.filter(action="quotas.change", username="quota-viewer", outcome="refused").exists()

    assert post(client, {"entity": {"client-id": client_id}, "remove": ["producer_byte_rate"]}).status_code == 200
