"""What the schemas pages show of a subject beyond what the registry answers: a schema pretty-printed, the
difference between two versions, the full names a schema defines, and which topics use a subject by the
subject naming strategies:

- topic name (the serializers' default): ``<topic>-key`` and ``<topic>-value``;
- topic-record name: ``<topic>-<record full name>``;
- record name: the record's full name alone, which any topic may use; a topic is named when it also has a
  topic-record subject for that name, else the strategy is said and no topic guessed.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from broker.schemas.model import AVRO, JSON_SCHEMA, PROTOBUF

NAMED_AVRO = ("record", "enum", "fixed", "error")


def pretty(text: str, schema_type: str) -> str:
    """Avro and JSON Schema as indented JSON (keys in their order); Protobuf as written. Text that does not
    parse is returned as it is."""
    if schema_type in (AVRO, JSON_SCHEMA):
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except ValueError:
            return text
    return text.strip("\n")


@dataclass(frozen=True)
class DiffLine:
    kind: str  # "same", "added", "removed", "skip" (unchanged lines left out), "head"
    text: str
    old: int | None = None
    new: int | None = None


def diff(old_text: str, new_text: str, schema_type: str, context: int = 3) -> list[DiffLine]:
    """The lines that differ between two versions (pretty-printed first, so a change of spacing alone is no
    difference), with ``context`` unchanged lines around each change."""
    old = pretty(old_text, schema_type).splitlines()
    new = pretty(new_text, schema_type).splitlines()
    lines: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        first = group[0]
        lines.append(DiffLine("head", f"@@ lines {first[1] + 1}-{group[-1][2]} → {first[3] + 1}-{group[-1][4]} @@"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [DiffLine("same", old[i], i + 1, j1 + i - i1 + 1) for i in range(i1, i2)]
                continue
            lines += [DiffLine("removed", old[i], i + 1, None) for i in range(i1, i2)]
            lines += [DiffLine("added", new[j], None, j + 1) for j in range(j1, j2)]
    return lines


def full_names(text: str, schema_type: str) -> list[str]:
    """The full names a schema defines, its top-level one first: Avro named types (namespace.name, nested ones
    too), Protobuf messages (package.Message, nested Message.Inner), JSON Schema's ``title``."""
    if schema_type == AVRO:
        try:
            return _avro_names(json.loads(text), "")
        except ValueError:
            return []
    if schema_type == PROTOBUF:
        return _proto_names(text)
    if schema_type == JSON_SCHEMA:
        try:
            title = json.loads(text).get("title")
        except (ValueError, AttributeError):
            return []
        return [str(title)] if isinstance(title, str) and title else []
    return []


def _avro_names(node: Any, namespace: str) -> list[str]:
    found: list[str] = []
    if isinstance(node, list):
        for item in node:
            found += _avro_names(item, namespace)
    elif isinstance(node, dict):
        if node.get("type") in NAMED_AVRO and isinstance(node.get("name"), str):
            name = node["name"]
            space = node.get("namespace") if isinstance(node.get("namespace"), str) else namespace
            if "." in name:
                full, space = name, name.rsplit(".", 1)[0]
            else:
                full = f"{space}.{name}" if space else name
            found.append(full)
            namespace = space or ""
        for field in node.get("fields") or []:
            if isinstance(field, dict):
                found += _avro_names(field.get("type"), namespace)
        for key in ("items", "values"):
            if key in node:
                found += _avro_names(node[key], namespace)
        if isinstance(node.get("type"), dict | list):
            found += _avro_names(node["type"], namespace)
    return list(dict.fromkeys(found))


_TOKENS = re.compile(r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\])*\"|'(?:\\.|[^'\\])*'|[A-Za-z_][\w.]*|[{};]", re.S)


def _proto_names(text: str) -> list[str]:
    """Message (and enum) full names from .proto text: a scan of its words, counting braces."""
    package = ""
    stack: list[str | None] = []
    found: list[str] = []
    words = [t for t in _TOKENS.findall(text) if not t.startswith(("//", "/*", '"', "'"))]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "package" and i + 1 < len(words) and not stack:
            package = words[i + 1]
            i += 2
            continue
        if word in ("message", "enum") and i + 2 < len(words) and words[i + 2] == "{":
            outer = [s for s in stack if s]
            name = ".".join([*([package] if package else []), *outer, words[i + 1]])
            found.append(name)
            stack.append(words[i + 1])
            i += 3
            continue
        if word == "{":
            stack.append(None)
        elif word == "}" and stack:
            stack.pop()
        i += 1
    return found


@dataclass(frozen=True)
class TopicUse:
    topic: str
    strategy: str  # "topic", "topic-record", "record"
    part: str | None  # "key", "value" (topic name strategy), else None


def strategy_of(subject: str, names: Sequence[str], topics: Iterable[str]) -> tuple[str | None, list[TopicUse]]:
    """The naming strategy ``subject`` follows and the topics that use it, ``names`` being the full names its
    schema defines and ``topics`` the cluster's topics. A subject that fits no strategy: (None, [])."""
    existing = set(topics)
    for part in ("key", "value"):
        topic = subject.removesuffix(f"-{part}")
        if topic != subject and topic in existing:
            return "topic", [TopicUse(topic, "topic", part)]
    for name in names:
        topic = subject.removesuffix(f"-{name}")
        if topic != subject and topic in existing:
            return "topic-record", [TopicUse(topic, "topic-record", None)]
    if subject in names:
        return "record", []
    for part in ("key", "value"):
        if subject.endswith(f"-{part}"):
            return "topic", []
    return None, []


def record_subject_topics(name: str, subjects: Iterable[str], topics: Iterable[str]) -> list[TopicUse]:
    """For a record-name subject: the topics that also have a topic-record subject of that name."""
    existing = set(topics)
    found = []
    for subject in subjects:
        topic = subject.removesuffix(f"-{name}")
        if topic != subject and topic in existing:
            found.append(TopicUse(topic, "topic-record", None))
    return found
