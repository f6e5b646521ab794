"""What the SQL editor completes: a topic's table as a query sees it (analytics.sql's columns) and the JSON
fields ``fields`` holds, inferred from a small sample of the topic read through broker/ (no Spark).

The fields are those :func:`analytics.sql.infer_schema` gives a query's table, from fewer records (the first and
last ``per_end`` of up to six partitions), flattened to paths: ``user``, ``user.id``, ``tags`` (an array)."""

from __future__ import annotations

from dataclasses import dataclass

from analytics.formats import page_values
from analytics.sql import sample_schemas
from broker.client.connection import ClusterConnection
from broker.messages.ranges import get_ranges
from broker.topics.read import check_topic_name

# The columns of every topic's table (analytics.sql.empty_table) with their Spark types.
TABLE_COLUMNS = (
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "timestamp"),
    ("key", "string"),
    ("value", "string"),
    ("headers", "array<struct<key:string,value:string>>"),
    ("fields", "struct"),
)
SAMPLE_PER_END = 20  # records read at each end of a partition for the completion (a job samples 100)


@dataclass(frozen=True)
class Field:
    path: str  # dotted from ``fields``: "user.id"
    type: str  # Spark's type name, lower case: bigint, double, string, boolean, array<string>, struct


@dataclass(frozen=True)
class Table:
    topic: str
    records: int  # records the topic holds now
    sampled: bool  # whether any record was read
    fields: tuple[Field, ...]


def describe_table(conn: ClusterConnection, topic: str, per_end: int = SAMPLE_PER_END) -> Table:
    """``topic``'s table: its JSON fields from a sample of its records. Raises InvalidInput (not a topic name),
    TopicNotFound, ClusterUnavailable (each read is bounded by the connection's time-out)."""
    check_topic_name(topic)  # InvalidInput for a name Kafka would refuse, before asking the cluster
    ranges = get_ranges(conn, [topic], None, None)
    ddl = sample_schemas(ranges, page_values(conn), per_end=per_end).get(topic)
    return Table(topic, ranges.records, ranges.records > 0, tuple(flatten(ddl)) if ddl else ())


def flatten(ddl: str, prefix: str = "") -> list[Field]:
    """The fields of a Spark DDL list (```a` BIGINT, `b` STRUCT<`c`: STRING>``) as dotted paths, a struct's
    own path first, then its fields'."""
    out: list[Field] = []
    for part in _split(ddl):
        name, rest = _name(part)
        rest = rest.lstrip(": ").strip()
        path = prefix + name
        if rest.upper().startswith("STRUCT<") and rest.endswith(">"):
            out.append(Field(path, "struct"))
            out += flatten(rest[len("STRUCT<") : -1], path + ".")
        else:
            out.append(Field(path, _lower_types(rest)))
    return out


def _lower_types(ddl: str) -> str:
    """``ddl`` with its type names in lower case, names in backquotes as they are."""
    parts = ddl.split("`")
    return "`".join(p.lower() if i % 2 == 0 else p for i, p in enumerate(parts))


def _split(ddl: str) -> list[str]:
    """``ddl`` cut at its top-level commas (not those inside <...> or backquotes)."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(ddl):
        if ch == "`":
            quoted = not quoted  # a doubled backquote inside a name toggles twice: still quoted
        elif not quoted and ch == "<":
            depth += 1
        elif not quoted and ch == ">":
            depth -= 1
        elif not quoted and ch == "," and depth == 0:
            parts.append(ddl[start:i].strip())
            start = i + 1
    if ddl[start:].strip():
        parts.append(ddl[start:].strip())
    return parts


def _name(part: str) -> tuple[str, str]:
    """A field's name (unquoted) and the rest of ``part``."""
    if not part.startswith("`"):
        name, _, rest = part.partition(" ")
        return name.rstrip(":"), rest
    i = 1
    while i < len(part):
        if part[i] == "`":
            if part[i + 1 : i + 2] == "`":
                i += 2
                continue
            break
        i += 1
    return part[1:i].replace("``", "`"), part[i + 1 :]
