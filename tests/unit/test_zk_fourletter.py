"""ZooKeeper's health from its four-letter words (broker.zk.fourletter), on replies of a real ZooKeeper 3.8."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from broker.zk.fourletter import check_servers, health_from, parse_mntr, parse_srvr, serving

SRVR = (
    b"Zookeeper version: 3.8.4-9316c2a7a97e1666d8f4593f34dd6fc36ecc436c, built on 2024-02-12 22:16 UTC\n"
    b"Latency min/avg/max: 0/1.5196/41\nReceived: 556\nSent: 568\nConnections: 4\nOutstanding: 0\n"
    b"Zxid: 0xab\nMode: standalone\nNode count: 42\n"
)
MNTR = (
    b"zk_version\t3.8.4-9316c2a7a97e1666d8f4593f34dd6fc36ecc436c, built on 2024-02-12 22:16 UTC\n"
    b"zk_server_state\tstandalone\nzk_ephemerals_count\t4\nzk_num_alive_connections\t5\n"
    b"zk_avg_latency\t0.6567\nzk_outstanding_requests\t2\nzk_znode_count\t43\nzk_watch_count\t20\n"
    b"zk_min_latency\t0\nzk_max_latency\t26\nzk_approximate_data_size\t2127\n"
)
LEADER_MNTR = MNTR.replace(b"standalone", b"leader") + b"zk_followers\t2\nzk_synced_followers\t2\n"
REFUSED_MNTR = b"mntr is not executed because it is not in the whitelist.\n"
REFUSED_SRVR = b"srvr is not executed because it is not in the whitelist.\n"
NOT_SERVING = b"This ZooKeeper instance is not currently serving requests\n"


def test_it_parses_srvr_and_mntr() -> None:
    assert parse_srvr(SRVR.decode())["Mode"] == "standalone"
    assert parse_srvr(SRVR.decode())["Latency min/avg/max"] == "0/1.5196/41"
    assert parse_mntr(MNTR.decode())["zk_watch_count"] == "20"


def test_mntr_wins_where_both_say_and_srvr_is_read_for_the_rest() -> None:
    h = health_from("zk:2181", SRVR, MNTR)
    assert (h.answered, h.serving, h.mode, h.version) == (True, True, "standalone", "3.8.4")
    assert (h.znode_count, h.watch_count, h.outstanding, h.connections) == (43, 20, 2, 5)
    assert (h.latency_min, h.latency_avg, h.latency_max) == (0.0, 0.6567, 26.0)
    assert h.not_allowed == ()
    assert h.note is None


def test_a_leader_says_how_many_followers_it_has() -> None:
    h = health_from("zk:2181", SRVR.replace(b"standalone", b"leader"), LEADER_MNTR)
    assert h.mode == "leader"
    assert h.as_dict()["followers"] == {"followers": "2", "synced_followers": "2"}


def test_without_mntr_srvr_still_gives_mode_counts_and_latency_and_the_note_says_how_to_allow_it() -> None:
    h = health_from("zk:2181", SRVR, REFUSED_MNTR)
    assert (h.mode, h.znode_count, h.outstanding, h.latency_avg, h.latency_max) == ("standalone", 42, 0, 1.5196, 41.0)
    assert h.watch_count is None
    assert h.not_allowed == ("mntr",)
    assert "4lw.commands.whitelist" in (h.note or "")


def test_a_server_that_allows_neither_word_says_so_plainly() -> None:
    h = health_from("zk:2181", REFUSED_SRVR, REFUSED_MNTR)
    assert h.answered is True
    assert h.mode is None
    assert h.not_allowed == ("srvr", "mntr")
    assert h.note == (
        "srvr and mntr are not allowed by this server: add them to 4lw.commands.whitelist to see its health."
    )


def test_a_server_without_quorum_is_not_serving() -> None:
    h = health_from("zk:2181", NOT_SERVING, NOT_SERVING)
    assert (h.answered, h.serving, h.mode) == (True, False, None)
    assert "no quorum" in (h.note or "")


def test_a_silent_server_is_down_with_the_reason() -> None:
    h = health_from("zk:2181", None, None, "It does not answer (Connection refused).")
    assert (h.answered, h.serving) == (False, None)
    assert h.note == "It does not answer (Connection refused)."
    assert h.as_dict()["note"] == h.note


@pytest.fixture
def fake_zookeeper() -> Iterator[tuple[int, dict[bytes, bytes]]]:
    """A TCP server answering four-letter words from a table (the real one is in the integration tests)."""
    replies: dict[bytes, bytes] = {}
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                word = conn.recv(4)
                if word in replies:
                    conn.sendall(replies[word])

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port, replies
    stop.set()
    thread.join()
    listener.close()


def test_it_asks_every_server_of_a_connect_string_in_parallel(fake_zookeeper: tuple[int, dict[bytes, bytes]]) -> None:
    port, replies = fake_zookeeper
    replies.update({b"srvr": SRVR, b"mntr": REFUSED_MNTR})
    with socket.create_server(("127.0.0.1", 0)) as closed:
        dead = closed.getsockname()[1]
    found = check_servers(f"127.0.0.1:{port},127.0.0.1:{dead}/kafka", timeout=2)
    assert [h.address for h in found] == [f"127.0.0.1:{port}", f"127.0.0.1:{dead}"]
    assert found[0].mode == "standalone"
    assert found[0].not_allowed == ("mntr",)
    assert found[1].answered is False
    assert "does not answer" in (found[1].error or "")
    assert serving(f"127.0.0.1:{dead},127.0.0.1:{port}", 2) is True
    replies[b"srvr"] = NOT_SERVING
    assert serving(f"127.0.0.1:{port}", 2) is False
    assert serving("zk:port", 1) is False  # malformed: nothing to ask
