"""What the registry client gives and the decoders read: a registered schema, its references, and the
source schemas are looked up from (the registry client, or an in-memory one in unit tests)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from broker.errors import KazamiError

# The schema types a Confluent-compatible registry names; a registration without a type is Avro.
AVRO, PROTOBUF, JSON_SCHEMA = "AVRO", "PROTOBUF", "JSON"
SCHEMA_TYPES = (AVRO, PROTOBUF, JSON_SCHEMA)


@dataclass(frozen=True)
class SchemaReference:
    """A schema another one imports: its name in the referring schema (a .proto import path, an Avro full
    name, a JSON Schema $ref URL), and the subject and version it is registered under."""

    name: str
    subject: str
    version: int


@dataclass(frozen=True)
class RegisteredSchema:
    """One schema as the registry holds it. ``subject`` and ``version`` are known when it was looked up by
    subject, or when the registry told which subject-versions use an id; otherwise None."""

    id: int | None
    schema_type: str  # one of SCHEMA_TYPES
    text: str
    references: tuple[SchemaReference, ...] = ()
    subject: str | None = None
    version: int | None = None


class RegistryError(KazamiError):
    """The registry answered with an error (``status``: the HTTP status; ``code``: its error code such as
    40401 / 40403 / 42201 / 409, when it gave one) or could not be reached (status 0: no answer in time,
    refused, a TLS failure). The message is readable and never holds a secret."""

    def __init__(self, message: str, status: int = 0, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


class SchemaSource(Protocol):
    """Where decoders get schemas from. Both raise RegistryError; implementations cache what they fetched
    (a schema id never changes its schema)."""

    def schema_by_id(self, schema_id: int) -> RegisteredSchema: ...

    def schema_by_subject(self, subject: str, version: int | str = "latest") -> RegisteredSchema: ...
