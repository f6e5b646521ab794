"""The sections of a cluster's pages, in the order the navigation shows them.

A new page slots in by adding a Section here and a URL named ``cluster-<key>``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from console.config.clusters import get_configs


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    url_name: str


SECTIONS: list[Section] = [
    Section("overview", "Overview", "cluster-overview"),
    Section("quorum", "Controllers", "quorum"),
    Section("replication", "Replication", "replication"),
    Section("topics", "Topics", "topic-list"),
    Section("groups", "Consumer groups", "group-list"),
    Section("transactions", "Transactions", "transaction-list"),
    Section("acls", "ACLs", "acl-list"),
    Section("connectors", "Connect", "connector-list"),
    Section("schemas", "Schemas", "schema-list"),
    Section("analytics", "Analytics", "analytics-home"),
]


@dataclass(frozen=True)
class SectionLink:
    key: str
    title: str
    href: str


@functools.lru_cache(maxsize=1024)
def section_links(cluster: str) -> tuple[SectionLink, ...]:
    """The sections of ``cluster`` with their addresses, worked out once per cluster name (every page draws
    them; ten URL reversals a page were a tenth of a page of messages' time in templates)."""
    return tuple(SectionLink(s.key, s.title, reverse(s.url_name, kwargs={"cluster": cluster})) for s in SECTIONS)


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Template context: the sections, the configured cluster names and the current cluster."""
    match = getattr(request, "resolver_match", None)
    current = match.kwargs.get("cluster") if match else None
    clusters = list(get_configs())
    # Pages outside a cluster (audit log, users) still lead back to the only cluster's sections.
    sections_cluster = current or (clusters[0] if len(clusters) == 1 else None)
    return {
        "nav_sections": section_links(sections_cluster) if sections_cluster else (),
        "nav_clusters": clusters,
        "nav_cluster": current,
        "nav_sections_cluster": sections_cluster,
        "nav_current": match.url_name if match else None,
        "nav_section": _section_of(match.url_name if match else None),
    }


def _section_of(url_name: str | None) -> str | None:
    """The section a page belongs to: its URL name's first word (``topic-detail`` -> topics)."""
    if not url_name:
        return None
    head = url_name.split("-")[0]
    for section in SECTIONS:
        if section.key == head or section.key == head + "s" or section.url_name == url_name:
            return section.key
    return None
