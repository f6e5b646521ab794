"""JSON Schema records: the JSON document after the wire-format header, checked against the registered schema
(and the schemas it references, fetched by subject and version) with jsonschema. A document that fails the
check is still shown, with the reason."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import jsonschema
import referencing
import referencing.exceptions
import referencing.jsonschema
from jsonschema.exceptions import best_match

from broker.schemas.model import JSON_SCHEMA, RegisteredSchema, RegistryError, SchemaSource

MAX_REFERENCES = 100
MAX_TEXT = 1024 * 1024


class JsonSchemaError(ValueError):
    """A JSON schema that does not parse, or a body that is not JSON; the message says why."""


def _reject_constant(name: str) -> object:
    raise ValueError(f"{name} is not valid JSON")


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise JsonSchemaError(f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise JsonSchemaError(f"{what} is nested too deeply to read") from None
    except ValueError as exc:
        raise JsonSchemaError(f"{what} is not valid JSON: {exc}") from None


def _resources(schema: RegisteredSchema, source: SchemaSource, found: dict[str, Any]) -> None:
    for reference in schema.references:
        if reference.name in found:
            continue
        if len(found) >= MAX_REFERENCES:
            raise JsonSchemaError(f"the schema references more than {MAX_REFERENCES} schemas")
        try:
            referenced = source.schema_by_subject(reference.subject, reference.version)
        except RegistryError as exc:
            raise JsonSchemaError(
                f"its reference {reference.name} ({reference.subject} version {reference.version}) could not be "
                f"fetched: {exc}"
            ) from None
        found[reference.name] = _load(referenced.text, f"the referenced schema {reference.name}")
        _resources(referenced, source, found)


@dataclass(frozen=True)
class JsonSchema:
    """A registered JSON schema ready to check documents with."""

    validator: Any

    def read(self, body: bytes) -> tuple[object, str | None]:
        """(the document, why it fails the schema or None). Raises JsonSchemaError when ``body`` is not JSON."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonSchemaError(f"the document is not valid UTF-8 at byte {exc.start}") from None
        document = _load(text[1:] if text.startswith("\ufeff") else text, "the document")
        if isinstance(document, float) and not math.isfinite(document):
            raise JsonSchemaError("the document is not valid JSON: a number out of range")
        try:
            error = best_match(self.validator.iter_errors(document))
        except (referencing.exceptions.Unresolvable, jsonschema.exceptions.SchemaError, RecursionError) as exc:
            return document, f"the document could not be checked against its schema: {str(exc)[:300]}"
        if error is None:
            return document, None
        where = "/".join(str(part) for part in error.absolute_path) or "(the document)"
        return document, f"does not match its schema at {where}: {error.message[:300]}"


def compile_schema(schema: RegisteredSchema, source: SchemaSource) -> JsonSchema:
    """``schema`` (type JSON) with its references, ready to check documents. Raises JsonSchemaError."""
    if schema.schema_type != JSON_SCHEMA:
        raise JsonSchemaError(f"a {schema.schema_type} schema is not a JSON schema")
    if len(schema.text) > MAX_TEXT:
        raise JsonSchemaError("the schema is larger than 1 MB")
    contents = _load(schema.text, "the schema")
    if not isinstance(contents, (dict, bool)):
        raise JsonSchemaError("a JSON schema is an object or a boolean")
    found: dict[str, Any] = {}
    _resources(schema, source, found)
    cls = jsonschema.validators.validator_for(contents, default=jsonschema.Draft7Validator)
    try:
        cls.check_schema(contents)  # type: ignore[arg-type]  # a boolean is a schema too
    except jsonschema.exceptions.SchemaError as exc:
        raise JsonSchemaError(f"not a valid JSON schema: {exc.message[:300]}") from None
    specification = referencing.jsonschema.specification_with(
        cls.META_SCHEMA.get("$schema", ""), default=referencing.jsonschema.DRAFT7
    )
    registry: referencing.Registry[Any] = referencing.Registry().with_resources(
        (name, referencing.Resource.from_contents(value, default_specification=specification))
        for name, value in found.items()
    )
    return JsonSchema(cls(contents, registry=registry))
