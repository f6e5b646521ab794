"""Alerts: the page of a cluster's alerts (what fires, the rules, the channels, the history) and the JSON API of the
same: channels (where alerts go), a cluster's rules, and what fires now and fired lately."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from broker.alerts.prometheus import rules_file
from broker.alerts.rules import KINDS, LAG_STATUSES, SEVERITIES
from broker.errors import InvalidInput, KazamiError
from console.background.alerts import active_silences, alert_json, ensure_builtin, silenced, spec
from console.changes import alerts as alert_changes
from console.config.clusters import get_connection
from console.errors import api_view, page_view, status_of
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


@require_http_methods(["GET", "POST"])
@api_view
def api_silences(request: HttpRequest, cluster: str) -> Any:
    get_connection(cluster)
    if request.method == "POST":
        made = alert_changes.create_silence(request, cluster, json_object(request))
        return JsonResponse(alert_changes.silence_json(made), status=201)
    return {"silences": [alert_changes.silence_json(x) for x in active_silences(cluster, timezone.now())]}


@require_http_methods(["DELETE", "POST"])
@api_view
def api_silence_delete(request: HttpRequest, cluster: str, silence: int) -> Any:
    get_connection(cluster)
    alert_changes.delete_silence(request, cluster, silence)
    return {"ended": silence}


@require_POST
@api_view
def api_ack(request: HttpRequest, cluster: str) -> Any:
    get_connection(cluster)
    body = json_object(request)
    state = alert_changes.acknowledge(request, cluster, body.get("rule"), body.get("subject"))
    return {
        "acknowledged_by": state.acknowledged_by,
        "acknowledged_at": state.acknowledged_at.isoformat() if state.acknowledged_at else None,
    }


@require_http_methods(["GET"])
@api_view
def api_alerts(request: HttpRequest, cluster: str) -> Any:
    """What fires now (each with its subject and since when) and the latest events (fired, resolved, tests), with
    how their deliveries went."""
    get_connection(cluster)
    limit = int_param(request, "limit", 50, minimum=1, maximum=RECENT) or 50
    silences = active_silences(cluster, timezone.now())
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
            "acknowledged_by": s.acknowledged_by or None,
            "silenced": silenced(silences, s.rule, s.subject),
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


# ---------------------------------------------------------------- pages


def _page_context(request: HttpRequest, cluster: str, **extra: Any) -> dict[str, Any]:
    ensure_builtin(cluster)
    silences = active_silences(cluster, timezone.now())
    rules = list(AlertRule.objects.filter(cluster=cluster).prefetch_related("channels", "states"))
    events = list(AlertEvent.objects.filter(cluster=cluster).order_by("-at", "-id")[:30])
    undelivered: dict[int, AlertDelivery] = {}
    sent: set[int] = set()
    for d in AlertDelivery.objects.filter(event__in=events).select_related("channel"):
        sent.add(d.event_id)
        if d.delivered_at is None:
            undelivered[d.event_id] = d
    form = {
        "kind": request.GET.get("kind", "consumer_lag"),
        "group": request.GET.get("group", ""),
        "topic": request.GET.get("topic", ""),
        "threshold": request.GET.get("threshold", ""),
    }
    return {
        "cluster": cluster,
        "firing": [(f, silenced(silences, f.rule, f.subject)) for f in _firing(cluster)],
        "rules": [
            (
                r,
                sum(1 for st in r.states.all() if st.firing_since),
                sum(1 for st in r.states.all() if not st.firing_since),
            )
            for r in rules
        ],
        "events": [(e, undelivered.get(e.pk), e.pk in sent) for e in events],
        "channels": list(AlertChannel.objects.all()),
        "silences": silences,
        "smtp_host": settings.KAZAMI_SMTP_HOST,
        "kinds": [(k, subject, unit, text) for k, (subject, unit, text) in KINDS.items()],
        "severities": SEVERITIES,
        "statuses": LAG_STATUSES,
        "form": form,
        "interval": settings.KAZAMI_LAG_SAMPLE_INTERVAL,
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page_view
def alerts_page(request: HttpRequest, cluster: str) -> HttpResponse:
    """The cluster's alerts: what fires now, the rules (and a form for a new one), the channels, the history."""
    get_connection(cluster)
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            done = _act(request, cluster, action)
        except KazamiError as exc:
            status, _ = status_of(exc)
            return render(request, "alerts/page.html", _page_context(request, cluster, error=str(exc)), status=status)
        messages.success(request, done)
        return redirect(reverse("alerts", kwargs={"cluster": cluster}))
    return render(request, "alerts/page.html", _page_context(request, cluster))


def _act(request: HttpRequest, cluster: str, action: str) -> str:
    post = request.POST
    if action == "rule":
        body: dict[str, Any] = {
            k: post.get(k, "") for k in ("name", "kind", "threshold", "for_s", "severity", "topics")
        }
        subject = KINDS.get(body["kind"], ("group", "", ""))[0]
        body[subject] = post.get("subject", "")
        body["statuses"] = post.getlist("statuses")
        body["channels"] = [int(c) for c in post.getlist("channels") if c.isdigit()]
        rule = alert_changes.create_rule(request, cluster, body)
        return f"Rule “{rule.name}” made: it is judged at the next round."
    if action == "delete_rule":
        alert_changes.delete_rule(request, cluster, _id(post.get("rule")))
        return "Rule deleted."
    if action == "channel":
        body = {k: post.get(k, "") for k in ("name", "kind", "url", "format", "to")}
        channel = alert_changes.create_channel(request, body)
        return f"Channel “{channel.name}” made."
    if action == "test_channel":
        delivery = alert_changes.test_channel(request, cluster, _id(post.get("channel")))
        if delivery.delivered_at is None:
            raise InvalidInput(f"The test was not taken: {delivery.error}")
        return f"The test was taken by “{delivery.channel.name}”."
    if action == "silence":
        body = {k: post.get(k, "") for k in ("rule", "subject", "minutes", "comment")}
        made = alert_changes.create_silence(request, cluster, body)
        return f"Silenced until {made.ends_at:%Y-%m-%d %H:%M} UTC: {made.subject}."
    if action == "end_silence":
        alert_changes.delete_silence(request, cluster, _id(post.get("silence")))
        return "Silence ended."
    if action == "ack":
        state = alert_changes.acknowledge(request, cluster, post.get("rule"), post.get("subject"))
        return f"Acknowledged: {state.subject}."
    if action == "delete_channel":
        alert_changes.delete_channel(request, _id(post.get("channel")))
        return "Channel deleted."
    raise InvalidInput(f"Unknown action {action[:40]!r}.")


def _id(value: Any) -> int:
    if not isinstance(value, str) or not value.isdigit():
        raise InvalidInput("Which one? The form did not say.")
    return int(value)


@require_GET
@page_view
def alerts_part(request: HttpRequest, cluster: str) -> HttpResponse:
    """The page's live parts, refreshed every interval: what fires and the rules' states; ``?part=history``: the
    history; ``?part=badge``: the count of what fires, for the header of every page."""
    get_connection(cluster)
    part = request.GET.get("part", "")
    if part == "badge":
        return render(request, "alerts/_badge.html", {"cluster": cluster, "firing": _firing(cluster)})
    context = _page_context(request, cluster)
    if part == "history":
        return render(request, "alerts/_history.html", context)
    return render(request, "alerts/_status.html", context)


@require_GET
@api_view
def api_prometheus_rules(request: HttpRequest, cluster: str) -> Any:
    """The cluster's enabled rules as a Prometheus alerting-rules file over /metrics."""
    get_connection(cluster)
    ensure_builtin(cluster)
    enabled = AlertRule.objects.filter(cluster=cluster, enabled=True)
    body = rules_file(cluster, [(spec(r), r.severity) for r in enabled])
    response = HttpResponse(body, content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="kazami-{cluster}-rules.yml"'
    return response
