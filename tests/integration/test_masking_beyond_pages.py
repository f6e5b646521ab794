"""Masking beyond the record pages, against the real cluster: an operator's uploaded schema cannot switch masking
off, the audit entry of a produce keeps the key as a viewer sees it, an analytics job's results are hidden from the
roles a rule masks what it reads for (page, API, downloads), and the live figures (stored and in their topic) count
masked keys under the replacement."""

from __future__ import annotations

import html
import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer

from broker.local import launcher
from broker.messages.masking import DEFAULT_REPLACEMENT as R
from broker.messages.masking import parse_rules
from console.background import job_process, jobs
from console.models import AuditEntry, LiveFigure
from tests.conftest import BOOTSTRAP, logged_in
from tests.integration.kafka_helpers import create_topic, produce, produce_timed, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

CARD = "4111-2222-3333-4444"
CARDS = {"name": "cards", "regex": r"\d{4}(-\d{4}){3}"}


def get(client: Client, path: str, status: int = 200, **params: Any) -> Any:
    response = client.get(path, params)
    assert response.status_code == status, response.content[:500]
    return response


def post_json(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


def test_an_operators_schema_cannot_switch_a_pattern_off(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any
) -> None:
    name = create_topic(unique("schemamask"), partitions=1, replication=1)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{**CARDS, "topics": name}]))
    value = f"paid with {CARD}".encode()
    produce(name, [(b"k", value)], partition=0)
    # Every byte of the text is under 0x80, so a record of as many ints reads it: a document of numbers, in
    # which the pattern finds nothing. Before, the masker then gave the bytes back whole.
    schema = {"type": "record", "name": "Nums", "fields": [{"name": f"n{i}", "type": "int"} for i in range(len(value))]}
    operator, viewer, admin = logged_in("operator"), logged_in("viewer"), logged_in("admin")
    saved = operator.post(f"/clusters/local/topics/{name}/schema/", {"part": "value", "schema": json.dumps(schema)})
    assert saved.status_code == 302
    assert AuditEntry.objects.filter(action="topic.schema", target=name, outcome="done").exists()
    detail = f"/clusters/local/topics/{name}/partitions/0/offsets/0/"
    api = f"/api/clusters/local/topics/{name}/partitions/0/messages"
    for client in (viewer, operator):
        for value_as in ("auto", "avro", "text", "hex"):
            shown = get(client, detail, value_as=value_as).content.decode()
            assert CARD not in shown, value_as
        [message] = get(client, api).json()["messages"]
        assert message["value"] == f"paid with {R}"
        assert message["masked"] == ["~ cards"]
        assert CARD not in json.dumps(get(client, f"{api}/0").json())
        get(client, f"{api}/0", 403, download="value")
    [whole] = get(admin, api).json()["messages"]
    assert whole["value"] == value.decode()


def test_a_schema_for_a_part_path_rules_mask_is_an_admins_to_upload(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any
) -> None:
    name = unique("pathmask")
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"name": "emails", "topics": name, "paths": ["$.email"]}]))
    schema = json.dumps({"type": "record", "name": "U", "fields": [{"name": "mail", "type": "string"}]})
    url = f"/clusters/local/topics/{name}/schema/"
    refused = logged_in("operator").post(url, {"part": "value", "schema": schema})
    assert refused.status_code == 403
    assert "emails&#x27; mask paths of them for that role" in refused.content.decode()
    entry = AuditEntry.objects.get(action="topic.schema", target=name)
    assert entry.outcome == "refused"
    assert "Ask a user of the admin role" in entry.result
    # Keys: no path rule covers them, so the operator may; and an admin may upload the value's schema.
    assert logged_in("operator").post(url, {"part": "key", "schema": schema}).status_code == 302
    assert logged_in("admin").post(url, {"part": "value", "schema": schema}).status_code == 302
    outcomes = list(AuditEntry.objects.filter(action="topic.schema", target=name).values_list("outcome", flat=True))
    assert sorted(outcomes) == ["done", "done", "refused"]


def test_the_audit_entry_of_a_produce_keeps_the_key_as_viewers_see_it(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any
) -> None:
    masked, plain = (create_topic(unique(p), partitions=1, replication=1) for p in ("keymask", "keyplain"))
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{**CARDS, "topics": masked, "parts": ["key"]}]))
    operator, viewer, admin = logged_in("operator"), logged_in("viewer"), logged_in("admin")
    for topic in (masked, plain):
        body = {"key": f"order {CARD}", "key_format": "text", "value": "paid", "partition": 0}
        answer = post_json(operator, f"/api/clusters/local/topics/{topic}/produce/", body)
        assert answer.status_code == 201, answer.content
    entries = get(viewer, "/api/audit/", action="message.produce").json()["entries"]
    by_topic = {e["target"]: e["params"] for e in entries if e["target"] in (masked, plain)}
    assert by_topic[masked]["key"] == f"order {R}"
    assert by_topic[masked]["masked"] == ["key ~ cards"]
    assert by_topic[masked]["value_bytes"] == 4
    assert by_topic[plain]["key"] == f"order {CARD}"  # no rule covers it: kept as before
    assert "masked" not in by_topic[plain]
    page = get(viewer, "/audit/", q=masked).content.decode()
    assert masked in page
    assert CARD not in page
    # The record itself is whole in Kafka: an admin reads the key as it was written.
    [message] = get(admin, f"/api/clusters/local/topics/{masked}/partitions/0/messages").json()["messages"]
    assert message["key"] == f"order {CARD}"


HOUR = 3_600_000
SECRET = "/secret-page-"  # the URLs of the events below, which no page of the console names otherwise


def traffic(count: int, start_ms: int, end_ms: int) -> list[tuple[bytes, bytes, int]]:
    """``count`` web events between ``start_ms`` and ``end_ms``: page views of five secret URLs, every fifth
    event a share of one of them."""
    written = []
    for i in range(count):
        ts = start_ms + (end_ms - start_ms) * i // count
        user = f"user-{i % 7}"
        url = f"{SECRET}{i % 5}"
        if i % 5 == 4:
            event = {"type": "share", "ts": ts, "user_id": user, "url": url, "network": ["twitter", "reddit"][i % 2]}
        else:
            event = {"type": "page_view", "ts": ts, "user_id": user, "session_id": f"s-{i % 3}", "url": url}
        written.append((user.encode(), json.dumps(event).encode(), ts))
    return written


@pytest.fixture
def no_spawn(monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs are claimed but not started in a process of their own: the test runs them itself."""
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)


@pytest.mark.spark
def test_a_jobs_results_are_hidden_from_the_roles_a_rule_masks_what_it_reads_for(
    spark: Any, kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any, no_spawn: None
) -> None:
    base = (int(time.time() * 1000) // HOUR - 2) * HOUR
    topic = create_topic(unique("maskjob"), partitions=1, replication=1)
    written = traffic(300, base, base + HOUR)
    produce_timed(topic, written)
    urls = {json.loads(v)["url"] for _, v, _ in written if json.loads(v).get("type") == "page_view"}
    assert len(urls) == 4
    settings.KAZAMI_MASKING = parse_rules(
        json.dumps(
            [
                {"name": "urls", "topics": topic, "paths": ["$.url"]},
                {"name": "keys", "topics": topic, "parts": ["key"], "regex": "."},  # reaches no field: no effect
            ]
        )
    )
    operator, viewer, admin = logged_in("operator"), logged_in("viewer"), logged_in("admin")
    body = {"report": "pv_uu", "topics": [topic], "bucket": "hour", "from": base, "to": base + HOUR}
    job_id = post_json(operator, "/api/clusters/local/jobs/", body).json()["id"]
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    # The admin (no rule masks for admins) sees every URL.
    rows = get(admin, f"/api/jobs/{job_id}/result/").json()["rows"]
    assert {r["url"] for r in rows if r["url"] is not None} == urls
    assert SECRET in get(admin, f"/clusters/local/analytics/jobs/{job_id}/").content.decode()
    assert SECRET in get(admin, f"/clusters/local/analytics/jobs/{job_id}/result.csv").content.decode()
    message = "Masked for your role (viewer): masking rule 'urls' covers topic"
    for client, role in ((viewer, "viewer"), (operator, "operator")):
        wanted = message.replace("viewer", role)
        refused = get(client, f"/api/jobs/{job_id}/result/", 403).json()
        assert refused["error"] == "forbidden"
        assert refused["message"].startswith(wanted)
        page = get(client, f"/clusters/local/analytics/jobs/{job_id}/").content.decode()
        assert html.escape(wanted) in page
        assert SECRET not in page
        assert "result.csv" not in page
        for fmt in ("csv", "json"):
            download = get(client, f"/clusters/local/analytics/jobs/{job_id}/result.{fmt}", 403).content.decode()
            assert html.escape(wanted) in download  # the error page of a refusal
            assert SECRET not in download
        status = get(client, f"/api/jobs/{job_id}/").json()
        assert status["masked"].startswith(wanted)
        assert status["summary"] == {}
        listed = get(client, "/api/clusters/local/jobs/").json()["jobs"]
        assert next(j for j in listed if j["id"] == job_id)["masked"].startswith(wanted)
    assert "masked" not in get(admin, f"/api/jobs/{job_id}/").json()


@pytest.mark.spark
def test_the_live_figures_and_their_topic_count_masked_keys_under_the_replacement(
    classic_spark: Any, kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any, tmp_path: Path
) -> None:
    from analytics.live import ALL, KEY_FIELDS, Figure, start_query
    from analytics.source import kafka_options
    from console.background.live_analytics import drop_unmasked
    from console.config.clusters import get_configs
    from console.present.masking import masked_fields

    topic = create_topic(unique("masklive"), partitions=1, replication=1)
    output = create_topic(unique("masklive-out"), partitions=1, replication=1)
    now = int(time.time() * 1000)
    written = traffic(200, now - 10 * 60_000, now)
    produce_timed(topic, written)
    events = [json.loads(v) for _, v, _ in written]
    networks = {e["network"] for e in events if e["type"] == "share"}
    views = sum(e["type"] == "page_view" for e in events)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"name": "urls", "topics": topic, "paths": ["$.url"]}]))
    masked = masked_fields("local", [topic], KEY_FIELDS)
    assert masked == {"url": R}
    # Figures stored before the rule: those of URLs go, the totals stay.
    LiveFigure.objects.create(cluster="local", minute_ms=now, metric="pv", key=f"{SECRET}0", count=1, users=1)
    LiveFigure.objects.create(cluster="local", minute_ms=now, metric="pv", key=ALL, count=1, users=1)
    assert drop_unmasked("local", masked) == 1
    assert set(LiveFigure.objects.values_list("key", flat=True)) == {ALL}

    stored: dict[tuple[int, str, str], Figure] = {}

    def store(found: list[Figure]) -> None:
        stored.update({(f.minute_ms, f.metric, f.key): f for f in found})

    def counted(metric: str, key: str) -> int:
        return sum(f.count for (_, m, k), f in list(stored.items()) if m == metric and k == key)

    query = start_query(
        classic_spark,
        kafka_options(get_configs()["local"], tmp_path / "scratch"),
        [topic],
        str(tmp_path / "checkpoint"),
        store,
        output,
        starting_ms=now - 20 * 60_000,
        masked=masked,
    )
    records: list[Any] = []
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and counted("pv", ALL) < views:
            assert query.exception() is None, query.exception()
            time.sleep(1)
        # The sink stores a batch's figures, then writes them to the output topic.
        while time.monotonic() < deadline and not records:
            assert query.exception() is None, query.exception()
            records = output_records(output)
    finally:
        query.stop()
    assert counted("pv", ALL) == views
    pv_keys = {k for (_, m, k) in stored if m == "pv"}
    assert pv_keys == {ALL, R}  # every URL counted under the replacement
    assert counted("pv", R) == views
    assert {k for (_, m, k) in stored if m == "shares"} == networks  # a field no rule reaches stays
    assert records
    keys = {json.loads(r.value)["key"] for r in records if json.loads(r.value)["metric"] == "pv"}
    assert keys == {ALL, R}
    for r in records:
        assert SECRET.encode() not in (r.key or b"") + r.value


def output_records(topic: str) -> list[Any]:
    """Every record of ``topic`` so far."""
    consumer = KafkaConsumer(
        topic, bootstrap_servers=BOOTSTRAP.split(","), auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    try:
        return list(consumer)
    finally:
        consumer.close()
