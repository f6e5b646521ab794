"""Kafka Connect: the connectors, a connector, creating one, the plugins; and their JSON API (domain in
broker/connect/connectors.py, audited changes in console/changes/connect.py, partials in console/live/connect.py)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from broker.connect import connectors as connect
from broker.connect.connectors import ConnectConfigInvalid
from broker.connect.policy import class_allowed
from broker.errors import ClusterUnavailable, InvalidInput, KazamiError, NotFound
from console.access import guard, scoped, seen, visible
from console.changes import connect as connect_changes
from console.config.connect import connect_configs, connect_policy
from console.errors import api_view, page_view, status_of
from console.live.connect import client_for, clients_of, connectors_context, status_context
from console.params import is_htmx, json_object
from console.present.listing import csv_file, wants_csv

# What the page says when the worker took an action: it acts on it a moment later, and the live state shows it.
DONE = {
    "pause": "pause sent",
    "resume": "resume sent",
    "stop": "stop sent",
    "restart": "restart of the connector and its tasks sent",
    "restart_failed": "restart of the failed tasks sent",
}
LIFECYCLE = tuple(DONE)
_NOT_STOPPED = "RUNNING PAUSED FAILED UNASSIGNED"
# The connector page's buttons: (action, label, the question asked first or "", the states it is offered in
# ("failed-tasks": while a task has failed), why not otherwise). static/js/kazami.js keeps them in step with the
# live state.
ACTIONS = [
    ("pause", "Pause", "", "RUNNING", "Only while the connector runs"),
    ("resume", "Resume", "", "PAUSED STOPPED", "Only while the connector is paused or stopped"),
    (
        "stop",
        "Stop",
        "Stop the connector? Its tasks shut down until it is resumed.",
        _NOT_STOPPED,
        "The connector is stopped",
    ),
    ("restart", "Restart", "", _NOT_STOPPED, "The connector is stopped: resume it"),
    ("restart_failed", "Restart failed tasks", "", "failed-tasks", "No task has failed"),
]
# The connectors list as CSV (?format=csv): what its table shows, a column each.
CSV_COLUMNS: dict[str, Any] = {
    "connect": lambda c: c.connect,
    "name": lambda c: c.name,
    "type": lambda c: c.type,
    "class": lambda c: c.connector_class,
    "state": lambda c: c.state,
    "tasks": lambda c: len(c.tasks),
    "tasks_running": lambda c: c.running_tasks,
    "tasks_failed": lambda c: c.failed_tasks,
    "worker": lambda c: c.worker or "",
}


def offered(when: str, state: str, failed_tasks: int) -> bool:
    """Whether an action offered in ``when`` (ACTIONS) can work on a connector in ``state``."""
    return failed_tasks > 0 if when == "failed-tasks" else state in when.split()


def _parse_json_text(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"The {what} is not valid JSON: {exc}.") from None


def _no_connect(cluster: str) -> None:
    if not connect_configs(cluster):
        raise InvalidInput(
            f"Cluster {cluster!r} has no Kafka Connect cluster configured (KAFKA_CONNECT_URLS, or "
            f"[clusters.{cluster}.connect.<name>] in the clusters file)."
        )


# ---------------------------------------------------------------- pages


def _name(connector: Any) -> str:
    return str(connector.name)


@require_http_methods(["GET"])
@page_view
@scoped
def connector_list(request: HttpRequest, cluster: str) -> HttpResponse:
    """Every connector of the cluster's Connect clusters, live."""
    context = connectors_context(cluster, request.GET, keep=seen(request, cluster, "connector"))
    if wants_csv(request.GET):
        return csv_file(CSV_COLUMNS, context["connectors"], f"{cluster}-connectors.csv")
    status = 503 if context["all_down"] else 200
    return render(request, "connect/list.html", {**context, "query_string": request.GET.urlencode()}, status=status)


def _detail_context(cluster: str, connect_name: str, name: str) -> dict[str, Any]:
    """The connector page: status (live partial), masked config, topics, offsets. A part the worker does
    not give is left out with the reason; the worker not answering at all is a 503 note."""
    client = client_for(cluster, connect_name)
    context = status_context(cluster, connect_name, name)
    if context["connector"] is None:
        return context
    extra: dict[str, Any] = {"config": None, "topics": None, "offsets": None, "offsets_error": None}
    try:
        extra["config"] = connect.mask_config(connect.get_raw_config(client, name))
        extra["topics"] = connect.get_topics(client, name)
    except NotFound as exc:  # deleted a moment ago: the worker may still hold its last status
        context.update(connector=None, gone=True, error=str(exc))
        return context
    except KazamiError as exc:
        context["error"] = str(exc)
    try:
        extra["offsets"] = connect.get_offsets(client, name)
    except KazamiError as exc:
        extra["offsets_error"] = str(exc)
    context.update(extra)
    context["connector_class"] = str((extra["config"] or {}).get("connector.class", ""))
    context["connector_class_short"] = context["connector_class"].rsplit(".", 1)[-1]
    connector = context["connector"]
    context["actions"] = [
        (action, label, confirm, when, why, offered(when, connector.state, connector.failed_tasks))
        for action, label, confirm, when, why in ACTIONS
    ]
    context["config_json"] = json.dumps(extra["config"] or {}, indent=2)
    context["offsets_json"] = json.dumps({"offsets": extra["offsets"] or []}, indent=2)
    return context


@require_http_methods(["GET", "POST"])
@page_view
def connector_detail(request: HttpRequest, cluster: str, connect_name: str, name: str) -> HttpResponse:
    """One connector: its state and tasks (live), config, topics and offsets; the actions a role allows.
    POST: edit its config (JSON, validated by the worker first)."""
    status = 200
    form_error: str | None = None
    field_errors: dict[str, list[str]] = {}
    posted_config: str | None = None
    if request.method == "POST":
        posted_config = request.POST.get("config", "")
        try:
            guard(request, "connect.config", cluster, f"{connect_name}/{name}")
            config = _parse_json_text(posted_config, "config")
            connect_changes.update_config(request, cluster, client_for(cluster, connect_name), name, config)
            messages.success(request, f"The config of {name} was validated by the worker and applied.")
            return redirect("connector-detail", cluster=cluster, connect_name=connect_name, name=name)
        except ConnectConfigInvalid as exc:
            status, form_error, field_errors = 400, str(exc), exc.fields
        except KazamiError as exc:
            status, _ = status_of(exc)
            form_error = str(exc)
    context = _detail_context(cluster, connect_name, name)
    if context["connector"] is None and status == 200:
        status = 404 if context["gone"] else 503
    if posted_config is not None:
        context["config_json"] = posted_config
    context.update(form_error=form_error, field_errors=field_errors)
    return render(request, "connect/detail.html", context, status=status)


@require_POST
@page_view
def connector_action(request: HttpRequest, cluster: str, connect_name: str, name: str) -> HttpResponse:
    """Pause, resume, stop, restart (all, or failed tasks only), restart a task, reset or alter offsets,
    delete (the name typed to confirm). From htmx: the fresh status partial; otherwise back to the page."""
    action = request.POST.get("action", "")
    client = client_for(cluster, connect_name)
    done = ""
    try:
        if action in LIFECYCLE:
            connect_changes.lifecycle(request, cluster, client, name, action)
            done = f"{DONE[action]}; the state below follows once the worker has acted"
        elif action == "restart_task":
            task = int(request.POST.get("task", "-1"))
            connect_changes.restart_task(request, cluster, client, name, task)
            done = f"task {task} restarted"
        elif action == "reset_offsets":
            done = connect_changes.reset_offsets(request, cluster, client, name)
        elif action == "alter_offsets":
            offsets = connect.parse_offsets(_parse_json_text(request.POST.get("offsets", ""), "offsets"))
            done = connect_changes.alter_offsets(request, cluster, client, name, offsets)
        elif action == "delete":
            if request.POST.get("confirm", "") != name:
                guard(request, "connect.delete", cluster, f"{connect_name}/{name}")
                raise InvalidInput(f"Type the connector's name, {name}, to delete it.")
            connect_changes.delete(request, cluster, client, name)
            messages.success(request, f"Connector {name} deleted from {connect_name}.")
            return redirect("connector-list", cluster=cluster)
        else:
            raise InvalidInput(f"Unknown action {action!r}.")
        ok, text = True, f"{name}: {done}."
    except (KazamiError, ValueError) as exc:
        ok, text = False, str(exc)
    if is_htmx(request):
        html = render_to_string("connect/_status.html", status_context(cluster, connect_name, name), request=request)
        html += render_to_string("connect/_flash.html", {"ok": ok, "text": text, "oob": True})
        return HttpResponse(html)
    (messages.success if ok else messages.error)(request, text)
    return redirect("connector-detail", cluster=cluster, connect_name=connect_name, name=name)


@require_http_methods(["GET", "POST"])
@page_view
def connector_new(request: HttpRequest, cluster: str) -> HttpResponse:
    """Create a connector: pick a Connect cluster and a plugin, then fill in the form built from the plugin's
    config definition, or paste the config as JSON. The worker validates it first; its reasons are shown
    per field and nothing is created."""
    _no_connect(cluster)
    source = request.POST if request.method == "POST" else request.GET
    names = list(connect_configs(cluster))
    connect_name = source.get("connect") or names[0]
    client = client_for(cluster, connect_name)
    context: dict[str, Any] = {
        "cluster": cluster,
        "connect_names": names,
        "connect": connect_name,
        "plugin": source.get("plugin", ""),
        "plugins": [],
        "fields": [],
        "values": source,
        "mode": source.get("mode", "form"),
        "json_text": source.get("json", ""),
        "error": None,
        "field_errors": {},
        "policed": connect_changes.is_policed(request),
    }
    status = 200
    try:
        context["plugins"] = _with_policy(request, cluster, connect_name, connect.list_plugins(client, True))
        if context["plugin"]:
            context["fields"] = connect.form_fields(connect.plugin_definition(client, context["plugin"]))
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["error"] = str(exc)
    if request.method == "POST" and context["error"] is None:
        try:
            guard(request, "connect.create", cluster, connect_name)
            if context["mode"] == "json":
                raw = _parse_json_text(context["json_text"], "connector JSON")
                name, config = _split_create_body(raw)
            else:
                name, config = connect.config_from_form(context["plugin"], context["fields"], request.POST)
            connect_changes.create(request, cluster, client, name, config)
            messages.success(request, f"Connector {name} created on {connect_name}.")
            return redirect("connector-detail", cluster=cluster, connect_name=connect_name, name=name)
        except ConnectConfigInvalid as exc:
            status, context["error"], context["field_errors"] = 400, str(exc), exc.fields
        except KazamiError as exc:
            status, _ = status_of(exc)
            context["error"] = str(exc)
    if not context["json_text"]:
        example = {"name": "my-connector", "config": {"connector.class": context["plugin"] or "FileStreamSource"}}
        context["json_text"] = json.dumps(example, indent=2)
    return render(request, "connect/new.html", context, status=status)


def _with_policy(request: HttpRequest, cluster: str, connect_name: str, plugins: list[dict[str, str]]) -> list[Any]:
    """The plugins, each with ``allowed``: whether the user may create a connector of it (admins: all)."""
    if not connect_changes.is_policed(request):
        return [{**p, "allowed": True} for p in plugins]
    allowed = connect_policy(cluster, connect_name).allowed_classes
    classes = [p["class"] for p in plugins]
    return [{**p, "allowed": class_allowed(p["class"], allowed, classes)} for p in plugins]


def _split_create_body(raw: Any) -> tuple[str, dict[str, Any]]:
    """``{"name", "config"}`` as the worker's own POST /connectors takes it, or a flat config with ``name``."""
    if not isinstance(raw, dict):
        raise InvalidInput('Give {"name": ..., "config": {...}}, or a config object holding "name".')
    if isinstance(raw.get("config"), dict):
        return str(raw.get("name") or raw["config"].get("name") or ""), dict(raw["config"])
    return str(raw.get("name") or ""), {k: v for k, v in raw.items() if k != "name"}


@require_http_methods(["GET"])
@page_view
def plugins_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """Every Connect cluster's plugins and their versions."""
    rows: list[dict[str, Any]] = []
    status = 200
    for client in clients_of(cluster):
        row: dict[str, Any] = {"connect": client.config.name, "url": client.config.url, "plugins": [], "error": None}
        try:
            row["worker"] = connect.get_worker(client)
            row["plugins"] = connect.list_plugins(client)
        except KazamiError as exc:
            row["error"] = str(exc)
        rows.append(row)
    if rows and all(r["error"] for r in rows):
        status = 503
    return render(request, "connect/plugins.html", {"cluster": cluster, "rows": rows}, status=status)


# ---------------------------------------------------------------- API


def _raise_unanswered(found: connect.ConnectorList) -> None:
    if found.asked and len(found.unanswered) == len(found.asked):
        raise ClusterUnavailable(" ".join(found.unanswered.values()))


@require_http_methods(["GET", "POST"])
@api_view
@scoped
def api_connectors(request: HttpRequest, cluster: str) -> Any:
    """GET: every connector of every Connect cluster (one request to each). POST (operators):
    ``{"connect", "name", "config"}``, validated by the worker first (400 with ``fields``), 201."""
    if request.method == "POST":
        guard(request, "connect.create", cluster, "connectors")
        _no_connect(cluster)
        body = json_object(request)
        connect_name = str(body.get("connect") or next(iter(connect_configs(cluster))))
        name, config = _split_create_body(body)
        created = connect_changes.create(request, cluster, client_for(cluster, connect_name), name, config)
        return JsonResponse(created.as_dict(with_config=True), status=201)
    found = connect.list_all(clients_of(cluster))
    _raise_unanswered(found)
    return {
        "connect_clusters": found.asked,
        "connectors": [c.as_dict() for c in visible(request, cluster, "connector", found.connectors, _name)],
        "unanswered": found.unanswered,
    }


@require_http_methods(["GET", "DELETE"])
@api_view
def api_connector(request: HttpRequest, cluster: str, connect_name: str, name: str) -> Any:
    """GET: status, masked config, topics, offsets. DELETE (admins): the connector."""
    client = client_for(cluster, connect_name)
    if request.method == "DELETE":
        connect_changes.delete(request, cluster, client, name)
        return {"deleted": name, "connect": connect_name}
    found = connect.get_connector(client, name).as_dict(with_config=True)
    found["topics"] = connect.get_topics(client, name)
    try:
        found["offsets"] = connect.get_offsets(client, name)
    except KazamiError as exc:
        found["offsets"], found["offsets_error"] = None, str(exc)
    return found


@require_http_methods(["GET"])
@api_view
def api_status(request: HttpRequest, cluster: str, connect_name: str, name: str) -> Any:
    return connect.get_status(client_for(cluster, connect_name), name).as_dict()


@require_http_methods(["GET", "PUT", "POST"])
@api_view
def api_config(request: HttpRequest, cluster: str, connect_name: str, name: str) -> Any:
    """GET: the masked config. PUT/POST (operators): a new config (masked values kept), validated first."""
    client = client_for(cluster, connect_name)
    if request.method != "GET":
        guard(request, "connect.config", cluster, f"{connect_name}/{name}")
        body = json_object(request)
        config = body["config"] if isinstance(body.get("config"), dict) else body
        connect_changes.update_config(request, cluster, client, name, config)
    return {"name": name, "connect": connect_name, "config": connect.mask_config(connect.get_raw_config(client, name))}


@require_http_methods(["GET", "DELETE", "PATCH", "POST"])
@api_view
def api_offsets(request: HttpRequest, cluster: str, connect_name: str, name: str) -> Any:
    """GET: the offsets. DELETE: reset them all; PATCH/POST ``{"offsets": [...]}``: alter them. Both only on a
    stopped connector (operators)."""
    client = client_for(cluster, connect_name)
    if request.method == "DELETE":
        return {"message": connect_changes.reset_offsets(request, cluster, client, name)}
    if request.method in ("PATCH", "POST"):
        guard(request, "connect.offsets", cluster, f"{connect_name}/{name}")
        offsets = connect.parse_offsets(json_object(request))
        return {"message": connect_changes.alter_offsets(request, cluster, client, name, offsets)}
    return {"name": name, "connect": connect_name, "offsets": connect.get_offsets(client, name)}


@require_POST
@api_view
def api_action(request: HttpRequest, cluster: str, connect_name: str, name: str, action: str) -> Any:
    """POST .../pause/, resume/, stop/, restart/ (``?include_tasks=&only_failed=``; only_failed=true is the
    restart of failed tasks). 202 with the status as it is right after."""
    if action not in ("pause", "resume", "stop", "restart"):
        raise NotFound(f"No connector action {action!r}: pause, resume, stop or restart.")
    client = client_for(cluster, connect_name)
    if action == "restart" and request.GET.get("only_failed", "").lower() in ("1", "true"):
        action = "restart_failed"
    connect_changes.lifecycle(request, cluster, client, name, action)
    return JsonResponse(connect.get_status(client, name).as_dict(), status=202)


@require_POST
@api_view
def api_restart_task(request: HttpRequest, cluster: str, connect_name: str, name: str, task: int) -> Any:
    client = client_for(cluster, connect_name)
    connect_changes.restart_task(request, cluster, client, name, task)
    return JsonResponse(connect.get_status(client, name).as_dict(), status=202)


@require_http_methods(["GET"])
@api_view
def api_plugins(request: HttpRequest, cluster: str) -> Any:
    """Every Connect cluster's plugins (``class``, ``type``, ``version``)."""
    found: dict[str, Any] = {}
    unanswered: dict[str, str] = {}
    for client in clients_of(cluster):
        try:
            found[client.config.name] = connect.list_plugins(client)
        except KazamiError as exc:
            unanswered[client.config.name] = str(exc)
    if unanswered and not found:
        raise ClusterUnavailable(" ".join(unanswered.values()))
    return {"plugins": found, "unanswered": unanswered}


@require_http_methods(["GET"])
@api_view
def api_plugin_config(request: HttpRequest, cluster: str, connect_name: str, plugin: str) -> Any:
    """A plugin's config definition and the form fields built from it."""
    definition = connect.plugin_definition(client_for(cluster, connect_name), plugin)
    return {"plugin": plugin, "definition": definition, "fields": [f.__dict__ for f in connect.form_fields(definition)]}


@require_http_methods(["PUT", "POST"])
@api_view
def api_validate(request: HttpRequest, cluster: str, connect_name: str) -> Any:
    """The worker's verdict on a config: ``valid`` and ``fields`` (key -> reasons). Changes nothing. A config
    the console's Connect policy refuses (anyone but an admin) is a 403 ``connect_policy`` and never sent."""
    body = json_object(request)
    errors = connect_changes.validate(request, cluster, client_for(cluster, connect_name), body.get("config", body))
    return {"valid": not errors, "fields": errors}


def connector_url(cluster: str, connect_name: str, name: str) -> str:
    return reverse("connector-detail", kwargs={"cluster": cluster, "connect_name": connect_name, "name": name})
