"""Data masking: rules that hide parts of record keys, values and headers from roles below a level.

A rule names the clusters and topics it covers, the parts of a record it looks at (``value`` by
default; ``key``, ``headers``), and what it hides:

* ``paths``: JSON paths into a JSON key, value or header, in a small subset of JSONPath —
  ``$`` the whole document, ``.name`` or ``['name']`` a member, ``[3]`` / ``[-1]`` an array item,
  ``[*]`` / ``.*`` every member or item, ``..name`` / ``..*`` / ``..[*]`` at any depth below. The
  node a path reaches (a string, a number, an object, anything) is replaced by the rule's
  replacement; a path that reaches nothing masks nothing.
* ``regex``: a regular expression (Python's ``regex`` syntax; ``(?i)`` for case-insensitive). In a
  JSON document it is matched against each string and number inside (never against member names or
  the JSON text as a whole, so the document stays JSON); in UTF-8 text, against the text; in other
  bytes, against the bytes read as Latin-1. Each match is replaced by the replacement.

Masking works on the record's bytes, before anything decodes them: the masked record is what a page
decodes, what the search filter is matched against and what a download holds, so there is one place
where hidden text leaves. A masked JSON document is written again as JSON (``json.dumps``; numbers
and spacing may be written differently from the original); an unmasked part keeps its bytes exactly.
A replacement has a fixed length (``••••`` by default), so a masked value does not tell how long the
hidden one was. Avro keys and values are masked as the document the topic's schema reads (a
:func:`avro_reader` given to the Masker), and records in a schema registry's wire format as the document their
registered schema reads (:func:`registry_reader`), and then written as JSON (a registry record that cannot be
read now, its registry down say, is hidden whole by a rule with paths: the page could read it a moment later);
without a schema they are bytes, matched by ``regex`` only. A schema is uploaded by people the rules may
mask for, so it cannot switch a pattern off: when the bytes hold a match the schema's document does not
(a schema that reads text as numbers, or cuts a card number across fields), the bytes are masked as bytes
instead, and the whole value is replaced when those still read as a document some rule reaches.

Every masking is reported by *label* so the pages can say what was masked: the concrete JSON path for
a path (``$.items[0].card``), ``~ name`` for a rule's pattern, prefixed by ``key`` or
``header <name>`` outside the value (``key $.id``, ``header auth ~ tokens``). Labels never show a
pattern: the rules themselves are for admins only.

Bad rules raise :class:`~broker.errors.ConfigError` when they are read (:func:`parse_rules`), never
when a record is shown.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import re
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import regex

from broker.decode import SCHEMA_KINDS, AvroSchema, RecordDecoder, decode
from broker.errors import ConfigError
from broker.messages.log import Message

ROLE_LEVELS = ("viewer", "operator", "admin")  # weakest first, as console.access.ROLES
PARTS = ("key", "value", "headers")
DEFAULT_REPLACEMENT = "••••"
REGEX_TIMEOUT = 0.5  # seconds one pattern may take on one value; longer masks the whole value
_MASKED_ALL = "(the whole value: the pattern took too long)"
_RULE_KEYS = {"name", "cluster", "topics", "parts", "paths", "regex", "level", "replacement"}

# --- JSON paths ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One step of a path: a member ``name``, an array ``index``, or every child (``wild``); with
    ``descend``, at any depth below (``..``)."""

    name: str | None = None
    index: int | None = None
    wild: bool = False
    descend: bool = False

    def matches(self, key: str | int) -> bool:
        if self.wild:
            return True
        if isinstance(key, int):
            return False  # indexes are resolved against the array's length in _apply
        return self.name == key


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*")
_BRACKET = re.compile(r"""\[\s*(?:(\*)|(-?\d+)|'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\s*\]""")


def parse_path(text: str) -> tuple[Step, ...]:
    """The steps of a JSON path in the supported subset; raises ValueError saying what is wrong and where."""
    source = text.strip()
    if not source.startswith("$"):
        raise ValueError("a JSON path starts with $")
    steps: list[Step] = []
    i = 1
    while i < len(source):
        descend = False
        if source.startswith("..", i):
            descend = True
            i += 2
            if i < len(source) and source[i] == "[":
                pass  # ..[*] or ..['name'] or ..[0]
            elif source.startswith("*", i):
                steps.append(Step(wild=True, descend=True))
                i += 1
                continue
            else:
                match = _NAME.match(source, i)
                if not match:
                    raise ValueError(f"expected a member name or * after '..' at character {i + 1}")
                steps.append(Step(name=match.group(), descend=True))
                i = match.end()
                continue
        elif source[i] == ".":
            i += 1
            if source.startswith("*", i):
                steps.append(Step(wild=True))
                i += 1
                continue
            match = _NAME.match(source, i)
            if not match:
                raise ValueError(f"expected a member name or * after '.' at character {i + 1}")
            steps.append(Step(name=match.group()))
            i = match.end()
            continue
        if i < len(source) and source[i] == "[":
            match = _BRACKET.match(source, i)
            if not match:
                raise ValueError(f"expected [*], [number] or ['name'] at character {i + 1}")
            star, number, single, double = match.groups()
            if star:
                steps.append(Step(wild=True, descend=descend))
            elif number is not None:
                steps.append(Step(index=int(number), descend=descend))
            else:
                quoted = single if single is not None else double
                steps.append(Step(name=re.sub(r"\\(.)", r"\1", quoted), descend=descend))
            i = match.end()
            continue
        raise ValueError(f"unexpected {source[i]!r} at character {i + 1}")
    return tuple(steps)


def _label(base: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{base}[{key}]"
    if _NAME.fullmatch(key):
        return f"{base}.{key}"
    return f"{base}[{json.dumps(key, ensure_ascii=False)}]"


def _children(node: Any) -> list[tuple[str | int, Any]]:
    if isinstance(node, dict):
        return list(node.items())
    if isinstance(node, list):
        return list(enumerate(node))
    return []


def _hit(step: Step, key: str | int, node: Any) -> bool:
    if step.index is not None:
        if not isinstance(key, int) or not isinstance(node, list):
            return False
        return key == (step.index if step.index >= 0 else len(node) + step.index)
    return step.matches(key)


def _apply(node: Any, steps: Sequence[Step], i: int, here: str, replacement: str, found: list[str]) -> Any:
    """``node`` with what ``steps[i:]`` reach from it replaced; the concrete paths replaced go to ``found``."""
    if i == len(steps):
        found.append(here)
        return replacement
    if not isinstance(node, dict | list):
        return node
    step = steps[i]
    changed = dict(node) if isinstance(node, dict) else list(node)
    for key, child in _children(node):
        new = child
        if _hit(step, key, node):
            new = _apply(child, steps, i + 1, _label(here, key), replacement, found)
        if step.descend and isinstance(new, dict | list):
            new = _apply(new, steps, i, _label(here, key), replacement, found)
        if new is not child:
            changed[key] = new  # type: ignore[index]
    return changed


def apply_path(document: Any, steps: Sequence[Step], replacement: str = DEFAULT_REPLACEMENT) -> tuple[Any, list[str]]:
    """``document`` (parsed JSON, not changed) with every node ``steps`` reach replaced by ``replacement``,
    and the concrete paths replaced (``$.items[0].card``), in document order."""
    found: list[str] = []
    return _apply(document, steps, 0, "$", replacement, found), found


# --- rules --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MaskRule:
    """One masking rule (see the module's docstring). ``cluster`` None: every cluster. ``topics``: a
    glob (``orders.*``, ``*``) matched against the whole topic name, case-sensitively. Roles below
    ``level`` see masked values; ``level`` and above see them whole."""

    name: str
    topics: str = "*"
    cluster: str | None = None
    parts: tuple[str, ...] = ("value",)
    paths: tuple[str, ...] = ()
    regex: str | None = None
    level: str = "admin"
    replacement: str = DEFAULT_REPLACEMENT
    steps: tuple[tuple[Step, ...], ...] = dataclasses.field(default=(), repr=False, compare=False)
    pattern: Any = dataclasses.field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_rule(self)

    def covers(self, cluster: str, topic: str) -> bool:
        return (self.cluster is None or self.cluster == cluster) and fnmatch.fnmatchcase(topic, self.topics)

    def masks_for(self, role: str | None) -> bool:
        """Whether a user of ``role`` sees this rule's matches masked (no role: masked)."""
        if role not in ROLE_LEVELS:
            return True
        return ROLE_LEVELS.index(role) < ROLE_LEVELS.index(self.level)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "cluster": self.cluster,
            "topics": self.topics,
            "parts": list(self.parts),
            "paths": list(self.paths),
            "regex": self.regex,
            "level": self.level,
            "replacement": self.replacement,
        }


def check_rule(rule: MaskRule) -> None:
    """Compile ``rule``'s paths and pattern into it; raise ConfigError naming the rule and what is wrong."""
    where = f"masking rule {rule.name!r}"
    if not rule.name.strip():
        raise ConfigError("a masking rule needs a name.")
    if not rule.topics:
        raise ConfigError(f"{where}: topics is empty; give a topic name or a glob such as 'orders.*' or '*'.")
    if not rule.parts or any(p not in PARTS for p in rule.parts):
        raise ConfigError(f"{where}: parts must be some of {', '.join(PARTS)}, not {list(rule.parts)!r}.")
    if rule.level not in ROLE_LEVELS[1:]:
        raise ConfigError(
            f"{where}: level must be operator or admin (roles below it see masked values), not {rule.level!r}."
        )
    if bool(rule.paths) == (rule.regex is not None):
        raise ConfigError(f"{where}: give either paths (a list of JSON paths) or regex, and not both.")
    if not rule.replacement:
        raise ConfigError(f"{where}: the replacement must not be empty.")
    steps = []
    for path in rule.paths:
        try:
            steps.append(parse_path(path))
        except ValueError as exc:
            raise ConfigError(f"{where}: JSON path {path!r}: {exc}.") from None
    pattern = None
    if rule.regex is not None:
        if not rule.regex:
            raise ConfigError(f"{where}: regex is empty.")
        try:
            pattern = regex.compile(rule.regex)
        except regex.error as exc:
            raise ConfigError(f"{where}: regex {rule.regex!r} does not compile: {exc}.") from None
        if pattern.search("") is not None:
            raise ConfigError(
                f"{where}: regex {rule.regex!r} matches empty text; it would mask between every character."
            )
    object.__setattr__(rule, "steps", tuple(steps))
    object.__setattr__(rule, "pattern", pattern)


def _strings(table: dict[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    value = table.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a string or a list of strings.")
    return tuple(value)


def rule_from_dict(
    table: Any, position: int, source: str, cluster: str | None = None, unnamed: str = "rule"
) -> MaskRule:
    """A rule from a JSON object or TOML table (``cluster`` given: the rule belongs to that cluster's
    table and must not name another); raises ConfigError naming ``source`` and the rule."""
    if not isinstance(table, dict):
        raise ConfigError(f"{source}: masking rule {position} is not an object.")
    name = str(table.get("name") or f"{unnamed} {position}")
    where = f"{source}: masking rule {name!r}"
    unknown = sorted(set(table) - _RULE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; a rule has {', '.join(sorted(_RULE_KEYS))}.")
    named = table.get("cluster")
    if named is not None and not isinstance(named, str):
        raise ConfigError(f"{where}: cluster must be a cluster's name.")
    if cluster is not None and named not in (None, cluster):
        raise ConfigError(f"{where}: it is declared under cluster {cluster!r} but names cluster {named!r}.")
    for key in ("topics", "regex", "level", "replacement"):
        if key in table and not isinstance(table[key], str):
            raise ConfigError(f"{where}: {key} must be a string.")
    try:
        return MaskRule(
            name=name,
            topics=table.get("topics", "*"),
            cluster=cluster or named,
            parts=_strings(table, "parts", where) or ("value",),
            paths=_strings(table, "paths", where) or (),
            regex=table.get("regex"),
            level=table.get("level", "admin"),
            replacement=table.get("replacement", DEFAULT_REPLACEMENT),
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def parse_rules(text: str, source: str = "KAZAMI_MASKING") -> tuple[MaskRule, ...]:
    """Rules from JSON text: a list of rule objects (empty text: none). Raises ConfigError."""
    if not text.strip():
        return ()
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{source}: not valid JSON ({exc}).") from None
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise ConfigError(f"{source}: expected a list of masking rules.")
    return tuple(rule_from_dict(table, n, source) for n, table in enumerate(data, start=1))


def rules_for(rules: Iterable[MaskRule], cluster: str, topic: str, role: str | None) -> tuple[MaskRule, ...]:
    """The rules that mask ``topic`` of ``cluster`` for a user of ``role``."""
    return tuple(r for r in rules if r.covers(cluster, topic) and r.masks_for(role))


# --- applying rules -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Masked:
    """A record's key, value and headers after masking, and the labels of what was masked."""

    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    labels: tuple[str, ...]


def _sub(pattern: Any, text: str, replacement: str) -> tuple[str, int]:
    try:
        new, count = pattern.subn(lambda _m: replacement, text, timeout=REGEX_TIMEOUT)
    except TimeoutError:
        return replacement, 1
    return str(new), int(count)


def _regex_leaves(node: Any, pattern: Any, replacement: str) -> tuple[Any, int]:
    """``node`` with the pattern's matches in its strings and numbers replaced, and how many."""
    if isinstance(node, str):
        return _sub(pattern, node, replacement)
    if isinstance(node, bool) or node is None:
        return node, 0
    if isinstance(node, int | float):
        text = json.dumps(node)
        new, count = _sub(pattern, text, replacement)
        return (new, count) if count else (node, 0)
    total = 0
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for k, v in node.items():
            out[k], n = _regex_leaves(v, pattern, replacement)
            total += n
        return (out, total) if total else (node, 0)
    if isinstance(node, list):
        items = []
        for v in node:
            new, n = _regex_leaves(v, pattern, replacement)
            items.append(new)
            total += n
        return (items, total) if total else (node, 0)
    return node, 0


_NOT_JSON = object()
NOT_READ = object()  # what a Reader gives for bytes it cannot read
# What a Reader gives for bytes that name a schema it could not read them with now (a registry down, an id not
# known yet): a path may reach into them once it can, so a rule with paths hides them whole until then.
UNREADABLE = object()


def _parse_json(text: str) -> Any:
    body = text[1:] if text.startswith("\ufeff") else text
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return _NOT_JSON


Reader = Callable[[bytes], Any]  # bytes -> a JSON-like document, or NOT_READ


def avro_reader(schema: AvroSchema) -> Reader:
    """A reader of values written with ``schema`` (Confluent-framed or plain), as the pages decode them."""

    def read(raw: bytes) -> Any:
        decoded = decode(raw, "avro", schema, limit=0)
        return decoded.data if decoded.kind == "avro" else NOT_READ

    return read


def registry_reader(registry: RecordDecoder, schema: AvroSchema | None = None) -> Reader:
    """A reader of records in a schema registry's wire format (Avro, Protobuf, JSON Schema) as the pages decode
    them, and, when the registry does not read them, of values written with the topic's uploaded ``schema``."""

    def read(raw: bytes) -> Any:
        decoded = decode(raw, "auto", schema, limit=0, registry=registry)
        if decoded.kind in SCHEMA_KINDS:
            return decoded.data
        return UNREADABLE if decoded.schema is not None else NOT_READ

    return read


def _mask_document(document: Any, rules: Sequence[MaskRule], prefix: str) -> tuple[Any, list[str]]:
    labels: list[str] = []
    for rule in rules:
        for steps in rule.steps:
            document, found = apply_path(document, steps, rule.replacement)
            labels.extend(prefix + f for f in found)
        if rule.pattern is not None:
            document, count = _regex_leaves(document, rule.pattern, rule.replacement)
            if count:
                labels.append(f"{prefix}~ {rule.name}")
    return document, _unique(labels)


def mask_bytes(
    raw: bytes | None, rules: Sequence[MaskRule], prefix: str = "", reader: Reader | None = None
) -> tuple[bytes | None, list[str]]:
    """``raw`` with ``rules`` applied (all of them: pick with :func:`rules_for`), and the labels of what was
    masked, each starting with ``prefix`` (``"key "``). Unmasked bytes come back as they were.

    JSON is masked as a document. Bytes that are not JSON but that ``reader`` reads (Avro with the topic's
    schema: :func:`avro_reader`) are masked as the document it gives, and then written as JSON (the page
    shows the masked document as JSON instead of Avro). Anything else is text or bytes for ``regex``."""
    if raw is None or not raw or not rules:
        return raw, []
    try:
        text: str | None = bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        text = None
    document = _NOT_JSON if text is None else _parse_json(text)
    if document is not _NOT_JSON:
        document, labels = _mask_document(document, rules, prefix)
        if not labels:
            return raw, []
        return json.dumps(document, ensure_ascii=False).encode("utf-8"), labels
    if reader is not None:
        read = reader(bytes(raw))
        if read is UNREADABLE:
            if any(rule.steps for rule in rules):  # the page could read it a moment later, paths unapplied
                replacement = next((r.replacement for r in rules if r.steps), DEFAULT_REPLACEMENT)
                return replacement.encode("utf-8"), [f"{prefix}$"]
            read = NOT_READ
        if read is not NOT_READ:
            return _mask_read(bytes(raw), text, read, rules, prefix, reader)
    return _mask_raw(bytes(raw), text, rules, prefix)


def _mask_read(
    raw: bytes, text: str | None, document: Any, rules: Sequence[MaskRule], prefix: str, reader: Reader
) -> tuple[bytes | None, list[str]]:
    """Bytes that ``reader`` (a schema someone uploaded) reads as ``document``. The document is masked and
    written as JSON, as long as it holds every match the rules' patterns find in the bytes themselves. A
    schema that reads the bytes otherwise (a text value read as numbers, a card number cut across fields)
    cannot hide a match that way: the bytes are then masked as bytes, and when the masked bytes still read
    as a document some rule reaches, the whole value is replaced."""
    masked_document, labels = _mask_document(document, rules, prefix)
    in_bytes = _raw_matches(raw, text, rules)
    if in_bytes is not None and not in_bytes:
        if not labels:
            return raw, []
        return json.dumps(masked_document, ensure_ascii=False).encode("utf-8"), labels
    in_document = _document_matches(document, rules)
    if in_bytes is not None and in_document is not None and not in_bytes - in_document:
        return json.dumps(masked_document, ensure_ascii=False).encode("utf-8"), labels
    masked, raw_labels = _mask_raw(raw, text, rules, prefix)
    again = NOT_READ if masked is None else reader(masked)
    if in_bytes is None or (again is not NOT_READ and _mask_document(again, rules, prefix)[1]):
        replacement = next((r.replacement for r in rules if r.pattern is not None), DEFAULT_REPLACEMENT)
        return replacement.encode("utf-8"), _unique([*raw_labels, f"{prefix}$"])
    return masked, raw_labels


def _found(pattern: Any, text: str) -> list[str] | None:
    """The texts ``pattern`` matches in ``text``; None when it takes too long."""
    try:
        return [m.group() for m in pattern.finditer(text, timeout=REGEX_TIMEOUT)]
    except TimeoutError:
        return None


def _raw_matches(raw: bytes, text: str | None, rules: Sequence[MaskRule]) -> Counter[tuple[str, str]] | None:
    """What each rule's pattern matches in the bytes (as UTF-8 text, else as Latin-1), counted; None when a
    pattern takes too long."""
    found: Counter[tuple[str, str]] = Counter()
    return found if _count_matches(text if text is not None else raw.decode("latin-1"), rules, found) else None


def _count_matches(text: str, rules: Sequence[MaskRule], found: Counter[tuple[str, str]]) -> bool:
    """Adds what each rule's pattern matches in ``text`` to ``found``; False when a pattern takes too long."""
    for rule in rules:
        if rule.pattern is None:
            continue
        matches = _found(rule.pattern, text)
        if matches is None:
            return False
        found.update((rule.name, m) for m in matches)
    return True


def _document_matches(document: Any, rules: Sequence[MaskRule]) -> Counter[tuple[str, str]] | None:
    """What each rule's pattern matches in the strings and numbers of ``document``, counted (as
    _regex_leaves matches them); None when a pattern takes too long."""
    found: Counter[tuple[str, str]] = Counter()
    stack = [document]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
            continue
        if isinstance(node, list):
            stack.extend(node)
            continue
        if isinstance(node, bool) or node is None:
            continue
        if isinstance(node, str):
            leaf = node
        elif isinstance(node, int | float):
            leaf = json.dumps(node)
        else:
            continue
        if not _count_matches(leaf, rules, found):
            return None
    return found


def _mask_raw(raw: bytes, text: str | None, rules: Sequence[MaskRule], prefix: str) -> tuple[bytes | None, list[str]]:
    """Bytes that are no document masked by the rules' patterns: UTF-8 as text, anything else as Latin-1."""
    labels: list[str] = []
    if text is not None:
        for rule in rules:
            if rule.pattern is not None:
                text, count = _sub(rule.pattern, text, rule.replacement)
                if count:
                    labels.append(f"{prefix}~ {rule.name}")
        return (text.encode("utf-8"), labels) if labels else (raw, [])
    # Bytes that are not UTF-8: read as Latin-1 (one character per byte), matches replaced by the
    # replacement's UTF-8 bytes.
    data = bytes(raw)
    for rule in rules:
        if rule.pattern is None:
            continue
        try:
            spans = [m.span() for m in rule.pattern.finditer(data.decode("latin-1"), timeout=REGEX_TIMEOUT)]
        except TimeoutError:
            return rule.replacement.encode(), [f"{prefix}~ {rule.name}"]
        if not spans:
            continue
        out, last = bytearray(), 0
        for start, end in spans:
            out += data[last:start] + rule.replacement.encode()
            last = end
        data = bytes(out + data[last:])
        labels.append(f"{prefix}~ {rule.name}")
    return (data, labels) if labels else (raw, [])


def _unique(labels: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(labels))


def mask_record(
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]],
    rules: Sequence[MaskRule],
    key_reader: Reader | None = None,
    value_reader: Reader | None = None,
) -> Masked:
    """A record's key, value and headers with each rule applied to the parts it names; ``labels`` empty
    when nothing was masked. The readers read keys and values that are not JSON (see mask_bytes)."""
    labels: list[str] = []
    by_part = {part: [r for r in rules if part in r.parts] for part in PARTS}
    new_key, found = mask_bytes(key, by_part["key"], "key ", key_reader)
    labels += found
    new_value, found = mask_bytes(value, by_part["value"], "", value_reader)
    labels += found
    new_headers = list(headers)
    if by_part["headers"]:
        new_headers = []
        for name, raw in headers:
            masked, found = mask_bytes(raw, by_part["headers"], f"header {name} ")
            new_headers.append((name, masked))
            labels += found
    return Masked(new_key, new_value, new_headers, tuple(_unique(labels)))


@dataclass(frozen=True)
class MaskedMessage(Message):
    """A message as a user whose role is below a rule's level is shown it: key, value and headers masked,
    and ``masked`` the labels of what was hidden."""

    masked: tuple[str, ...] = ()


R = TypeVar("R")


@dataclass(frozen=True)
class Masker:
    """The rules that apply to one topic for one user (:func:`rules_for`); no rules, nothing is masked."""

    rules: tuple[MaskRule, ...] = ()
    # Readers of keys and values that are not JSON (Avro with the topic's schemas): see mask_bytes. Not
    # compared: two maskers of the same rules mask alike.
    key_reader: Reader | None = dataclasses.field(default=None, compare=False)
    value_reader: Reader | None = dataclasses.field(default=None, compare=False)

    @property
    def active(self) -> bool:
        return bool(self.rules)

    def _mask(self, record: Any) -> Masked:
        return mask_record(record.key, record.value, record.headers, self.rules, self.key_reader, self.value_reader)

    def message(self, message: Message) -> Message:
        """``message`` itself when nothing is masked, else a MaskedMessage (a marker row stays as it is)."""
        if not self.rules or message.control is not None:
            return message
        masked = self._mask(message)
        if not masked.labels:
            return message
        fields = {f.name: getattr(message, f.name) for f in dataclasses.fields(message)}
        fields.update(key=masked.key, value=masked.value, headers=masked.headers)
        return MaskedMessage(**fields, masked=masked.labels)

    def record(self, record: R) -> tuple[R, tuple[str, ...]]:
        """A dataclass record with ``key``, ``value`` and ``headers`` (a segment's record) masked, and the
        labels; ``record`` itself and no labels when nothing is masked."""
        if not self.rules:
            return record, ()
        r: Any = record
        masked = self._mask(r)
        if not masked.labels:
            return record, ()
        return dataclasses.replace(r, key=masked.key, value=masked.value, headers=masked.headers), masked.labels


def masked_labels(message: Message) -> tuple[str, ...]:
    """What masking hid of ``message`` (empty for a message shown whole)."""
    return message.masked if isinstance(message, MaskedMessage) else ()


NO_MASKING = Masker()


# --- settings -------------------------------------------------------------------------------------


def rules_from_toml(path: Path, data: dict[str, Any] | None = None) -> list[MaskRule]:
    """The rules of a clusters file: ``[[masking]]`` tables (every cluster, or the one each names) and
    ``[[clusters.<name>.masking]]`` tables (that cluster's). Raises ConfigError naming the file."""
    source = f"KAZAMI_CLUSTERS_FILE {path}"
    if data is None:
        try:
            data = tomllib.loads(path.read_text())
        except OSError as exc:
            raise ConfigError(f"{source}: {exc.strerror}.") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{source}: not valid TOML ({exc}).") from None
    rules: list[MaskRule] = []
    tables: list[tuple[str | None, Any]] = [(None, data.get("masking", []))]
    clusters = data.get("clusters")
    if isinstance(clusters, dict):
        tables += [(name, table.get("masking", [])) for name, table in clusters.items() if isinstance(table, dict)]
    for cluster, entries in tables:
        where = source if cluster is None else f"{source} [clusters.{cluster}]"
        if not isinstance(entries, list):
            raise ConfigError(f"{where}: masking must be a list of tables ([[...masking]]).")
        unnamed = "file rule" if cluster is None else f"{cluster} rule"
        rules += [rule_from_dict(t, n, where, cluster, unnamed) for n, t in enumerate(entries, start=1)]
    return rules


def load_rules(env_text: str, clusters_file: str = "", default_cluster: str = "local") -> tuple[MaskRule, ...]:
    """Every masking rule the settings hold: ``KAZAMI_MASKING`` (``env_text``, a JSON list of rules) and the
    clusters file's. A rule naming a cluster that is not configured, two rules of one name, or any bad
    rule raises ConfigError: the console does not start with them."""
    rules = list(parse_rules(env_text, "KAZAMI_MASKING"))
    known = {default_cluster}
    if clusters_file:
        path = Path(clusters_file)
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError):
            data = None  # console.config.clusters reports the file's own problem when it reads it
        if data is not None:
            rules += rules_from_toml(path, data)
            if isinstance(data.get("clusters"), dict):
                known |= set(data["clusters"])
    names: set[str] = set()
    for rule in rules:
        if rule.cluster is not None and rule.cluster not in known:
            raise ConfigError(
                f"masking rule {rule.name!r} names cluster {rule.cluster!r}, which is not configured "
                f"(configured: {', '.join(sorted(known))})."
            )
        if rule.name in names:
            raise ConfigError(f"two masking rules are named {rule.name!r}; give each its own name.")
        names.add(rule.name)
    return tuple(rules)
