"""The navigation every page draws: a cluster's pages in three groups (the cluster itself, its data, who may do
what), in the order shown.

A new page slots in by adding a Section to a group here: its URL name, and the first words of the URL names of
the pages under it (``topic`` for ``topic-detail``), which mark it current.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest
from django.urls import reverse

from broker.errors import UnknownCluster
from console.access import on_cluster
from console.config.clusters import get_configs, get_connection


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    url_name: str
    heads: tuple[str, ...] = ()  # first words of the URL names of the pages under it
    mode: str | None = None  # only on a cluster in this mode (zookeeper or kraft), when known
    needs: str | None = None  # "admin", or a permission of console.access (shown only to who has it)
    per_cluster: bool = True  # False: one page for every cluster (users, audit log)
    scoped: bool = False  # shows what grants reach (a list filtered): offered to a user whose roles are scoped


@dataclass(frozen=True)
class Group:
    title: str
    sections: tuple[Section, ...]


GROUPS: tuple[Group, ...] = (
    Group(
        "Cluster",
        (
            Section("overview", "Overview", "cluster-overview", ("cluster", "broker")),
            Section("quorum", "Controllers", "quorum", mode="kraft"),
            Section("zookeeper", "ZooKeeper", "zookeeper", ("zookeeper",), mode="zookeeper"),
            Section("replication", "Replication", "replication", ("reassign",)),
            Section("disks", "Disks", "disks", ("segment", "segments", "replica", "broker-logdirs")),
            Section("configs", "Broker configs", "cluster-broker-configs", ("broker-configs",)),
            Section("quotas", "Quotas", "quotas"),
            Section("alerts", "Alerts", "alerts", ("alerts",)),
        ),
    ),
    Group(
        "Data",
        (
            Section("topics", "Topics", "topic-list", ("topic", "messages", "message"), scoped=True),
            Section("groups", "Groups", "group-list", ("group",), scoped=True),
            Section("transactions", "Transactions", "transaction-list", ("transaction",)),
            Section("schemas", "Schemas", "schema-list", ("schema",), scoped=True),
            Section("connectors", "Connect", "connector-list", ("connector",), scoped=True),
            Section("analytics", "Analytics", "analytics-home", ("analytics",), scoped=True),
        ),
    ),
    Group(
        "Security",
        (
            Section("acls", "ACLs", "acl-list", ("acl",)),
            Section("scram", "SCRAM users", "acl-users"),
            Section("masking", "Masking", "masking", needs="admin"),
            Section("users", "Users", "users", ("user",), needs="manage_users", per_cluster=False),
            Section("audit", "Audit log", "audit-log", ("audit",), per_cluster=False),
        ),
    ),
)

# Every section, by key: what marks a page's section current.
SECTIONS = {s.key: s for g in GROUPS for s in g.sections}


@dataclass(frozen=True)
class SectionLink:
    key: str
    title: str
    href: str
    mode: str | None
    needs: str | None
    scoped: bool


@dataclass(frozen=True)
class GroupLinks:
    title: str
    links: tuple[SectionLink, ...]


@functools.lru_cache(maxsize=1024)
def section_links(cluster: str) -> tuple[GroupLinks, ...]:
    """The groups of ``cluster``'s sections with their addresses, worked out once per cluster name (every page
    draws them; twenty URL reversals a page would cost a page of messages a fifth of its template time)."""
    return tuple(
        GroupLinks(
            g.title,
            tuple(
                SectionLink(
                    s.key,
                    s.title,
                    reverse(s.url_name, kwargs={"cluster": cluster} if s.per_cluster else None),
                    s.mode,
                    s.needs,
                    s.scoped,
                )
                for s in g.sections
            ),
        )
        for g in GROUPS
    )


def _known_mode(cluster: str) -> str | None:
    """The cluster's mode as its connection learnt it (no request: None until the cluster answered once)."""
    try:
        return get_connection(cluster).known_mode
    except UnknownCluster:  # the page says so itself
        return None


def navigation(request: HttpRequest) -> dict[str, Any]:
    """Template context: the cluster whose sections the navigation shows (``{% section_nav %}`` draws them), its
    mode as known, the configured cluster names, the current cluster and section."""
    match = getattr(request, "resolver_match", None)
    current = match.kwargs.get("cluster") if match else None
    clusters = [c for c in get_configs() if on_cluster(request.user, c)] if hasattr(request, "user") else []
    # Pages outside a cluster (audit log, users) still lead back to the only cluster's sections, or the first's.
    sections_cluster = current if current in clusters else (clusters[0] if clusters else None)
    return {
        "nav_mode": _known_mode(sections_cluster) if sections_cluster else None,
        "nav_clusters": clusters,
        "nav_cluster": current,
        "nav_sections_cluster": sections_cluster,
        "nav_current": match.url_name if match else None,
        "nav_section": _section_of(match.url_name if match else None),
    }


@functools.lru_cache(maxsize=512)
def _section_of(url_name: str | None) -> str | None:
    """The section a page belongs to: its own URL name, else the longest of the sections' heads its URL name
    starts with (``topic-detail`` -> topics, ``broker-configs`` -> configs)."""
    if not url_name:
        return None
    for s in SECTIONS.values():
        if s.url_name == url_name:
            return s.key
    best: tuple[int, str] | None = None
    for s in SECTIONS.values():
        for head in s.heads:
            if (url_name == head or url_name.startswith(head + "-")) and (best is None or len(head) > best[0]):
                best = (len(head), s.key)
    return best[1] if best else None
