"""Running a filter over many records fast: what it sees of each (:class:`LazyView`, which decodes only the parts
the filter reads) and the probe (:func:`probe_for`), which passes over whole record batches that cannot hold a
match without decoding them.

The probe. Many filters name a text a match must hold: ``value contains "needle"``, ``key == "order-7"``,
``headers.trace-id == "abc"``. Such a text, when the record holds it, is in the record's bytes (as written, or
inside a JSON string with ``"``, ``\\`` and control characters escaped), so a batch whose uncompressed records
do not hold it has no match. The probe collects clauses from the filter's tree (an ``and`` needs every part's
clauses, an ``or`` one text of each part), each a set of texts of which every match holds one, and only where
that is certain:

- the comparison is ``==``, ``contains``, ``startswith``, ``endswith`` or ``in`` on the key, the value or a
  header, not negated, with a string that does not read as a number, ``true``, ``false`` or ``null`` (those also
  match JSON numbers and booleans, which may be written otherwise: ``1e1`` is 10), that could not be part of a
  number's text (``"e+2"`` is in the text of ``1E20``) and holds no U+FFFD (an undecodable byte reads as it);
- a batch (and a record) holding a ``\\u`` escape is always read: JSON may write any character so; and when a
  text holds ``/``, one holding ``\\/`` too (JSON may escape it, or not).

A masked reader sees texts the records do not hold (a mask's replacement): searches with masking use no probe.
The texts are those of records read under "auto" (JSON, text, bytes): a reader that decodes records otherwise
(Avro, whose field names are not in the bytes) must not use it. Records in a schema registry's wire format are
such records (an enum, a timestamp, a decimal or a bytes field is not in the bytes as the filter sees it): with
``framed`` (the topic's cluster has a registry, and :class:`LazyView` reads such records with it), the probe
lets every record in the wire format through and passes over no batch (a batch's bytes do not tell where a
record's value starts).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from broker.decode import SCHEMA_KINDS, RecordDecoder, auto_data, decode
from broker.messages.log import Message, PassOver
from broker.messages.masking import NO_MASKING, Masker
from broker.messages.query import Query
from broker.messages.query_terms import _And, _Compare, _Literal, _Node, _Or
from broker.schemas import wire

_PROBED_ROOTS = ("key", "value", "headers")
_PROBED_OPERATORS = ("==", "contains", "startswith", "endswith", "in")
# The characters of Python's text of a JSON number: a string made only of these may be found in a number's text.
_NUMBER_TEXT = frozenset("0123456789.+-eEinfaINFA")
# JSON may write any character as \\uXXXX, and "/" as \\/ (or not): where these appear, texts are not probed for.
_ESCAPE = b"\\u"
_SLASH_ESCAPE = b"\\/"
# Records a probe looks at before it judges whether looking pays (most let through: it stops looking).
_RECORD_CHECKS_TRIED = 2000


class LazyView:
    """What a filter sees of a message (the fields of broker.messages.query_terms.MessageView), its key, value
    and headers decoded under "auto" when first read, not before. With ``registry``, a key or value in a schema
    registry's wire format is the document its schema reads (Avro, Protobuf, JSON Schema), so a filter reaches
    into its fields (``value.customer.id == "42"``)."""

    __slots__ = ("_headers", "_key", "_message", "_registry", "_value")

    def __init__(self, message: Message, registry: RecordDecoder | None = None) -> None:
        self._message = message
        self._registry = registry
        self._key: tuple[str, object] | None = None
        self._value: tuple[str, object] | None = None
        self._headers: dict[str, object] | None = None

    @property
    def topic(self) -> str:
        return self._message.topic

    @property
    def partition(self) -> int:
        return self._message.partition

    @property
    def offset(self) -> int:
        return self._message.offset

    @property
    def timestamp(self) -> int | None:
        return self._message.timestamp

    @property
    def size(self) -> int:
        return self._message.size

    @property
    def transaction(self) -> str | None:
        return self._message.transaction

    def _read(self, raw: bytes | None) -> tuple[str, object]:
        found = auto_data(raw)
        if found[0] == "binary" and self._registry is not None and wire.is_framed(raw):
            decoded = decode(raw, "auto", limit=0, registry=self._registry)
            if decoded.kind in SCHEMA_KINDS:
                return decoded.kind, decoded.data
        return found

    def _decoded_key(self) -> tuple[str, object]:
        if self._key is None:
            self._key = self._read(self._message.key)
        return self._key

    def _decoded_value(self) -> tuple[str, object]:
        if self._value is None:
            self._value = self._read(self._message.value)
        return self._value

    @property
    def key(self) -> object:
        kind, data = self._decoded_key()
        return data if kind in ("json", "text") or kind in SCHEMA_KINDS else self._message.key

    @property
    def value(self) -> object:
        kind, data = self._decoded_value()
        return data if kind in ("json", "text") or kind in SCHEMA_KINDS else self._message.value

    @property
    def key_text(self) -> str | None:
        """The key's text as written, when it is JSON."""
        raw = self._message.key
        return raw.decode("utf-8", "replace") if raw is not None and self._decoded_key()[0] == "json" else None

    @property
    def value_text(self) -> str | None:
        raw = self._message.value
        return raw.decode("utf-8", "replace") if raw is not None and self._decoded_value()[0] == "json" else None

    @property
    def headers(self) -> Mapping[str, object]:
        if self._headers is None:
            self._headers = {name: _header(raw) for name, raw in self._message.headers}
        return self._headers


def _header(raw: bytes | None) -> object:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class Probe:
    """What every record matching a filter holds in its key, value or headers: for each clause, one of its texts
    (UTF-8, as written plain or inside a JSON string). ``guards``: escapes that may hide a text (a batch or a
    record holding one is always read)."""

    __slots__ = ("_checked", "_kept", "clauses", "framed", "guards")

    def __init__(self, clauses: list[frozenset[bytes]], framed: bool = False) -> None:
        self.framed = framed  # records in the wire format are read with a registry: let them all through
        # The clause whose shortest text is longest first: the likeliest to be missing.
        ordered = sorted(clauses, key=_shortest, reverse=True)
        self.clauses = tuple(tuple(sorted(c, key=len, reverse=True)) for c in ordered)
        slash = any(b"/" in n for c in clauses for n in c)
        self.guards = (_ESCAPE, _SLASH_ESCAPE) if slash else (_ESCAPE,)
        self._checked = self._kept = 0  # records looked at by may_match, and those it let through

    def __repr__(self) -> str:
        return f"Probe({[[n.decode() for n in c] for c in self.clauses]})"

    def may_hold(self, data: bytes) -> bool:
        """Whether ``data`` (a batch's records) may hold a match: a text of every clause, or an escape (always,
        when ``framed``: any of its records may be in the wire format)."""
        if self.framed:
            return True
        for guard in self.guards:
            if guard in data:
                return True
        for clause in self.clauses:
            for needle in clause:
                if needle in data:
                    break
            else:
                return False
        return True

    def may_match(self, message: Message) -> bool:
        """Whether ``message`` may match the filter (False: it surely does not). Once most records of a scan have
        been let through (texts every record holds), it stops looking and lets all through: the filter decides."""
        if self._checked >= _RECORD_CHECKS_TRIED and self._kept * 2 > self._checked:
            return True
        self._checked += 1
        if self._kept_by(message):
            self._kept += 1
            return True
        return False

    def _kept_by(self, message: Message) -> bool:
        if self.framed and (wire.is_framed(message.value) or wire.is_framed(message.key)):
            return True
        fields = [f for f in (message.value, message.key) if f is not None]
        for name, raw in message.headers:
            fields.append(name.encode("utf-8", "replace"))
            if raw is not None:
                fields.append(raw)
        if any(guard in f for f in fields for guard in self.guards):
            return True
        return all(any(needle in f for f in fields for needle in clause) for clause in self.clauses)

    def pass_over(self, budget: Callable[[], int]) -> PassOver:
        """For PartitionLog.walk: pass over a batch of records that cannot hold a match, while ``budget()`` (the
        records a scan may still read) covers all of it."""

        def passes(_first: int, _last: int, count: int, payload: bytes) -> bool:
            return count <= budget() and not self.may_hold(payload)

        return passes


def _shortest(clause: frozenset[bytes]) -> int:
    return min(len(n) for n in clause)


Clauses = list[frozenset[bytes]]


def probe_for(query: Query, framed: bool = False) -> Probe | None:
    """The probe of ``query``, or None when no text is certain to be in every match (or the filter is empty).
    ``framed``: records in a registry's wire format are decoded by the filter (see the module)."""
    tree = query.tree
    clauses = _clauses(tree) if tree is not None else None
    return Probe(clauses, framed) if clauses else None


def _clauses(node: _Node) -> Clauses | None:
    """Clauses every record matching ``node`` satisfies (one text of each); None when none is certain."""
    if isinstance(node, _Or):
        # A match matches one of the parts, so holds a text of each part's clauses: of its best one, say.
        parts = [_clauses(child) for child in node.children]
        if any(not p for p in parts):
            return None
        return [frozenset().union(*(max(p, key=_shortest) for p in parts if p))]
    if isinstance(node, _And):
        found: Clauses = []
        for child in node.children:
            found += _clauses(child) or []
        return found or None
    if isinstance(node, _Compare):
        return _compare_clauses(node)
    return None  # not, exists: no text is certain


def _compare_clauses(node: _Compare) -> Clauses | None:
    if node.negate or node.path.root not in _PROBED_ROOTS or node.op not in _PROBED_OPERATORS or not node.literals:
        return None
    found: set[bytes] = set()
    for literal in node.literals:
        text = _certain_text(literal)
        if text is None:
            return None
        # As written in plain text, and inside a JSON string (with ", \\ and control characters escaped).
        found |= {text.encode("utf-8"), json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")}
    return [frozenset(found)]


def _certain_text(literal: _Literal) -> str | None:
    """The literal's string when a value matching it surely holds it (plain or JSON-escaped; see the module)."""
    text = literal.value
    if not isinstance(text, str) or not text or literal.number is not None:
        return None
    if text.strip().lower() in ("true", "false", "null") or set(text) <= _NUMBER_TEXT or "\ufffd" in text:
        return None
    return text


def predicate_for(
    query: Query, masker: Masker = NO_MASKING, registry: RecordDecoder | None = None
) -> Callable[[Message], bool]:
    """Whether a message matches ``query``, as the user is shown it: masked by ``masker``, so a search
    cannot find what masking hides from the user; records in a schema registry's wire format read with
    ``registry``. The filter decodes only what it reads of each message."""
    if not query.source.strip():
        return lambda _m: True
    if not masker.active:
        return lambda m: query.matches(LazyView(m, registry))
    return lambda m: query.matches(LazyView(masker.message(m), registry))
