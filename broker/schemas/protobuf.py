"""Protobuf schemas from a registry: the registered .proto text (or, as some serializers register it, a
base64 FileDescriptorProto) and its references, compiled at run time into descriptors, and records read with
them.

:func:`compile_schema` fetches the references recursively (by subject and version), compiles the text files
with protoc (grpcio-tools', run as ``python -m grpc_tools.protoc`` in a temporary directory so its errors can
be told and a crash cannot take the console with it), adds the well-known ``google/protobuf/*.proto`` files,
and returns a :class:`ProtoSchema`. :meth:`ProtoSchema.read` picks the message by the wire format's message
indexes (nested messages included) and gives it as a JSON-able dict: field names as in the .proto, every
field shown (defaults too), enums by name, 64-bit integers as strings and bytes as base64 (protobuf's JSON
mapping).
"""

from __future__ import annotations

import base64
import binascii
import importlib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
from google.protobuf.message import DecodeError

from broker.schemas.model import PROTOBUF, RegisteredSchema, RegistryError, SchemaSource

MAX_FILES = 100  # files one schema may import, all levels together
MAX_TEXT = 1024 * 1024
PROTOC_TIMEOUT = 30.0  # seconds

_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]+")
_WELL_KNOWN = re.compile(r"google/protobuf/([a-z_]+)\.proto")


class ProtoSchemaError(ValueError):
    """A Protobuf schema that cannot be compiled, or bytes that do not read with it; the message says why."""


def _main_name(schema_id: int | None) -> str:
    return f"kazami_registry_schema_{schema_id if schema_id is not None else 'draft'}.proto"


def _as_descriptor(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    """The FileDescriptorProto in ``text`` when it is one in base64 (how confluent-kafka's Python serializer
    registers schemas), else None (.proto text)."""
    if "{" in text or not _BASE64.fullmatch(text):
        return None
    try:
        raw = base64.b64decode("".join(text.split()), validate=True)
        proto = descriptor_pb2.FileDescriptorProto()
        proto.ParseFromString(raw)
    except (binascii.Error, ValueError, DecodeError):
        return None
    return proto


def _safe_path(name: str) -> str:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name or not name.endswith(".proto"):
        raise ProtoSchemaError(f"a reference named {name[:100]!r} is not a relative .proto path")
    return str(path)


@dataclass
class _Files:
    text: dict[str, str]
    binary: dict[str, descriptor_pb2.FileDescriptorProto]


def _gather(schema: RegisteredSchema, name: str, source: SchemaSource, files: _Files) -> None:
    if name in files.text or name in files.binary:
        return
    if len(files.text) + len(files.binary) >= MAX_FILES:
        raise ProtoSchemaError(f"the schema imports more than {MAX_FILES} files")
    if len(schema.text) > MAX_TEXT:
        raise ProtoSchemaError(f"{name} is larger than 1 MB")
    binary = _as_descriptor(schema.text)
    if binary is not None:
        binary.name = name
        files.binary[name] = binary
    else:
        files.text[name] = schema.text
    for reference in schema.references:
        ref_name = _safe_path(reference.name)
        if ref_name in files.text or ref_name in files.binary:
            continue
        try:
            referenced = source.schema_by_subject(reference.subject, reference.version)
        except RegistryError as exc:
            raise ProtoSchemaError(
                f"its reference {reference.name} ({reference.subject} version {reference.version}) could not be "
                f"fetched: {exc}"
            ) from None
        _gather(referenced, ref_name, source, files)


def _protoc(files: _Files) -> list[descriptor_pb2.FileDescriptorProto]:
    """The text files compiled, with everything they import, by protoc in a temporary directory."""
    try:
        import grpc_tools
    except ImportError:
        raise ProtoSchemaError("Protobuf schemas need grpcio-tools (its protoc), which is not installed") from None

    includes = Path(grpc_tools.__file__).parent / "_proto"
    with tempfile.TemporaryDirectory(prefix="kazami-proto-") as tmp:
        root = Path(tmp) / "src"
        for name, text in files.text.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        out = Path(tmp) / "set.pb"
        args = [sys.executable, "-m", "grpc_tools.protoc", f"-I{root}", f"-I{includes}"]
        if files.binary:
            given = descriptor_pb2.FileDescriptorSet(file=list(files.binary.values()))
            (Path(tmp) / "given.pb").write_bytes(given.SerializeToString())
            args.append(f"--descriptor_set_in={Path(tmp) / 'given.pb'}")
        args += [f"--descriptor_set_out={out}", "--include_imports", *sorted(files.text)]
        try:
            done = subprocess.run(args, capture_output=True, timeout=PROTOC_TIMEOUT, check=False, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise ProtoSchemaError(f"protoc took more than {PROTOC_TIMEOUT:.0f} s on it") from None
        except OSError as exc:
            raise ProtoSchemaError(f"protoc could not be started: {exc}") from None
        if done.returncode != 0:
            reason = done.stderr.decode("utf-8", "replace").replace(str(root) + "/", "").strip()
            raise ProtoSchemaError(f"protoc: {reason[:500] or f'exit status {done.returncode}'}")
        result = descriptor_pb2.FileDescriptorSet()
        result.ParseFromString(out.read_bytes())
    return list(result.file)


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto | None:
    match = _WELL_KNOWN.fullmatch(name)
    if match is None:
        return None
    try:
        module = importlib.import_module(f"google.protobuf.{match.group(1)}_pb2")
    except ImportError:
        return None
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    return proto


def _pool(protos: dict[str, descriptor_pb2.FileDescriptorProto]) -> descriptor_pool.DescriptorPool:
    """A pool of its own holding ``protos`` (each file after what it imports) and the well-known files they use."""
    pool = descriptor_pool.DescriptorPool()
    added: set[str] = set()

    def add(name: str, trail: tuple[str, ...]) -> None:
        if name in added:
            return
        if name in trail:
            raise ProtoSchemaError(f"the imports go round in a circle through {name}")
        proto = protos.get(name) or _well_known(name)
        if proto is None:
            raise ProtoSchemaError(f"the import {name} is neither registered as a reference nor a well-known file")
        for dependency in proto.dependency:
            add(dependency, (*trail, name))
        try:
            pool.AddSerializedFile(proto.SerializeToString())
        except Exception as exc:  # noqa: BLE001 - the pool raises TypeError, KeyError... for a bad file
            raise ProtoSchemaError(f"{name} does not build: {exc}") from None
        added.add(name)

    for name in protos:
        add(name, ())
    return pool


@dataclass(frozen=True)
class ProtoSchema:
    """A compiled registered schema: the main file's descriptor and a pool holding it and its imports."""

    file: descriptor_pb2.FileDescriptorProto
    pool: descriptor_pool.DescriptorPool

    def message_name(self, indexes: list[int]) -> str:
        """The full name of the message the wire format's ``indexes`` point at (the first index among the file's
        top-level messages, each next one among the nested messages of the one before)."""
        if not indexes:
            raise ProtoSchemaError("no message index")
        messages = self.file.message_type
        names = [self.file.package] if self.file.package else []
        where = "the schema"
        for index in indexes:
            if index >= len(messages):
                raise ProtoSchemaError(f"message index {index} is out of range: {where} has {len(messages)} message(s)")
            message = messages[index]
            names.append(message.name)
            where = message.name
            messages = message.nested_type
        return ".".join(names)

    def read(self, indexes: list[int], body: bytes) -> dict[str, object]:
        """The message at ``indexes`` read from ``body`` as a JSON-able dict. Raises ProtoSchemaError."""
        name = self.message_name(indexes)
        cls = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name))
        message = cls()
        try:
            message.ParseFromString(body)
        except (DecodeError, RuntimeError, ValueError) as exc:
            raise ProtoSchemaError(f"not a valid {name} message: {exc}") from None
        try:
            data = json_format.MessageToDict(
                message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
            )
        except (json_format.Error, ValueError, TypeError, RecursionError) as exc:  # an Any of a type not in the pool
            raise ProtoSchemaError(f"the {name} message cannot be shown as JSON: {exc}") from None
        return data


def compile_schema(schema: RegisteredSchema, source: SchemaSource) -> ProtoSchema:
    """``schema`` (type PROTOBUF) and its references compiled. Raises ProtoSchemaError with the reason (protoc's
    message, a reference that could not be fetched, an import that is missing)."""
    if schema.schema_type != PROTOBUF:
        raise ProtoSchemaError(f"a {schema.schema_type} schema is not Protobuf")
    files = _Files({}, {})
    main = _main_name(schema.id)
    _gather(schema, main, source, files)
    protos = dict(files.binary)
    if files.text:
        try:
            compiled = _protoc(files)
        except OSError as exc:  # the temporary directory: no space, no permission
            raise ProtoSchemaError(f"the schema could not be written for protoc: {exc}") from None
        for proto in compiled:
            protos.setdefault(proto.name, proto)
    pool = _pool(protos)
    return ProtoSchema(protos[main], pool)
