"""KIP-848 consumer groups and KIP-932 share groups on Kafka 4 (KAZAMI_TEST_CLUSTER=kraft), driven by Kafka's
own console consumers and compared with Kafka's own `kafka-consumer-groups` and `kafka-share-groups`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from broker.local import launcher
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.kafka_tools import (
    CONSOLE_CONSUMER,
    CONSOLE_SHARE_CONSUMER,
    CONSUMER_GROUPS,
    SHARE_GROUPS,
    run_tool,
    running,
    table,
)

pytestmark = [pytest.mark.kafka, pytest.mark.django_db, pytest.mark.kraft_only]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60, show: Callable[[], Any] | None = None) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}" + (f": {show()}" if show else ""))


def group(client: Client, group_id: str) -> dict[str, Any] | None:
    answer = client.get(f"/api/clusters/local/groups/{group_id}/")
    return answer.json() if answer.status_code == 200 else None


def test_a_kip848_group_shows_as_kafka_describes_it_refuses_resets_while_live_and_can_be_deleted(
    client: Client,
) -> None:
    topic = create_topic(unique("k848"), partitions=3)
    produce(topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(60)])
    group_id = unique("g848")
    consumer = (
        CONSOLE_CONSUMER,
        *("--topic", topic, "--group", group_id, "--from-beginning"),
        *("--consumer-property", "group.protocol=consumer", "--consumer-property", "client.id=kz-848"),
    )
    with running(*consumer):
        live = wait_for(
            "the group to be stable with a member that read everything",
            lambda: (
                (g := group(client, group_id))
                and g["state"] == "Stable"
                and g["members"]
                and len(g["partitions"]) == 3
                and all(p["committed_offset"] is not None and p["lag"] == 0 for p in g["partitions"])
                and g
            ),
        )
        assert live["type"] == "consumer"
        assert live["assignor"] == "uniform"
        [member] = live["members"]
        assert member["client_id"] == "kz-848"
        assert sorted((a["topic"], a["partition"]) for a in member["assignment"]) == [(topic, p) for p in range(3)]
        state = table(run_tool(CONSUMER_GROUPS, "--describe", "--group", group_id, "--state"), "GROUP")[0]
        assert (state["STATE"], state["ASSIGNMENT-STRATEGY"], state["#MEMBERS"]) == ("Stable", "uniform", "1")
        rows = table(run_tool(CONSUMER_GROUPS, "--describe", "--group", group_id), "GROUP")
        theirs = {
            (r["TOPIC"], int(r["PARTITION"])): (int(r["CURRENT-OFFSET"]), int(r["LAG"]), r["CONSUMER-ID"]) for r in rows
        }
        ours = {
            (p["topic"], p["partition"]): (p["committed_offset"], p["lag"], p["member"]) for p in live["partitions"]
        }
        assert ours == theirs
        # Listed, with members, when empty groups are hidden; and a reset is refused, naming the member.
        listed = client.get("/api/clusters/local/groups/", {"hide_empty": "1"}).json()["groups"]
        assert group_id in [g["group_id"] for g in listed]
        refused = client.post(
            f"/api/clusters/local/groups/{group_id}/reset/",
            {"strategy": "to-earliest", "dry_run": False},
            content_type="application/json",
        )
        assert refused.status_code == 409, refused.content
        assert member["member_id"] in refused.json()["message"]
        page = client.get(f"/clusters/local/groups/{group_id}/").content.decode()
        assert 'id="group-members"' in page
        assert "ZooKeeper" not in page
    wait_for("the group to be empty", lambda: (g := group(client, group_id)) and g["state"] == "Empty")
    # Its offsets deleted, it still shows, and then it can be deleted.
    deleted = client.post(
        f"/api/clusters/local/groups/{group_id}/delete-offsets/", {"topic": topic}, content_type="application/json"
    )
    assert deleted.status_code == 200, deleted.content
    after = group(client, group_id)
    assert after is not None
    assert after["type"] == "consumer"
    gone = client.post(f"/api/clusters/local/groups/{group_id}/delete/", {}, content_type="application/json")
    assert gone.status_code == 200, gone.content
    wait_for("the group to be gone", lambda: client.get(f"/api/clusters/local/groups/{group_id}/").status_code == 404)


def test_a_share_group_shows_its_members_start_offsets_and_lag_as_kafka_does(client: Client) -> None:
    topic = create_topic(unique("kshare"), partitions=2)
    group_id = unique("gshare")
    with running(CONSOLE_SHARE_CONSUMER, "--topic", topic, "--group", group_id):
        wait_for("a share member", lambda: (g := group(client, group_id)) and g["members"] and g)

        def started() -> dict[str, Any] | None:
            # A share group starts at the log end when it first fetches a partition: records written
            # before that are never its own. So records keep coming, as on a live topic, until it has
            # acknowledged some on both partitions.
            produce(topic, [(None, b"s")] * 10)
            g = group(client, group_id)
            return g if g and len([p for p in g["partitions"] if p["committed_offset"] is not None]) == 2 else None

        live = wait_for(
            "start offsets on both partitions",
            started,
            timeout=90,
            show=lambda: group(client, group_id),
        )
        live = wait_for(
            "the share consumer to acknowledge everything",
            lambda: (g := group(client, group_id)) and all(p["lag"] == 0 for p in g["partitions"]) and g,
        )
        assert (live["type"], live["assignor"]) == ("share", "simple")
        [member] = live["members"]
        assert member["client_id"] == "console-share-consumer"
        rows = table(run_tool(SHARE_GROUPS, "--describe", "--group", group_id), "GROUP")
        theirs = {(r["TOPIC"], int(r["PARTITION"])): (int(r["START-OFFSET"]), int(r["LAG"])) for r in rows}
        live = group(client, group_id)
        assert live is not None
        assert {(p["topic"], p["partition"]): (p["committed_offset"], p["lag"]) for p in live["partitions"]} == theirs
        members = table(run_tool(SHARE_GROUPS, "--describe", "--group", group_id, "--members"), "GROUP")
        assert [m["CONSUMER-ID"] for m in members] == [member["member_id"]]
        listed = client.get("/api/clusters/local/groups/", {"hide_empty": "1"}).json()["groups"]
        assert [g["type"] for g in listed if g["group_id"] == group_id] == ["share"]
        refused = client.post(
            f"/api/clusters/local/groups/{group_id}/reset/",
            {"strategy": "to-earliest", "dry_run": False},
            content_type="application/json",
        )
        assert refused.status_code == 409, refused.content
        assert member["member_id"] in refused.json()["message"]
        page = client.get(f"/clusters/local/groups/{group_id}/").content.decode()
        assert "Start offset" in page
        assert 'id="group-members"' in page
    wait_for("the share group to be empty", lambda: (g := group(client, group_id)) and not g["members"])
    reset = client.post(
        f"/api/clusters/local/groups/{group_id}/reset/",
        {"strategy": "to-earliest", "dry_run": False},
        content_type="application/json",
    )
    assert reset.status_code == 200, reset.content
    rows = table(run_tool(SHARE_GROUPS, "--describe", "--group", group_id), "GROUP")
    assert {int(r["START-OFFSET"]) for r in rows} == {0}


def test_no_page_mentions_zookeeper_on_a_kraft_cluster(client: Client) -> None:
    topic = create_topic(unique("knozk"), partitions=1)
    produce(topic, [(None, b"x")])
    for url in (
        "/clusters/local/",
        "/clusters/local/quorum/",
        "/clusters/local/topics/",
        f"/clusters/local/topics/{topic}/",
        f"/clusters/local/topics/{topic}/partitions/0/",
        f"/clusters/local/topics/{topic}/search/",
        f"/clusters/local/topics/{topic}/tail/",
        f"/clusters/local/topics/{topic}/produce/",
        "/clusters/local/groups/",
        "/clusters/local/disks/",
        "/users/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert "ZooKeeper" not in response.content.decode(), url
