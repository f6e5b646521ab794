"""Records in the schema registry's wire format, copied to a cluster with a registry of its own: the schema ids in
them mean nothing there. With ``schemas: "register"`` a copy registers each schema a record names in the target's
registry, under the target topic's subjects (``<topic>-key``, ``<topic>-value``: the default naming), and writes
the id the target gave in place of the source's. Only the 4 bytes of the id change: the encoded record after it
(Protobuf's message indexes included) is the same schema's, byte for byte.

A schema's references are registered first, under their own subjects and at the versions the target gives them.
Keys and values not in the wire format are copied as they are. Every source id is looked up and registered once
per copy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from broker.errors import InvalidInput
from broker.schemas.model import RegisteredSchema, RegistryError, SchemaReference, SchemaSource
from broker.schemas.wire import HEADER, MAGIC, is_framed

__all__ = ["SchemaMover", "SchemaTarget"]


class SchemaTarget(Protocol):
    """Where schemas are registered (broker.schemas.registry.Registry)."""

    def register(
        self, subject: str, text: str, schema_type: str = ..., references: Sequence[SchemaReference] = ...
    ) -> tuple[int, int | None]: ...


class SchemaMover:
    """Rewrites the schema ids of framed keys and values for the target registry (see the module)."""

    def __init__(self, source: SchemaSource, target: SchemaTarget, to_topic: str) -> None:
        self.source, self.target, self.to_topic = source, target, to_topic
        self._ids: dict[tuple[str, int], int] = {}  # (part, source id) -> target id
        self._references: dict[tuple[str, int], int] = {}  # (subject, source version) -> target version
        self.registered: set[tuple[str, int]] = set()  # (target subject, target id) registered by this copy

    def move(self, raw: bytes | None, part: str) -> bytes | None:
        """``raw`` with the target's id for its schema (``part``: "key" or "value"); unchanged when not framed.
        Raises InvalidInput when the source registry does not know the id or the target refuses the schema."""
        if raw is None or not is_framed(raw):
            return raw
        source_id = int.from_bytes(raw[1:HEADER], "big")
        target_id = self._ids.get((part, source_id))
        if target_id is None:
            target_id = self._ids[(part, source_id)] = self._register(part, source_id)
        if target_id == source_id:
            return raw
        return bytes([MAGIC]) + target_id.to_bytes(4, "big") + raw[HEADER:]

    def _register(self, part: str, source_id: int) -> int:
        subject = f"{self.to_topic}-{part}"
        try:
            schema = self.source.schema_by_id(source_id)
        except RegistryError as exc:
            raise InvalidInput(
                f"A {part} names schema id {source_id}, which the source's registry gave no schema for: {exc}"
            ) from None
        references = tuple(self._reference(r) for r in schema.references)
        try:
            target_id, _version = self.target.register(subject, schema.text, schema.schema_type, references)
        except RegistryError as exc:
            raise InvalidInput(
                f"The target's registry refused schema id {source_id} of the source under {subject!r}: {exc}"
            ) from None
        self.registered.add((subject, target_id))
        return target_id

    def _reference(self, reference: SchemaReference) -> SchemaReference:
        """``reference`` as the target names it: its schema registered there (its own references first)."""
        known = self._references.get((reference.subject, reference.version))
        if known is None:
            try:
                schema: RegisteredSchema = self.source.schema_by_subject(reference.subject, reference.version)
            except RegistryError as exc:
                raise InvalidInput(
                    f"A schema refers to {reference.subject!r} version {reference.version}, which the source's "
                    f"registry does not give: {exc}"
                ) from None
            nested = tuple(self._reference(r) for r in schema.references)
            try:
                _id, version = self.target.register(reference.subject, schema.text, schema.schema_type, nested)
            except RegistryError as exc:
                raise InvalidInput(
                    f"The target's registry refused {reference.subject!r}, which a copied schema refers to: {exc}"
                ) from None
            known = self._references[(reference.subject, reference.version)] = (
                version if version is not None else reference.version
            )
        return SchemaReference(reference.name, reference.subject, known)
