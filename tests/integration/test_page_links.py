"""The links every page draws from addresses worked out once (the sections of the navigation, per cluster; the
partition picker of a page of messages, from partition 0's address): each leads where it says, for a topic
whose name needs no quoting and for one with dots, dashes and underscores."""

from __future__ import annotations

import re

import pytest

from broker.local import launcher
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


def hrefs(html: str, nav_label: str) -> list[tuple[str, str]]:
    """(address, text) of the links inside the <nav aria-label=...> of ``html``."""
    nav = re.search(rf'<nav[^>]*aria-label="{nav_label}"[^>]*>(.*?)</nav>', html, re.S)
    assert nav is not None, nav_label
    return re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', nav.group(1))


def test_the_partition_picker_and_the_sections_lead_where_they_say(kafka_cluster: launcher.ClusterLayout) -> None:
    client = logged_in("viewer")
    for topic in (unique("links"), unique("links.with-dots_and-more")):
        create_topic(topic, partitions=3, replication=1)
        produce(topic, [(None, b"v%d" % i) for i in range(3)], partition=1)
        page = client.get(f"/clusters/local/topics/{topic}/partitions/1/")
        assert page.status_code == 200
        picked = hrefs(page.content.decode(), "Partitions")
        assert [text for _, text in picked] == ["0", "1", "2"]
        for href, text in picked:
            assert href == f"/clusters/local/topics/{topic}/partitions/{text}/"
            shown = client.get(href)
            assert shown.status_code == 200
            assert f"<h1>Partition {text} " in shown.content.decode()
    sections = hrefs(page.content.decode(), "Sections")
    assert ("/clusters/local/topics/", "Topics") in sections
    assert len(sections) >= 8
    for href, title in sections:
        # The users page and the audit log are one for every cluster.
        assert href.startswith("/clusters/local/") or href == "/audit/", (href, title)
        answer = client.get(href)
        # 503: a section whose service is not running for this test (Connect, the registry) says so.
        assert answer.status_code in (200, 503), (href, answer.status_code)
        assert "<title>" in answer.content.decode(), href


def crumb_trail(html: str) -> list[tuple[str | None, str]]:
    """(address or None for the page itself, text) of each step of the page's breadcrumb."""
    nav = re.search(r'<nav class="crumbs" aria-label="Breadcrumb">(.*?)</nav>', html, re.S)
    assert nav is not None, "no breadcrumb"
    steps = re.findall(
        r'<a(?: class="mono")? href="([^"]+)">([^<]+)</a>|<span(?: class="mono")? aria-current="page">([^<]+)</span>',
        nav.group(1),
    )
    return [(href or None, text or own) for href, text, own in steps]


def test_every_page_below_a_section_draws_one_breadcrumb_from_that_section_and_topic_pages_one_set_of_tabs(
    kafka_cluster: launcher.ClusterLayout,
) -> None:
    client = logged_in("admin")
    topic = create_topic(unique("crumbs"), partitions=2, replication=1)
    produce(topic, [(None, b"v")], partition=0)
    base = f"/clusters/local/topics/{topic}/"
    expected_tabs = None
    for path in (
        "",
        "messages/",
        "partitions/1/",
        "partitions/0/offsets/0/",
        "find-key/",
        "search/",
        "tail/",
        "produce/",
        "acls/",
    ):
        html = client.get(base + path).content.decode()
        trail = crumb_trail(html)
        assert trail[0] == ("/clusters/local/topics/", "Topics"), path
        assert trail[1][1] == topic
        assert trail[1][0] == (None if path == "" else base), path  # the topic page itself is not a link to itself
        tabs = hrefs(html, "Topic")
        expected_tabs = expected_tabs or tabs
        assert tabs == expected_tabs, path  # the same tabs, in the same order, on every page of a topic
        current = re.search(
            r'<nav class="tabs" aria-label="Topic">.*?<a href="([^"]+)" [^>]*aria-current="page"', html, re.S
        )
        assert current is not None, path
    assert [text for _, text in expected_tabs or []] == [
        "Overview",
        "Messages",
        "By partition",
        "Find by key",
        "Search",
        "Live tail",
        "ACLs",
        "Produce",
        "Move data",
    ]
    # Pages below other sections: the section as the navigation names it, then the page.
    below = {
        "/clusters/local/brokers/0/configs/": ("Broker configs", "broker 0"),
        "/clusters/local/brokers/0/logdirs/": ("Disks", "broker 0"),
        "/clusters/local/reassign/": ("Replication", "reassign partitions"),
        "/clusters/local/topics-new/": ("Topics", "new topic"),
        "/clusters/local/transactions/hanging/": ("Transactions", "hanging transactions"),
        "/clusters/local/acls/new/": ("ACLs", "create ACLs"),
        "/clusters/local/analytics/sql/": ("Analytics", "SQL"),
    }
    sections = dict((title, href) for href, title in hrefs(client.get(base).content.decode(), "Sections"))
    for path, (section, own) in below.items():
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.status_code)
        trail = crumb_trail(answer.content.decode())
        assert trail[0] == (sections[section], section), path
        assert trail[-1] == (None, own), path
