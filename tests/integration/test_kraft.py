"""The console on a KRaft cluster (run with KAZAMI_TEST_CLUSTER=kraft: Kafka 4 with three controllers of
their own), and what it says about KRaft on a ZooKeeper-mode cluster."""

from __future__ import annotations

import time

import pytest
from django.test import Client

from broker.client.config import ClusterConfig
from broker.local import launcher
from console.config import clusters
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import active_controller, admin

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]
kraft_only = pytest.mark.kraft_only


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


@kraft_only
def test_the_overview_knows_the_mode_the_release_and_the_active_controller(client: Client) -> None:
    body = client.get("/api/clusters/local/").json()
    kafka = admin()
    try:
        leader = active_controller(kafka)
        features = kafka.describe_features()
    finally:
        kafka.close()
    assert body["mode"] == "kraft"
    assert body["version"] == "4.3"
    assert body["protocol_version"] == "4.3-IV0"
    assert body["controller"] == {"id": leader, "is_broker": False}
    assert body["features"]["metadata.version"] == features["metadata.version"]["finalized"][1]
    assert body["features"] == {n: f["finalized"][1] for n, f in features.items() if f.get("finalized")}
    assert not any(b["is_controller"] for b in body["brokers"])  # never a broker, whatever DescribeCluster says
    html = client.get("/clusters/local/").content.decode()
    assert "ZooKeeper" not in html
    assert f"controller {leader}" in html
    assert 'id="features"' in html


@kraft_only
def test_the_quorum_api_matches_kafkas_own_description(client: Client) -> None:
    response = client.get("/api/clusters/local/quorum/")
    assert response.status_code == 200
    body = response.json()
    kafka = admin()
    try:
        truth = kafka.describe_metadata_quorum()["topics"][0]["partitions"][0]
    finally:
        kafka.close()
    assert body["leader_id"] == truth["leader_id"]
    assert body["leader_epoch"] == truth["leader_epoch"]
    assert [v["id"] for v in body["voters"]] == [100, 101, 102]
    assert sorted(o["id"] for o in body["observers"]) == [0, 1, 2]
    assert body["leader_is_broker"] is False
    for replica in body["voters"] + body["observers"]:
        assert set(replica) >= {"id", "log_end_offset", "lag", "last_fetch", "last_caught_up"}
        assert replica["log_end_offset"] >= 0
        assert replica["lag"] == max(0, body["high_watermark"] - replica["log_end_offset"])
        assert replica["last_fetch"] > 1_700_000_000_000
    assert sorted(n["id"] for n in body["nodes"]) == [100, 101, 102]


@kraft_only
def test_stopping_the_active_controller_the_quorum_page_names_the_new_one(
    client: Client, kafka_cluster: launcher.ClusterLayout
) -> None:
    before = client.get("/api/clusters/local/quorum/").json()
    old = before["leader_id"]
    launcher.stop_controller(old, kafka_cluster.data, echo=lambda _: None)
    try:
        deadline = time.monotonic() + 60
        body = before
        while time.monotonic() < deadline:
            answer = client.get("/api/clusters/local/quorum/")
            if answer.status_code == 200:
                body = answer.json()
                if body["leader_id"] not in (None, old):
                    break
            time.sleep(0.5)
        assert body["leader_id"] not in (None, old), body
        assert body["leader_epoch"] > before["leader_epoch"]
        html = client.get("/clusters/local/quorum/").content.decode()
        assert f'<dd id="quorum-leader">{body["leader_id"]}' in html
        stopped = next(v for v in body["voters"] if v["id"] == old)
        assert stopped["lag"] is None or stopped["log_end_offset"] <= body["high_watermark"]
        assert client.get("/api/clusters/local/").json()["controller"]["id"] == body["leader_id"]
    finally:
        launcher.start_controller(old, kafka_cluster.data, echo=lambda _: None)


@kraft_only
def test_a_zookeeper_address_set_for_a_kraft_cluster_is_ignored_and_said_so(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ClusterConfig("local", tuple(BOOTSTRAP.split(",")), zookeeper_connect="127.0.0.1:1", max_age=0)
    monkeypatch.setattr(clusters, "get_configs", lambda: {"local": config})
    client = logged_in()
    body = client.get("/api/clusters/local/").json()
    assert body["mode"] == "kraft"
    assert body["zookeeper_ignored"] == "127.0.0.1:1"
    html = client.get("/clusters/local/").content.decode()
    assert 'id="zookeeper-ignored"' in html
    page = client.get("/clusters/local/zookeeper/")
    assert page.status_code == 200
    assert "it has no ZooKeeper" in page.content.decode()
    # Topic pages never wait for, or blame, the ZooKeeper that is not there.
    topics = client.get("/api/clusters/local/topics/")
    assert topics.status_code == 200


@pytest.mark.zookeeper("it checks what a ZooKeeper-mode cluster says of KRaft")
def test_a_zookeeper_mode_cluster_has_no_quorum_and_says_so(client: Client) -> None:
    api = client.get("/api/clusters/local/quorum/")
    assert api.status_code == 409
    assert api.json()["error"] == "not_supported"
    assert "ZooKeeper mode" in api.json()["message"]
    page = client.get("/clusters/local/quorum/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="not-kraft"' in html
    body = client.get("/api/clusters/local/").json()
    assert body["mode"] == "zookeeper"
    assert f"broker {body['controller']['id']}" in html
    zk = client.get("/clusters/local/zookeeper/").content.decode()
    assert 'id="zookeeper-serving"' in zk
    assert "pill-ok" in zk  # the test cluster's ZooKeeper serves
