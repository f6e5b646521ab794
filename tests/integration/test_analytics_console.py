"""Analytics jobs through the console: the API's checks before Spark starts, roles and audit, the queue,
and a job run to its end (in this process, on the shared Spark session) whose result the API, the
page and the downloads serve. A job run in a process of its own is tested in tests/browser."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import Client

from broker.demo.web import web_events
from console.background import job_process, jobs
from console.models import AnalyticsJob, AuditEntry
from tests import analytics_reference as ref
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce_timed, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

HOUR = 3_600_000
BASE = (int(time.time() * 1000) // HOUR - 3) * HOUR


@pytest.fixture(scope="module")
def traffic(kafka_cluster: Any) -> tuple[str, list[tuple[bytes | None, bytes | None, int]]]:
    topic = create_topic(unique("console-web"), partitions=2)
    written: list[tuple[bytes | None, bytes | None, int]] = [
        (e.key, e.value, e.timestamp_ms) for e in web_events(1500, BASE, BASE + 3 * HOUR, seed=5, users=200)
    ]
    produce_timed(topic, written)
    return topic, written


@pytest.fixture
def no_spawn(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Jobs are claimed but not started in a process of their own: the test runs them itself."""
    started: list[int] = []

    def spawn(job_id: int) -> None:
        started.append(job_id)

    monkeypatch.setattr(jobs, "_spawn", spawn)
    return started


def post(client: Client, url: str, body: dict[str, Any]) -> Any:
    return client.post(url, json.dumps(body), content_type="application/json")


def test_the_api_refuses_bad_requests_before_spark_starts(traffic: Any, no_spawn: list[int]) -> None:
    topic, _ = traffic
    client = logged_in("operator")
    url = "/api/clusters/local/jobs/"
    cases = [
        ({"report": "nope", "topics": [topic]}, 400, "report must be one of"),
        ({"report": "pv_uu", "topics": []}, 400, "at least one topic"),
        ({"report": "pv_uu", "topics": [topic], "bucket": "week"}, 400, "bucket must be one of"),
        ({"report": "pv_uu", "topics": ["no-such-topic-here"]}, 404, "no-such-topic-here"),
        (
            {"report": "pv_uu", "topics": [topic], "from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"},
            400,
            "before",
        ),
        ({"report": "pv_uu", "topics": [topic], "from": "yesterday"}, 400, "from must be"),
        (
            {
                "report": "pv_uu",
                "topics": [topic],
                "bucket": "minute",
                "from": "2025-01-01T00:00:00Z",
                "to": "2026-01-01T00:00:00Z",
            },
            400,
            "points",
        ),
    ]
    for body, status, words in cases:
        answer = post(client, url, body)
        assert answer.status_code == status, (body, answer.content)
        assert words in answer.json()["message"], answer.json()
    bad_json = client.post(url, b"{not json", content_type="application/json")
    assert bad_json.status_code == 400
    assert not AnalyticsJob.objects.exists()
    assert no_spawn == []
    # Every refusal is in the audit log as a failed start.
    assert AuditEntry.objects.filter(action="analytics.start", outcome="failed").count() == len(cases)


def test_only_operators_start_and_cancel_jobs(traffic: Any, no_spawn: list[int]) -> None:
    topic, _ = traffic
    viewer = logged_in("viewer")
    refused = post(viewer, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic]})
    assert refused.status_code == 403
    assert "operator" in refused.json()["message"]
    assert Client().get("/api/clusters/local/jobs/").status_code == 401
    operator = logged_in("operator")
    started = post(operator, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic]})
    assert started.status_code == 201
    job_id = started.json()["id"]
    assert viewer.get(f"/api/jobs/{job_id}/").status_code == 200  # viewers follow jobs
    assert viewer.post(f"/api/jobs/{job_id}/cancel/").status_code == 403
    assert operator.post(f"/api/jobs/{job_id}/cancel/").json()["cancel_requested"] is True
    actions = list(
        AuditEntry.objects.filter(action__startswith="analytics.").values_list("action", "outcome", "username")
    )
    assert ("analytics.start", "refused", "test-viewer") in actions
    assert ("analytics.start", "done", "test-operator") in actions
    assert ("analytics.cancel", "refused", "test-viewer") in actions
    assert ("analytics.cancel", "done", "test-operator") in actions


def test_jobs_beyond_the_limit_wait_and_a_waiting_job_cancels_at_once(
    traffic: Any, no_spawn: list[int], settings: Any
) -> None:
    settings.KAZAMI_ANALYTICS_MAX_JOBS = 1
    topic, _ = traffic
    client = logged_in("operator")
    first = post(client, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic]}).json()
    second = post(client, "/api/clusters/local/jobs/", {"report": "ctr", "topics": [topic]}).json()
    assert first["status"] == "running"
    assert second["status"] == "queued"
    assert no_spawn == [first["id"]]
    cancelled = client.post(f"/api/jobs/{second['id']}/cancel/").json()
    assert cancelled["status"] == "cancelled"
    assert client.post(f"/api/jobs/{second['id']}/cancel/").status_code == 400  # finished already
    listed = client.get("/api/clusters/local/jobs/").json()["jobs"]
    assert [j["id"] for j in listed[:2]] == [second["id"], first["id"]]


def test_a_job_whose_process_died_is_marked_failed(traffic: Any, no_spawn: list[int]) -> None:
    topic, _ = traffic
    client = logged_in("operator")
    job_id = post(client, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic]}).json()["id"]
    AnalyticsJob.objects.filter(pk=job_id).update(pid=2**22 + 12345)  # no such process
    answer = client.get(f"/api/jobs/{job_id}/").json()
    assert answer["status"] == "failed"
    assert "ended without a result" in answer["error"]


@pytest.mark.spark
def test_a_job_runs_to_its_result_and_every_view_of_it_agrees(spark: Any, traffic: Any, no_spawn: list[int]) -> None:
    topic, written = traffic
    client = logged_in("operator")
    body = {"report": "pv_uu", "topics": [topic], "bucket": "hour", "from": BASE, "to": BASE + 3 * HOUR}
    job_id = post(client, "/api/clusters/local/jobs/", body).json()["id"]
    assert client.get(f"/api/jobs/{job_id}/result/").status_code == 400  # not finished yet
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    status = client.get(f"/api/jobs/{job_id}/").json()
    assert status["progress"] == 1.0
    assert status["input_rows"] == len(written)
    assert status["malformed"] == {}
    rows = client.get(f"/api/jobs/{job_id}/result/").json()["rows"]
    expected = ref.pv_uu(ref.read(written, None, None), "hour")
    assert {(r["bucket_start"], r["url"]): (r["pv"], r["uu"]) for r in rows} == expected
    page = client.get(f"/clusters/local/analytics/jobs/{job_id}/")
    assert page.status_code == 200
    charts = page.context["charts"]
    assert charts["line"]["series"][0]["label"] == "PV"
    assert sum(v or 0 for v in charts["line"]["series"][0]["values"]) == sum(
        pv for (b, url), (pv, _) in expected.items() if url is None
    )
    csv_text = client.get(f"/clusters/local/analytics/jobs/{job_id}/result.csv").content.decode()
    assert csv_text.splitlines()[0] == "bucket_start,url,pv,uu"
    assert len(csv_text.splitlines()) == len(rows) + 1
    assert client.get(f"/clusters/local/analytics/jobs/{job_id}/result.xml").status_code == 404
    assert client.get(f"/clusters/other/analytics/jobs/{job_id}/").status_code == 404


def test_the_analytics_page_and_a_topics_buttons(traffic: Any, no_spawn: list[int]) -> None:
    topic, _ = traffic
    operator = logged_in("operator")
    page = operator.get("/clusters/local/analytics/")
    assert page.status_code == 200
    assert b'name="report"' in page.content
    viewer_page = logged_in("viewer").get("/clusters/local/analytics/")
    assert b'name="report"' not in viewer_page.content  # viewers follow jobs, they do not start them
    topic_page = operator.get(f"/clusters/local/topics/{topic}/")
    assert b"PV/UU" in topic_page.content
    started = operator.post(f"/clusters/local/topics/{topic}/analytics/ctr/")
    assert started.status_code == 302
    job = AnalyticsJob.objects.get()
    assert started["Location"] == f"/clusters/local/analytics/jobs/{job.pk}/"
    assert job.report == "ctr"
    assert job.params["to_ms"] - job.params["from_ms"] == 24 * HOUR
    refused = operator.post("/clusters/local/analytics/", {"report": "pv_uu", "topics": "", "range": "all"})
    assert refused.status_code == 400
    assert b"at least one topic" in refused.content


def test_without_sparks_jars_the_page_says_so_and_the_api_answers_503(
    traffic: Any, no_spawn: list[int], monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from analytics import spark

    monkeypatch.setattr(spark, "JARS", tmp_path)  # as before `make install` fetched them
    topic, _ = traffic
    client = logged_in("operator")
    page = client.get("/clusters/local/analytics/")
    assert page.status_code == 200
    assert b"Spark cannot run here" in page.content
    assert b"make install" in page.content
    answer = post(client, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic]})
    assert answer.status_code == 503
    assert answer.json()["error"] == "spark_unavailable"
    assert "make install" in answer.json()["message"]
    assert not AnalyticsJob.objects.exists()


@pytest.mark.spark
def test_an_offset_range_reads_only_those_offsets(spark: Any, kafka_cluster: Any, no_spawn: list[int]) -> None:
    topic = create_topic(unique("offsets-web"), partitions=1, replication=1)
    written: list[tuple[bytes | None, bytes | None, int]] = [
        (e.key, e.value, e.timestamp_ms) for e in web_events(300, BASE, BASE + HOUR, seed=8, users=50)
    ]
    produce_timed(topic, written)  # one partition: a record's offset is its place in the list
    client = logged_in("operator")
    bad = post(
        client, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic], "offsets": {topic: {"7": [0, 9]}}}
    )
    assert bad.status_code == 404
    assert "no partition 7" in bad.json()["message"]
    backwards = post(client, "/api/clusters/local/jobs/", {"report": "pv_uu", "topics": [topic], "offsets": "0:90-10"})
    assert backwards.status_code == 400
    body = {"report": "pv_uu", "topics": [topic], "bucket": "minute", "offsets": {topic: {"0": [50, 200]}}}
    job_id = post(client, "/api/clusters/local/jobs/", body).json()["id"]
    done = job_process.execute(job_id, spark=spark)
    assert done.status == "succeeded", done.error
    assert done.input_rows == 150
    rows = client.get(f"/api/jobs/{job_id}/result/").json()["rows"]
    expected = ref.pv_uu(ref.read(written[50:200], None, None), "minute")
    assert {(r["bucket_start"], r["url"]): (r["pv"], r["uu"]) for r in rows} == expected
    # The form's text form, to the end of the partition, replaces the time range chosen beside it.
    page = client.post(
        "/clusters/local/analytics/",
        {"report": "pv_uu", "topics": topic, "range": "1h", "bucket": "total", "offsets": "0:250-"},
    )
    assert page.status_code == 302
    job = AnalyticsJob.objects.get(pk=int(page["Location"].rstrip("/").rsplit("/", 1)[1]))
    assert (job.params["offsets"], job.params["from_ms"]) == ([[topic, 0, 250, None]], None)
