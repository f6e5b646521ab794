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


class LagSample(models.Model):
    """A group's committed offset and the log end of one partition at one moment (the lag history)."""

    cluster = models.CharField(max_length=63)
    group = models.CharField(max_length=255)
    topic = models.CharField(max_length=249)
    partition = models.IntegerField()
    at = models.DateTimeField()
    committed = models.BigIntegerField(null=True)
    log_end = models.BigIntegerField(null=True)
    lag = models.BigIntegerField(null=True)
    lag_ms = models.BigIntegerField(null=True)

    class Meta:
        indexes = [
            models.Index(fields=["cluster", "group", "at"], name="lag_by_group_time"),
            models.Index(fields=["at"], name="lag_by_time"),
        ]

    def __str__(self) -> str:
        return f"{self.cluster}/{self.group} {self.topic}-{self.partition} @ {self.at:%H:%M:%S}"


class Lease(models.Model):
    """Who runs a singleton job (the lag sampler) among several console processes, until when."""

    name = models.CharField(max_length=63, primary_key=True)
    owner = models.CharField(max_length=128)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} held by {self.owner} until {self.expires_at:%H:%M:%S}"
