"""The ZooKeeper browser, Kafka's registry explained and ZooKeeper's health, against the session's real
ZooKeeper-mode cluster; and, on a one-broker cluster of this module's own, ZooKeeper stopped while the
Kafka pages keep answering."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from broker.client.config import ClusterConfig
from broker.local import launcher
from broker.zk.client import close_clients
from console.config import clusters
from tests.conftest import BASE_PORT, BOOTSTRAP, TEST_VAR, ZOOKEEPER_PORT, logged_in
from tests.integration.kafka_helpers import admin, create_topic, unique

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db,
    pytest.mark.zookeeper("it browses the ZooKeeper of a ZooKeeper-mode cluster"),
]

API = "/api/clusters/local/zookeeper/"
PAGE = "/clusters/local/zookeeper/"
# The cluster whose ZooKeeper this module stops: one broker, ports of its own.
STOP_DATA = TEST_VAR / "zk-stop"
STOP_ZOOKEEPER_PORT = 12620
STOP_BASE_PORT = 19620
BOUND = 6.0  # seconds any ZooKeeper page may take when ZooKeeper is away (the cluster's time-out is 1 s)


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Iterator[Client]:
    close_clients()
    yield logged_in()
    close_clients()


def node(client: Client, path: str, **params: Any) -> dict[str, Any]:
    response = client.get(API, {"path": path, **params})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


def explained(body: dict[str, Any]) -> dict[str, str]:
    return {row["label"]: row["value"] for row in body["explained"]}


def test_the_root_holds_kafkas_registry(client: Client) -> None:
    body = node(client, "/")
    assert {"brokers", "controller", "controller_epoch", "cluster", "config", "admin", "zookeeper"} <= set(
        body["children"]
    )
    assert body["children_total"] == len(body["children"]) == body["stat"]["num_children"]
    assert body["stat"]["ephemeral_owner"] is None
    page = client.get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="zookeeper-serving"' in html
    assert "pill-ok" in html
    assert 'id="zk-tree"' in html
    assert 'href="/clusters/local/zookeeper/?path=/brokers"' in html
    # A node with children opens lazily: its level comes from the tree fragment.
    assert 'hx-get="/clusters/local/zookeeper/tree/?path=/brokers' in html


def test_brokers_ids_lists_the_three_brokers_and_each_registration_names_its_endpoint(client: Client) -> None:
    body = node(client, "/brokers/ids")
    assert body["children"] == ["0", "1", "2"]
    assert body["meaning"]["title"] == "Registered brokers"
    for broker in range(3):
        registration = node(client, f"/brokers/ids/{broker}")
        rows = explained(registration)
        assert rows["Broker"] == str(broker)
        assert rows["Endpoint PLAINTEXT"] == f"127.0.0.1:{BASE_PORT + broker}"
        assert json.loads(registration["data"])["port"] == BASE_PORT + broker
        assert registration["data_encoding"] == "utf-8"
        # Ephemeral: owned by the broker's session, which the explanation names too.
        owner = registration["stat"]["ephemeral_owner"]
        assert owner is not None
        assert owner.startswith("0x")
        assert rows["Session"].startswith(owner)
    html = client.get(PAGE, {"path": "/brokers/ids/0"}).content.decode()
    assert "Broker 0&#x27;s registration" in html
    assert f"127.0.0.1:{BASE_PORT}" in html
    assert 'id="zk-owner"' in html


def test_a_partitions_state_in_zookeeper_matches_kafkas_metadata(client: Client) -> None:
    topic = create_topic(unique("zk-state"), partitions=3)
    kafka = admin()
    try:
        partitions = kafka.describe_topics([topic])[0]["partitions"]
    finally:
        kafka.close()
    for p in partitions:
        body = node(client, f"/brokers/topics/{topic}/partitions/{p['partition_index']}/state")
        rows = explained(body)
        assert rows["Leader"] == f"broker {p['leader_id']}"
        assert sorted(int(b) for b in rows["In-sync replicas (ISR)"].split(", ")) == sorted(p["isr_nodes"])
        assert json.loads(body["data"])["leader_epoch"] == int(rows["Leader epoch"])
    assignment = explained(node(client, f"/brokers/topics/{topic}"))
    for p in partitions:
        replicas = ", ".join(str(r) for r in p["replica_nodes"])
        assert assignment[f"Partition {p['partition_index']}"] == f"replicas {replicas}"
    html = client.get(PAGE, {"path": f"/brokers/topics/{topic}/partitions/0/state"}).content.decode()
    assert "In-sync replicas (ISR)" in html
    assert f'href="/clusters/local/zookeeper/?path=/brokers/ids/{partitions[0]["leader_id"]}"' in html


def test_the_controller_node_names_the_controller_kafka_names(client: Client) -> None:
    kafka = admin()
    try:
        controller = kafka.describe_cluster()["controller_id"]
    finally:
        kafka.close()
    body = node(client, "/controller")
    assert explained(body)["Controller"] == f"broker {controller}"
    assert body["explained"][0]["znode"] == f"/brokers/ids/{controller}"
    assert int(explained(node(client, "/controller_epoch"))["Controller epoch"]) >= 1


def test_a_missing_path_is_404_and_the_page_offers_its_parent(client: Client) -> None:
    response = client.get(API, {"path": "/brokers/ids/999"})
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"
    assert "/brokers/ids/999" in response.json()["message"]
    page = client.get(PAGE, {"path": "/brokers/ids/999"})
    assert page.status_code == 404
    html = page.content.decode()
    assert "No such znode." in html
    assert 'href="/clusters/local/zookeeper/?path=/brokers/ids"' in html
    assert 'id="zk-tree"' in html  # the ancestors that exist are still drawn


@pytest.mark.parametrize(
    "params",
    [
        {"path": "brokers/ids"},
        {"path": "/brokers//ids"},
        {"path": "/brokers/../controller"},
        {"path": "/a\x00b"},
        {"path": "/brokers", "offset": "-1"},
        {"path": "/brokers", "limit": "0"},
        {"path": "/brokers", "limit": "many"},
    ],
)
def test_a_malformed_request_is_400_with_the_reason(client: Client, params: dict[str, str]) -> None:
    response = client.get(API, params)
    assert response.status_code == 400
    assert response.json()["error"] == "invalid_input"
    page = client.get(PAGE, params)
    assert page.status_code == 400
    html = page.content.decode()
    assert 'id="zk-problem"' in html
    assert 'id="zk-pathbox"' in html


def test_a_bad_decoding_is_400_and_each_decoding_shows_the_data(client: Client) -> None:
    assert client.get(PAGE, {"path": "/controller", "as": "avro"}).status_code == 400
    html = client.get(PAGE, {"path": "/controller", "as": "json"}).content.decode()
    assert "&quot;brokerid&quot;:" in html
    html = client.get(PAGE, {"path": "/controller", "as": "hex"}).content.decode()
    assert "00000000  7b 22" in html  # {"


def test_children_are_paged(client: Client) -> None:
    topic = create_topic(unique("zk-paged"), partitions=30, replication=1)
    path = f"/brokers/topics/{topic}/partitions"
    first = node(client, path, limit=7)
    assert first["children"] == [str(p) for p in range(7)]
    assert first["children_total"] == 30
    last = node(client, path, offset=28, limit=7)
    assert last["children"] == ["28", "29"]
    assert node(client, path, offset=40)["children"] == []
    html = client.get(PAGE, {"path": path, "offset": "10", "limit": "10"}).content.decode()
    assert "11–20 of 30" in html
    assert f"?path={path}&amp;offset=20&amp;limit=10" in html
    # The tree opens a level a page at a time too, and the next page follows as list items.
    level = client.get("/clusters/local/zookeeper/tree/", {"path": path, "limit": "10"}, HTTP_HX_REQUEST="true")
    assert level.status_code == 200
    assert level.content.decode().count("<li data-path=") == 10
    more = client.get(
        "/clusters/local/zookeeper/tree/", {"path": path, "limit": "10", "offset": "20", "items": "1"}
    ).content.decode()
    assert "<ul" not in more
    assert f'data-path="{path}/29"' in more


def test_a_tree_level_that_cannot_be_read_says_why_in_place(client: Client) -> None:
    level = client.get("/clusters/local/zookeeper/tree/", {"path": "/nope"}, HTTP_HX_REQUEST="true")
    assert level.status_code == 200  # htmx swaps only a 200
    assert "No znode at /nope" in level.content.decode()
    assert client.get("/clusters/local/zookeeper/tree/", {"path": "/nope"}).status_code == 404


def test_the_servers_health_shows_a_standalone_server(client: Client) -> None:
    body = client.get("/api/clusters/local/zookeeper/servers/").json()
    assert body["address"] == f"127.0.0.1:{ZOOKEEPER_PORT}"
    [server] = body["servers"]
    assert server["mode"] == "standalone"
    assert server["serving"] is True
    assert server["znode_count"] > 20
    assert server["watch_count"] is not None  # mntr is allowed on the test cluster
    assert server["latency_ms"]["max"] >= server["latency_ms"]["avg"] >= server["latency_ms"]["min"] >= 0
    assert server["not_allowed"] == []
    html = client.get("/clusters/local/zookeeper/servers/").content.decode()
    assert 'data-mode="standalone"' in html


# ---------------------------------------------------------------- ZooKeeper stopped


@pytest.fixture(scope="module")
def stop_cluster() -> Iterator[launcher.ClusterLayout]:
    launcher.down(STOP_DATA, echo=lambda _: None)
    shutil.rmtree(STOP_DATA, ignore_errors=True)
    layout = launcher.up(
        STOP_DATA, brokers=1, zookeeper_port=STOP_ZOOKEEPER_PORT, base_port=STOP_BASE_PORT, echo=lambda _: None
    )
    try:
        yield layout
    finally:
        launcher.down(STOP_DATA, echo=lambda _: None)
        shutil.rmtree(STOP_DATA, ignore_errors=True)


@pytest.fixture
def stopper(
    kafka_cluster: launcher.ClusterLayout,
    stop_cluster: launcher.ClusterLayout,
    clusters_reset: None,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Client]:
    """The console with the session's cluster as ``local`` and this module's as ``zkstop`` (1 s time-out)."""
    configs = {
        "local": ClusterConfig("local", tuple(BOOTSTRAP.split(",")), f"127.0.0.1:{ZOOKEEPER_PORT}", max_age=0),
        "zkstop": ClusterConfig(
            "zkstop", (f"127.0.0.1:{STOP_BASE_PORT}",), stop_cluster.zookeeper_connect, timeout=1.0, max_age=0
        ),
    }
    monkeypatch.setattr(clusters, "get_configs", lambda: configs)
    close_clients()
    yield logged_in()
    close_clients()


def timed(client: Client, url: str, params: dict[str, str] | None = None) -> tuple[Any, float]:
    started = time.monotonic()
    response = client.get(url, params or {})
    return response, time.monotonic() - started


def test_with_zookeeper_stopped_its_pages_say_so_quickly_while_kafka_pages_answer(
    stopper: Client, stop_cluster: launcher.ClusterLayout
) -> None:
    api = "/api/clusters/zkstop/zookeeper/"
    before = stopper.get(api, {"path": "/brokers/ids"})
    assert before.status_code == 200
    assert before.json()["children"] == ["0"]
    launcher.stop_zookeeper(STOP_DATA, echo=lambda _: None)
    try:
        response, took = timed(stopper, api, {"path": "/brokers/ids"})
        assert response.status_code == 503, response.content
        assert response.json()["error"] == "cluster_unavailable"
        assert "does not answer" in response.json()["message"]
        assert took < BOUND
        # A second read starts a new session, which cannot connect either: the same answer, as quickly.
        response, took = timed(stopper, api, {"path": "/"})
        assert response.status_code == 503
        assert took < BOUND
        page, took = timed(stopper, "/clusters/zkstop/zookeeper/", {"path": "/brokers/ids"})
        assert page.status_code == 503
        assert took < BOUND
        html = page.content.decode()
        assert "ZooKeeper does not answer." in html
        assert 'id="zookeeper-serving"' in html
        assert "pill-bad" in html
        servers, took = timed(stopper, "/api/clusters/zkstop/zookeeper/servers/")
        assert servers.status_code == 200
        assert took < BOUND
        [server] = servers.json()["servers"]
        assert server["answered"] is False
        assert "does not answer" in server["note"]
        topics, took = timed(stopper, "/api/clusters/zkstop/topics/")
        assert topics.status_code == 200, topics.content
        assert took < BOUND
        assert stopper.get("/clusters/zkstop/").status_code == 200
    finally:
        launcher.start_zookeeper(STOP_DATA, echo=lambda _: None)
    # Back: the next read opens a new session and answers.
    deadline = time.monotonic() + 30
    while True:
        after = stopper.get(api, {"path": "/brokers/ids"})
        if after.status_code == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert after.status_code == 200
    assert after.json()["children"] == ["0"]


def test_a_kraft_cluster_has_no_zookeeper_to_browse(
    stopper: Client, monkeypatch: pytest.MonkeyPatch, stop_cluster: launcher.ClusterLayout
) -> None:
    """A cluster whose mode is KRaft: every ZooKeeper page says so and links to the quorum, the API is 409."""
    conn = clusters.get_connection("zkstop")
    monkeypatch.setattr(conn, "mode", lambda: "kraft")
    for url in ["/clusters/zkstop/zookeeper/", "/clusters/zkstop/zookeeper/servers/"]:
        page = stopper.get(url, {"path": "/brokers/ids"})
        assert page.status_code == 200
        html = page.content.decode()
        assert "it has no ZooKeeper" in html
        assert 'href="/clusters/zkstop/quorum/"' in html
    for url in ["/api/clusters/zkstop/zookeeper/", "/api/clusters/zkstop/zookeeper/servers/"]:
        answer = stopper.get(url, {"path": "/brokers/ids"})
        assert answer.status_code == 409
        assert answer.json()["error"] == "not_supported"
    level = stopper.get("/clusters/zkstop/zookeeper/tree/", {"path": "/"}, HTTP_HX_REQUEST="true")
    assert "it has no ZooKeeper" in level.content.decode()


def test_a_chroot_in_the_connect_string_is_where_paths_start(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = tuple(BOOTSTRAP.split(","))
    configs = {
        "rooted": ClusterConfig("rooted", bootstrap, f"127.0.0.1:{ZOOKEEPER_PORT}/brokers", max_age=0),
        "lost": ClusterConfig("lost", bootstrap, f"127.0.0.1:{ZOOKEEPER_PORT}/no-such-chroot", max_age=0),
    }
    monkeypatch.setattr(clusters, "get_configs", lambda: configs)
    close_clients()
    client = logged_in()
    try:
        body = client.get("/api/clusters/rooted/zookeeper/", {"path": "/"}).json()
        assert body["children"] == ["ids", "seqid", "topics"]
        assert client.get("/api/clusters/rooted/zookeeper/", {"path": "/ids"}).json()["children"] == ["0", "1", "2"]
        html = client.get("/clusters/rooted/zookeeper/").content.decode()
        assert 'id="zookeeper-chroot"' in html
        lost = client.get("/api/clusters/lost/zookeeper/", {"path": "/"})
        assert lost.status_code == 404
        assert "The chroot /no-such-chroot" in lost.json()["message"]
    finally:
        close_clients()
