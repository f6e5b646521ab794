"""The masking rules of a cluster (admins only; domain in broker/messages/masking.py, settings in
console/present/masking.py), and a try-out: one record as each role below admin is shown it."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from broker.errors import InvalidInput
from broker.messages import read as messages
from broker.messages.masking import ROLE_LEVELS, MaskRule, masked_labels
from console.access import ADMIN, Forbidden, role_of
from console.config.clusters import get_connection
from console.errors import api_view, page_view
from console.params import int_param
from console.present.masking import get_rules, masker_for_role
from console.present.message_json import message_json
from console.present.messages import DETAIL_LIMIT, decoding_for, show


def _admins_only(request: HttpRequest) -> None:
    if role_of(request.user) != ADMIN:
        raise Forbidden("The masking rules are shown to admins only: they say where the hidden values are.")


def _rule_json(rule: MaskRule, cluster: str) -> dict[str, Any]:
    return {**rule.as_dict(), "masked_for": [r for r in ROLE_LEVELS if rule.masks_for(r)], "scope": _scope(rule)}


def _scope(rule: MaskRule) -> str:
    return "every cluster" if rule.cluster is None else "this cluster"


def _trial(request: HttpRequest, cluster: str) -> dict[str, Any] | None:
    """``?topic=&partition=&offset=``: that record whole and as each role below admin is shown it."""
    topic = (request.GET.get("topic") or "").strip()
    if not topic:
        return None
    partition = int_param(request, "partition", 0, minimum=0)
    offset = int_param(request, "offset", None, minimum=0)
    if offset is None:
        raise InvalidInput("Give the offset of the record to try the rules on.")
    assert partition is not None
    found = messages.get_message(get_connection(cluster), topic, partition, offset)
    decoding = decoding_for(cluster, topic)
    views = []
    for role in ROLE_LEVELS:
        masker = masker_for_role(cluster, topic, role)
        message = masker.message(found.message)
        views.append(
            {
                "role": role,
                "rules": [r.name for r in masker.rules],
                "shown": show(cluster, message, decoding, limit=DETAIL_LIMIT),
                "json": message_json(message, decoding),
                "masked": list(masked_labels(message)),
            }
        )
    return {"topic": topic, "partition": partition, "offset": offset, "views": views}


@require_GET
@page_view
def page(request: HttpRequest, cluster: str) -> HttpResponse:
    _admins_only(request)
    get_connection(cluster)  # 404 for an unknown cluster
    rules = get_rules(cluster)
    context: dict[str, Any] = {
        "cluster": cluster,
        "rules": [(r, _rule_json(r, cluster)) for r in rules],
        "values": request.GET,
        "trial": None,
        "trial_error": None,
    }
    try:
        context["trial"] = _trial(request, cluster)
    except InvalidInput as exc:
        context["trial_error"] = str(exc)
    return render(request, "masking/index.html", context)


@require_GET
@api_view
def api_rules(request: HttpRequest, cluster: str) -> dict[str, Any]:
    """``rules``: the rules that apply to the cluster's topics, each with ``masked_for`` (the roles that see
    its matches masked); with ``?topic=&partition=&offset=``, ``trial``: that record as each role sees it."""
    _admins_only(request)
    get_connection(cluster)
    answer: dict[str, Any] = {"rules": [_rule_json(r, cluster) for r in get_rules(cluster)]}
    trial = _trial(request, cluster)
    if trial is not None:
        answer["trial"] = {k: v for k, v in trial.items() if k != "views"} | {
            "views": [{k: v for k, v in view.items() if k != "shown"} for view in trial["views"]]
        }
    return answer
