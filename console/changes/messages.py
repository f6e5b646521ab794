"""The console's changes to a topic's messages, as the pages and the API both make them: producing a message
(a key or value written with a registry schema encoded first: broker/schemas/encode.py), and saving the Avro
schema the console decodes a topic's keys or values with; checked, run and audited through
console.access.perform."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.messages.masking import ROLE_LEVELS, mask_record, rules_for
from broker.messages.produce import Produced, do_produce
from broker.schemas.encode import DocumentError, Encoded, SchemaUnusable, parse_document
from broker.schemas.model import RegistryError
from broker.schemas.registry import SUBJECT_NOT_FOUND, SUBJECT_SOFT_DELETED, VERSION_NOT_FOUND
from console.access import Forbidden, perform, record, role_of
from console.forms import ProduceForm
from console.models import TopicSchema
from console.present.masking import audit_masker, get_rules
from console.present.schema_choices import schema_encoder as schema_encoder  # also used by find by key

AUDIT_KEY_CHARS = 100  # what the audit log keeps of a produced message's key


# The registry errors that point at the subject or version the user picked (not found), by field suffix.
_CHOICE_ERRORS = {SUBJECT_NOT_FOUND: "subject", VERSION_NOT_FOUND: "version", SUBJECT_SOFT_DELETED: "subject"}


def error_field(exc: Exception) -> str | None:
    """The produce form's field an error raised by :func:`encode_documents` belongs to (None: the whole form)."""
    field = getattr(exc, "field", None)
    return field if isinstance(field, str) else None


def encode_documents(cluster: str, form: ProduceForm) -> dict[str, Encoded]:
    """The key and value the form writes with a registry schema, encoded in the wire format into the form's
    ``key_bytes`` / ``value_bytes``. Raises DocumentError (the field that is wrong), SchemaUnusable,
    RegistryError (the subject or version unknown, the registry down), each with ``field`` set to the form's
    field it concerns."""
    data = form.cleaned_data
    choices: dict[str, dict[str, Any]] = data.get("schemas") or {}
    if not choices:
        return {}
    try:
        encoder = schema_encoder(cluster)
    except KazamiError as exc:
        exc.field = f"{next(iter(choices))}_format"  # type: ignore[attr-defined]
        raise
    done = {}
    for part, choice in choices.items():
        subject, version = choice["subject"], choice["version"]
        try:
            document = parse_document(data.get(part) or "", part)
            encoded = encoder.encode(subject, version, document, part, choice["message"])
        except DocumentError as exc:
            exc.field = part  # type: ignore[attr-defined]
            raise
        except SchemaUnusable as exc:
            failure = SchemaUnusable(f"{part}: {subject} version {version}: {exc}")
            failure.field = f"{part}_subject"  # type: ignore[attr-defined]
            raise failure from None
        except RegistryError as exc:
            named = _CHOICE_ERRORS.get(exc.code or 0)
            registry_failure = RegistryError(f"{part}: {subject} version {version}: {exc}", exc.status, exc.code)
            registry_failure.field = f"{part}_{named}" if named else None  # type: ignore[attr-defined]
            raise registry_failure from None
        data[f"{part}_bytes"] = encoded.data
        done[part] = encoded
    return done


def schema_answer(encoded: dict[str, Encoded]) -> dict[str, Any]:
    """``key_schema`` / ``value_schema`` of the API's answer: {"id", "subject", "version", "type"} (and the
    Protobuf ``message``) of each part written with a registry schema."""
    answer = {}
    for part, done in encoded.items():
        schema = done.schema
        answer[f"{part}_schema"] = {
            "id": schema.id,
            "subject": schema.subject,
            "version": schema.version,
            "type": schema.schema_type,
            **({"message": done.message} if done.message else {}),
        }
    return answer


def produce(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, form: ProduceForm) -> Produced:
    """Send the form's message (its registry documents encoded first: a document its schema refuses is never
    sent, nor audited, as any invalid input), audited as ``message.produce``."""
    form.encoded = encode_documents(cluster, form)
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
