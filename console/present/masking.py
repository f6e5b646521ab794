"""Which masking rules apply to whom: the rules of the settings (``KAZAMI_MASKING`` and the clusters
file, read by console.settings) and the user's role."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from broker.decode import AvroSchema, RecordDecoder
from broker.messages.masking import ROLE_LEVELS, Masker, MaskRule, Reader, avro_reader, registry_reader, rules_for
from console.access import VIEWER, role_on
from console.access.grants import ROLE_ORDER
from console.present.messages import decoding_for


def get_rules(cluster: str | None = None) -> tuple[MaskRule, ...]:
    """Every configured rule, or those that apply to ``cluster`` (its own and those for every cluster)."""
    rules: tuple[MaskRule, ...] = tuple(getattr(settings, "KAZAMI_MASKING", ()))
    if cluster is None:
        return rules
    return tuple(r for r in rules if r.cluster in (None, cluster))


def masker_for_role(cluster: str, topic: str, role: str | None) -> Masker:
    """What a user of ``role`` must not see of ``topic``: the rules covering it whose level is above the
    role, with readers of the topic's Avro keys and values (an empty Masker, which changes nothing, when
    no rule applies)."""
    applying = rules_for(get_rules(cluster), cluster, topic, role)
    if not applying:
        return Masker()
    # The topic's Avro schemas and its registry, so such keys and values are masked as the documents the pages
    # show.
    decoding = decoding_for(cluster, topic)
    return Masker(
        applying,
        key_reader=_reader(decoding.key_schema, decoding.registry),
        value_reader=_reader(decoding.value_schema, decoding.registry),
    )


def _reader(schema: AvroSchema | None, registry: RecordDecoder | None) -> Reader | None:
    if registry is None or registry.source is None:
        return avro_reader(schema) if schema else None
    return registry_reader(registry, schema)


def masker_for(user: Any, cluster: str, topic: str) -> Masker:
    """:func:`masker_for_role` of ``user``'s role. Reads the database: call it off the event loop."""
    if not any(r.covers(cluster, topic) for r in get_rules(cluster)):
        return Masker()  # no rule for the topic: no need to look the role up
    return masker_for_role(cluster, topic, role_on(user, cluster, "topic", topic))


# --- beyond the record pages: analytics, the live topic, the audit log ------------------------------


def reaches_fields(rule: MaskRule, fields: Iterable[str]) -> bool:
    """Whether ``rule`` could mask a top-level field named in ``fields`` of a JSON value, or something inside
    one (an object in a field reads as its JSON text): a pattern can match in any field; a path does when it
    is ``$``, starts with ``*`` or ``..``, or starts with one of the names."""
    if "value" not in rule.parts:
        return False
    if rule.pattern is not None:
        return True
    names = set(fields)
    for steps in rule.steps:
        if not steps:
            return True
        first = steps[0]
        if first.wild or first.descend or first.name in names:
            return True
    return False


@dataclass(frozen=True)
class Hidden:
    """Why an analytics result is not shown to a role: the rules that mask what the job reads for it."""

    role: str | None
    rules: tuple[MaskRule, ...]
    topics: tuple[str, ...]

    @property
    def message(self) -> str:
        names = ", ".join(repr(r.name) for r in self.rules)
        covered = ", ".join(repr(t) for t in self.topics)
        levels = sorted({r.level for r in self.rules}, key=ROLE_LEVELS.index)
        return (
            f"Masked for your role ({self.role or 'no role'}): masking rule{'s' if len(self.rules) > 1 else ''} "
            f"{names} cover{'' if len(self.rules) > 1 else 's'} topic{'s' if len(self.topics) > 1 else ''} "
            f"{covered}, which this job reads, so its results are shown to the {levels[-1]} role and above only."
        )


def hidden_from_role(
    role: str | None, cluster: str, topics: Iterable[str], fields: Iterable[str] | None
) -> Hidden | None:
    """Whether a job's results, computed from the JSON ``fields`` of the values of ``topics`` (None: from anything
    of their records, as a SQL query may be), are hidden from ``role``: some rule that masks one of those topics
    for the role could reach one of the fields (with None: any rule that masks one of those topics for it)."""
    names = tuple(fields) if fields is not None else None
    found: dict[str, MaskRule] = {}
    covered: list[str] = []
    for topic in topics:
        reaching = [
            r for r in rules_for(get_rules(cluster), cluster, topic, role) if names is None or reaches_fields(r, names)
        ]
        if reaching:
            covered.append(topic)
            found.update((r.name, r) for r in reaching)
    return Hidden(role, tuple(found.values()), tuple(covered)) if found else None


def hidden_from(user: Any, cluster: str, topics: Iterable[str], fields: Iterable[str] | None) -> Hidden | None:
    """:func:`hidden_from_role` of ``user``'s role (its weakest on those topics, when grants give it different
    roles on them; reads the database only when a rule covers a topic)."""
    wanted = list(topics)
    rules = get_rules(cluster)
    if not any(r.covers(cluster, t) for r in rules for t in wanted):
        return None
    held = [role_on(user, cluster, "topic", t) for t in wanted]
    weakest = None if None in held else min(held, key=lambda r: ROLE_ORDER.index(r or VIEWER), default=None)
    return hidden_from_role(weakest, cluster, wanted, fields)


def lowest_role_rules(cluster: str, topics: Iterable[str]) -> dict[str, tuple[MaskRule, ...]]:
    """Per topic, the rules that mask it for the lowest role that reads (viewers): what may go where every
    role reads it (the live figures and their topic). Topics no rule masks are left out."""
    found = {topic: rules_for(get_rules(cluster), cluster, topic, VIEWER) for topic in topics}
    return {topic: rules for topic, rules in found.items() if rules}


def audit_masker(cluster: str, topic: str) -> Masker:
    """The masker of what the audit log may keep of ``topic``'s records: as a viewer (the lowest role, who
    reads /audit/) is shown them."""
    return masker_for_role(cluster, topic, VIEWER)


def masked_fields(cluster: str, topics: Iterable[str], fields: Iterable[str]) -> dict[str, str]:
    """Of ``fields`` (of JSON values), those a rule masking one of ``topics`` for viewers could reach, each with
    the replacement of the first such rule: what figures every role sees must not show."""
    wanted = tuple(fields)
    found: dict[str, str] = {}
    for rules in lowest_role_rules(cluster, topics).values():
        for rule in rules:
            for name in wanted:
                if name not in found and reaches_fields(rule, (name,)):
                    found[name] = rule.replacement
    return found
