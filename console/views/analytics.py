"""Analytics: the report form and job history of a cluster, a job's page (live progress, charts, table,
downloads), and their JSON API. The work happens in console/background/ (job_spec, jobs, job_process) and analytics/."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from analytics.events import BUCKETS, FIELDS
from analytics.present import chart_data, result_table
from analytics.profile import COLUMNS as PROFILE_COLUMNS
from analytics.reports import LABELS, REPORTS
from analytics.runner import PROFILE, SQL
from analytics.spark import SparkUnavailable, check_jobs, shown
from analytics.sql import check_sql
from broker.errors import InvalidInput, KazamiError, NotFound
from broker.topics import read as topics
from console.access import Forbidden, NotVisible, perform, role_of, scoped, sees_every, visible
from console.background import job_spec, jobs, live_analytics
from console.background.job_spec import job_reads
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.live.fragments import job_status_context, jobs_context, live_context
from console.models import AnalyticsJob
from console.params import json_object
from console.present import spreadsheet
from console.present.masking import Hidden, get_rules, hidden_from, hidden_from_role

TABLE_ROWS = 500  # rows drawn under a chart; the downloads hold every row
# Spark's names of number types (a SQL job's columns): drawn right-aligned, with thousands separators.
NUMERIC_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double")
TEXT_COLUMNS = ("url", "keyword", "campaign_id", "ad_id", "network", "bucket_start", "group", "topic", "last_at")


def hidden_result(user: Any, job: AnalyticsJob) -> Hidden | None:
    """Whether ``job``'s result is hidden from ``user``: a masking rule that masks a topic the job reads for the
    user's role could reach the event fields its rows are made of (docs/operations.md, "Data masking"). A lag
    report reads no record."""
    if job.report == "lag":
        return None
    # A query may read anything of its topics' records, a profile shows their values: any rule masking one of
    # them for the user hides it.
    fields = None if job.report in (SQL, PROFILE) else FIELDS
    return hidden_from(user, job.cluster, job.params.get("topics", []), fields)


def _columns_of(job: AnalyticsJob) -> tuple[str, ...]:
    """The columns of ``job``'s rows: its report's, or those its query returned."""
    if job.report == SQL:
        return tuple(c["name"] for c in (job.summary or {}).get("columns", []))
    if job.report == PROFILE:
        return PROFILE_COLUMNS
    return tuple(REPORTS[job.report].COLUMNS)


def job_json(job: AnalyticsJob, request: HttpRequest | None = None, role: str | None = None) -> dict[str, Any]:
    """A job for the API. With ``request`` (its user, or ``role`` when given), a result masking hides from them
    keeps its summary (which names campaigns) to itself and says why under ``masked``."""
    p = job.params
    body = {
        "id": job.pk,
        "cluster": job.cluster,
        "report": job.report,
        "topics": p.get("topics", []),
        "bucket": p.get("bucket"),
        "from": _iso(p.get("from_ms")),
        "to": _iso(p.get("to_ms")),
        "approximate": bool(p.get("approximate")),
        "top_n": p.get("top_n"),
        **({"sql": p["sql"]} if p.get("sql") else {}),
        "status": job.status,
        "progress": round(job.progress, 4),
        "stage": job.stage or None,
        "created_by": job.username,
        "created_at": job.created_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "duration_s": round(job.duration_s, 3) if job.duration_s is not None else None,
        "input_rows": job.input_rows,
        "input_bytes": job.input_bytes,
        "malformed": job.malformed,
        "summary": job.summary,
        "notes": job.notes,
        "error": job.error or None,
        "cancel_requested": job.cancel_requested_at is not None,
        "spark_ui_url": job.spark_ui_url or None,
    }
    if request is not None:
        body["url"] = request.build_absolute_uri(reverse("api-job", kwargs={"job_id": job.pk}))
        hidden = None
        topics = p.get("topics", [])
        if job.report != "lag" and any(r.covers(job.cluster, t) for r in get_rules(job.cluster) for t in topics):
            who = role if role is not None else role_of(request.user)
            hidden = hidden_from_role(who, job.cluster, topics, None if job.report in (SQL, PROFILE) else FIELDS)
        if hidden is not None:
            body["summary"] = {}
            body["masked"] = hidden.message
    return body


def _iso(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def _spark_problem(live: bool = False) -> str | None:
    """Why jobs (or, ``live``, the live figures, which run a Spark of their own) cannot run, or None."""
    try:
        check_jobs("" if live else settings.KAZAMI_SPARK_REMOTE)
    except SparkUnavailable as exc:
        return str(exc)
    return None


# --- pages ----------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@page_view
@scoped
def analytics_home(request: HttpRequest, cluster: str) -> HttpResponse:
    """The report form (operators) and the cluster's job history (live)."""
    conn = get_connection(cluster)  # an unknown cluster is a 404 before anything else
    values: dict[str, Any] = {"report": "pv_uu", "bucket": "hour", "range": "24h", "topics": "", "sql": ""}
    values.update(
        {k: v for k, v in request.GET.items() if k in ("report", "bucket", "topics", "groups", "range", "sql")}
    )
    error = None
    status = 200
    if request.method == "POST":
        data = dict(request.POST.items())
        values.update(data)
        try:
            job = _start(request, cluster, _with_range(data))
        except KazamiError as exc:
            error, status = str(exc), status_of(exc)[0]
        else:
            return redirect("analytics-job", cluster=cluster, job_id=job.pk)
    context = {
        **jobs_context(cluster, keep=seen_jobs(request.user)),
        "values": values,
        "error": error,
        "spark_problem": _spark_problem(),
        "reports": LABELS,
        "ranges": list(RANGES.items()),
        "topic_names": _topic_names(request, cluster, conn),
        "buckets": list(BUCKETS),
        "max_jobs": settings.KAZAMI_ANALYTICS_MAX_JOBS,
        "spark_where": (
            f"warm Spark {shown(settings.KAZAMI_SPARK_REMOTE)}"
            if settings.KAZAMI_SPARK_REMOTE
            else f"master {settings.KAZAMI_SPARK_MASTER}"
        ),
        "live_interval": settings.KAZAMI_LIVE_INTERVAL,
    }
    return render(request, "analytics/home.html", context, status=status)


RANGES = {
    "1h": "last hour",
    "6h": "last 6 hours",
    "24h": "last 24 hours",
    "7d": "last 7 days",
    "30d": "last 30 days",
    "all": "everything",
    "custom": "custom (below)",
}
_RANGE_SPANS = {"1h": 1, "6h": 6, "24h": 24, "7d": 24 * 7, "30d": 24 * 30}


def _with_range(data: dict[str, Any]) -> dict[str, Any]:
    """The page's ``range`` choice as ``from``/``to`` (the API takes them directly)."""
    chosen = str(data.get("range") or "custom")
    if chosen == "custom":
        return data
    if str(data.get("offsets") or "").strip():
        return {**data, "from": None, "to": None}  # offsets name what to read; a range chosen too would cut them
    if chosen not in RANGES:
        raise InvalidInput(f"range must be one of {', '.join(RANGES)}.")
    if chosen == "all":
        return {**data, "from": None, "to": None}
    now = datetime.now(UTC)
    return {**data, "from": (now - timedelta(hours=_RANGE_SPANS[chosen])).isoformat(), "to": now.isoformat()}


def _last_day() -> dict[str, str]:
    """``from`` and ``to`` of the last 24 hours, for the one-click jobs."""
    now = datetime.now(UTC)
    return {"from": (now - timedelta(hours=24)).isoformat(), "to": now.isoformat()}


def _topic_names(request: HttpRequest, cluster: str, conn: Any) -> list[str]:
    """For the form's suggestions (those the user may see); none when the cluster does not answer (the form still
    works)."""
    try:
        return visible(request, cluster, "topic", [t.name for t in topics.get_topics(conn)], str)
    except KazamiError:
        return []


def seen_jobs(user: Any) -> Callable[[AnalyticsJob], bool]:
    """Whether ``user`` may see a job: all it reads (console.access.sees_every)."""
    return lambda job: sees_every(user, job.cluster, *job_reads(job))


def _start(request: HttpRequest, cluster: str, data: dict[str, Any]) -> AnalyticsJob:
    def start() -> AnalyticsJob:
        spec = job_spec.check_job_request(data)
        return jobs.do_submit(cluster, spec, request.user, job_spec.check_offsets(data, spec))

    named = data.get("groups") if data.get("report") == "lag" else data.get("topics", "")
    if data.get("report") == SQL:  # a query's tables are the topics it reads
        named = _sql_topics(data.get("sql"))
    target = ",".join(str(t) for t in named) if isinstance(named, list) else str(named or "")
    shown = ("report", "topics", "groups", "bucket", "from", "to", "offsets", "approximate", "sql")
    params: dict[str, Any] = {k: data.get(k) for k in shown if k in data}
    # A grant must reach every group (a lag report) or topic it reads; a lag report of every group, the cluster.
    kind = ("group" if data.get("report") == "lag" else "topic") if target else None
    return perform(
        request, "analytics.start", cluster, target, params, start, lambda job: f"job {job.pk} {job.status}", kind
    )


def _sql_topics(text: Any) -> list[str]:
    """The topics a query reads, for the audit log's target (none when it does not pass the checks)."""
    try:
        return list(check_sql(text).topics) if isinstance(text, str) else []
    except InvalidInput:
        return []


@require_POST
@page_view
def quick_job(request: HttpRequest, cluster: str, topic: str, report: str) -> HttpResponse:
    """ "PV/UU", "CTR" and "Profile" on a topic's page: that topic, the last 24 hours, hourly, started at once."""
    now = datetime.now(UTC)
    data = {
        "report": report,
        "topics": [topic],
        "bucket": "hour",
        "from": (now - timedelta(hours=24)).isoformat(),
        "to": now.isoformat(),
    }
    job = _start(request, cluster, data)
    return redirect("analytics-job", cluster=cluster, job_id=job.pk)


@require_POST
@page_view
@scoped
def lag_report_job(request: HttpRequest, cluster: str) -> HttpResponse:
    """ "Lag report" on the groups page (every group) and on a group's page (``group``): the last 24 hours."""
    group = request.POST.get("group", "").strip()
    job = _start(request, cluster, {"report": "lag", "groups": [group] if group else [], **_last_day()})
    return redirect("analytics-job", cluster=cluster, job_id=job.pk)


@require_GET
@page_view
@scoped
def job_page(request: HttpRequest, cluster: str, job_id: int) -> HttpResponse:
    job = _job_of(cluster, job_id, request)
    hidden = hidden_result(request.user, job)
    rows = job.result.rows if job.status == AnalyticsJob.SUCCEEDED and hasattr(job, "result") else []
    if hidden is not None:
        rows = []
    bucket = job.params.get("bucket", "hour")
    context = {
        **job_status_context(job),
        "cluster": cluster,
        "columns": _columns_of(job),
        "text_columns": TEXT_COLUMNS,
        "numeric_types": NUMERIC_TYPES,
        "rows": rows[:TABLE_ROWS],
        "row_count": len(rows),
        "table": result_table(job.report, rows, _columns_of(job), request.GET)
        if job.report not in (SQL, PROFILE)
        else None,
        "charts": chart_data(job.report, bucket, rows),
        "from_iso": _iso(job.params.get("from_ms")),
        "to_iso": _iso(job.params.get("to_ms")),
        "live_interval": settings.KAZAMI_LIVE_INTERVAL,
        "hidden": hidden.message if hidden is not None else None,
    }
    return render(request, "analytics/job.html", context)


@require_POST
@page_view
@scoped
def job_cancel(request: HttpRequest, cluster: str, job_id: int) -> HttpResponse:
    job = _job_of(cluster, job_id, request)
    _cancel(request, job)
    return redirect("analytics-job", cluster=cluster, job_id=job.pk)


def _cancel(request: HttpRequest, job: AnalyticsJob) -> AnalyticsJob:
    return perform(
        request, "analytics.cancel", job.cluster, f"job {job.pk}", {}, lambda: jobs.do_cancel(job), lambda j: j.status
    )


@require_GET
@page_view
@scoped
def job_download(request: HttpRequest, cluster: str, job_id: int, fmt: str) -> HttpResponse:
    return _download(_job_of(cluster, job_id, request), fmt, request)


def _job_of(cluster: str, job_id: int, request: HttpRequest) -> AnalyticsJob:
    get_connection(cluster)
    job = _seen_job(request, job_id)
    if job.cluster != cluster:
        raise NotFound(f"No analytics job {job_id} on cluster {cluster!r}.")
    return job


def _seen_job(request: HttpRequest, job_id: int) -> AnalyticsJob:
    """Job ``job_id``; NotFound as for an unknown one when it reads what the user may not see."""
    job = jobs.get_job(job_id)
    if not seen_jobs(request.user)(job):
        raise NotVisible(f"No analytics job {job_id}.")
    return job


def _rows_of(job: AnalyticsJob, request: HttpRequest) -> list[dict[str, Any]]:
    """The result's rows; raises InvalidInput before the job succeeded, Forbidden when masking hides them from
    the user (the same answer the page gives, as a refusal)."""
    if job.status != AnalyticsJob.SUCCEEDED:
        raise InvalidInput(f"Job {job.pk} has no result: it is {job.status}.")
    hidden = hidden_result(request.user, job)
    if hidden is not None:
        raise Forbidden(hidden.message)
    return job.result.rows if hasattr(job, "result") else []


def _download(job: AnalyticsJob, fmt: str, request: HttpRequest) -> HttpResponse:
    rows = _rows_of(job, request)
    name = f"kazami-job-{job.pk}-{job.report}"
    if fmt == "json":
        described = job_json(job, request)
        described.pop("url", None)
        response = HttpResponse(json.dumps({"job": described, "rows": rows}, indent=2), "application/json")
    elif fmt == "csv":
        buffer = io.StringIO()
        writer = spreadsheet.DictWriter(buffer, fieldnames=list(_columns_of(job)), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
        response = HttpResponse(buffer.getvalue(), content_type="text/csv; charset=utf-8")
    else:
        raise NotFound(f"No download as {fmt!r}: csv or json.")
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


# --- API ------------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@api_view
@scoped
def api_jobs(request: HttpRequest, cluster: str) -> Any:
    """GET: the cluster's job history (newest first, ``?limit=``); POST: start a job -> 201 {"id", ...}."""
    get_connection(cluster)
    if request.method == "POST":
        job = _start(request, cluster, json_object(request, forms=True))
        return JsonResponse(job_json(job, request), status=201)
    listed = AnalyticsJob.objects.filter(cluster=cluster).order_by("-created_at", "-id")[:200]
    role = role_of(request.user)
    keep = seen_jobs(request.user)
    return {"jobs": [job_json(j, request, role) for j in listed if keep(j)]}


@require_GET
@api_view
@scoped
def api_job(request: HttpRequest, job_id: int) -> Any:
    job = _seen_job(request, job_id)
    if not job.finished:
        jobs.dispatch()
        job.refresh_from_db()
    return job_json(job, request)


@require_POST
@api_view
@scoped
def api_job_cancel(request: HttpRequest, job_id: int) -> Any:
    return job_json(_cancel(request, _seen_job(request, job_id)), request)


@require_GET
@api_view
@scoped
def api_job_result(request: HttpRequest, job_id: int) -> Any:
    job = _seen_job(request, job_id)
    rows = _rows_of(job, request)
    return {"id": job.pk, "report": job.report, "summary": job.summary, "notes": job.notes, "rows": rows}


# --- live mode ------------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@page_view
def live_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """The live figures (pushed while the page is open) and, for operators, start and stop."""
    get_connection(cluster)
    error = None
    status = 200
    if request.method == "POST":
        try:
            _live_change(request, cluster, dict(request.POST.items()))
        except KazamiError as exc:
            error, status = str(exc), status_of(exc)[0]
        else:
            return redirect("analytics-live", cluster=cluster)
    context = {
        **live_context(cluster),
        "error": error,
        "spark_problem": _spark_problem(live=True),
        "output_topic": settings.KAZAMI_ANALYTICS_LIVE_TOPIC,
        "live_interval": settings.KAZAMI_LIVE_INTERVAL,
    }
    return render(request, "analytics/live.html", context, status=status)


def _live_change(request: HttpRequest, cluster: str, data: dict[str, Any]) -> Any:
    action = str(data.get("action") or "")
    if action not in ("start", "stop"):
        raise InvalidInput("action must be start or stop.")
    names = data.get("topics") or []
    if isinstance(names, str):
        names = [t for t in names.split(",") if t.strip()]

    def change() -> Any:
        if action == "start":
            return live_analytics.do_start_live(cluster, list(names), request.user)
        return live_analytics.do_stop_live(cluster)

    return perform(
        request, "analytics.live", cluster, action, {"action": action, "topics": names}, change, lambda q: q.status
    )


def live_json(cluster: str) -> dict[str, Any]:
    context = live_context(cluster)
    live = context["live"]
    return {
        "cluster": cluster,
        "wanted": live.wanted,
        "status": live.status,
        "topics": live.topics,
        "pid": live.pid,
        "started_at": live.started_at.isoformat() if live.started_at else None,
        "restarts": live.restarts,
        "last_batch_at": live.last_batch_at.isoformat() if live.last_batch_at else None,
        "progress": live.progress,
        "error": live.error or None,
        "output_topic": settings.KAZAMI_ANALYTICS_LIVE_TOPIC or None,
        "figures": context["figures"],
    }


@require_http_methods(["GET", "POST"])
@api_view
def api_live(request: HttpRequest, cluster: str) -> Any:
    """GET: the live query's state and figures; POST {"action": "start", "topics": [...]} or {"action": "stop"}."""
    get_connection(cluster)
    if request.method == "POST":
        _live_change(request, cluster, json_object(request, forms=True))
    return live_json(cluster)
