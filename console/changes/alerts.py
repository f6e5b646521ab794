"""Alert channels and rules: made, changed and deleted through console.access.perform (checked and audited).
Rules are the operators' (what to watch on a cluster, even a read-only one: a rule changes nothing in Kafka);
channels the admins' (they send the console's words to an address outside it)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Model
from django.http import HttpRequest
from django.utils import timezone

from broker.alerts import deliver
from broker.alerts.rules import KINDS, SEVERITIES, check_rule
from broker.errors import AlreadyExists, InvalidInput, NotFound
from console.access import perform
from console.background import alerts
from console.models import AlertChannel, AlertDelivery, AlertRule, AlertSilence, AlertState

MAX_NAME = 120


def _name(value: Any, what: str) -> str:
    name = " ".join(value.split()) if isinstance(value, str) else ""
    if not name:
        raise InvalidInput(f"Give the {what} a name.")
    if len(name) > MAX_NAME or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InvalidInput(f"A {what}'s name is up to {MAX_NAME} characters, without control characters.")
    return name


def _user(request: HttpRequest) -> str:
    return request.user.get_username() if request.user.is_authenticated else "anonymous"


def channel_json(c: AlertChannel) -> dict[str, Any]:
    if c.kind == "email":
        return {"id": c.pk, "name": c.name, "kind": c.kind, "to": list(c.to)}
    return {"id": c.pk, "name": c.name, "kind": c.kind, "url": c.url, "format": c.format}


def create_channel(request: HttpRequest, body: dict[str, Any]) -> AlertChannel:
    """A webhook channel (``kind`` "webhook", ``url``, ``format`` json, slack or teams) or an email one (``kind``
    "email", ``to``: addresses). Raises InvalidInput, AlreadyExists, Forbidden (audited)."""
    params = {k: body.get(k) for k in ("name", "kind", "url", "format", "to")}

    def change() -> AlertChannel:
        name = _name(body.get("name"), "channel")
        kind = body.get("kind") or "webhook"
        fields: dict[str, Any]
        if kind == "email":
            fields = {"to": deliver.check_recipients(body.get("to"))}
        elif kind == "webhook":
            fmt = body.get("format") or "json"
            if fmt not in deliver.FORMATS:
                raise InvalidInput(f"format must be one of {', '.join(deliver.FORMATS)}, not {str(fmt)[:40]!r}.")
            fields = {
                "url": deliver.check_target(body.get("url"), settings.KAZAMI_ALERT_PRIVATE_TARGETS),
                "format": fmt,
            }
        else:
            raise InvalidInput(f"kind must be webhook or email, not {str(kind)[:40]!r}.")
        try:
            with transaction.atomic():
                return AlertChannel.objects.create(
                    name=name, kind=kind, created_at=timezone.now(), created_by=_user(request), **fields
                )
        except IntegrityError:
            raise AlreadyExists(f"A channel named {name!r} exists already.") from None

    return perform(request, "alerts.channel", None, str(body.get("name"))[:120], params, change, _made("channel"))


def delete_channel(request: HttpRequest, channel_id: int) -> None:
    channel = AlertChannel.objects.filter(pk=channel_id).first()
    if channel is None:
        raise NotFound(f"No alert channel {channel_id}.")
    perform(request, "alerts.channel", None, channel.name, {"id": channel_id}, channel.delete, lambda _: "deleted")


def test_channel(request: HttpRequest, cluster: str, channel_id: int) -> AlertDelivery:
    channel = AlertChannel.objects.filter(pk=channel_id).first()
    if channel is None:
        raise NotFound(f"No alert channel {channel_id}.")
    return perform(
        request,
        "alerts.test",
        None,
        channel.name,
        {"id": channel_id, "cluster": cluster},
        lambda: alerts.send_test(channel, cluster, _user(request)),
        lambda d: "taken" if d.delivered_at else f"not taken: {d.error}",
    )


def rule_json(r: AlertRule) -> dict[str, Any]:
    return {
        "id": r.pk,
        "cluster": r.cluster,
        "name": r.name,
        "kind": r.kind,
        "severity": r.severity,
        "match": r.match,
        "topics": r.topics,
        "statuses": list(r.statuses) if r.kind == "lag_status" else None,
        "threshold": r.threshold,
        "for_s": r.for_s,
        "channels": [c.pk for c in r.channels.all()],
        "enabled": r.enabled,
        "builtin": r.builtin,
        "firing": [
            {"subject": s.subject, "since": s.firing_since.isoformat(), "value": s.value, "text": s.text}
            for s in r.states.all()
            if s.firing_since is not None
        ],
    }


def create_rule(request: HttpRequest, cluster: str, body: dict[str, Any]) -> AlertRule:
    """A rule on ``cluster``: ``name``, ``kind``, ``threshold``, ``for_s``, the subjects (``group``, ``topic`` or
    ``broker``: a name or glob; ``topics`` for group kinds), ``severity``, ``statuses`` (lag_status) and
    ``channels`` (ids). Raises InvalidInput, AlreadyExists, Forbidden (audited)."""
    params = {k: body.get(k) for k in ("name", "kind", "threshold", "for_s", "group", "topic", "broker", "channels")}

    def change() -> AlertRule:
        name = _name(body.get("name"), "rule")
        kind = body.get("kind")
        subject = KINDS[kind][0] if isinstance(kind, str) and kind in KINDS else "group"
        checked = check_rule(
            kind, body.get("threshold"), body.get("for_s"), body.get(subject), body.get("topics"), body.get("statuses")
        )
        severity = body.get("severity") or "warning"
        if severity not in SEVERITIES:
            raise InvalidInput(f"severity must be one of {', '.join(SEVERITIES)}, not {str(severity)[:40]!r}.")
        wanted = body.get("channels") or []
        if not isinstance(wanted, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in wanted):
            raise InvalidInput("channels must be a list of channel ids.")
        channels = list(AlertChannel.objects.filter(pk__in=wanted))
        missing = sorted(set(wanted) - {c.pk for c in channels})
        if missing:
            raise InvalidInput(f"No alert channel {', '.join(map(str, missing))}.")
        try:
            with transaction.atomic():
                rule = AlertRule.objects.create(
                    cluster=cluster,
                    name=name,
                    kind=checked["kind"],
                    severity=severity,
                    match=checked["match"],
                    topics=checked["topics"],
                    statuses=list(checked["statuses"]),
                    threshold=checked["threshold"],
                    for_s=checked["for_s"],
                    created_at=timezone.now(),
                    created_by=_user(request),
                )
                rule.channels.set(channels)
        except IntegrityError:
            raise AlreadyExists(f"Cluster {cluster!r} has a rule named {name!r} already.") from None
        return rule

    return perform(request, "alerts.rule", None, f"{cluster}: {body.get('name')}"[:200], params, change, _made("rule"))


def delete_rule(request: HttpRequest, cluster: str, rule_id: int) -> None:
    """Delete a rule (a built-in one is disabled instead, so that it is not made again)."""
    rule = AlertRule.objects.filter(pk=rule_id, cluster=cluster).first()
    if rule is None:
        raise NotFound(f"No alert rule {rule_id} on cluster {cluster!r}.")

    def change() -> None:
        if rule.builtin:
            rule.enabled = False
            rule.save(update_fields=["enabled"])
            rule.states.all().delete()
        else:
            rule.delete()

    perform(request, "alerts.rule", None, f"{cluster}: {rule.name}", {"id": rule_id}, change, lambda _: "deleted")


def _made(what: str) -> Callable[[Model], str]:
    return lambda made: f"{what} {made.pk}"


MAX_SILENCE_MINUTES = 30 * 24 * 60


def silence_json(s: AlertSilence) -> dict[str, Any]:
    return {
        "id": s.pk,
        "rule": s.rule_id,
        "subject": s.subject,
        "starts_at": s.starts_at.isoformat(),
        "ends_at": s.ends_at.isoformat(),
        "comment": s.comment,
        "created_by": s.created_by,
    }


def create_silence(request: HttpRequest, cluster: str, body: dict[str, Any]) -> AlertSilence:
    """Hold back ``rule``'s alerts (an id; none: every rule of the cluster) of the subjects ``subject`` matches (a
    glob, * by default) for ``minutes`` (up to 30 days), with a ``comment``. Raises InvalidInput, NotFound,
    Forbidden (audited)."""
    params = {k: body.get(k) for k in ("rule", "subject", "minutes", "comment")}

    def change() -> AlertSilence:
        rule_id = body.get("rule")
        rule = None
        if rule_id not in (None, ""):
            if not (isinstance(rule_id, int) or (isinstance(rule_id, str) and rule_id.isdigit())):
                raise InvalidInput("rule is a rule's id.")
            rule = AlertRule.objects.filter(pk=int(rule_id), cluster=cluster).first()
            if rule is None:
                raise NotFound(f"No alert rule {rule_id} on cluster {cluster!r}.")
        subject = body.get("subject") or "*"
        if not isinstance(subject, str) or len(subject) > 255 or any(ord(c) < 32 for c in subject):
            raise InvalidInput("subject is a name or a glob (up to 255 characters).")
        try:
            minutes = float(body.get("minutes") or 60)
        except (TypeError, ValueError):
            raise InvalidInput(f"minutes must be a number, not {str(body.get('minutes'))[:40]!r}.") from None
        if not 0 < minutes <= MAX_SILENCE_MINUTES:
            raise InvalidInput(f"A silence lasts more than 0 and at most {MAX_SILENCE_MINUTES:,} minutes (30 days).")
        comment = body.get("comment") or ""
        if not isinstance(comment, str):
            raise InvalidInput("comment is text.")
        now = timezone.now()
        return AlertSilence.objects.create(
            cluster=cluster,
            rule=rule,
            subject=subject.strip() or "*",
            starts_at=now,
            ends_at=now + timedelta(minutes=minutes),
            comment=comment[:500],
            created_by=_user(request),
        )

    return perform(
        request, "alerts.silence", None, f"{cluster}: {body.get('subject') or '*'}", params, change, _made("silence")
    )


def delete_silence(request: HttpRequest, cluster: str, silence_id: int) -> None:
    found = AlertSilence.objects.filter(pk=silence_id, cluster=cluster).first()
    if found is None:
        raise NotFound(f"No silence {silence_id} on cluster {cluster!r}.")
    perform(
        request,
        "alerts.silence",
        None,
        f"{cluster}: {found.subject}",
        {"id": silence_id, "end": True},
        found.delete,
        lambda _: "ended",
    )


def acknowledge(request: HttpRequest, cluster: str, rule_id: Any, subject: Any) -> AlertState:
    """Say someone is on a firing alert (shown beside it until it resolves)."""
    if not (isinstance(rule_id, int) or (isinstance(rule_id, str) and rule_id.isdigit())) or not isinstance(
        subject, str
    ):
        raise InvalidInput("Name the alert by its rule's id and its subject.")
    state = AlertState.objects.filter(rule__cluster=cluster, rule_id=int(rule_id), subject=subject).first()
    if state is None or state.firing_since is None:
        raise NotFound(f"Rule {rule_id} does not fire for {subject[:80]!r} on cluster {cluster!r}.")

    def change() -> AlertState:
        state.acknowledged_by, state.acknowledged_at = _user(request), timezone.now()
        state.save(update_fields=["acknowledged_by", "acknowledged_at"])
        return state

    return perform(
        request, "alerts.ack", None, f"{cluster}: {subject}", {"rule": rule_id}, change, lambda _: "acknowledged"
    )
