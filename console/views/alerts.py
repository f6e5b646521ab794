"""Alerts' JSON API: channels (where alerts go), a cluster's rules, and what fires now and fired lately."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_http_methods, require_POST

from console.background.alerts import alert_json, ensure_builtin
from console.changes import alerts as alert_changes
from console.config.clusters import get_connection
from console.errors import api_view
from console.models import AlertChannel, AlertDelivery, AlertEvent, AlertRule, AlertState
from console.params import int_param, json_object

RECENT = 100


@require_http_methods(["GET", "POST"])
@api_view
def api_channels(request: HttpRequest) -> Any:
    if request.method == "POST":
        channel = alert_changes.create_channel(request, json_object(request))
        return JsonResponse({"id": channel.pk, **alert_changes.channel_json(channel)}, status=201)
    return {"channels": [alert_changes.channel_json(c) for c in AlertChannel.objects.all()]}


@require_http_methods(["DELETE", "POST"])
@api_view
def api_channel_delete(request: HttpRequest, channel: int) -> Any:
    alert_changes.delete_channel(request, channel)
    return {"deleted": channel}


@require_POST
@api_view
def api_channel_test(request: HttpRequest, channel: int) -> Any:
    """Send a test alert now; the answer says whether the target took it."""
    cluster = str(json_object(request).get("cluster") or "")
    delivery = alert_changes.test_channel(request, cluster, channel)
    return {"delivered": delivery.delivered_at is not None, "error": delivery.error or None}


@require_http_methods(["GET", "POST"])
@api_view
def api_rules(request: HttpRequest, cluster: str) -> Any:
    get_connection(cluster)  # an unknown cluster is a 404
    if request.method == "POST":
        rule = alert_changes.create_rule(request, cluster, json_object(request))
        return JsonResponse({"id": rule.pk, **alert_changes.rule_json(rule)}, status=201)
    ensure_builtin(cluster)
    rules = AlertRule.objects.filter(cluster=cluster).prefetch_related("channels", "states")
    return {"rules": [alert_changes.rule_json(r) for r in rules]}


@require_http_methods(["DELETE", "POST"])
@api_view
def api_rule_delete(request: HttpRequest, cluster: str, rule: int) -> Any:
    get_connection(cluster)
    alert_changes.delete_rule(request, cluster, rule)
    return {"deleted": rule}


@require_http_methods(["GET"])
@api_view
def api_alerts(request: HttpRequest, cluster: str) -> Any:
    """What fires now (each with its subject and since when) and the latest events (fired, resolved, tests), with
    how their deliveries went."""
    get_connection(cluster)
    limit = int_param(request, "limit", 50, minimum=1, maximum=RECENT) or 50
    firing = [
        {
            "rule": s.rule.name,
            "rule_id": s.rule_id,
            "kind": s.rule.kind,
            "severity": s.rule.severity,
            "subject": s.subject,
            "since": s.firing_since.isoformat() if s.firing_since else None,
            "value": s.value,
            "text": s.text,
        }
        for s in _firing(cluster)
    ]
    events = list(AlertEvent.objects.filter(cluster=cluster).order_by("-at", "-id")[:limit])
    deliveries: dict[int, list[AlertDelivery]] = {}
    for d in AlertDelivery.objects.filter(event__in=events).select_related("channel"):
        deliveries.setdefault(d.event_id, []).append(d)
    return {
        "firing": firing,
        "recent": [
            {
                **alert_json(e),
                "deliveries": [
                    {
                        "channel": d.channel.name,
                        "attempts": d.attempts,
                        "delivered": d.delivered_at is not None,
                        "next_attempt": d.next_at.isoformat() if d.next_at else None,
                        "error": d.error or None,
                    }
                    for d in deliveries.get(e.pk, [])
                ],
            }
            for e in events
        ],
    }


def _firing(cluster: str) -> list[AlertState]:
    return list(
        AlertState.objects.filter(rule__cluster=cluster, rule__enabled=True, firing_since__isnull=False)
        .select_related("rule")
        .order_by("-firing_since")
    )
