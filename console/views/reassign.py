"""Reassigning partitions and electing leaders: the page and its JSON API (domain in broker/replication/reassign.py)."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, KazamiError
from broker.replication import reassign
from console.access import needs
from console.changes import replication as replication_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.params import int_param, json_object


def _names(raw: Any) -> list[str]:
    """Topic names from a list or a comma/space separated text."""
    items = raw if isinstance(raw, list) else str(raw or "").replace(",", " ").split()
    if not all(isinstance(i, str) for i in items):
        raise InvalidInput("topics must be topic names.")
    return [str(i).strip() for i in items if str(i).strip()]


def _ids(raw: Any, what: str = "brokers") -> list[int]:
    items = raw if isinstance(raw, list) else str(raw or "").replace(",", " ").split()
    try:
        return [int(i) for i in items]
    except (TypeError, ValueError):
        raise InvalidInput(f"{what} must be broker ids (numbers).") from None


def _partitions(raw: Any) -> list[tuple[str, int]]:
    """[{"topic", "partition"}] or "topic-partition" texts."""
    found = []
    for item in raw or []:
        if isinstance(item, dict) and isinstance(item.get("topic"), str) and isinstance(item.get("partition"), int):
            found.append((item["topic"], item["partition"]))
        elif isinstance(item, str) and "-" in item and item.rsplit("-", 1)[1].isdigit():
            topic, number = item.rsplit("-", 1)
            found.append((topic, int(number)))
        else:
            raise InvalidInput('partitions must be [{"topic": ..., "partition": N}] or "topic-N".')
    return found


def _body(request: HttpRequest) -> dict[str, Any]:
    """The API's body reader (JSON or form); a form's repeated ``brokers`` fields all kept."""
    data = json_object(request, forms=True)
    if request.content_type != "application/json" and "brokers" in request.POST:
        data["brokers"] = request.POST.getlist("brokers")
    return data


# ---------------------------------------------------------------- API


@require_POST
@api_view
def api_generate(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """A proposal (changes nothing): ``{"topics": [...], "brokers": [...], "replication_factor": N}``."""
    body = _body(request)
    factor = body.get("replication_factor")
    proposal = reassign.propose(
        get_connection(cluster),
        _names(body.get("topics")),
        _ids(body.get("brokers")),
        int(factor) if factor not in (None, "") else None,
    )
    return proposal.as_dict()


@require_POST
@api_view
@needs("partitions.reassign")
def api_execute(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Start a reassignment: ``{"plan": <Kafka's JSON>, "throttle": bytes per second}``."""
    body = _body(request)
    plan = reassign.parse_plan(body.get("plan"))
    throttle = body.get("throttle")
    rate = int_param({"throttle": throttle}, "throttle", None, 1) if throttle not in (None, "") else None
    return replication_changes.reassign(request, get_connection(cluster), cluster, plan, rate).as_dict()


@require_GET
@api_view
def api_progress(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Reassignments under way (``?topics=a,b`` narrows them and lists those topics' replicas)."""
    return reassign.progress(get_connection(cluster), _names(request.GET.get("topics"))).as_dict()


@require_POST
@api_view
@needs("partitions.reassign")
def api_verify(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Whether the topics' reassignment is done; when it is, the throttle is removed."""
    topics = _names(_body(request).get("topics"))
    if not topics:
        raise InvalidInput("Name the topics whose reassignment to verify.")
    return replication_changes.verify_reassignment(request, get_connection(cluster), cluster, topics).as_dict()


@require_POST
@api_view
@needs("partitions.reassign")
def api_cancel(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Cancel reassignments under way: ``{"partitions": [...]}`` (none: all)."""
    partitions = _partitions(_body(request).get("partitions"))
    return replication_changes.cancel_reassignment(request, get_connection(cluster), cluster, partitions).as_dict()


@require_POST
@api_view
@needs("partitions.elect")
def api_elect(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Leader election: ``{"type": "preferred" | "unclean", "partitions": [...]}`` (preferred, none: all)."""
    body = _body(request)
    partitions = _partitions(body.get("partitions")) or None
    kind = str(body.get("type") or "preferred")
    outcome = replication_changes.elect(request, get_connection(cluster), cluster, kind, partitions)
    return {"type": kind, "results": [{"partition": k, "error": v} for k, v in sorted(outcome.items())]}


# ---------------------------------------------------------------- page


def _proposal(request: HttpRequest, cluster: str) -> reassign.Proposal:
    """The proposal a page's query asks for (``topics``, ``brokers`` repeated, ``replication_factor``)."""
    return reassign.propose(
        get_connection(cluster),
        _names(request.GET.get("topics", "")),
        _ids(request.GET.getlist("brokers")),
        int_param(request, "replication_factor", None, 1),
    )


@require_GET
@page_view
def plan_file(request: HttpRequest, cluster: str) -> HttpResponse:
    """The proposal of the query as a file in Kafka's reassignment JSON, for kafka-reassign-partitions
    ``--execute`` or to import later; ``which=current``: today's assignment of the same partitions, the
    file to roll back with."""
    which = request.GET.get("which", "proposed")
    if which not in ("proposed", "current"):
        raise InvalidInput("which must be proposed or current.")
    if not request.GET.get("topics") or not request.GET.getlist("brokers"):
        raise InvalidInput("Name the topics and the brokers (topics=...&brokers=N&brokers=M).")
    answer = _proposal(request, cluster).as_dict()["plan" if which == "proposed" else "current"]
    response = HttpResponse(json.dumps(answer, indent=2) + "\n", content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="{cluster}-reassignment-{which}.json"'
    return response


@require_http_methods(["GET", "POST"])
@page_view
def page(request: HttpRequest, cluster: str) -> HttpResponse:
    """Generate a proposal (GET with topics and brokers), edit it, execute it with a throttle (POST), follow
    it, verify or cancel it; elect preferred leaders."""
    conn = get_connection(cluster)
    context: dict[str, Any] = {
        "cluster": cluster,
        "topics_text": request.GET.get("topics", ""),
        "brokers_chosen": request.GET.getlist("brokers"),
        "factor": request.GET.get("replication_factor", ""),
        "proposal": None,
        "plan_text": "",
        "error": None,
        "done": None,
    }
    status = 200
    try:
        from broker.replication.health import get_replication

        context["replication"] = get_replication(conn)
        if request.method == "POST":
            action = request.POST.get("action", "")
            context["plan_text"] = request.POST.get("plan", "")
            if action == "execute":
                plan = reassign.parse_plan(context["plan_text"])
                raw = request.POST.get("throttle", "").strip()
                rate = int_param({"throttle": raw}, "throttle", None, 1) if raw else None
                replication_changes.reassign(request, conn, cluster, plan, rate)
                context["done"] = f"Reassignment of {len(plan)} partitions started."
            elif action == "verify":
                progress = replication_changes.verify_reassignment(
                    request, conn, cluster, _names(request.POST.get("topics"))
                )
                context["done"] = "Done; the throttle is removed." if progress.done else "Still moving."
            elif action == "cancel":
                replication_changes.cancel_reassignment(request, conn, cluster, [])
                context["done"] = "Every reassignment under way was cancelled."
            elif action == "unclean":
                chosen = _partitions([request.POST.get("partition", "").strip()])
                outcome = replication_changes.elect(request, conn, cluster, "unclean", chosen)
                why = next(iter(outcome.values()), None) if outcome else "no answer"
                context["done"] = "A leader was elected." if why is None else f"Not elected: {why}."
            elif action == "elect":
                outcome = replication_changes.elect(request, conn, cluster, "preferred", None)
                elected = sum(1 for v in outcome.values() if v is None)
                context["done"] = f"Preferred leader elected on {elected} partition{'s' if elected != 1 else ''}."
            else:
                raise InvalidInput("Unknown action.")
        elif context["topics_text"] and context["brokers_chosen"]:
            proposal = _proposal(request, cluster)
            context["proposal"] = proposal
            context["plan_text"] = json.dumps(reassign.plan_json(proposal.plan()), indent=2)
            context["plan_query"] = request.GET.urlencode()
        context["progress"] = reassign.progress(conn, [])
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["error"] = str(exc)
        context.setdefault("progress", None)
        context.setdefault("replication", None)
    return render(request, "reassign/page.html", context, status=status)
