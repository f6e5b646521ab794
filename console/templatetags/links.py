"""Addresses every page draws, worked out once per process rather than once per page: the static files of the
page's head and the tabs of a topic's pages (a page of messages spent a fifth of its template time on them)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

from django import template
from django.templatetags.static import static
from django.urls import reverse

register = template.Library()

# The tabs of a topic's pages: key -> URL name (partition 0 for the browse tab).
TOPIC_TABS = {
    "list": "topic-list",
    "topic": "topic-detail",
    "browse": "messages-browse",
    "key": "topic-find-key",
    "search": "topic-search",
    "tail": "topic-tail",
    "produce": "topic-produce",
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
