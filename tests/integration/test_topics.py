"""Topic list, detail and administration against the real cluster: pages, API and the batching promise."""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaAdminClient, KafkaConsumer

from broker.local import launcher
from broker.messages.tail import Tail
from broker.topics import read as topics
from broker.topics.changes import settled_everywhere
from console.config.clusters import get_connection
from tests.conftest import BOOTSTRAP, KRAFT, logged_in
from tests.integration.kafka_helpers import admin, create_topic, produce, unique, wait_healthy

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def api_topic(client: Client, name: str) -> dict[str, Any]:
    response = client.get(f"/api/clusters/local/topics/{name}/")
    assert response.status_code == 200, response.content
    return response.json()  # type: ignore[no-any-return]


def test_the_list_counts_messages_and_sizes_per_topic(client: Client) -> None:
    name = create_topic(unique("tl-count"), partitions=2)
    produce(name, [(b"k", b"x" * 100)] * 30)
    body = client.get("/api/clusters/local/topics/", {"q": name}).json()
    assert body["count"] == 1
    row = body["topics"][0]
    assert row["name"] == name
    assert row["partitions"] == 2
    assert row["replication_factor"] == 3
    assert row["messages"] == 30
    assert row["size"] > 30 * 100 * 3  # three replicas of thirty 100-byte values, plus batch headers
    assert (row["under_replicated_partitions"], row["offline_partitions"], row["under_min_isr_partitions"]) == (0, 0, 0)


def test_internal_topics_are_hidden_unless_asked(client: Client) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP.split(","),
        group_id=unique("tl-group"),
        consumer_timeout_ms=2000,
        auto_offset_reset="earliest",
    )
    name = create_topic(unique("tl-internal"), partitions=1)
    produce(name, [(None, b"v")])
    consumer.subscribe([name])
    list(consumer)
    consumer.commit()
    consumer.close()
    names = [t["name"] for t in client.get("/api/clusters/local/topics/").json()["topics"]]
    assert "__consumer_offsets" not in names
    shown = client.get("/api/clusters/local/topics/", {"internal": "1"}).json()["topics"]
    internal = [t for t in shown if t["name"] == "__consumer_offsets"]
    assert internal
    assert internal[0]["internal"] is True
    page = client.get("/clusters/local/topics/", {"internal": "1", "q": "__consumer"}).content.decode()
    assert "__consumer_offsets" in page


def test_the_page_filters_sorts_and_paginates(client: Client) -> None:
    prefix = unique("tl-sort")
    for i, count in enumerate([5, 1, 3]):
        name = create_topic(f"{prefix}-{i}", partitions=1)
        produce(name, [(None, b"v")] * count)
    page = client.get("/clusters/local/topics/", {"q": prefix, "sort": "messages", "dir": "desc", "per_page": 2})
    assert page.status_code == 200
    html = page.content.decode()
    order = re.findall(rf"({prefix}-\d)</a>", html)
    assert order == [f"{prefix}-0", f"{prefix}-2"]
    assert "1–2 of 3" in html
    second = client.get(
        "/clusters/local/topics/", {"q": prefix, "sort": "messages", "dir": "desc", "per_page": 2, "page": 2}
    ).content.decode()
    assert re.findall(rf"({prefix}-\d)</a>", second) == [f"{prefix}-1"]
    swapped = client.get("/clusters/local/topics/", {"q": prefix}, HTTP_HX_REQUEST="true").content.decode()
    assert swapped.lstrip().startswith('<section id="topics-table">')

    # The pager's CSV link: the same filter and sort, every page, as a spreadsheet opens it.
    link = re.search(r'<a href="([^"]+)" class="csv-link"', html)
    assert link is not None
    csv_page = client.get("/clusters/local/topics/" + link.group(1).replace("&amp;", "&"))
    assert csv_page.status_code == 200
    assert csv_page["Content-Type"].startswith("text/csv")
    assert 'filename="local-topics.csv"' in csv_page["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(csv_page.content.decode())))
    assert rows[0][:4] == ["name", "partitions", "replication", "messages"]
    assert [(r[0], r[3]) for r in rows[1:]] == [(f"{prefix}-0", "5"), (f"{prefix}-2", "3"), (f"{prefix}-1", "1")]


def test_bad_list_parameters_are_400_with_the_reason(client: Client) -> None:
    for params, reason in [
        ({"sort": "colour"}, "sort must be one of"),
        ({"page": "x"}, "page must be a whole number"),
        ({"page": "999"}, "past the last page"),
        ({"per_page": "0"}, "per_page must be at least 1"),
    ]:
        response = client.get("/clusters/local/topics/", params)
        assert response.status_code == 400, params
        assert reason in response.content.decode()


def test_listing_is_batched_whatever_the_number_of_topics(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of request is made a fixed number of times, never once per topic or partition."""
    prefix = unique("tl-batch")
    for i in range(12):
        create_topic(f"{prefix}-{i}", partitions=2)
    calls: Counter[str] = Counter()
    for method in (
        "describe_topics",
        "list_partition_offsets",
        "describe_log_dirs",
        "describe_configs",
        "describe_cluster",
    ):
        original = getattr(KafkaAdminClient, method)

        def counted(self: Any, *args: Any, _name: str = method, _original: Any = original, **kwargs: Any) -> Any:
            calls[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(KafkaAdminClient, method, counted)
    rows = topics.get_topics(get_connection("local"))
    assert len([r for r in rows if r.name.startswith(prefix)]) == 12
    # min.insync.replicas is asked only of topics with a shrunken ISR: none on a healthy cluster.
    assert calls == Counter(
        {"describe_topics": 1, "list_partition_offsets": 2, "describe_log_dirs": 1, "describe_cluster": 1}
    )


def test_the_detail_shows_partitions_replicas_offsets_and_configs(client: Client) -> None:
    name = create_topic(unique("td"), partitions=3, configs={"retention.ms": "3600000"})
    produce(name, [(None, b"a")] * 4, partition=1)
    body = api_topic(client, name)
    assert [p["partition"] for p in body["partitions"]] == [0, 1, 2]
    p1 = body["partitions"][1]
    assert (p1["start_offset"], p1["end_offset"], p1["messages"]) == (0, 4, 4)
    assert sorted(p1["replicas"]) == [0, 1, 2]
    assert sorted(p1["isr"]) == [0, 1, 2]
    assert p1["leader"] in p1["replicas"]
    assert p1["preferred_leader"] == p1["replicas"][0]
    retention = next(c for c in body["configs"] if c["name"] == "retention.ms")
    assert retention == {
        "name": "retention.ms",
        "value": "3600000",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "is_default": False,
        "sensitive": False,
        "read_only": False,
    }
    segment = next(c for c in body["configs"] if c["name"] == "segment.bytes")
    assert segment["is_default"] is True
    html = client.get(f"/clusters/local/topics/{name}/").content.decode()
    assert 'data-partition="2"' in html
    assert "DYNAMIC_TOPIC_CONFIG" in html


def test_unknown_topic_and_partition_are_404_naming_them(client: Client) -> None:
    api = client.get("/api/clusters/local/topics/no-such-topic/")
    assert api.status_code == 404
    assert "no-such-topic" in api.json()["message"]
    assert client.get("/clusters/local/topics/no-such-topic/").status_code == 404
    name = create_topic(unique("td-404"), partitions=2)
    response = client.get(f"/api/clusters/local/topics/{name}/partitions/7/messages")
    assert response.status_code == 404
    assert "no partition 7" in response.json()["message"]


def test_create_topic_through_the_form_and_its_errors(client: Client) -> None:
    name = unique("tc")
    ok = client.post(
        "/clusters/local/topics-new/",
        {
            "confirmed": "1",
            "name": name,
            "partitions": 4,
            "replication_factor": 2,
            "retention_ms": 60000,
            "cleanup_policy": "compact",
            "configs": "max.message.bytes=2097152",
        },
    )
    assert ok.status_code == 302
    assert ok["Location"] == f"/clusters/local/topics/{name}/"
    body = api_topic(client, name)
    assert body["partitions"].__len__() == 4
    assert body["replication_factor"] == 2
    set_configs = {c["name"]: c["value"] for c in body["configs"] if not c["is_default"]}
    assert set_configs == {"retention.ms": "60000", "cleanup.policy": "compact", "max.message.bytes": "2097152"}

    exists = client.post(
        "/clusters/local/topics-new/", {"confirmed": "1", "name": name, "partitions": 1, "replication_factor": 1}
    )
    assert exists.status_code == 409
    assert f"Topic &#x27;{name}&#x27; already exists." in exists.content.decode()
    too_many = client.post(
        "/clusters/local/topics-new/",
        {"confirmed": "1", "name": unique("tc"), "partitions": 1, "replication_factor": 5},
    )
    assert too_many.status_code == 422
    refusal = (
        "The target replication factor of 5 cannot be reached because only 3 broker(s) are registered"
        if KRAFT
        else "Replication factor: 5 larger than available brokers: 3."
    )
    assert refusal in too_many.content.decode()
    bad_name = client.post(
        "/clusters/local/topics-new/", {"confirmed": "1", "name": "bad name!", "partitions": 1, "replication_factor": 1}
    )
    assert bad_name.status_code == 400
    assert "A topic name is 1 to 249 characters" in bad_name.content.decode()
    bad_config = client.post(
        "/clusters/local/topics-new/",
        {
            "confirmed": "1",
            "name": unique("tc"),
            "partitions": 1,
            "replication_factor": 1,
            "configs": "retention.ms=soon",
        },
    )
    assert bad_config.status_code == 422
    assert "Invalid value soon for configuration retention.ms" in bad_config.content.decode()


def every_broker_knows(name: str, partitions: int, gone: bool = False) -> bool:
    """Whether each broker's own metadata shows the topic with its partitions now (with ``gone``: shows
    it no more), asked once."""
    client = admin()
    try:
        return settled_everywhere(client, [name], timeout=0, partitions=partitions, gone=gone)
    finally:
        client.close()


def test_the_api_creates_topics_from_json(client: Client) -> None:
    name = unique("tc-api")
    response = client.post(
        "/api/clusters/local/topics/",
        {"name": name, "partitions": 2, "replication_factor": 1, "configs": {"retention.ms": "1000000"}},
        content_type="application/json",
    )
    assert response.status_code == 201
    assert response.json()["partitions"][1]["partition"] == 1
    assert every_broker_knows(name, partitions=2)  # at once: the next page may ask any broker
    assert not every_broker_knows(name, partitions=3)
    assert not every_broker_knows(unique("tc-absent"), partitions=1)
    bad = client.post("/api/clusters/local/topics/", {"partitions": "many"}, content_type="application/json")
    assert bad.status_code == 400
    assert set(bad.json()["fields"]) == {"name", "partitions", "replication_factor"}
    broken = client.post("/api/clusters/local/topics/", b"{not json", content_type="application/json")
    assert broken.status_code == 400
    assert "not valid JSON" in broken.json()["message"]


def test_delete_asks_for_the_name_and_loses_nothing_when_wrong(client: Client) -> None:
    name = create_topic(unique("tdel"), partitions=1)
    assert not every_broker_knows(name, partitions=1, gone=True)
    wrong = client.post(f"/clusters/local/topics/{name}/delete/", {"confirm": "something-else"})
    assert wrong.status_code == 400
    assert "That is not the topic&#x27;s name; nothing was deleted." in wrong.content.decode()
    assert client.get(f"/api/clusters/local/topics/{name}/").status_code == 200
    right = client.post(f"/clusters/local/topics/{name}/delete/", {"confirm": name})
    assert right.status_code == 302
    assert every_broker_knows(name, partitions=1, gone=True)  # at once: no broker lists it any more
    assert client.get(f"/api/clusters/local/topics/{name}/").status_code == 404


def test_add_partitions_and_refusal_to_shrink(client: Client) -> None:
    name = create_topic(unique("tpart"), partitions=2)
    assert (
        client.post(f"/clusters/local/topics/{name}/add-partitions/", {"confirmed": "1", "total": 5}).status_code == 302
    )
    assert every_broker_knows(name, partitions=5)
    assert len(api_topic(client, name)["partitions"]) == 5
    shrink = client.post(
        f"/api/clusters/local/topics/{name}/partitions/", {"total": 3}, content_type="application/json"
    )
    assert shrink.status_code == 422
    refusal = (
        "currently has 5 partition(s); 3 would not be an increase."
        if KRAFT
        else "Topic currently has 5 partitions, which is higher than the requested 3."
    )
    assert refusal in shrink.json()["message"]


def test_change_and_reset_configuration(client: Client) -> None:
    name = create_topic(unique("tcfg"), partitions=1, configs={"retention.ms": "5000000"})
    response = client.post(
        f"/clusters/local/topics/{name}/configs/",
        {"confirmed": "1", "set_configs": "cleanup.policy=compact\nmin.insync.replicas=2", "reset": "retention.ms"},
    )
    assert response.status_code == 302
    set_configs = {c["name"]: c["value"] for c in api_topic(client, name)["configs"] if not c["is_default"]}
    assert set_configs == {"cleanup.policy": "compact", "min.insync.replicas": "2"}
    unknown = client.post(
        f"/clusters/local/topics/{name}/configs/", {"confirmed": "1", "set_configs": "no.such.config=1"}
    )
    assert unknown.status_code == 422
    assert "Unknown topic config name: no.such.config" in unknown.content.decode()
    malformed = client.post(f"/clusters/local/topics/{name}/configs/", {"confirmed": "1", "set_configs": "just-a-word"})
    assert malformed.status_code == 400
    assert "expected config=value" in malformed.content.decode()


def test_delete_records_before_an_offset(client: Client) -> None:
    name = create_topic(unique("trec"), partitions=2)
    produce(name, [(None, b"v")] * 10, partition=0)
    produce(name, [(None, b"v")] * 4, partition=1)
    response = client.post(
        f"/api/clusters/local/topics/{name}/delete-records/", {"before_offset": 6}, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json()["start_offsets"] == {"0": 6, "1": 4}  # partition 1 clamped to its end
    starts = [p["start_offset"] for p in api_topic(client, name)["partitions"]]
    assert starts == [6, 4]
    past = client.post(
        f"/clusters/local/topics/{name}/delete-records/", {"confirmed": "1", "partition": 0, "before_offset": 99}
    )
    assert past.status_code == 422
    assert "OFFSET_OUT_OF_RANGE" in past.content.decode()


def test_a_partition_without_leader_is_unavailable_while_the_rest_renders(
    client: Client, kafka_cluster: launcher.ClusterLayout
) -> None:
    name = create_topic(unique("toff"), assignments={0: [0], 1: [1], 2: [2]})
    strict = create_topic(unique("tminisr"), partitions=2, replication=3, configs={"min.insync.replicas": "3"})
    produce(name, [(None, b"v")] * 3, partition=0)
    launcher.stop_broker(2, kafka_cluster.data, echo=lambda _: None)
    try:
        shrunk = client.get("/api/clusters/local/topics/", {"q": strict}).json()["topics"][0]
        assert (shrunk["under_min_isr_partitions"], shrunk["min_insync_replicas"]) == (2, 3)
        assert shrunk["under_replicated_partitions"] == 2
        body = api_topic(client, name)
        assert body["offline_partitions"] == 1
        offline = body["partitions"][2]
        assert offline["available"] is False
        assert offline["leader"] is None
        assert body["partitions"][0]["end_offset"] == 3  # the others still have their offsets
        assert (body["messages"], body["uncounted_partitions"]) == (3, 1)
        html = client.get(f"/clusters/local/topics/{name}/").content.decode()
        assert "unavailable" in html
        assert 'title="1 partition not counted: no offsets now">≥ </span>3' in html  # at least 3, not 3
        read = client.get(f"/api/clusters/local/topics/{name}/partitions/2/messages")
        assert read.status_code == 503
        assert read.json()["error"] == "partition_unavailable"
        assert client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages").status_code == 200
        searched = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": ""}).json()
        assert (searched["matched"], searched["unreadable_partitions"]) == (3, [2])  # said, not skipped silently
        page = client.get(f"/clusters/local/topics/{name}/search/", {"q": "", "run": "1"}).content.decode()
        assert "Partition 2 has no leader now: not searched." in page
        tail = Tail(get_connection("local"), name, [0, 2])  # what an open tail shows (not started)
        assert tail.trouble() == "Partition 2 has no leader now: new messages there show once one is elected."
        assert Tail(get_connection("local"), name, [0, 1]).trouble() is None
        listed = client.get("/api/clusters/local/topics/", {"q": name}).json()["topics"][0]
        assert listed["offline_partitions"] == 1
    finally:
        launcher.start_broker(2, kafka_cluster.data, echo=lambda _: None)
        wait_healthy()


def test_changes_ask_for_confirmation_with_what_they_will_do(client: Client) -> None:
    name = create_topic(unique("tconfirm"), partitions=2)
    produce(name, [(None, b"v")] * 8, partition=0)
    asked = client.post(f"/clusters/local/topics/{name}/delete-records/", {"before_offset": 5})
    assert asked.status_code == 200
    html = asked.content.decode()
    assert "Partition 0: delete offsets 0 to 4 (5 messages)" in html
    assert "Partition 1: nothing below offset 0" in html
    assert 'name="confirmed" value="1"' in html
    assert [p["start_offset"] for p in api_topic(client, name)["partitions"]] == [0, 0]  # nothing happened yet
    grow = client.post(f"/clusters/local/topics/{name}/add-partitions/", {"total": 4}).content.decode()
    assert "2 → 4 partitions." in grow
    assert len(api_topic(client, name)["partitions"]) == 2
    new = client.post(
        "/clusters/local/topics-new/",
        {"name": unique("tconfirm-new"), "partitions": 1, "replication_factor": 1, "retention_ms": 1000},
    )
    assert "retention.ms = 1000" in new.content.decode()
