"""Transactions, the producers of a partition and hanging transactions: pages and JSON API (domain in
broker/messages/transactions.py). The console aborts only hanging transactions from its pages: an open transaction
its coordinator still knows ends by its producer or at the coordinator's time-out."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.errors import InvalidInput, KazamiError
from broker.messages import transactions
from console.changes import transactions as transaction_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
from console.params import int_param, is_htmx

ABORT_FIELDS = ("partition", "producer_id", "producer_epoch", "coordinator_epoch")


def _topics(raw: str | None) -> list[str]:
    return [t for t in (raw or "").replace(",", " ").split() if t]


def _max_timeout(values: Any) -> int | None:
    return int_param(values, "max_timeout_ms", None, 0)


def _abort_spec(data: Any) -> tuple[str, int, int, int, int]:
    """(topic, partition, producer id, producer epoch, coordinator epoch) from a JSON body or a form."""
    if not isinstance(data, dict) or not isinstance(data.get("topic"), str) or not data["topic"]:
        raise InvalidInput('Say what to abort: {"topic", "partition", "producer_id", "producer_epoch", ...}.')
    numbers = []
    for name in ABORT_FIELDS:
        raw: Any = data.get(name, -1 if name == "coordinator_epoch" else None)
        try:
            numbers.append(int(raw))
        except (TypeError, ValueError):
            raise InvalidInput(f"{name} must be a number.") from None
    partition, producer_id, producer_epoch, coordinator_epoch = numbers
    return data["topic"], partition, producer_id, producer_epoch, coordinator_epoch


# ---------------------------------------------------------------- API


@require_GET
@api_view
def api_transactions(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Every transactional id with its state (``?state=Ongoing`` keeps one state)."""
    return transactions.get_transactions(get_connection(cluster), request.GET.get("state")).as_dict()


@require_GET
@api_view
def api_producers(request: HttpRequest, cluster: str, topic: str, partition: int) -> dict[str, Any]:
    """The partition's active producers, high watermark, LSO and the open transaction holding it back."""
    return transactions.get_partition_producers(get_connection(cluster), topic, partition).as_dict()


@require_GET
@api_view
def api_hanging(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Hanging transactions on the partitions of ``?topics=a,b`` (none: every topic); ``max_timeout_ms``
    replaces the brokers' ``transaction.max.timeout.ms``."""
    conn = get_connection(cluster)
    return transactions.find_hanging(conn, _topics(request.GET.get("topics")), _max_timeout(request.GET)).as_dict()


@require_POST
@api_view
def api_abort(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """Write an abort marker: ``{"topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch"}``
    (admins; ``perform`` checks the role and audits a refusal with the partition as its target)."""
    try:
        data = json.loads(request.body or b"{}")
    except ValueError as exc:
        raise InvalidInput(f"The body is not valid JSON: {exc}.") from None
    return transaction_changes.abort_transaction(
        request, get_connection(cluster), cluster, *_abort_spec(data)
    ).as_dict()


# ---------------------------------------------------------------- pages


@require_GET
@page_view
def transaction_list(request: HttpRequest, cluster: str) -> HttpResponse:
    state = request.GET.get("state") or ""
    context: dict[str, Any] = {"cluster": cluster, "state": state, "states": transactions.STATES, "error": None}
    status = 200
    try:
        context["listing"] = transactions.get_transactions(get_connection(cluster), state or None)
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["listing"], context["error"] = None, str(exc)
    template = "transactions/_list.html" if is_htmx(request) else "transactions/list.html"
    return render(request, template, context, status=status)


@require_GET
@page_view
def producers_page(request: HttpRequest, cluster: str, topic: str, partition: int) -> HttpResponse:
    state = transactions.get_partition_producers(get_connection(cluster), topic, partition)
    return render(
        request,
        "transactions/producers.html",
        {"cluster": cluster, "topic": topic, "partition": partition, "state": state},
    )


@require_http_methods(["GET", "POST"])
@page_view
def hanging_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """Find hanging transactions (GET ``topics``, ``max_timeout_ms``); abort one (POST, admins)."""
    conn = get_connection(cluster)
    source = request.POST if request.method == "POST" else request.GET
    context: dict[str, Any] = {
        "cluster": cluster,
        "topics_text": source.get("topics", ""),
        "max_timeout_ms": source.get("max_timeout_ms", ""),
        "report": None,
        "error": None,
        "done": None,
    }
    status = 200
    try:
        if request.method == "POST":
            aborted = transaction_changes.abort_transaction(request, conn, cluster, *_abort_spec(request.POST.dict()))
            context["done"] = aborted
        context["report"] = transactions.find_hanging(conn, _topics(context["topics_text"]), _max_timeout(source))
    except KazamiError as exc:
        status, _ = status_of(exc)
        context["error"] = str(exc)
    return render(request, "transactions/hanging.html", context, status=status)
