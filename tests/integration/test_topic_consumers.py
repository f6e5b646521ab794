"""The groups that read a topic, on its page and in ``GET /api/clusters/<c>/topics/<t>/``, against the real
cluster: lag summed over the topic's partitions as the committed offsets and end offsets make it."""

from __future__ import annotations

import time

import pytest
from django.test import Client
from kafka import TopicPartition

from broker.local import launcher
from console.background.lag_sampler import sample_once
from tests.conftest import logged_in
from tests.integration.kafka_helpers import commit_offsets, create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


def test_the_groups_reading_a_topic_with_their_lag_on_it(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None
) -> None:
    client: Client = logged_in("viewer")
    topic, other = create_topic(unique("readers"), partitions=2), create_topic(unique("readers-other"), partitions=1)
    produce(topic, [(None, b"a%d" % i) for i in range(10)], partition=0)
    produce(topic, [(None, b"b%d" % i) for i in range(6)], partition=1)
    produce(other, [(None, b"c%d" % i) for i in range(50)], partition=0)
    behind, done, elsewhere = unique("g-behind"), unique("g-done"), unique("g-elsewhere")
    commit_offsets(behind, {TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 1, TopicPartition(other, 0): 0})
    commit_offsets(done, {TopicPartition(topic, 0): 10})
    commit_offsets(elsewhere, {TopicPartition(other, 0): 5})

    deadline = time.monotonic() + 30  # a KRaft cluster may still be moving group coordinators
    body = client.get(f"/api/clusters/local/topics/{topic}/").json()
    while body["consumers_error"] is not None and time.monotonic() < deadline:
        time.sleep(1)
        body = client.get(f"/api/clusters/local/topics/{topic}/").json()
    assert body["consumers_error"] is None
    mine = {c["group_id"]: c for c in body["consumers"]}
    assert elsewhere not in mine  # it reads another topic only
    assert (mine[behind]["lag"], mine[behind]["partitions"]) == (7 + 5, 2)  # not the 50 it has on the other topic
    assert (mine[done]["lag"], mine[done]["partitions"]) == (0, 1)
    assert mine[behind]["members"] == 0
    assert mine[behind]["lag_ms"] is not None
    assert [c["group_id"] for c in body["consumers"]].index(behind) < [c["group_id"] for c in body["consumers"]].index(
        done
    )

    skipped = client.get(f"/api/clusters/local/topics/{topic}/", {"consumers": "0"}).json()
    assert (skipped["consumers"], skipped["consumers_error"]) == (None, "not asked for (consumers=0)")
    assert len(skipped["partitions"]) == 2
    assert client.get(f"/api/clusters/local/topics/{topic}/", {"consumers": "maybe"}).status_code == 400

    page = client.get(f"/clusters/local/topics/{topic}/")
    assert 'hx-get="/clusters/local/topics/' in page.content.decode()
    # Right after the commits, a KRaft cluster may still be moving group coordinators: the part says so, and
    # lists the groups once they answer.
    deadline = time.monotonic() + 30
    while True:
        part = client.get(f"/clusters/local/topics/{topic}/consumers/").content.decode()
        if "coordinators are moving" not in part or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert f'data-group="{behind}"' in part
    assert f'data-group="{elsewhere}"' not in part
    assert ">12<" in part
    lonely = create_topic(unique("readers-none"), partitions=1)
    assert (
        "No consumer group has committed an offset"
        in client.get(f"/clusters/local/topics/{lonely}/consumers/").content.decode()
    )
    assert client.get("/clusters/local/topics/no-such-topic-here/consumers/").status_code == 404


def test_the_topics_list_shows_each_topics_groups_and_total_lag_from_the_last_sample(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None
) -> None:
    client: Client = logged_in("viewer")
    topic, lonely = create_topic(unique("listed"), partitions=2), create_topic(unique("listed-none"), partitions=1)
    produce(topic, [(None, b"a%d" % i) for i in range(9)], partition=0)
    produce(topic, [(None, b"b%d" % i) for i in range(4)], partition=1)
    first, second = unique("g-listed-1"), unique("g-listed-2")
    commit_offsets(first, {TopicPartition(topic, 0): 2, TopicPartition(topic, 1): 4})
    commit_offsets(second, {TopicPartition(topic, 0): 5})

    # Nothing sampled yet (the tests' sampler is off): the list says it does not know rather than "0".
    before = client.get("/api/clusters/local/topics/", {"q": topic}).json()
    assert before["lag_sampled_at"] is None
    assert before["topics"][0]["consumer_groups"] is None
    assert (
        "the lag sampler has stored no sample" in client.get("/clusters/local/topics/", {"q": topic}).content.decode()
    )

    deadline = time.monotonic() + 30  # a KRaft cluster may still be moving group coordinators
    while True:
        sample_once()
        body = client.get("/api/clusters/local/topics/", {"q": "listed"}).json()
        rows = {t["name"]: t for t in body["topics"]}
        if rows[topic]["consumer_groups"] == 2 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert body["lag_sampled_at"] is not None
    assert (rows[topic]["consumer_groups"], rows[topic]["lag"]) == (2, (9 - 2) + (4 - 4) + (9 - 5))
    assert (rows[lonely]["consumer_groups"], rows[lonely]["lag"]) == (0, None)

    page = client.get("/clusters/local/topics/", {"q": topic, "sort": "lag", "dir": "desc"}).content.decode()
    assert f'href="/clusters/local/topics/{topic}/#consumers">2</a>' in page
    assert ">11<" in page
    assert "as of the lag sampler's last sample" in page
    csv = client.get("/clusters/local/topics/", {"q": topic, "format": "csv"}).content.decode()
    header, row = csv.splitlines()[:2]
    assert header.endswith("consumers,lag")
    assert row.endswith(",2,11")
