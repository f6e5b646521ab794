"""Which masking rules apply to whom: the rules of the settings (``KAZAMI_MASKING`` and the clusters
file, read by console.settings) and the user's role."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from broker.masking import Masker, MaskRule, rules_for
from console.access import role_of


def get_rules(cluster: str | None = None) -> tuple[MaskRule, ...]:
    """Every configured rule, or those that apply to ``cluster`` (its own and those for every cluster)."""
    rules: tuple[MaskRule, ...] = tuple(getattr(settings, "KAZAMI_MASKING", ()))
    if cluster is None:
        return rules
    return tuple(r for r in rules if r.cluster in (None, cluster))


def masker_for(user: Any, cluster: str, topic: str) -> Masker:
    """What ``user`` must not see of ``topic``: the rules covering it whose level is above the user's role
    (an empty Masker, which changes nothing, when none). Reads the user's groups: call it off the event
    loop."""
    rules = get_rules(cluster)
    if not any(r.covers(cluster, topic) for r in rules):
        return Masker()
    return Masker(rules_for(rules, cluster, topic, role_of(user)))
