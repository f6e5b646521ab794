"""The schema registry beside a cluster: its subjects, a subject's versions (pretty-printed, diffed, with their
references both ways and the topics that use them), compatibility (global and per subject), checking a draft,
registering, soft and permanent deletes; and their JSON API. The client is broker/schemas/registry.py (one per
cluster per process: console/config/registry.py), audited changes are console/changes/schemas.py.

A cluster without a registry gets a page saying how to configure one (the API: 404 ``no_registry``); a registry
that does not answer is said so on the page (503) within its time-out, never an error page."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from broker.errors import KazamiError
from broker.schemas import subjects as subject_info
from broker.schemas.model import SCHEMA_TYPES, RegisteredSchema, RegistryError
from broker.schemas.registry import (
    LEVELS,
    SUBJECT_NOT_FOUND,
    VERSION_NOT_FOUND,
    Registry,
    SubjectSummary,
    parse_references,
)
from broker.topics.read import get_topics
from console.access import guard, scoped, visible
from console.changes import schemas as schema_changes
from console.config.clusters import get_connection
from console.config.registry import registry_for
from console.errors import api_view, page_view, status_of
from console.params import is_htmx, json_object
from console.present.listing import Listing, make_listing

# Subjects a page of the list shows unless ?per_page= says otherwise.
PER_PAGE = 25
# What the type picker offers, as the registry names them and as people do.
TYPE_LABELS = {"AVRO": "Avro", "PROTOBUF": "Protobuf", "JSON": "JSON Schema"}


class NoRegistry(KazamiError):
    """The cluster has no schema registry configured."""


def _how_to_configure(cluster: str) -> str:
    return (
        f"Cluster {cluster!r} has no schema registry configured: set SCHEMA_REGISTRY_URL (for the default cluster) "
        f"or a [clusters.{cluster}.schema_registry] table in the clusters file."
    )


def _registry(cluster: str) -> Registry:
    """The cluster's registry; raises UnknownCluster, NoRegistry."""
    get_connection(cluster)  # an unknown cluster is a 404 of its own
    found = registry_for(cluster)
    if found is None:
        raise NoRegistry(_how_to_configure(cluster))
    return found


def registry_status(exc: RegistryError) -> tuple[int, str]:
    """The HTTP status and error code the console answers a registry's error with."""
    if exc.status == 0:
        return 503, "registry_unavailable"
    if exc.status in (401, 403):
        return 503, "registry_auth_failed"
    named = {40401: "subject_not_found", 40402: "version_not_found", 40403: "schema_not_found"}
    if exc.code in named or exc.status == 404:
        return 404, named.get(exc.code or 0, "not_found")
    if exc.status == 409:
        return 409, "incompatible"
    if exc.status == 422:
        invalid = {42201: "invalid_schema", 42202: "invalid_version", 42203: "invalid_compatibility_level"}
        return 422, invalid.get(exc.code or 0, "registry_refused")
    if exc.status == 400:
        return 400, "invalid_input"
    if 400 <= exc.status < 500:
        return exc.status, "registry_refused"
    # The registry failed (5xx, or an answer that is not JSON): unavailable, as a cluster that fails is.
    return 503, "registry_error"


def registry_answers(view: Callable[..., Any]) -> Callable[..., Any]:
    """An API view's registry errors as ``{"error", "message", "registry_code"}`` with their status; no
    registry configured: 404 ``no_registry``. Inside ``api_view``, which handles every other error."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        try:
            return view(request, *args, **kwargs)
        except NoRegistry as exc:
            return JsonResponse({"error": "no_registry", "message": str(exc)}, status=404)
        except RegistryError as exc:
            status, code = registry_status(exc)
            return JsonResponse({"error": code, "message": str(exc), "registry_code": exc.code}, status=status)

    return wrapper


def _down(exc: RegistryError) -> bool:
    return exc.status == 0 or exc.status in (401, 403)


# ---------------------------------------------------------------- what pages and API show


def schema_dict(found: RegisteredSchema) -> dict[str, Any]:
    return {
        "subject": found.subject,
        "version": found.version,
        "id": found.id,
        "type": found.schema_type,
        "schema": found.text,
        "references": [{"name": r.name, "subject": r.subject, "version": r.version} for r in found.references],
    }


def _topic_names(cluster: str) -> tuple[list[str], str | None]:
    """The cluster's topic names, or why they are not known (Kafka not answering leaves the rest of the page)."""
    try:
        return [t.name for t in get_topics(get_connection(cluster), include_internal=True)], None
    except KazamiError as exc:
        return [], str(exc)


def topics_using(registry: Registry, cluster: str, subject: str, found: RegisteredSchema | None) -> dict[str, Any]:
    """The naming strategy ``subject`` follows and the topics that use it."""
    topics, error = _topic_names(cluster)
    names = subject_info.full_names(found.text, found.schema_type) if found else []
    strategy, uses = subject_info.strategy_of(subject, names, topics)
    if strategy == "record":
        uses = subject_info.record_subject_topics(subject, registry.subjects(), topics)
    return {
        "strategy": strategy,
        "topics": [{"topic": u.topic, "strategy": u.strategy, "part": u.part} for u in uses],
        "record_names": names,
        "error": error,
    }


def _referenced_by(registry: Registry, subject: str, version: int) -> list[dict[str, Any]]:
    """The schemas that reference this version: each id with the subject-versions that use it."""
    found = []
    for schema_id in registry.referenced_by(subject, version):
        try:
            uses = registry.subjects_of_id(schema_id)
        except RegistryError as exc:
            if _down(exc):
                raise
            uses = []
        found.append({"id": schema_id, "uses": [{"subject": s, "version": v} for s, v in uses]})
    return found


def _listing(
    request: HttpRequest, cluster: str, registry: Registry
) -> tuple[Listing[str], list[SubjectSummary], str | None]:
    """The page of subjects asked for (search ``q``, ``deleted``, paging; those the user may see) with their rows,
    and the global level. Type, latest version and id come from one listing where the registry has it, else per
    subject shown; the level that applies per subject shown."""
    deleted = request.GET.get("deleted", "") in ("1", "true", "on")
    names = visible(request, cluster, "subject", registry.subjects(deleted=deleted), str)
    live = set(registry.subjects()) if deleted else set(names)
    # 25 subjects a page unless asked: a registry without a listing of latest schemas (Apicurio) is asked two
    # requests per subject shown.
    params = {**request.GET.dict(), "per_page": request.GET.get("per_page") or str(PER_PAGE)}
    listing = make_listing(
        params,
        names,
        {"subject": lambda s: s.lower()},
        lambda s: s,
        "subject",
        {"subject": "Subject"},
        extra={"deleted": "1"} if deleted else None,
    )
    global_level = registry.global_compatibility()
    latest = registry.latest_schemas() if listing.rows else None
    rows = registry.summaries(listing.rows, latest)
    rows = [r if r.subject in live else _as_deleted(r) for r in rows]
    return listing, rows, global_level


def _as_deleted(row: SubjectSummary) -> SubjectSummary:
    return replace(row, deleted=True)


# ---------------------------------------------------------------- pages


def _base(cluster: str) -> dict[str, Any]:
    registry = registry_for(cluster)
    return {
        "cluster": cluster,
        "configured": registry is not None,
        "registry_url": registry.url if registry else None,
        "how_to_configure": _how_to_configure(cluster),
        "levels": LEVELS,
        "type_labels": TYPE_LABELS,
        "schema_types": SCHEMA_TYPES,
        "down": None,
    }


@require_http_methods(["GET"])
@page_view
@scoped
def schema_list(request: HttpRequest, cluster: str) -> HttpResponse:
    """The registry's subjects (search, soft-deleted ones on request), the global compatibility level."""
    get_connection(cluster)
    if request.GET.get("subject", "").strip():
        return redirect("schema-subject", cluster=cluster, subject=request.GET["subject"].strip())
    context = _base(cluster)
    status = 200
    context.update(listing=None, rows=[], global_level=None, show_deleted=request.GET.get("deleted") == "1")
    registry = registry_for(cluster)
    if registry is not None:
        try:
            context["listing"], context["rows"], context["global_level"] = _listing(request, cluster, registry)
        except RegistryError as exc:
            status = 503 if _down(exc) else registry_status(exc)[0]
            context["down"] = str(exc)
    template = "schemas/_subjects.html" if is_htmx(request) else "schemas/list.html"
    return render(request, template, context, status=status)


def _subject_context(request: HttpRequest, cluster: str, subject: str) -> tuple[dict[str, Any], int]:
    """The subject page: its versions (soft-deleted ones marked), the one shown pretty-printed with its
    references both ways, compatibility, the topics that use it. A subject the registry does not know is a
    404 with the form to register its first version."""
    context = _base(cluster)
    context.update(subject=subject, versions=[], deleted_versions=[], shown=None, pretty="", exists=False)
    registry = registry_for(cluster)
    if registry is None:
        return context, 200
    try:
        every = registry.versions(subject, deleted=True)
    except RegistryError as exc:
        if exc.code != SUBJECT_NOT_FOUND and exc.status != 404:
            if _down(exc):
                context["down"] = str(exc)
                return context, 503
            raise
        every = []
    try:
        live = registry.versions(subject) if every else []
    except RegistryError as exc:
        if exc.code != SUBJECT_NOT_FOUND and exc.status != 404:
            raise
        live = []
    context.update(versions=every, deleted_versions=[v for v in every if v not in live], live_versions=live)
    compat = registry.compatibility(subject)
    context["compatibility"] = compat
    if not every:
        context["missing"] = f"The registry has no subject {subject!r}."
        return context, 404
    context["exists"] = True
    wanted = request.GET.get("version") or str(live[-1] if live else every[-1])
    if not wanted.isdigit() or int(wanted) not in every:
        context["missing"] = f"Subject {subject!r} has no version {wanted!r}; it has {', '.join(map(str, every))}."
        return context, 404
    try:
        shown = _version_including_deleted(registry, subject, int(wanted))
    except RegistryError as exc:
        if _down(exc) or int(wanted) in live:
            raise
        context["unavailable"] = f"Version {wanted} is soft-deleted, and this registry does not show its text ({exc})"
        return context, 200
    context.update(
        shown=shown,
        shown_deleted=int(wanted) not in live,
        pretty=subject_info.pretty(shown.text, shown.schema_type),
        referenced_by=_referenced_by(registry, subject, int(wanted)) if int(wanted) in live else [],
        uses=topics_using(registry, cluster, subject, shown),
        diff_from=every[-2] if len(every) > 1 else every[-1],
        diff_to=every[-1],
        draft=request.POST.get("schema")
        if request.method == "POST"
        else subject_info.pretty(shown.text, shown.schema_type),
        draft_type=shown.schema_type,
        draft_references=json.dumps(schema_dict(shown)["references"]) if shown.references else "",
    )
    return context, 200


def _version_including_deleted(registry: Registry, subject: str, version: int) -> RegisteredSchema:
    """One version; a soft-deleted one through ``?deleted=true``, which Confluent's registry honours."""
    return registry.schema_by_subject_including_deleted(subject, version)


@require_http_methods(["GET"])
@page_view
def subject_page(request: HttpRequest, cluster: str, subject: str) -> HttpResponse:
    get_connection(cluster)
    try:
        context, status = _subject_context(request, cluster, subject)
    except RegistryError as exc:
        context, status = _base(cluster), (503 if _down(exc) else registry_status(exc)[0])
        context.update(subject=subject, down=str(exc), exists=False, versions=[])
    return render(request, "schemas/subject.html", context, status=status)


@require_http_methods(["GET"])
@page_view
def subject_diff(request: HttpRequest, cluster: str, subject: str) -> HttpResponse:
    """The difference between two versions (``from``, ``to``), as a partial for the subject page."""
    registry = _registry(cluster)
    context: dict[str, Any] = {"cluster": cluster, "subject": subject, "error": None, "lines": []}
    status = 200
    try:
        old_v, new_v = int(request.GET.get("from", "")), int(request.GET.get("to", ""))
        old = _version_including_deleted(registry, subject, old_v)
        new = _version_including_deleted(registry, subject, new_v)
        context.update(old=old, new=new, lines=subject_info.diff(old.text, new.text, new.schema_type))
        context["same_type"] = old.schema_type == new.schema_type
    except ValueError:
        status, context["error"] = 400, "Pick two versions to compare."
    except RegistryError as exc:
        status, context["error"] = registry_status(exc)[0], str(exc)
    if is_htmx(request):
        return render(request, "schemas/_diff.html", context, status=status)
    return render(request, "schemas/diff.html", {**_base(cluster), **context}, status=status)


def _draft(source: Any) -> tuple[str, str, Any]:
    """The schema text, type and references of a posted draft (form or JSON)."""
    text = source.get("schema")
    if not isinstance(text, str) or not text.strip():
        raise RegistryError("Give the schema's text.", 400)
    references = source.get("references") or ()
    if isinstance(references, str):
        try:
            references = json.loads(references) if references.strip() else ()
        except ValueError as exc:
            raise RegistryError(f"The references are not valid JSON: {exc}.", 400) from None
    return text, str(source.get("schema_type") or "AVRO"), parse_references(references or None)


@require_POST
@page_view
def subject_check(request: HttpRequest, cluster: str, subject: str) -> HttpResponse:
    """Check a draft against the latest version or all of them (changes nothing; any role). A partial."""
    registry = _registry(cluster)
    against = request.POST.get("against", "latest")
    context: dict[str, Any] = {"against": against, "result": None, "error": None}
    status = 200
    try:
        text, kind, references = _draft(request.POST)
        version = "all" if against == "all" else "latest"
        context["result"] = registry.check_compatibility(subject, text, kind, references, version)
    except RegistryError as exc:
        status, context["error"] = registry_status(exc)[0], str(exc)
    return render(request, "schemas/_check.html", context, status=status)


@require_POST
@page_view
def subject_action(request: HttpRequest, cluster: str, subject: str) -> HttpResponse:
    """Register a version, set or remove the subject's compatibility level, delete a version or the subject
    (softly, or for good): each confirmed on the page, role-checked and audited; back to the page."""
    registry = _registry(cluster)
    action = request.POST.get("action", "")
    permanent = request.POST.get("permanent") in ("1", "true", "on")
    try:
        if action == "register":
            guard(request, "schemas.register", cluster, subject)
            text, kind, references = _draft(request.POST)
            schema_id, version = schema_changes.register(request, cluster, registry, subject, text, kind, references)
            messages.success(request, f"Registered under {subject}: version {version}, schema id {schema_id}.")
            return redirect(_subject_url(cluster, subject, version))
        if action == "compatibility":
            level = request.POST.get("compatibility", "")
            found = schema_changes.set_compatibility(request, cluster, registry, level, subject)
            messages.success(
                request, f"{subject}: compatibility {found}." if found else f"{subject} follows the global level."
            )
        elif action == "delete_version":
            version = int(request.POST.get("version", ""))
            schema_changes.delete_version(request, cluster, registry, subject, version, permanent)
            messages.success(request, f"{subject} version {version} {'permanently ' if permanent else ''}deleted.")
        elif action == "delete_subject":
            if request.POST.get("confirm", "") != subject:
                guard(request, "schemas.delete", cluster, subject)
                raise RegistryError(f"Type the subject's name, {subject}, to delete it.", 400)
            versions = schema_changes.delete_subject(request, cluster, registry, subject, permanent)
            how = "permanently deleted" if permanent else "deleted (soft: the registry keeps it)"
            messages.success(request, f"{subject} {how}: versions {', '.join(map(str, versions)) or 'none'}.")
            return redirect("schema-list", cluster=cluster)
        else:
            raise RegistryError(f"Unknown action {action!r}.", 400)
    except ValueError:
        messages.error(request, "Give the version as a number.")
    except KazamiError as exc:
        messages.error(request, _refusal_text(exc))
        if action == "register":
            return _subject_with_error(request, cluster, subject, exc)
    return redirect(_subject_url(cluster, subject, None))


def _refusal_text(exc: KazamiError) -> str:
    if isinstance(exc, RegistryError) and exc.status == 409:
        return f"Not registered: incompatible. {exc}"
    if isinstance(exc, RegistryError) and exc.status == 422:
        return f"Not registered: the registry finds the schema invalid. {exc}"
    return str(exc)


def _subject_with_error(request: HttpRequest, cluster: str, subject: str, exc: KazamiError) -> HttpResponse:
    """The subject page again with the draft kept and the refusal shown (the status of the refusal)."""
    status = registry_status(exc)[0] if isinstance(exc, RegistryError) else status_of(exc)[0]
    try:
        context, _ = _subject_context(request, cluster, subject)
    except RegistryError as err:
        context = {**_base(cluster), "subject": subject, "down": str(err), "exists": False, "versions": []}
    context.update(
        draft=request.POST.get("schema", ""),
        draft_type=request.POST.get("schema_type", "AVRO"),
        draft_references=request.POST.get("references", ""),
        register_error=_refusal_text(exc),
    )
    return render(request, "schemas/subject.html", context, status=status)


def _subject_url(cluster: str, subject: str, version: int | None) -> str:
    url = reverse("schema-subject", kwargs={"cluster": cluster, "subject": subject})
    return url + (f"?version={version}" if version is not None else "")


@require_POST
@page_view
def global_config(request: HttpRequest, cluster: str) -> HttpResponse:
    """Set the registry's global compatibility level (operators, audited); back to the list."""
    registry = _registry(cluster)
    try:
        found = schema_changes.set_compatibility(request, cluster, registry, request.POST.get("compatibility", ""))
        messages.success(request, f"Global compatibility: {found}.")
    except KazamiError as exc:
        messages.error(request, str(exc))
    return redirect("schema-list", cluster=cluster)


# ---------------------------------------------------------------- API


def _registry_info(cluster: str, registry: Registry | None) -> dict[str, Any]:
    return {"url": registry.url if registry else None, "configured": registry is not None}


@require_http_methods(["GET"])
@api_view
@registry_answers
@scoped
def api_schemas(request: HttpRequest, cluster: str) -> Any:
    """``{"registry": {"url", "reachable", "compatibility", ...}, "subjects": [...]}``: a page of subjects
    (``q``, ``deleted``, ``page``, ``per_page``); 503 with the same shape when the registry does not answer."""
    registry = _registry(cluster)
    info = {**_registry_info(cluster, registry), "reachable": True, "compatibility": None, "error": None}
    try:
        listing, rows, info["compatibility"] = _listing(request, cluster, registry)
    except RegistryError as exc:
        if not _down(exc):
            raise
        status, code = registry_status(exc)
        body = {"error": code, "message": str(exc), "registry": {**info, "reachable": False, "error": str(exc)}}
        return JsonResponse({**body, "subjects": []}, status=status)
    return {
        "registry": info,
        "subjects": [{**r.as_dict(), "deleted": r.deleted} if r.deleted else r.as_dict() for r in rows],
        "total": listing.total,
        "page": listing.page,
        "pages": listing.pages,
    }


@require_http_methods(["GET", "POST", "DELETE"])
@api_view
@registry_answers
def api_subject(request: HttpRequest, cluster: str, subject: str) -> Any:
    """GET: the subject's versions, its latest schema, compatibility, the topics that use it. POST
    ``{"schema", "schema_type", "references"}`` (operators): register, ``{"id", "version"}`` (409 with the
    registry's reason when incompatible). DELETE (admins; ``?permanent=true`` for good)."""
    registry = _registry(cluster)
    if request.method == "POST":
        guard(request, "schemas.register", cluster, subject)
        text, kind, references = _draft(json_object(request))
        schema_id, version = schema_changes.register(request, cluster, registry, subject, text, kind, references)
        return {"id": schema_id, "version": version, "subject": subject}
    if request.method == "DELETE":
        permanent = request.GET.get("permanent", "").lower() in ("1", "true")
        versions = schema_changes.delete_subject(request, cluster, registry, subject, permanent)
        return {"subject": subject, "deleted_versions": versions, "permanent": permanent}
    every = registry.versions(subject, deleted=True)
    live = registry.versions(subject)
    latest = registry.schema_by_subject(subject, "latest")
    compat = registry.compatibility(subject)
    uses = topics_using(registry, cluster, subject, latest)
    return {
        "subject": subject,
        "versions": live,
        "deleted_versions": [v for v in every if v not in live],
        "latest": schema_dict(latest),
        "compatibility": {
            "subject": compat.subject_level,
            "effective": compat.effective,
            "global": compat.global_level,
        },
        "strategy": uses["strategy"],
        "topics": uses["topics"],
    }


@require_http_methods(["GET", "DELETE"])
@api_view
@registry_answers
def api_version(request: HttpRequest, cluster: str, subject: str, version: str) -> Any:
    """GET: one version (a number or ``latest``) with its references and the ids that reference it. DELETE
    (admins; ``?permanent=true`` for good)."""
    registry = _registry(cluster)
    if version != "latest" and not version.isdigit():
        raise RegistryError(f"A version is a number or latest, not {version!r}.", 404, VERSION_NOT_FOUND)
    if request.method == "DELETE":
        if not version.isdigit():
            raise RegistryError("Delete a version by its number.", 400)
        permanent = request.GET.get("permanent", "").lower() in ("1", "true")
        done = schema_changes.delete_version(request, cluster, registry, subject, int(version), permanent)
        return {"subject": subject, "deleted_version": done, "permanent": permanent}
    found = registry.schema_by_subject(subject, version)
    answer = schema_dict(found)
    answer["referenced_by"] = _referenced_by(registry, subject, found.version) if found.version else []
    return answer


@require_http_methods(["GET", "PUT", "POST"])
@api_view
@registry_answers
def api_compatibility(request: HttpRequest, cluster: str, subject: str | None = None) -> Any:
    """A subject's compatibility level (``subject``, ``effective``, ``global``), or without a subject the
    global one. PUT/POST ``{"compatibility": level}`` (operators) sets it; ``null`` removes a subject's own."""
    registry = _registry(cluster)
    if request.method != "GET":
        body = json_object(request)
        level = body.get("compatibility", 0)
        if not (level is None or isinstance(level, str)):
            raise RegistryError('Give {"compatibility": level} (null for a subject to follow the global one).', 400)
        schema_changes.set_compatibility(request, cluster, registry, level or "", subject)
    if subject is None:
        return {"compatibility": registry.global_compatibility()}
    compat = registry.compatibility(subject)
    return {"subject": compat.subject_level, "effective": compat.effective, "global": compat.global_level}


@require_POST
@api_view
@registry_answers
def api_check(request: HttpRequest, cluster: str, subject: str) -> Any:
    """``{"schema", "schema_type", "references", "version": "latest" | "all" | n}``: whether the registry would
    accept it under ``subject``, with its reasons where it gives them. Changes nothing."""
    registry = _registry(cluster)
    body = json_object(request)
    text, kind, references = _draft(body)
    version = str(body.get("version") or "latest")
    if version not in ("latest", "all") and not version.isdigit():
        raise RegistryError('"version" is latest, all or a version number.', 400)
    result = registry.check_compatibility(subject, text, kind, references, version)
    return {"compatible": result.compatible, "messages": list(result.messages), "version": version}
