"""Broker configs against the session's cluster (ZooKeeper mode, and KRaft on the KRaft run): the console lists
what Kafka describes, a dynamic change made in the console takes effect on the broker (read back with
kafka-python) per broker and as the cluster default, deleting it restores the default, Kafka's refusals come
back as 422 with its reason and change nothing, viewers are refused, and every change is audited."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from broker.client.connection import send_request
from broker.local import launcher
from console.models import AuditEntry
from tests.conftest import logged_in
from tests.integration.kafka_helpers import admin

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

BROKERS = (0, 1, 2)
# Dynamic on Kafka 3.9 and 4.x, per broker and as the cluster default, and cheap to change: a change of
# message.max.bytes or of the log.cleaner.* configs restarts the log cleaner, which allocates a new 128 MB
# dedupe buffer each time and soon runs the test brokers' small heaps out (the broker then stops applying
# dynamic configs until restarted).
PER_BROKER = "log.flush.interval.messages"
CLUSTER_WIDE = "log.retention.ms"


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Iterator[Client]:
    yield logged_in("admin")
    restore()


def described(broker: int) -> dict[str, Any]:
    """What kafka-python's admin client describes of ``broker``'s configs."""
    kafka = admin()
    try:
        answer = kafka.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(broker))], include_synonyms=True, config_filter="all"
        )
    finally:
        kafka.close()
    configs: dict[str, Any] = answer["broker"][str(broker)]
    return configs


def send_delete(kafka: KafkaAdminClient, name: str, broker: int | None, config: str) -> None:
    resource = ConfigResource(ConfigResourceType.BROKER, name, {config: ("DELETE", None)})
    request = kafka._alter_configs_request([resource], validate_only=False, incremental=True)
    send_request(kafka, request, node=broker)


def restore() -> None:
    """Delete every config these tests change, on each broker and as the cluster default."""
    kafka = admin()
    try:
        for config in (PER_BROKER, CLUSTER_WIDE):
            for broker in BROKERS:
                send_delete(kafka, str(broker), broker, config)
            send_delete(kafka, "", None, config)  # the cluster default: Kafka's broker resource ""
    finally:
        kafka.close()


def until(what: str, check: Callable[[], Any], timeout: float = 30) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}; broker 1 says {described(1)[PER_BROKER]}")


def source_of(broker: int, config: str) -> tuple[str | None, str]:
    entry = described(broker)[config]
    return entry["value"], str(entry["config_source"])


def post(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(f"/api/clusters/local/{path}", body, content_type="application/json")


def audited(target: str) -> list[tuple[str, dict[str, Any]]]:
    return [
        (e.outcome, e.params) for e in AuditEntry.objects.filter(action="broker.configs", target=target).order_by("at")
    ]


SOURCES = {
    "STATIC_BROKER_CONFIG": "static",
    "DYNAMIC_BROKER_CONFIG": "dynamic_broker",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "dynamic_default",
    "DEFAULT_CONFIG": "default",
}


def test_the_api_lists_each_brokers_configs_as_kafka_describes_them(client: Client) -> None:
    for broker in BROKERS:
        answer = client.get(f"/api/clusters/local/brokers/{broker}/configs/")
        assert answer.status_code == 200, answer.content
        ours = {c["name"]: c for c in answer.json()["configs"]}
        theirs = described(broker)
        assert set(ours) == set(theirs)
        for name, entry in theirs.items():
            got = ours[name]
            assert got["sensitive"] == entry["is_sensitive"], name
            assert got["read_only"] == entry["read_only"], name
            assert got["value"] == (None if entry["is_sensitive"] else entry["value"]), name
            assert got["source"] == SOURCES[entry["config_source"]], name
        assert ours["broker.id" if "broker.id" in ours else "node.id"]["value"] == str(broker)
    sensitive = [c for c in ours.values() if c["sensitive"]]
    assert sensitive
    assert all(c["value"] is None for c in sensitive)

    compared = client.get("/api/clusters/local/brokers/configs/").json()
    assert compared["brokers"] == [{"id": b, "error": None} for b in BROKERS]
    rows = {c["name"]: c for c in compared["configs"]}
    assert rows["broker.id"]["differs"]
    assert not rows[PER_BROKER]["differs"]
    assert set(rows[PER_BROKER]["values"]) == {"0", "1", "2"}
    assert {c["name"] for c in client.get("/api/clusters/local/brokers/configs/?only=differs").json()["configs"]} >= {
        "broker.id",
        "listeners",
    }
    assert client.get("/api/clusters/local/brokers/configs/?only=nonsense").status_code == 400


def test_a_change_for_one_broker_takes_effect_differs_and_deleting_it_restores_the_default(client: Client) -> None:
    default = described(1)[PER_BROKER]["value"]
    changed = post(client, "brokers/1/configs/", {"set": {PER_BROKER: "2000000"}})
    assert changed.status_code == 200, changed.content
    until("broker 1 to use the new value", lambda: source_of(1, PER_BROKER) == ("2000000", "DYNAMIC_BROKER_CONFIG"))
    assert source_of(0, PER_BROKER) == (default, "DEFAULT_CONFIG")
    assert {"name": PER_BROKER, "value": "2000000", "source": "dynamic_broker"}.items() <= next(
        c for c in changed.json()["configs"] if c["name"] == PER_BROKER
    ).items()

    page = client.get("/clusters/local/brokers/configs/", {"only": "differs"})
    assert page.status_code == 200
    html = page.content.decode()
    assert f'data-config="{PER_BROKER}" class="row-warn" data-differs="1"' in html
    assert "2000000" in html
    broker_page = client.get("/clusters/local/brokers/1/configs/", {"q": PER_BROKER}).content.decode()
    assert f'data-config="{PER_BROKER}" data-source="dynamic_broker"' in broker_page

    # Deleted through the page's form: back to the default.
    deleted = client.post(
        "/clusters/local/brokers/1/configs/", {"name": PER_BROKER, "action": "delete", "scope": "broker"}
    )
    assert deleted.status_code == 302
    until("broker 1 back on the default", lambda: source_of(1, PER_BROKER) == (default, "DEFAULT_CONFIG"))
    assert not client.get("/api/clusters/local/brokers/configs/", {"q": PER_BROKER}).json()["configs"][0]["differs"]
    assert audited("broker 1") == [
        ("done", {"set": {PER_BROKER: "2000000"}, "delete": []}),
        ("done", {"set": {}, "delete": [PER_BROKER]}),
    ]


def test_a_cluster_default_takes_effect_on_every_broker_and_deleting_it_restores_the_default(client: Client) -> None:
    default = described(0)[CLUSTER_WIDE]["value"]
    assert post(client, "brokers/configs/", {"set": {CLUSTER_WIDE: "604800000"}}).status_code == 200
    everywhere = ("604800000", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    until(
        "every broker to take the cluster default",
        lambda: all(source_of(b, CLUSTER_WIDE) == everywhere for b in BROKERS),
    )
    # A value of the broker's own wins over the cluster default, and the page says where each comes from.
    form = {"name": CLUSTER_WIDE, "value": "604800001", "action": "set", "scope": "broker"}
    assert client.post("/clusters/local/brokers/2/configs/", form).status_code == 302
    until("broker 2's own value", lambda: source_of(2, CLUSTER_WIDE) == ("604800001", "DYNAMIC_BROKER_CONFIG"))
    page = client.get("/clusters/local/brokers/2/configs/", {"q": CLUSTER_WIDE}).content.decode()
    assert "dynamic · broker" in page
    assert "dynamic · cluster default" in page

    form = {"name": CLUSTER_WIDE, "action": "delete", "scope": "default"}
    assert client.post("/clusters/local/brokers/0/configs/", form).status_code == 302
    until("broker 0 back on the default", lambda: source_of(0, CLUSTER_WIDE) == (default, "DEFAULT_CONFIG"))
    assert source_of(2, CLUSTER_WIDE) == ("604800001", "DYNAMIC_BROKER_CONFIG")
    assert [o for o, _ in audited("cluster default")] == ["done", "done"]
    assert audited("broker 2") == [("done", {"set": {CLUSTER_WIDE: "604800001"}, "delete": []})]


@pytest.mark.parametrize(
    ("value", "reason"),
    [("-5", "Value must be at least 1"), ("lots", "Not a number"), ("", "")],
    ids=["negative", "text", "empty"],
)
def test_a_bad_value_is_refused_with_kafkas_reason_and_nothing_changes(client: Client, value: str, reason: str) -> None:
    before = described(1)[PER_BROKER]
    for path in ("brokers/1/configs/", "brokers/configs/"):
        refused = post(client, path, {"set": {PER_BROKER: value}})
        assert refused.status_code == 422, refused.content
        assert refused.json()["error"] == "kafka_refused"
        assert reason in refused.json()["message"]
        assert "Nothing was changed" in refused.json()["message"]
    page = client.post("/clusters/local/brokers/1/configs/", {"name": PER_BROKER, "value": value, "action": "set"})
    assert page.status_code == 422
    assert 'id="config-refused"' in page.content.decode()
    time.sleep(1)
    assert described(1)[PER_BROKER] == before
    assert [o for o, _ in audited("broker 1")] == ["failed", "failed"]


def test_read_only_and_unknown_configs_are_refused(client: Client) -> None:
    read_only = post(client, "brokers/1/configs/", {"set": {"broker.id": "7"}})
    assert read_only.status_code == 422, read_only.content
    assert "broker.id" in read_only.json()["message"]
    unknown = post(client, "brokers/1/configs/", {"set": {"message.max.byts": "7"}})
    assert unknown.status_code == 400
    assert "message.max.byts" in unknown.json()["message"]
    assert post(client, "brokers/1/configs/", {"set": {}}).status_code == 400
    assert described(1)["broker.id"]["value"] == "1"
    assert "message.max.byts" not in described(1)


def test_a_viewer_sees_the_configs_but_may_not_change_them(client: Client) -> None:
    viewer = logged_in("viewer", "configs-viewer")
    assert viewer.get("/api/clusters/local/brokers/0/configs/").status_code == 200
    page = viewer.get("/clusters/local/brokers/0/configs/")
    assert page.status_code == 200
    assert 'id="cluster-default-form"' not in page.content.decode()
    before = described(0)[PER_BROKER]
    assert post(viewer, "brokers/0/configs/", {"set": {PER_BROKER: "2000000"}}).status_code == 403
    assert post(viewer, "brokers/configs/", {"set": {PER_BROKER: "2000000"}}).status_code == 403
    form = {"name": PER_BROKER, "value": "2000000", "action": "set", "scope": "broker"}
    assert viewer.post("/clusters/local/brokers/0/configs/", form).status_code == 403
    time.sleep(1)
    assert described(0)[PER_BROKER] == before
    assert [o for o, _ in audited("broker 0")] == ["refused", "refused"]
    assert [o for o, _ in audited("cluster default")] == ["refused"]
