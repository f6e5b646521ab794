"""Which masking rules apply to whom: the rules of the settings (``KAZAMI_MASKING`` and the clusters
file, read by console.settings) and the user's role."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from broker.messages.masking import Masker, MaskRule, avro_reader, rules_for
from console.access import role_of
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
    # The topic's Avro schemas, so Avro keys and values are masked as the documents the pages show.
    decoding = decoding_for(cluster, topic)
    return Masker(
        applying,
        key_reader=avro_reader(decoding.key_schema) if decoding.key_schema else None,
        value_reader=avro_reader(decoding.value_schema) if decoding.value_schema else None,
    )


def masker_for(user: Any, cluster: str, topic: str) -> Masker:
    """:func:`masker_for_role` of ``user``'s role. Reads the database: call it off the event loop."""
    if not any(r.covers(cluster, topic) for r in get_rules(cluster)):
        return Masker()  # no rule for the topic: no need to look the role up
    return masker_for_role(cluster, topic, role_of(user))
