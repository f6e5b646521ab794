"""What the console itself owns (Kafka's state is never copied here)."""

from __future__ import annotations

from django.db import models


class TopicSchema(models.Model):
    """An Avro schema a user uploaded to decode a topic's keys or values."""

    KEY, VALUE = "key", "value"
    cluster = models.CharField(max_length=63)
    topic = models.CharField(max_length=249)
    part = models.CharField(max_length=5, choices=[(KEY, "key"), (VALUE, "value")])
    schema = models.TextField()
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["cluster", "topic", "part"], name="one_schema_per_part")]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.topic} {self.part}"
