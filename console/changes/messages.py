"""The console's changes to a topic's messages, as the pages and the API both make them: producing a message,
and saving the Avro schema the console decodes a topic's keys or values with; checked, run and audited through
console.access.perform."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.messages.masking import ROLE_LEVELS, mask_record, rules_for
from broker.messages.produce import Produced, do_produce
from console.access import Forbidden, perform, record, role_of
from console.forms import ProduceForm
from console.models import TopicSchema
from console.present.masking import audit_masker, get_rules

AUDIT_KEY_CHARS = 100  # what the audit log keeps of a produced message's key


def produce(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, form: ProduceForm) -> Produced:
    data = form.cleaned_data
    return perform(
        request,
        "message.produce",
        cluster,
        topic,
        audit_params(form, cluster, topic),
        lambda: do_produce(
            conn, topic, data["key_bytes"], data["value_bytes"], data["header_list"], data.get("partition")
        ),
        lambda done: f"written to partition {done.partition} at offset {done.offset}",
    )


def audit_params(form: ProduceForm, cluster: str, topic: str) -> dict[str, Any]:
    """What the audit log keeps of a produced message (the form's audit_params: the key, the value's size, the
    header names), its key masked as a viewer, the lowest role that reads the audit log, is shown the topic's
    keys; ``masked`` then says what was hidden. The value and the header values are never kept."""
    params = form.audit_params()
    key = form.cleaned_data.get("key_bytes")
    masker = audit_masker(cluster, topic)
    if key is None or not masker.active:
        return params
    masked = mask_record(key, None, [], masker.rules, key_reader=masker.key_reader)
    if masked.labels:
        shown = masked.key
        params["key"] = None if shown is None else shown[:AUDIT_KEY_CHARS].decode("utf-8", "replace")
        params["masked"] = list(masked.labels)
    return params


def save_schema(request: HttpRequest, cluster: str, topic: str, part: str, schema: str) -> None:
    """Keep ``schema`` (checked by the caller) for the topic's ``part`` ("key" or "value"); the audit keeps its
    length, not the schema. Refused (Forbidden, audited) when a masking rule with JSON paths masks that part of
    the topic for the user's role: those paths are looked up in the documents the schema reads, so whoever
    names the fields must see them whole."""
    params = {"part": part, "schema_chars": len(schema)}
    role = role_of(request.user)
    pathed = [r for r in rules_for(get_rules(cluster), cluster, topic, role) if r.paths and part in r.parts]
    if pathed:
        names = ", ".join(repr(r.name) for r in pathed)
        who = request.user.get_username() or "An anonymous visitor"
        message = (
            f"{who} ({role or 'no role'}) may not upload a schema for the {part}s of {topic}: masking rules "
            f"{names} mask paths of them for that role, and the schema names the fields those paths reach. "
            f"Ask a user of the {max((r.level for r in pathed), key=ROLE_LEVELS.index)} role."
        )
        record(request, "topic.schema", cluster, topic, params, "refused", message)
        raise Forbidden(message)
    perform(
        request,
        "topic.schema",
        cluster,
        topic,
        params,
        lambda: TopicSchema.objects.update_or_create(
            cluster=cluster, topic=topic, part=part, defaults={"schema": schema}
        ),
    )
