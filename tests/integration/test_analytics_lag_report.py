"""The lag report on real Spark over lag history in the console's database, against a plain-Python
computation of the same figures; the sampler keeps each partition's status with its sample."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from console.background import job_process, jobs
from console.models import AnalyticsJob, LagSample
from tests.conftest import logged_in

pytestmark = [pytest.mark.django_db, pytest.mark.kafka]

T0 = datetime(2026, 11, 23, 10, 0, tzinfo=UTC)


def history() -> list[tuple[str, str, int, int, int | None, int | None, str]]:
    """(group, topic, partition, seconds after T0, lag, lag_ms, status): uneven sampling with a pause."""
    rows: list[tuple[str, str, int, int, int | None, int | None, str]] = []
    for i, s in enumerate([0, 10, 20, 30, 40, 200, 210, 220]):  # a pause of 160 s after 40 s
        rows.append(("g-a", "orders", 0, s, i * 3, i * 1000, "OK" if i < 3 else "WARN"))
        rows.append(("g-a", "orders", 1, s, 5, 500, "STALL" if i >= 5 else "OK"))
    for s in [0, 10, 20]:
        rows.append(("g-b", "clicks", 0, s, 0, 0, "OK"))
    rows.append(("g-b", "clicks", 0, 30, None, None, ""))  # a sample without an offset
    return rows


def expected(rows: list[tuple[Any, ...]], gap_s: float) -> dict[tuple[str, str, int], dict[str, Any]]:
    out: dict[tuple[str, str, int], dict[str, Any]] = {}
    keys = sorted({(g, t, p) for g, t, p, *_ in rows})
    for key in keys:
        mine = sorted((r for r in rows if r[:3] == key), key=lambda r: r[3])
        lags = [r[4] for r in mine if r[4] is not None]
        seconds: dict[str, float] = {}
        for here, after in zip(mine, [*mine[1:], None], strict=True):
            lasts = min(after[3] - here[3], gap_s) if after else 0
            seconds[here[6]] = seconds.get(here[6], 0) + lasts
        out[key] = {
            "samples": len(mine),
            "max_lag": max(lags) if lags else None,
            "mean_lag": round(sum(lags) / len(lags), 2) if lags else None,
            "last_lag": mine[-1][4],
            "last_lag_ms": mine[-1][5],
            **{f"seconds_{s.lower()}": seconds.get(s, 0) for s in ("OK", "WARN", "STALL", "STOP", "REWIND")},
        }
    return out


@pytest.mark.spark
def test_the_lag_report_summarises_each_partitions_history(spark: Any, settings: Any, monkeypatch: Any) -> None:
    settings.KAZAMI_LAG_SAMPLE_INTERVAL = 10.0  # a sample's status lasts at most 30 s
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)
    rows = history()
    LagSample.objects.bulk_create(
        LagSample(
            cluster="local",
            group=g,
            topic=t,
            partition=p,
            at=T0 + timedelta(seconds=s),
            committed=None if lag is None else 100,
            log_end=None if lag is None else 100 + lag,
            lag=lag,
            lag_ms=lag_ms,
            status=status,
        )
        for g, t, p, s, lag, lag_ms, status in rows
    )
    client = logged_in("operator")
    body = {
        "report": "lag",
        "groups": [],
        "from": (T0 - timedelta(hours=1)).isoformat(),
        "to": (T0 + timedelta(hours=1)).isoformat(),
    }
    answer = client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json")
    assert answer.status_code == 201, answer.content
    done = job_process.execute(answer.json()["id"], spark=spark)
    assert done.status == "succeeded", done.error
    assert done.input_rows == len(rows)
    got = {
        (r["group"], r["topic"], r["partition"]): r for r in client.get(f"/api/jobs/{done.pk}/result/").json()["rows"]
    }
    want = expected(rows, gap_s=30)
    assert set(got) == set(want)
    for key, figures in want.items():
        for name, value in figures.items():
            assert got[key][name] == pytest.approx(value), (key, name)
    assert got[("g-a", "orders", 0)]["seconds_warn"] == 10 + 30 + 10 + 10  # the pause counts 30 s, not 160
    page = client.get(f"/clusters/local/analytics/jobs/{done.pk}/")
    assert page.status_code == 200
    assert page.context["charts"]["bars"]["labels"] == ["g-a", "g-b"]


def test_a_lag_report_of_a_group_never_sampled_is_refused(monkeypatch: Any) -> None:
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)
    client = logged_in("operator")
    body = {"report": "lag", "groups": ["never-seen"]}
    answer = client.post("/api/clusters/local/jobs/", json.dumps(body), content_type="application/json")
    assert answer.status_code == 404
    assert "never-seen" in answer.json()["message"]
    assert not AnalyticsJob.objects.exists()


def test_the_groups_pages_lag_report_buttons_start_a_job(monkeypatch: Any) -> None:
    monkeypatch.setattr(jobs, "_spawn", lambda job_id: None)
    LagSample.objects.create(cluster="local", group="g-a", topic="t", partition=0, at=datetime.now(UTC), lag=1)
    client = logged_in("operator")
    answer = client.post("/clusters/local/groups-lag-report/", {"group": "g-a"})
    job = AnalyticsJob.objects.get()
    assert answer.status_code == 302
    assert answer["Location"] == f"/clusters/local/analytics/jobs/{job.pk}/"
    assert (job.report, job.params["groups"]) == ("lag", ["g-a"])
    assert job.params["to_ms"] - job.params["from_ms"] == 24 * 3_600_000
    assert logged_in("viewer").post("/clusters/local/groups-lag-report/", {}).status_code == 403
