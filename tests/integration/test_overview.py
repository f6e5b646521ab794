"""The overview page and `GET /api/clusters/<name>/` against the real three-broker cluster."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from kafka import KafkaAdminClient

from broker.local import launcher
from tests.conftest import BASE_PORT, BOOTSTRAP, KRAFT, logged_in
from tests.integration.kafka_helpers import active_controller, wait_healthy, wait_known_everywhere

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def test_root_leads_to_the_local_cluster(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"] == "/clusters/local/"


def test_the_api_lists_brokers_and_controller_as_kafka_reports_them(client: Client) -> None:
    response = client.get("/api/clusters/local/")
    assert response.status_code == 200
    body = response.json()
    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP.split(","), bootstrap_timeout_ms=10_000)
    try:
        truth = admin.describe_cluster()
        controller = active_controller(admin)
    finally:
        admin.close()
    assert body["cluster_id"] == truth["cluster_id"]
    assert body["mode"] == ("kraft" if KRAFT else "zookeeper")
    # Separate KRaft controllers are not brokers; in ZooKeeper mode the controller is one of the brokers.
    assert body["controller"] == {"id": controller, "is_broker": not KRAFT}
    assert body["controller_id"] == controller
    assert sorted((b["id"], b["host"], b["port"]) for b in body["brokers"]) == [
        (0, "127.0.0.1", BASE_PORT),
        (1, "127.0.0.1", BASE_PORT + 1),
        (2, "127.0.0.1", BASE_PORT + 2),
    ]
    assert all(b["alive"] for b in body["brokers"])
    assert body["version"] == ("4.3" if KRAFT else "3.9")
    assert body["offline_partitions"] == 0


def test_the_api_lists_configured_clusters(client: Client) -> None:
    body = client.get("/api/clusters/").json()
    assert [c["name"] for c in body] == ["local"]
    assert body[0]["url"].endswith("/api/clusters/local/")


def test_the_page_shows_each_broker_and_the_controller(client: Client) -> None:
    api = client.get("/api/clusters/local/").json()
    response = client.get("/clusters/local/")
    assert response.status_code == 200
    html = response.content.decode()
    for port in (BASE_PORT, BASE_PORT + 1, BASE_PORT + 2):
        assert f"127.0.0.1:{port}" in html
    controller = api["controller"]["id"]
    assert (f"controller {controller}" if KRAFT else f"broker {controller}") in html
    assert api["cluster_id"] in html
    assert 'ws-connect="/ws/clusters/local/overview/"' in html


def test_partitions_are_counted_from_metadata(client: Client, kafka_cluster: launcher.ClusterLayout) -> None:
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP.split(","), bootstrap_timeout_ms=10_000)
    try:
        before = client.get("/api/clusters/local/").json()
        admin.create_topics([NewTopic("overview-count", 5, 3)])
        admin.wait_for_topics(["overview-count"], timeout_ms=20_000)
        wait_known_everywhere(admin, ["overview-count"])
        after = client.get("/api/clusters/local/").json()
    finally:
        admin.delete_topics(["overview-count"])
        admin.close()
    assert after["topics"] == before["topics"] + 1
    assert after["partitions"] == before["partitions"] + 5


def test_a_stopped_broker_shows_as_down_and_comes_back(client: Client, kafka_cluster: launcher.ClusterLayout) -> None:
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP.split(","), bootstrap_timeout_ms=10_000)
    admin.create_topics([NewTopic("overview-replicated", 3, 3)])
    admin.wait_for_topics(["overview-replicated"], timeout_ms=20_000)
    wait_known_everywhere(admin, ["overview-replicated"])
    try:
        assert client.get("/api/clusters/local/").status_code == 200  # the console has seen all three
        launcher.stop_broker(2, kafka_cluster.data, echo=lambda _: None)
        body = client.get("/api/clusters/local/").json()
        assert [b["id"] for b in body["brokers"] if not b["alive"]] == [2]
        assert body["brokers"][2]["port"] == BASE_PORT + 2  # its last known address stays
        assert body["under_replicated_partitions"] >= 3
        html = client.get("/clusters/local/").content.decode()
        assert "2 of 3 up" in html
    finally:
        admin.close()
        launcher.start_broker(2, kafka_cluster.data, echo=lambda _: None)
        wait_healthy()
        # A new client: the old one may still hold broker 2 as unknown (on KRaft, any broker may take
        # the "controller" requests kafka-python sends).
        admin = KafkaAdminClient(bootstrap_servers=BOOTSTRAP.split(","), bootstrap_timeout_ms=10_000)
        admin.delete_topics(["overview-replicated"])
        admin.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = client.get("/api/clusters/local/").json()
        if all(b["alive"] for b in body["brokers"]):
            break
        time.sleep(0.5)
    assert all(b["alive"] for b in body["brokers"])
