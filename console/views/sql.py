"""SQL over topics as a page: the editor (its completion fed by the tables API), the range, Run; saved queries
(the user's own and those shared) with save and delete; and their JSON API. The query runs as an analytics job
(console/views/analytics.py starts it; its result is on the job page); the checks are analytics/sql.py's, the
completion's sample analytics/sql_catalog.py's, the saved queries' rules console/changes/saved_queries.py's."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from analytics.sql_catalog import TABLE_COLUMNS, describe_table
from broker.errors import KazamiError
from console.access import NotVisible, require_seen, scoped, sees_every
from console.changes import saved_queries
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.models import AnalyticsJob
from console.params import json_object
from console.views.analytics import RANGES, _spark_problem, _sql_topics, _start, _topic_names, _with_range, seen_jobs

# The ranges a query may read (the reports' own, but for a custom one, which the API takes as from/to).
SQL_RANGES = [(k, v) for k, v in RANGES.items() if k != "custom"]
RECENT = 10  # the cluster's latest SQL jobs listed under the editor
EXAMPLE = "SELECT fields.url, count(*) AS views FROM `page-views` GROUP BY 1 ORDER BY 2 DESC"


@require_http_methods(["GET", "POST"])
@page_view
@scoped
def sql_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """GET: the editor (``?sql=`` fills it, ``?q=<id>`` opens a saved query). POST ``action=run``: start the
    query as a job and go to its page; ``action=save``: save it (``name``, ``shared``). A refusal draws the page
    again with the query kept and the reason beside the editor."""
    conn = get_connection(cluster)
    values = {"sql": request.GET.get("sql", ""), "range": request.GET.get("range", "24h"), "name": "", "shared": ""}
    opened = None
    if request.GET.get("q"):
        opened = saved_queries.get_visible(request.user, cluster, request.GET["q"])
        if not _reads_seen(request, cluster, opened.sql):
            raise NotVisible(f"No saved query {opened.pk} on cluster {cluster!r} that you may open.")
        values.update(sql=opened.sql, name=opened.name, shared="on" if opened.shared else "")
    error = saved = None
    status = 200
    keep = seen_jobs(request.user)
    if request.method == "POST":
        values.update({k: request.POST.get(k, values[k]) for k in values})
        values["shared"] = request.POST.get("shared", "")  # an unticked box is not sent
        action = request.POST.get("action", "run")
        try:
            if action == "save":
                query = saved_queries.save(request, cluster, values["name"], values["sql"], bool(values["shared"]))
                where = reverse("analytics-sql", kwargs={"cluster": cluster})
                return redirect(f"{where}?{urlencode({'q': query.pk, 'range': values['range']})}&saved=1")
            data = _with_range({"report": "sql", "sql": values["sql"], "range": values["range"]})
            job = _start(request, cluster, data)
            return redirect("analytics-job", cluster=cluster, job_id=job.pk)
        except KazamiError as exc:
            error, status = str(exc), status_of(exc)[0]
    elif opened is not None and request.GET.get("saved"):
        saved = f"Saved as {opened.name!r}."
    context = {
        "cluster": cluster,
        "values": values,
        "opened": opened,
        "error": error,
        "saved": saved,
        "ranges": SQL_RANGES,
        "example": EXAMPLE,
        "spark_problem": _spark_problem(),
        "topic_names": _topic_names(request, cluster, conn),
        "table_columns": [c for c, _ in TABLE_COLUMNS],
        "queries": [q for q in saved_queries.visible(request.user, cluster) if _reads_seen(request, cluster, q.sql)],
        "recent": [j for j in _recent(cluster) if keep(j)],
    }
    return render(request, "analytics/sql.html", context, status=status)


@require_POST
@page_view
def saved_query_delete(request: HttpRequest, cluster: str, query_id: int) -> HttpResponse:
    get_connection(cluster)
    saved_queries.delete(request, cluster, query_id)
    return redirect("analytics-sql", cluster=cluster)


# --- API ------------------------------------------------------------------------------------------


def _recent(cluster: str) -> list[AnalyticsJob]:
    return list(AnalyticsJob.objects.filter(cluster=cluster, report="sql").order_by("-created_at", "-id")[:RECENT])


def _reads_seen(request: HttpRequest, cluster: str, sql: str) -> bool:
    """Whether the user may see every table (topic) a saved query reads."""
    return sees_every(request.user, cluster, "topic", _sql_topics(sql))


@require_GET
@api_view
@scoped
def api_tables(request: HttpRequest, cluster: str) -> Any:
    """The editor's completion: without ``topic``, the topics (each a table) and the columns every table has;
    with ``?topic=``, that table's columns and the JSON fields ``fields`` holds, from a small sample (404 for an
    unknown topic)."""
    conn = get_connection(cluster)
    columns = [{"name": name, "type": kind} for name, kind in TABLE_COLUMNS]
    topic = request.GET.get("topic", "").strip()
    if not topic:
        return {"topics": _topic_names(request, cluster, conn), "columns": columns}
    require_seen(request, cluster, "topic", [topic])
    table = describe_table(conn, topic)
    return {
        "topic": table.topic,
        "records": table.records,
        "sampled": table.sampled,
        "columns": columns,
        "fields": [{"path": f.path, "type": f.type} for f in table.fields],
    }


@require_http_methods(["GET", "POST"])
@api_view
def api_saved_queries(request: HttpRequest, cluster: str) -> Any:
    """GET: the user's saved queries and those shared; POST {"name", "sql", "shared"}: save one -> 201."""
    get_connection(cluster)
    if request.method == "POST":
        body = json_object(request, forms=True)
        shared = body.get("shared") in (True, "true", "on", "1", 1)
        query = saved_queries.save(request, cluster, body.get("name"), body.get("sql"), shared)
        return JsonResponse(saved_queries.query_json(query, request.user), status=201)
    listed = saved_queries.visible(request.user, cluster)
    return {"queries": [saved_queries.query_json(q, request.user) for q in listed]}


@require_http_methods(["GET", "DELETE"])
@api_view
def api_saved_query(request: HttpRequest, cluster: str, query_id: int) -> Any:
    """GET: one saved query (the user's or a shared one); DELETE: delete it (its owner only)."""
    get_connection(cluster)
    if request.method == "DELETE":
        saved_queries.delete(request, cluster, query_id)
        return {"deleted": query_id}
    return saved_queries.query_json(saved_queries.get_visible(request.user, cluster, query_id), request.user)
