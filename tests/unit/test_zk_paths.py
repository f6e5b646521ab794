"""Znode paths and connect strings (broker.zk.paths): what is accepted, and why the rest is not."""

from __future__ import annotations

import pytest

from broker.errors import ConfigError, InvalidInput
from broker.zk.paths import ancestors, check_path, child_path, crumbs, name_order, parent_path, split_connect


@pytest.mark.parametrize(
    ("raw", "path"),
    [
        ("/", "/"),
        ("/brokers/ids", "/brokers/ids"),
        ("  /brokers/ids/0 ", "/brokers/ids/0"),
        ("/brokers/ids/", "/brokers/ids"),  # one trailing slash, as pasted
        ("/config/users/%3Cdefault%3E", "/config/users/%3Cdefault%3E"),
        ("/brokers/topics/a.b-c_d", "/brokers/topics/a.b-c_d"),
        ("/..a/b..", "/..a/b.."),  # dots inside a name are a name
        ("/zookeeper/quota", "/zookeeper/quota"),
    ],
)
def test_it_accepts_absolute_paths(raw: str, path: str) -> None:
    assert check_path(raw) == path


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("brokers/ids", "not absolute"),
        ("/brokers//ids", "empty segment"),
        ("//", "empty segment"),
        ("/brokers/ids//", "empty segment"),
        ("/brokers/../controller", "'..' segment"),
        ("/brokers/./ids", "'.' segment"),
        ("/..", "'..' segment"),
        ("/a\x00b", "U+0000"),
        ("/a\nb", "U+000A"),
        ("/a\x85b", "U+0085"),
        ("/a\ufff5", "U+FFF5"),
        ("/" + "a" * 5000, "at most 4096"),
    ],
)
def test_it_refuses_malformed_paths_saying_why(raw: str, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_path(raw)
    assert says in str(caught.value)


def test_it_walks_paths_up_and_down() -> None:
    assert parent_path("/") is None
    assert parent_path("/brokers") == "/"
    assert parent_path("/brokers/ids/0") == "/brokers/ids"
    assert child_path("/", "brokers") == "/brokers"
    assert child_path("/brokers", "ids") == "/brokers/ids"
    assert ancestors("/") == ["/"]
    assert ancestors("/brokers/ids/0") == ["/", "/brokers", "/brokers/ids", "/brokers/ids/0"]
    assert crumbs("/brokers/ids") == [("brokers", "/brokers"), ("ids", "/brokers/ids")]
    assert crumbs("/") == []


def test_it_orders_numbered_names_by_their_number() -> None:
    names = ["10", "2", "1", "isr_change_0000000010", "isr_change_0000000009", "topics", "ids", "__consumer_offsets"]
    assert sorted(names, key=name_order) == [
        "1",
        "2",
        "10",
        "__consumer_offsets",
        "ids",
        "isr_change_0000000009",
        "isr_change_0000000010",
        "topics",
    ]


@pytest.mark.parametrize(
    ("connect", "servers", "chroot"),
    [
        ("127.0.0.1:2181", [("127.0.0.1", 2181)], None),
        ("zk-1:2181,zk-2:2182,zk-3", [("zk-1", 2181), ("zk-2", 2182), ("zk-3", 2181)], None),
        ("zk-1:2181,zk-2:2181/kafka", [("zk-1", 2181), ("zk-2", 2181)], "/kafka"),
        ("zk:2181/kafka/prod/", [("zk", 2181)], "/kafka/prod"),
        ("zk:2181/", [("zk", 2181)], None),
        ("[::1]:2181,[fe80::1]", [("::1", 2181), ("fe80::1", 2181)], None),
        (" zk-1:2181 , zk-2:2181 ", [("zk-1", 2181), ("zk-2", 2181)], None),
    ],
)
def test_it_splits_connect_strings(connect: str, servers: list[tuple[str, int]], chroot: str | None) -> None:
    assert split_connect(connect) == (servers, chroot)


@pytest.mark.parametrize("connect", ["", "/kafka", "zk:port", "zk:0", "zk:70000", ":2181"])
def test_it_refuses_connect_strings_without_a_server(connect: str) -> None:
    with pytest.raises(ConfigError):
        split_connect(connect)
