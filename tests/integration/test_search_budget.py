"""A search's budget against the real cluster: a filter of catastrophic regular expressions stops at its regex
budget, a slow search at its time limit, each saying why in its answer (API, page, websocket); a normal search
still reads everything; one user runs at most KAZAMI_SEARCH_PER_USER searches at once; and through a real console
(Daphne), an API search whose client goes away stops, so the user's next search is taken."""

from __future__ import annotations

import http.client
import http.cookiejar
import json
import re
import select
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client

from broker.local import launcher
from console.asgi import application
from console.devserver import ServedConsole, console_process
from console.live.search import search_slot, searcher
from tests.conftest import BOOTSTRAP, console_user, logged_in, websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]

# Each of these backtracks for as long as it is let on a value without "~" or "Q" (the clause).
CLAUSE = 'value matches "(.*){1,999}[~Q]"'
CATASTROPHIC = " or ".join([CLAUSE] * 4)  # as many as a query may hold
VALUE = b"x" * 1900
VIEWER = ("budget-viewer", "amber-harbour-kettle-9")


@pytest.fixture(scope="module")
def slow_topic(kafka_cluster: launcher.ClusterLayout) -> str:
    """300 values of 1,900 characters, on which CLAUSE takes its whole per-record time."""
    name = create_topic(unique("budget"), partitions=1)
    produce(name, [(f"k{i}".encode(), VALUE) for i in range(300)], partition=0)
    return name


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in("viewer", "budget-client")


def search(client: Client, topic: str, query: str, **params: Any) -> Any:
    return client.get(f"/api/clusters/local/topics/{topic}/search/", {"q": query, **params})


@pytest.mark.timeout(120)
def test_catastrophic_regular_expressions_stop_at_their_budget_and_say_why(
    client: Client, slow_topic: str, settings: Any
) -> None:
    settings.KAZAMI_SEARCH_REGEX_SECONDS = 1.0
    response = search(client, slow_topic, CATASTROPHIC)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["stopped"] == "regex_budget"
    assert body["scanned"] < 300
    assert body["matched"] == 0
    assert re.fullmatch(
        r"stopped: the filter's regular expressions used their 1 s budget, after \d+ records?", body["stop_reason"]
    )
    assert str(body["scanned"]) in body["stop_reason"]
    assert body["budget"]["regex_seconds"] == 1.0
    assert body["budget"]["regex_used_seconds"] >= 1.0
    assert body["budget"]["max_seconds"] == settings.KAZAMI_SEARCH_MAX_SECONDS


@pytest.mark.timeout(120)
def test_a_search_stops_at_its_time_limit_with_the_matches_found_so_far(
    client: Client, slow_topic: str, settings: Any
) -> None:
    settings.KAZAMI_SEARCH_MAX_SECONDS = 3.0
    settings.KAZAMI_SEARCH_REGEX_SECONDS = 600.0
    # Every record matches the first clause; the second makes each one slow (the per-record limit, then no match).
    body = search(client, slow_topic, f'key startswith "k" and not {CLAUSE}').json()
    assert body["stopped"] == "deadline"
    assert body["scanned"] < 300
    assert body["matched"] == body["scanned"] == len(body["messages"])
    assert re.fullmatch(r"stopped after 3 s, the most a search may take, after \d+ records?", body["stop_reason"])
    assert str(body["scanned"]) in body["stop_reason"]


@pytest.mark.timeout(120)
def test_a_slow_like_inside_one_record_stops_at_the_time_limit(client: Client, settings: Any) -> None:
    settings.KAZAMI_SEARCH_MAX_SECONDS = 2.0
    name = create_topic(unique("budget-like"), partitions=1)
    # Each of these records would take tens of seconds: the time limit is checked inside the comparison too.
    produce(name, [(None, b"a" * 100_000) for _ in range(3)], partition=0)
    body = search(client, name, 'value like "%' + "a" * 1000 + 'b"').json()
    assert body["stopped"] == "deadline"
    assert body["scanned"] < 3
    assert re.fullmatch(r"stopped after 2 s, the most a search may take, after \d records?", body["stop_reason"])


def test_a_normal_search_still_reads_everything(client: Client, slow_topic: str, settings: Any) -> None:
    settings.KAZAMI_SEARCH_REGEX_SECONDS = 1.0
    body = search(
        client,
        slow_topic,
        'value matches "^x+$" and key matches "^k[0-9]+$" and not value matches "y"',
        max_matches=1000,
    ).json()
    assert (body["scanned"], body["matched"], body["stopped"], body["stop_reason"]) == (300, 300, None, None)
    assert len(body["messages"]) == 300
    assert 0 <= body["budget"]["regex_used_seconds"] < 1.0


def test_a_fifth_regular_expression_is_refused_before_anything_is_read(client: Client, slow_topic: str) -> None:
    response = search(client, slow_topic, f"{CATASTROPHIC} or {CLAUSE}")
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "bad_request"
    assert body["message"] == (
        f'at column {len(CATASTROPHIC) + len(" or value ") + 1}: too many "matches": '
        "a query may hold at most 4 regular expressions"
    )


@pytest.mark.timeout(120)
def test_the_page_and_the_download_say_why_the_search_stopped(client: Client, slow_topic: str, settings: Any) -> None:
    settings.KAZAMI_SEARCH_REGEX_SECONDS = 0.5
    page = client.get(f"/clusters/local/topics/{slow_topic}/search/", {"q": CATASTROPHIC, "run": "1"})
    html = page.content.decode()
    assert page.status_code == 200
    assert "regex time used up" in html
    assert re.search(
        r'id="search-stopped">Stopped: the filter&#x27;s regular expressions used their 0.5 s budget, '
        r"after \d+ records?\.<",
        html,
    ), html
    download = json.loads(
        client.get(f"/clusters/local/topics/{slow_topic}/search/", {"q": CATASTROPHIC, "format": "json"}).content
    )
    assert download["stopped"] == "regex_budget"
    assert "used their 0.5 s budget" in download["stop_reason"]


@pytest.mark.timeout(120)
def test_the_websocket_search_keeps_the_budget_too(client: Client, slow_topic: str, settings: Any) -> None:
    settings.KAZAMI_SEARCH_REGEX_SECONDS = 1.0
    headers = websocket_headers(client)

    async def scenario() -> list[str]:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{slow_topic}/search/", headers=headers)
        assert (await ws.connect())[0]
        await ws.send_to(text_data=json.dumps({"action": "start", "q": CATASTROPHIC}))
        received = []
        while True:
            text = await ws.receive_from(timeout=60)
            received.append(text)
            if 'id="search-state"' in text and "searching" not in text:
                break
        await ws.disconnect()
        return received

    last = async_to_sync(scenario)()[-1]
    assert "regex time used up" in last
    assert re.search(r"used their 1 s budget, after \d+ records?\.<", last), last
    assert "download JSON" in last


def test_one_user_runs_at_most_so_many_searches_at_once(client: Client, slow_topic: str, settings: Any) -> None:
    settings.KAZAMI_SEARCH_PER_USER = 1
    who = searcher(console_user("viewer", "budget-client"), None)
    with search_slot(who):  # a search of this user's is under way in this process
        refused = search(client, slow_topic, 'key == "k1"')
        assert refused.status_code == 429
        assert refused.json()["error"] == "too_many_searches"
        assert "the most one user may" in refused.json()["message"]
        page = client.get(f"/clusters/local/topics/{slow_topic}/search/", {"q": 'key == "k1"', "run": "1"})
        assert page.status_code == 429
        assert "the most one user may" in page.content.decode()
        other = logged_in("viewer", "budget-other")  # another user is not held back
        assert search(other, slow_topic, 'key == "k1"').json()["matched"] == 1
    assert search(client, slow_topic, 'key == "k1"').json()["matched"] == 1


# --- through a real console: the client goes away


@pytest.fixture(scope="module")
def served(kafka_cluster: launcher.ClusterLayout) -> Iterator[ServedConsole]:
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
        "ZOOKEEPER_CONNECT": kafka_cluster.zookeeper_connect,
        "KAZAMI_CLUSTERS_FILE": "",
        "KAZAMI_LAG_SAMPLER": "0",
        # One search at a time, with a budget far beyond the test's: only the client's going away stops it.
        "KAZAMI_SEARCH_PER_USER": "1",
        "KAZAMI_SEARCH_MAX_SECONDS": "3600",
        "KAZAMI_SEARCH_REGEX_SECONDS": "3600",
    }
    with (
        tempfile.TemporaryDirectory(prefix="kazami-budget-") as var,
        console_process(Path(var), settings, {VIEWER[0]: ("viewer", VIEWER[1])}) as console,
    ):
        yield console


def session_of(console: ServedConsole, user: tuple[str, str]) -> str:
    """The session cookie of ``user``, logged in through the login form."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(console.url + "/login/", timeout=30) as response:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode())
    assert token is not None
    form = urllib.parse.urlencode({"username": user[0], "password": user[1], "csrfmiddlewaretoken": token.group(1)})
    login = urllib.request.Request(console.url + "/login/", data=form.encode(), headers={"Referer": console.url})  # noqa: S310
    opener.open(login, timeout=30).close()
    return next(c.value for c in jar if c.name == "sessionid" and c.value)


def answer_of_search(console: ServedConsole, session: str, path: str) -> tuple[int, Any]:
    connection = http.client.HTTPConnection(urllib.parse.urlsplit(console.url).netloc, timeout=120)
    try:
        connection.request("GET", path, headers={"Cookie": f"sessionid={session}"})
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def wait_for_status(
    console: ServedConsole, session: str, path: str, wanted: int, scanned: int | None = None, timeout: float = 90
) -> None:
    """Ask ``path`` until it answers ``wanted`` (having read ``scanned`` records, when given)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        status, body = answer_of_search(console, session, path)
        seen.append((status, body.get("scanned")))
        if status == wanted and (scanned is None or body["scanned"] == scanned):
            return
        time.sleep(0.3)
    told = [line for line in console.log.read_text().splitlines() if not line.startswith("127.0.0.1:")]
    raise AssertionError(f"wanted {wanted}, got {seen[-10:]}; the console's log ends:\n" + "\n".join(told[-40:]))


def start_search(console: ServedConsole, session: str, path: str, probe: str) -> http.client.HTTPConnection:
    """Send ``path`` (a long search) and return its connection, unread, once it runs: once ``probe``, a search of
    the same user, is refused. A probe may get in first (the two race), and then ``path`` is the one refused
    (it has an answer): then it is sent again."""
    netloc = urllib.parse.urlsplit(console.url).netloc
    deadline = time.monotonic() + 90
    running: http.client.HTTPConnection | None = None
    while time.monotonic() < deadline:
        if running is None:
            running = http.client.HTTPConnection(netloc, timeout=120)
            running.request("GET", path, headers={"Cookie": f"sessionid={session}"})
        if answer_of_search(console, session, probe)[0] == 429:
            return running
        assert running.sock is not None
        if select.select([running.sock], [], [], 0)[0]:  # answered already: refused, as a probe held the search
            running.close()
            running = None
        time.sleep(0.3)
    raise AssertionError("the long search never ran")


@pytest.mark.timeout(300)
def test_an_api_search_stops_when_its_client_goes_away(served: ServedConsole) -> None:
    name = create_topic(unique("budget-gone"), partitions=1)
    # 2,000 slow records: the search would take 4 x 50 ms x 2,000 = 400 s if nothing stopped it.
    produce(name, [(None, VALUE) for _ in range(2000)], partition=0)
    session = session_of(served, VIEWER)
    base = f"/api/clusters/local/topics/{name}/search/?"
    probe = base + urllib.parse.urlencode({"q": 'key == "none"'})
    wait_for_status(served, session, probe, 200, scanned=2000)  # the console sees every record

    # While it runs, the user's next search is refused: the one search a user may run at once is taken.
    gone = start_search(served, session, base + urllib.parse.urlencode({"q": CATASTROPHIC}), probe)
    time.sleep(1)
    gone.close()  # the client goes away (as a client's time-out would), without reading an answer
    # The search stops at its next record and gives the user's search back: the next one is taken.
    wait_for_status(served, session, probe, 200)
    log = served.log.read_text(errors="replace")
    assert f"GET /api/clusters/local/topics/{name}/search/: the client went away; its search stops" in log
    assert re.search(rf"search of local/{name} .*stopped on request, after \d+ records?", log), log[-3000:]
