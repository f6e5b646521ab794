# ruff: noqa: S608 - the queries are the subject under test, over topics the test names itself
"""The SQL page and its API: the editor's completion (a topic's JSON fields inferred from what this test wrote,
an unknown topic 404), the page's run and refusal (the query kept beside the reason), saved queries (roles,
mine and shared, owner-only delete, the audit log), and a query run to its end whose page and downloads carry
the query's own columns."""

from __future__ import annotations

import csv
import io
import json
import time
from typing import Any

import pytest

from console.background import job_process, jobs
from console.models import AnalyticsJob, AuditEntry, SavedQuery
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

HOUR = 3_600_000
BASE = (int(time.time() * 1000) // HOUR - 2) * HOUR
PAGE = "/clusters/local/analytics/sql/"
QUERIES = "/api/clusters/local/analytics/sql/queries/"


@pytest.fixture(scope="module")
def shop(kafka_cluster: Any) -> tuple[str, list[dict[str, Any]]]:
    """120 JSON orders over two partitions: id, kind, amount (a decimal on every third), a nested customer."""
    topic = create_topic(unique("sql-page"), partitions=2)
    docs = [
        {
            "id": i,
            "kind": ("buy", "view", "refund")[i % 3],
            "amount": i + 0.5 if i % 3 == 0 else i,
            "customer": {"name": f"c{i % 7}", "vip": i % 5 == 0},
            "tags": ["a", "b"][: i % 3],
        }
        for i in range(120)
    ]
    produce_timed(topic, [(str(i % 7).encode(), json.dumps(d).encode(), BASE + i * 60_000) for i, d in enumerate(docs)])
    return topic, docs


@pytest.fixture
def no_spawn(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    started: list[int] = []
    monkeypatch.setattr(jobs, "_spawn", started.append)
    return started


def test_completion_lists_topics_and_a_topics_fields_with_their_types(shop: Any) -> None:
    topic, _ = shop
    client = logged_in("viewer")
    listed = client.get("/api/clusters/local/analytics/sql/tables/")
    assert listed.status_code == 200
    assert topic in listed.json()["topics"]
    assert [c["name"] for c in listed.json()["columns"]] == [
        "partition",
        "offset",
        "timestamp",
        "key",
        "value",
        "headers",
        "fields",
    ]
    table = client.get("/api/clusters/local/analytics/sql/tables/", {"topic": topic})
    assert table.status_code == 200, table.content
    body = table.json()
    assert body["records"] == 120
    fields = {f["path"]: f["type"] for f in body["fields"]}
    # amount mixes whole numbers and decimals in what was written: a double, as Spark will read it.
    assert fields == {
        "id": "bigint",
        "kind": "string",
        "amount": "double",
        "customer": "struct",
        "customer.name": "string",
        "customer.vip": "boolean",
        "tags": "array<string>",
    }
    missing = client.get("/api/clusters/local/analytics/sql/tables/", {"topic": unique("no-such-topic")})
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_found"
    empty = create_topic(unique("sql-empty"), partitions=1)
    nothing = client.get("/api/clusters/local/analytics/sql/tables/", {"topic": empty}).json()
    assert nothing["records"] == 0
    assert nothing["fields"] == []
    assert nothing["sampled"] is False


def test_the_page_runs_a_query_and_keeps_a_refused_one_beside_its_reason(shop: Any, no_spawn: list[int]) -> None:
    topic, _ = shop
    operator = logged_in("operator")
    page = operator.get(PAGE)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="sql"' in html
    assert topic in html
    assert 'id="run-sql"' in html
    assert "SQL over topics" in logged_in("viewer").get("/clusters/local/analytics/").content.decode()

    refused_sql = f"DROP TABLE `{topic}`"
    refused = operator.post(PAGE, {"sql": refused_sql, "range": "24h", "action": "run"})
    assert refused.status_code == 400
    text = refused.content.decode()
    assert 'id="sql-error"' in text
    assert "Only queries that read" in text
    assert f"DROP TABLE `{topic}`</textarea>" in text  # the query kept in the editor
    assert not [j for j in AnalyticsJob.objects.filter(report="sql") if topic in j.params.get("topics", [])]

    good = f"SELECT fields.kind, count(*) AS n FROM `{topic}` GROUP BY 1"
    started = operator.post(PAGE, {"sql": good, "range": "all", "action": "run"})
    assert started.status_code == 302
    job = AnalyticsJob.objects.get(pk=int(started["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert job.report == "sql"
    assert job.params["topics"] == [topic]
    assert job.params.get("from_ms") is None  # "everything"
    entry = AuditEntry.objects.filter(action="analytics.start", target=topic).latest("at")
    assert entry.outcome == "done"

    viewer = logged_in("viewer")
    assert 'id="run-sql"' not in viewer.get(PAGE).content.decode()
    assert viewer.post(PAGE, {"sql": good, "range": "all", "action": "run"}).status_code == 403
    # ?sql= fills the editor (the job page's "Edit and run again").
    assert "SELECT 1 AS one</textarea>" in operator.get(PAGE, {"sql": "SELECT 1 AS one"}).content.decode()
    assert operator.get("/clusters/nowhere/analytics/sql/").status_code == 404


def test_saved_queries_roles_sharing_owner_only_delete_and_audit(shop: Any) -> None:
    topic, _ = shop
    sql = f"SELECT count(*) AS n FROM `{topic}`"
    name = unique("orders")
    SavedQuery.objects.all().delete()
    viewer, alice, bob = logged_in("viewer"), logged_in("operator", "sql-alice"), logged_in("operator", "sql-bob")

    refused = viewer.post(PAGE, {"sql": sql, "name": name, "action": "save"})
    assert refused.status_code == 403
    assert not SavedQuery.objects.exists()

    saved = alice.post(PAGE, {"sql": sql, "name": name, "action": "save"})
    assert saved.status_code == 302
    mine = SavedQuery.objects.get(name=name)
    assert saved["Location"].endswith(f"?q={mine.pk}&range=24h&saved=1")
    assert (mine.owner_name, mine.shared, mine.cluster, mine.sql) == ("sql-alice", False, "local", sql)
    opened = alice.get(saved["Location"]).content.decode()
    assert f"{sql}</textarea>" in opened
    assert 'id="sql-saved"' in opened

    # Not shared: bob neither sees it listed nor opens it by its link.
    assert name not in bob.get(PAGE).content.decode()
    assert bob.get(PAGE, {"q": mine.pk}).status_code == 404
    # Saved again under its name, shared: the same query, replaced.
    again = alice.post(PAGE, {"sql": sql + " WHERE fields.id > 3", "name": name, "shared": "on", "action": "save"})
    assert again.status_code == 302
    assert SavedQuery.objects.filter(name=name).count() == 1
    mine.refresh_from_db()
    assert mine.shared
    assert mine.sql.endswith("> 3")
    listed = bob.get(QUERIES).json()["queries"]
    assert [(q["name"], q["owner"], q["mine"], q["shared"]) for q in listed] == [(name, "sql-alice", False, True)]
    assert bob.get(PAGE, {"q": mine.pk}).status_code == 200
    assert name in viewer.get(PAGE).content.decode()

    # A query that would be refused is not saved; nor one without a name.
    bad = alice.post(PAGE, {"sql": f"INSERT INTO `{topic}` VALUES (1)", "name": "bad", "action": "save"})
    assert bad.status_code == 400
    assert "Only queries that read" in bad.content.decode()
    nameless = alice.post(QUERIES, json.dumps({"sql": sql}), content_type="application/json")
    assert nameless.status_code == 400
    assert "name" in nameless.json()["message"]

    # Only its owner deletes it: bob (an operator) is refused, as is a viewer; alice deletes it.
    url = f"/clusters/local/analytics/sql/queries/{mine.pk}/delete/"
    assert bob.post(url).status_code == 403
    assert bob.delete(f"{QUERIES}{mine.pk}/").status_code == 403
    assert viewer.post(url).status_code == 403
    assert SavedQuery.objects.filter(pk=mine.pk).exists()
    assert alice.post(url).status_code == 302
    assert not SavedQuery.objects.filter(pk=mine.pk).exists()
    assert alice.delete(f"{QUERIES}{mine.pk}/").status_code == 404

    # Through the API: 201 and the query as JSON.
    made = bob.post(QUERIES, json.dumps({"name": "bobs", "sql": sql, "shared": True}), content_type="application/json")
    assert made.status_code == 201, made.content
    assert made.json()["mine"] is True
    assert made.json()["shared"] is True
    assert bob.get(f"{QUERIES}{made.json()['id']}/").json()["sql"] == sql
    assert bob.delete(f"{QUERIES}{made.json()['id']}/").status_code == 200

    entries = [
        (e.action, e.username, e.outcome)
        for e in AuditEntry.objects.filter(action__in=("sql.save", "sql.delete")).order_by("at", "id")
    ]
    assert entries == [
        ("sql.save", "test-viewer", "refused"),
        ("sql.save", "sql-alice", "done"),
        ("sql.save", "sql-alice", "done"),
        ("sql.save", "sql-alice", "failed"),
        ("sql.save", "sql-alice", "failed"),
        ("sql.delete", "sql-bob", "refused"),
        ("sql.delete", "sql-bob", "refused"),
        ("sql.delete", "test-viewer", "refused"),
        ("sql.delete", "sql-alice", "done"),
        ("sql.save", "sql-bob", "done"),
        ("sql.delete", "sql-bob", "done"),
    ]
    kept = AuditEntry.objects.filter(action="sql.save", outcome="done").order_by("at", "id").first()
    assert kept is not None
    assert kept.params["sql"] == sql
    assert kept.target == name


@pytest.mark.spark
def test_a_query_run_to_its_end_its_page_and_downloads(shop: Any, no_spawn: list[int], spark: Any) -> None:
    topic, docs = shop
    client = logged_in("operator")
    sql = (
        "SELECT fields.kind AS kind, count(*) AS n, sum(fields.amount) AS total, max(timestamp) AS last "
        f"FROM `{topic}` GROUP BY 1"
    )
    started = client.post(PAGE, {"sql": sql, "range": "all", "action": "run"})
    job_id = int(started["Location"].rstrip("/").rsplit("/", 1)[1])
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    expected = {
        k: (sum(1 for d in docs if d["kind"] == k), sum(d["amount"] for d in docs if d["kind"] == k))
        for k in ("buy", "view", "refund")
    }

    page = client.get(f"/clusters/local/analytics/jobs/{job_id}/").content.decode()
    assert 'id="sql-result-app"' in page
    assert "js/sql-result.js" in page
    assert f'data-result-url="/api/jobs/{job_id}/result/"' in page

    download = client.get(f"/clusters/local/analytics/jobs/{job_id}/result.csv")
    assert download.status_code == 200
    table = list(csv.reader(io.StringIO(download.content.decode())))
    assert table[0] == ["kind", "n", "total", "last"]
    assert {r[0]: (int(r[1]), float(r[2])) for r in table[1:]} == expected
    body = json.loads(client.get(f"/clusters/local/analytics/jobs/{job_id}/result.json").content)
    assert [c["name"] for c in body["job"]["summary"]["columns"]] == ["kind", "n", "total", "last"]
    assert {r["kind"]: (r["n"], r["total"]) for r in body["rows"]} == expected
    assert all(r["last"].endswith("Z") for r in body["rows"])

    empty = client.post(PAGE, {"sql": f"SELECT * FROM `{topic}` WHERE fields.id < 0", "range": "all", "action": "run"})
    empty_id = int(empty["Location"].rstrip("/").rsplit("/", 1)[1])
    assert job_process.execute(empty_id, spark=spark).status == "succeeded"
    shown = client.get(f"/clusters/local/analytics/jobs/{empty_id}/").content.decode()
    assert 'id="sql-empty"' in shown
    assert "sql-result-app" not in shown
    header = client.get(f"/clusters/local/analytics/jobs/{empty_id}/result.csv").content.decode().splitlines()
    assert header == ["partition,offset,timestamp,key,value,headers,fields"]


def test_bad_input_gets_a_readable_refusal(shop: Any) -> None:
    client = logged_in("operator")
    tables = "/api/clusters/local/analytics/sql/tables/"
    for name in ("..", "a" * 300, "with space", "é" * 20, "x\u0000"):
        answer = client.get(tables, {"topic": name})
        assert answer.status_code == 400, (name, answer.content)
        assert "topic" in answer.json()["message"]
    for q in ("(" * 50, "9" * 40, "-1"):
        assert client.get(PAGE, {"q": q}).status_code in (400, 404)
    assert client.get(PAGE, {"q": "(("}).status_code == 400
    wrong = [
        {"name": ["x"], "sql": "SELECT 1"},
        {"name": "x", "sql": {"a": 1}},
        {"name": "a\u0000b", "sql": "SELECT 1"},
    ]
    for body in wrong:
        answer = client.post(QUERIES, json.dumps(body), content_type="application/json")
        assert answer.status_code == 400, (body, answer.content)
        assert answer.json()["message"]
    too_long = client.post(QUERIES, json.dumps({"name": "n" * 121, "sql": "SELECT 1"}), content_type="application/json")
    assert too_long.status_code == 400
    assert "at most 120" in too_long.json()["message"]
    assert client.post(PAGE, {"sql": "SELECT 1", "range": "\u0663", "action": "run"}).status_code == 400
    assert not SavedQuery.objects.filter(name__in=("a\u0000b", "n" * 121)).exists()
