"""Addresses every page draws, worked out once per process rather than once per page: the static files of the
page's head, the tabs of a topic's pages (a page of messages spent a fifth of its template time on them) and the
navigation's sections."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from html import escape
from types import MappingProxyType

from django import template
from django.template import Context
from django.templatetags.static import static
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe

from console.present.navigation import SectionLink, section_links

register = template.Library()

# The tabs of a topic's pages: key -> URL name (partition 0 for the browse tab).
TOPIC_TABS = {
    "list": "topic-list",
    "topic": "topic-detail",
    "messages": "topic-messages",
    "browse": "messages-browse",
    "key": "topic-find-key",
    "search": "topic-search",
    "tail": "topic-tail",
    "produce": "topic-produce",
    "acls": "topic-acls",
    "move": "topic-move",
}


@register.simple_tag
def asset(path: str) -> str:
    """``{% static path %}``, remembered: the static files' storage gives the same address every time."""
    return _asset(path)


@functools.lru_cache(maxsize=256)
def _asset(path: str) -> str:
    return static(path)


@register.simple_tag
def topic_links(cluster: str, topic: str) -> Mapping[str, str]:
    """The addresses of ``topic``'s tabs (``{% topic_links cluster topic as links %}``, then ``links.search``)."""
    return _topic_links(cluster, topic)


@functools.lru_cache(maxsize=4096)
def _topic_links(cluster: str, topic: str) -> Mapping[str, str]:
    links = {}
    for key, name in TOPIC_TABS.items():
        kwargs = {"cluster": cluster} if key == "list" else {"cluster": cluster, "topic": topic}
        if key == "browse":
            kwargs["partition"] = "0"
        links[key] = reverse(name, kwargs=kwargs)
    return MappingProxyType(links)


@register.simple_tag(takes_context=True)
def section_nav(context: Context) -> SafeString:
    """The navigation's groups of sections (console.present.navigation), the current one marked: what the
    user may open on this cluster (its mode's sections; masking for admins, users for who manages them). Drawn
    once per cluster, mode, role and current section, as every page draws it."""
    cluster = context.get("nav_sections_cluster")
    if not cluster:
        return mark_safe("")
    can = context.get("can")
    manages_users = bool(can is not None and getattr(can, "manage_users", False))
    role, partial = str(context.get("role") or ""), bool(context.get("partial"))
    return _section_nav(cluster, context.get("nav_mode"), role, manages_users, context.get("nav_section"), partial)


@functools.lru_cache(maxsize=1024)
def _section_nav(
    cluster: str, mode: str | None, role: str, manages_users: bool, current: str | None, partial: bool = False
) -> SafeString:
    """``partial``: the user's roles on the cluster are scoped, so only the sections that follow grants."""
    groups = []
    for group in section_links(cluster):
        links = []
        for s in group.links:
            if (s.mode and mode and s.mode != mode) or (s.needs == "admin" and role != "admin"):
                continue
            if partial and not s.scoped:
                continue
            if s.needs == "manage_users" and not manages_users:
                continue
            mark = ' aria-current="page"' if s.key == current else ""
            links.append(f'<a href="{escape(s.href)}"{mark}>{escape(s.title)}</a>')
        if not links:
            continue
        title = escape(group.title)
        groups.append(
            f'<div class="nav-group" role="group" aria-label="{title}">'
            f'<span class="nav-group-title" aria-hidden="true">{title}</span> {" ".join(links)}</div>'
        )
    return mark_safe('<nav class="sections" aria-label="Sections">' + "".join(groups) + "</nav>")  # noqa: S308


class Name(str):
    """A crumb that names a thing (a topic, a group, a file): drawn in the monospace font."""

    __slots__ = ()


@register.filter
def as_name(value: object) -> Name:
    """``{% crumbs topic|as_name … %}``: the crumb is a name, drawn as one."""
    return Name(value)


@register.simple_tag(takes_context=True)
def crumbs(context: Context, *trail: object) -> SafeString:
    """A page's breadcrumb, drawn alike on every page below a section: the section (its title and address as the
    navigation has them), then ``trail``: a label and its address for each page in between, then the page's own
    label (not a link). ``{% crumbs group_id|as_name group_url "reset offsets" %}``; a step whose address is empty is
    drawn as plain text."""
    section = _section_link(context.get("nav_sections_cluster"), context.get("nav_section"))
    items = list(trail)
    own = items.pop() if len(items) % 2 else None
    parts = [f'<a href="{escape(section.href)}">{escape(section.title)}</a>'] if section else []
    for label, href in zip(items[::2], items[1::2], strict=True):
        if href:
            parts.append(f'<a{_name_class(label)} href="{escape(str(href))}">{escape(str(label))}</a>')
        else:  # a step with no page of its own (a Connect worker)
            parts.append(f"<span{_name_class(label)}>{escape(str(label))}</span>")
    if own is not None and str(own):
        parts.append(f'<span{_name_class(own)} aria-current="page">{escape(str(own))}</span>')
    separator = ' <span class="crumb-sep" aria-hidden="true">/</span> '
    return mark_safe(f'<nav class="crumbs" aria-label="Breadcrumb">{separator.join(parts)}</nav>')  # noqa: S308


def _name_class(label: object) -> str:
    return ' class="mono"' if isinstance(label, Name) else ""


def _section_link(cluster: str | None, key: str | None) -> SectionLink | None:
    if not cluster or not key:
        return None
    return next((s for g in section_links(cluster) for s in g.links if s.key == key), None)
