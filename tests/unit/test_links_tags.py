"""The addresses every page draws, kept once per process (console/templatetags/links.py): the same as
``{% static %}`` and ``{% url %}`` give, for any cluster and topic, and not changeable by a template."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.templatetags.static import static
from django.urls import reverse

from console.templatetags.links import asset, topic_links


def test_assets_are_the_static_addresses() -> None:
    for path in ("css/kazami.css", "js/kazami.js", "vendor/htmx/htmx.min.js"):
        assert asset(path) == static(path)


@pytest.mark.parametrize(("cluster", "topic"), [("local", "orders"), ("prod-eu", "web.events_v2"), ("a", "b-c")])
def test_topic_links_are_the_reversed_addresses(cluster: str, topic: str) -> None:
    links = topic_links(cluster, topic)
    on_topic = {"cluster": cluster, "topic": topic}
    assert links["list"] == reverse("topic-list", kwargs={"cluster": cluster})
    assert links["topic"] == reverse("topic-detail", kwargs=on_topic)
    assert links["browse"] == reverse("messages-browse", kwargs={**on_topic, "partition": 0})
    assert links["search"] == reverse("topic-search", kwargs=on_topic)
    assert links["produce"] == reverse("topic-produce", kwargs=on_topic)
    assert topic_links(cluster, topic) is links  # kept
    with pytest.raises(TypeError):
        links["search"] = "/elsewhere/"  # type: ignore[index]


def test_the_tags_in_a_template() -> None:
    html = Template(
        "{% load links %}{% asset 'css/kazami.css' %} {% topic_links c t as l %}{{ l.tail }} {{ l.key }}"
    ).render(Context({"c": "local", "t": "orders"}))
    topic = "/clusters/local/topics/orders/"
    assert html == f"{static('css/kazami.css')} {topic}tail/ {topic}find-key/"
