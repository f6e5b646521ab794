"""The console's changes to a topic's messages, as the pages and the API both make them: producing a message,
and saving the Avro schema the console decodes a topic's keys or values with; checked, run and audited through
console.access.perform."""

from __future__ import annotations

from django.http import HttpRequest

from broker.client.connection import ClusterConnection
from broker.messages.produce import Produced, do_produce
from console.access import perform
from console.forms import ProduceForm
from console.models import TopicSchema


def produce(request: HttpRequest, conn: ClusterConnection, cluster: str, topic: str, form: ProduceForm) -> Produced:
    data = form.cleaned_data
    return perform(
        request,
        "message.produce",
        cluster,
        topic,
        form.audit_params(),
        lambda: do_produce(
            conn, topic, data["key_bytes"], data["value_bytes"], data["header_list"], data.get("partition")
        ),
        lambda done: f"written to partition {done.partition} at offset {done.offset}",
    )


def save_schema(request: HttpRequest, cluster: str, topic: str, part: str, schema: str) -> None:
    """Keep ``schema`` (checked by the caller) for the topic's ``part`` ("key" or "value"); the audit keeps its
    length, not the schema."""
    perform(
        request,
        "topic.schema",
        cluster,
        topic,
        {"part": part, "schema_chars": len(schema)},
        lambda: TopicSchema.objects.update_or_create(
            cluster=cluster, topic=topic, part=part, defaults={"schema": schema}
        ),
    )
