"""Every route of the console, swept with hostile input through a real console process (console/devserver.py)
on the test cluster: path parameters out of range, too long, encoded traversal, odd unicode; query strings
with times, offsets, partitions, limits and formats beyond what Kafka or Python can carry; POST bodies nested
100,000 deep, over the size limit, of the wrong types, and hostile forms; as an admin (the most reach) and as
a viewer. No answer may be a 500 (nor its traceback in the console's log), and every refusal is readable: a
JSON error for /api/, an error page otherwise. The static files' misses and traversals are 404s.

Changes are only ever sent with bodies that must be refused before anything changes; the routes that change
the cluster without reading a body (stopping a broker, the lag report job) get only hostile paths. The sweep
ends by checking that the cluster and the test's own topic are as they were.

Also here: SCRAM users created and deleted on the three-broker cluster go to the controller, every time."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import secrets
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path

import aiohttp
import pytest
from django.urls import URLPattern, get_resolver

from broker.local import launcher
from console.devserver import ServedConsole, console_process
from tests.conftest import BOOTSTRAP
from tests.integration.kafka_helpers import admin, create_topic, produce, unique
from tests.integration.test_groups import commit

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("answers to hostile input does not depend on the cluster's mode: run once"),
]

ADMIN = ("sweeper-admin", "Kz-7fj2-QpLm-93xd")
VIEWER = ("sweeper-viewer", "Vw-4hs8-TrNb-61ka")
DEEP = b"[" * 100_000 + b"]" * 100_000
TOO_LARGE = b'{"value": "' + b"x" * (3 * 1024 * 1024) + b'"}'  # over Django's 2.5 MB
HUGE = "99999999999999999999"
# Wrong types and out-of-range numbers for every field a change reads; no value is one any form accepts
# (lists of strings become text, so there are none).
WRONG_TYPES = json.dumps(
    {
        "name": {"a": {"b": 1}},
        "topic": 2**70,
        "topics": 2**70,
        "partition": 2**70,
        "partitions": {"x": 2**64},
        "offset": -(2**70),
        "offsets": {"x": {str(2**40): [2**64, None]}},
        "timestamp": HUGE,
        "since": "0001-01-01",
        "from": 2**64,
        "to": "0001-01-01",
        "report": ["\u0000"],
        "value": {"deep": [[[[{}]]]]},
        "key": 1e308,
        "password": 12,
        "confirm": {"x": "y"},
        "brokers": {"x": 1},
        "strategy": 2**63,
        "role": 2**64,
        "config": "\ud800",
    }
).encode()
HOSTILE_FORM = urllib.parse.urlencode(
    {
        "partition": HUGE,
        "offset": "-" + HUGE,
        "broker": HUGE,
        "action": "\u202e",
        "timestamp": HUGE,
        "since": "0001-01-01",
        "before_offset": str(2**63),
        "total": str(2**31),
        "name": "\u0000" * 3,
        "confirm": "../..",
        "report": "nope",
        "strategy": "to-offset",
        "value": str(2**64),
        "role": "root",
        "task": HUGE,
        "limit": HUGE,
        "format": "html",
    }
).encode()
QUERIES = [
    {
        "timestamp": HUGE,
        "since": HUGE,
        "until": HUGE,
        "from": HUGE,
        "to": HUGE,
        "offset": str(2**63),
        "partition": str(2**31),
        "position": str(2**63),
        "start": str(2**64),
        "limit": HUGE,
        "page": HUGE,
        "per_page": HUGE,
        "id": HUGE,
        "broker": HUGE,
        "max_timeout_ms": HUGE,
        "format": "html",
        "output": "html",
        "fmt": "html",
        "all": "1",
    },
    {
        "timestamp": "0001-01-01",
        "since": "0001-01-01T00:00:00Z",
        "until": "-1",
        "from": "0001-01-01",
        "offset": "-" + HUGE,
        "partition": "-1",
        "position": "-1",
        "limit": "0",
        "page": "-1",
        "per_page": "0",
        "key_as": "\u202e",
        "value_as": "../..",
        "isolation": "x" * 300,
        "kind": "\u0000",
        "topic": "\u00e9" * 300,
        "groups": "," * 100,
        "q": "(" * 1000,
        "query": "(" * 1000,
        "format": "../../etc/passwd",
        "range": "\u0663",
        "bucket": "\u00b2",
    },
]
# Hostile values of each kind of path parameter, percent-encoded as a client would send them.
HOSTILE_PATH = {
    "slug": ["no-such-cluster", "a" * 300],
    "str": ["%00", "..%2F..%2Fetc", "x" * 1000, "%E2%80%AE%F0%9F%92%A9", "%C0%AE"],
    "path": ["a/../../b", "%00/x", "%2e%2e/%2e%2e"],
    "int32": ["2147483647", "2147483648", "9" * 40],
    "int64": ["9223372036854775807", "9223372036854775808"],
}
# Never POSTed on a path that names something real: they change the cluster without reading a body.
NO_VALID_POST = {"api-broker-stop", "api-broker-start", "group-lag-report"}
# Not swept: they end the session or count failed logins (tested in test_access and test_serve).
NOT_SWEPT = {"logout", "login"}


@dataclass
class Answer:
    method: str
    path: str
    who: str
    status: int
    content_type: str
    body: bytes
    allow: str = ""


@dataclass
class Session:
    """Cookies and the CSRF token of one logged-in user of the console, over raw HTTP (paths as given)."""

    host: str
    port: int
    who: str
    cookies: dict[str, str] = field(default_factory=dict)

    def send(self, method: str, path: str, body: bytes | None = None, content_type: str = "") -> Answer:
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if method != "GET":
            headers["X-CSRFToken"] = self.cookies.get("csrftoken", "")
            headers["Content-Type"] = content_type or "application/json"
            headers["Referer"] = f"http://{self.host}:{self.port}/"
        connection = http.client.HTTPConnection(self.host, self.port, timeout=120)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            for raw in response.headers.get_all("Set-Cookie") or []:
                cookie: SimpleCookie = SimpleCookie()
                cookie.load(raw)
                self.cookies.update({k: m.value for k, m in cookie.items()})
            return Answer(
                method,
                path,
                self.who,
                response.status,
                response.headers.get("Content-Type", ""),
                data,
                response.headers.get("Allow", ""),
            )
        finally:
            connection.close()

    def log_in(self, username: str, password: str) -> None:
        form = self.send("GET", "/login/").body.decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token is not None
        data = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token[1]})
        answer = self.send("POST", "/login/", data.encode(), "application/x-www-form-urlencoded")
        assert answer.status == 302, answer.body[:500]
        assert "sessionid" in self.cookies


@dataclass(frozen=True)
class Cluster:
    topic: str
    group: str
    broker: int


@pytest.fixture(scope="module")
def real(kafka_cluster: launcher.ClusterLayout) -> Cluster:
    """A topic and a group of the test's own, and a broker id, for the paths that name something real."""
    topic = unique("hostile")
    create_topic(topic, partitions=2)
    produce(topic, [(b"k", b'{"path": "/", "user": "u"}'), (b"=cmd", b"=HYPERLINK(1)")], partition=0)
    group = unique("hostile-group")
    commit(group, {(topic, 0): 1})
    client = admin()
    try:
        broker = min(b["broker_id"] for b in client.describe_cluster()["brokers"])
    finally:
        client.close()
    return Cluster(topic, group, broker)


@pytest.fixture(scope="module")
def served(kafka_cluster: launcher.ClusterLayout) -> Iterator[ServedConsole]:
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": BOOTSTRAP,
        "ZOOKEEPER_CONNECT": kafka_cluster.zookeeper_connect,
        "KAZAMI_CLUSTERS_FILE": "",
        "KAZAMI_LAG_SAMPLER": "0",
    }
    users = {ADMIN[0]: ("admin", ADMIN[1]), VIEWER[0]: ("viewer", VIEWER[1])}
    with (
        tempfile.TemporaryDirectory(prefix="kazami-hostile-") as var,
        console_process(Path(var), settings, users, workers=2) as console,
    ):
        yield console


def sessions(console: ServedConsole) -> dict[str, Session]:
    found = {}
    for who, (name, password) in (("admin", ADMIN), ("viewer", VIEWER)):
        session = anonymous(console)
        session.who = who
        session.log_in(name, password)
        found[who] = session
    return found


def anonymous(console: ServedConsole) -> Session:
    parsed = urllib.parse.urlsplit(console.url)
    return Session(parsed.hostname or "127.0.0.1", parsed.port or 80, "anonymous")


# ---------------------------------------------------------------- the routes


def routes() -> list[URLPattern]:
    found = [p for p in get_resolver().url_patterns if isinstance(p, URLPattern)]
    assert len(found) > 100, "the console's routes were not found"
    return [p for p in found if p.name not in NOT_SWEPT]


def parameters(pattern: URLPattern) -> list[tuple[str, str]]:
    """(name, converter) of each path parameter, in order."""
    return [(name, kind or "str") for kind, name in re.findall(r"<(?:(\w+):)?(\w+)>", str(pattern.pattern))]


def real_value(name: str, kind: str, real: Cluster) -> str:
    """A value naming something that exists where there is such a thing (else a plain unknown name)."""
    known = {
        "cluster": "local",
        "topic": real.topic,
        "group": real.group,
        "partition": "0",
        "broker": str(real.broker),
        "connect_name": "local",
        "offset": "0",
        "base": "0",
        "position": "0",
        "job_id": "1",
        "task": "0",
        "fmt": "csv",
        "principal": "User:hostile-nobody",
        "username": "hostile-nobody",
    }
    if name in known:
        return known[name]
    return "0" if kind.startswith("int") else "hostile-x"


def fill(pattern: URLPattern, values: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        return values[match[2]]

    return "/" + re.sub(r"<(?:(\w+):)?(\w+)>", one, str(pattern.pattern))


def paths(pattern: URLPattern, real: Cluster) -> tuple[str, list[str]]:
    """The route with real values, and the route with each parameter in turn made hostile."""
    params = parameters(pattern)
    good = {name: real_value(name, kind, real) for name, kind in params}
    hostile = []
    for name, kind in params:
        for value in HOSTILE_PATH.get(kind, HOSTILE_PATH["str"]):
            hostile.append(fill(pattern, {**good, name: value}))
    return fill(pattern, good), hostile


def with_query(path: str, query: dict[str, str]) -> str:
    return path + ("&" if "?" in path else "?") + urllib.parse.urlencode(query)


# ---------------------------------------------------------------- the checks


def problems(answer: Answer) -> list[str]:
    """What is wrong with an answer: a 500 (or any 5xx but 503, the cluster or Spark being away), or a
    refusal nobody can read."""
    where = f"{answer.who} {answer.method} {answer.path[:160]} -> {answer.status}"
    if answer.status >= 500 and answer.status != 503:
        return [f"{where}: {answer.body[:300]!r}"]
    if answer.status < 400 or answer.status == 405:
        if answer.status == 405 and not answer.allow:
            return [f"{where}: a 405 without Allow"]
        return []
    if b"Traceback" in answer.body or b"technical_500" in answer.body:
        return [f"{where}: Django's debug page"]
    if answer.path.startswith("/api/"):
        try:
            data = json.loads(answer.body)
        except ValueError:
            return [f"{where}: not JSON: {answer.body[:200]!r}"]
        if not (isinstance(data, dict) and data.get("error") and data.get("message")):
            return [f"{where}: no error and message: {answer.body[:200]!r}"]
        return []
    if answer.path.startswith("/metrics"):
        return []
    if "text/html" not in answer.content_type or len(answer.body.strip()) < 20:
        return [f"{where}: no error page ({answer.content_type}): {answer.body[:200]!r}"]
    return []


def sweep(requests: list[tuple[Session, str, str, bytes | None, str]], statuses: Counter[int]) -> list[str]:
    """Send every request (six at a time); what is wrong with the answers. Counts each status in ``statuses``."""

    def one(item: tuple[Session, str, str, bytes | None, str]) -> list[str]:
        session, method, path, body, content_type = item
        answer = session.send(method, path, body, content_type)
        statuses[answer.status] += 1
        if method == "POST" and answer.status < 400:
            print("accepted:", session.who, path[:120], (body or b"")[:60], answer.status)
        return problems(answer)

    with ThreadPoolExecutor(max_workers=6) as pool:
        return [p for found in pool.map(one, requests) for p in found]


def test_every_route_answers_hostile_input_with_a_readable_4xx(served: ServedConsole, real: Cluster) -> None:
    who = sessions(served)
    started = time.monotonic()
    gets: list[tuple[Session, str, str, bytes | None, str]] = []
    posts: list[tuple[Session, str, str, bytes | None, str]] = []
    for pattern in routes():
        good, hostile = paths(pattern, real)
        gets.append((who["admin"], "GET", good, None, ""))
        for query in QUERIES:
            gets += [(who["admin"], "GET", with_query(good, query), None, "")]
            gets += [(who["viewer"], "GET", with_query(good, query), None, "")]
        gets += [(who["admin"], "GET", with_query(path, QUERIES[0]), None, "") for path in hostile]
        targets = hostile if pattern.name in NO_VALID_POST else [good, *hostile[:2]]
        for path in targets:
            posts += [
                (who["admin"], "POST", path, DEEP, "application/json"),
                (who["admin"], "POST", path, WRONG_TYPES, "application/json"),
                (who["admin"], "POST", path, HOSTILE_FORM, "application/x-www-form-urlencoded"),
                (who["viewer"], "POST", path, DEEP, "application/json"),
            ]
        if pattern.name not in NO_VALID_POST:
            posts += [
                (who["admin"], "POST", good, TOO_LARGE, "application/json"),
                (who["admin"], "POST", good, b"partition=1&value=" + b"x" * (3 * 1024 * 1024), "text/plain"),
                (who["viewer"], "POST", good, WRONG_TYPES, "application/json"),
            ]
    statuses: Counter[int] = Counter()
    found = sweep(gets, statuses) + sweep(posts, statuses)
    took = time.monotonic() - started
    print(f"{len(gets) + len(posts)} requests in {took:.0f} s: {sorted(statuses.items())}")
    assert not found, f"{len(found)} bad answers:\n" + "\n".join(found[:60])
    # The sweep reached the views: pages drawn, refusals of each kind.
    assert statuses[200] > 300
    assert statuses[400] > 100
    assert statuses[404] > 300
    assert statuses[413] > 50
    assert statuses[403] > 50

    # Nothing changed: every broker answers, the test's topic and its messages are there.
    client = admin()
    try:
        assert len(client.describe_cluster()["brokers"]) == 3
        assert real.topic in client.list_topics()
    finally:
        client.close()
    # (A produce request without a value is a valid one: it writes a message with neither key nor value, so the
    # topic may hold more than the two messages `real` wrote; those two are still its first.)
    messages = who["admin"].send("GET", f"/api/clusters/local/topics/{real.topic}/partitions/0/messages?offset=0")
    assert messages.status == 200
    assert [m["key"] for m in json.loads(messages.body)["messages"][:2]] == ["k", "=cmd"]
    log = served.log.read_text(errors="replace")
    assert "Traceback" not in log, log[log.find("Traceback") - 500 : log.find("Traceback") + 3000]


@pytest.mark.parametrize(
    "path",
    [
        "/static/../../../etc/passwd",
        "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/static/..%2f..%2f..%2fetc%2fpasswd",
        "/static/%00",
        "/static/css/..%5c..%5c..%5cetc%5cpasswd",
        "/static/no-such-file.css",
    ],
)
def test_static_misses_and_traversals_are_404(served: ServedConsole, path: str) -> None:
    session = Session(
        urllib.parse.urlsplit(served.url).hostname or "", urllib.parse.urlsplit(served.url).port or 80, ""
    )
    answer = session.send("GET", path)
    assert answer.status == 404, (answer.status, answer.body[:300])
    assert b"root:" not in answer.body
    assert b"Nothing at" in answer.body


def test_the_real_static_files_are_still_served(served: ServedConsole) -> None:
    session = Session(
        urllib.parse.urlsplit(served.url).hostname or "", urllib.parse.urlsplit(served.url).port or 80, ""
    )
    page = session.send("GET", "/login/").body.decode()
    stylesheet = re.search(r'href="(/static/[^"]+\.css)"', page)
    assert stylesheet is not None
    answer = session.send("GET", stylesheet[1])
    assert answer.status == 200
    assert answer.body


def test_the_limits_say_what_they_are(served: ServedConsole, real: Cluster) -> None:
    who = sessions(served)
    produce_path = f"/api/clusters/local/topics/{real.topic}/produce/"
    deep = who["admin"].send("POST", produce_path, DEEP, "application/json")
    assert deep.status == 413
    assert json.loads(deep.body) == {
        "error": "too_large",
        "message": "The body nests arrays and objects more than 64 levels deep.",
    }
    large = who["admin"].send("POST", produce_path, TOO_LARGE, "application/json")
    assert large.status == 413
    assert "at most 2.5 MB" in json.loads(large.body)["message"]
    partition = who["viewer"].send(
        "GET", f"/api/clusters/local/topics/{real.topic}/partitions/{2**31}/messages?offset=0"
    )
    assert partition.status == 404
    offset = who["viewer"].send("GET", f"/api/clusters/local/topics/{real.topic}/partitions/0/messages?offset={2**63}")
    assert offset.status == 400
    assert "offset must be at most 9223372036854775807" in json.loads(offset.body)["message"]
    since = who["viewer"].send("GET", f"/api/clusters/local/events/?since={HUGE}")
    assert since.status == 400
    report = who["viewer"].send("GET", "/clusters/local/groups-report.html")
    assert report.status == 404
    assert "csv or json" in report.body.decode()

    group = unique("=hostile-group")  # the sweep may have deleted real.group; a group id may begin with "="
    commit(group, {(real.topic, 0): 1})
    report = who["viewer"].send("GET", f"/clusters/local/groups-report.csv?groups={urllib.parse.quote(group)}")
    assert report.status == 200, report.body[:500]
    assert f"\n'{group}," in report.body.decode()
    # The search's CSV escapes what a spreadsheet would run: `real` produced a key and a value starting with "=".
    found = who["viewer"].send("GET", f"/clusters/local/topics/{real.topic}/search/?format=csv")
    assert found.status == 200, found.body[:500]
    assert found.content_type.startswith("text/csv")
    text = found.body.decode()
    assert "'=cmd" in text
    assert "'=HYPERLINK(1)" in text
    assert "\n=" not in text
    assert ",=" not in text


# ---------------------------------------------------------------- websockets


def test_a_websocket_outlives_hostile_messages(served: ServedConsole, real: Cluster) -> None:
    """A live tail sent a message nested 100,000 deep, a JSON array and plain text ignores them (they used to
    end the socket with a traceback) and still pauses when asked."""
    session = sessions(served)["viewer"].cookies["sessionid"]
    url = served.url.replace("http://", "ws://") + f"/ws/clusters/local/topics/{real.topic}/tail/"

    async def talk() -> list[str]:
        received: list[str] = []
        async with (
            aiohttp.ClientSession(headers={"Cookie": f"sessionid={session}"}) as client,
            client.ws_connect(url, origin=served.url, max_msg_size=0) as ws,
        ):
            for hostile in ("[" * 100_000 + "]" * 100_000, "[1, 2]", "not json"):
                await ws.send_str(hostile)
            await ws.send_str(json.dumps({"action": "pause"}))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                message = await ws.receive(timeout=60)
                assert message.type is aiohttp.WSMsgType.TEXT, message
                received.append(str(message.data))
                if "Paused: new messages are not shown." in message.data:
                    break
        return received

    with ThreadPoolExecutor(max_workers=1) as pool:
        received = pool.submit(asyncio.run, talk()).result()
    assert "Paused: new messages are not shown." in received[-1]
    assert "Traceback" not in served.log.read_text(errors="replace")


# ---------------------------------------------------------------- SCRAM users go to the controller


def test_scram_users_are_created_and_deleted_on_the_first_try(served: ServedConsole) -> None:
    """On a three-broker ZooKeeper cluster only the controller takes AlterUserScramCredentials; sent to any
    broker, two changes in three were refused with 'not controller'."""
    who = sessions(served)
    api = "/api/clusters/local/users/"
    for _ in range(6):
        name = unique("scram")
        body = {"name": name, "password": secrets.token_urlsafe(12), "mechanisms": ["SCRAM-SHA-256"]}
        created = who["admin"].send("POST", api, json.dumps(body).encode(), "application/json")
        assert created.status in (200, 201), created.body[:500]
        deleted = who["admin"].send("DELETE", f"{api}{name}/")
        assert deleted.status == 200, deleted.body[:500]
        listed = json.loads(who["admin"].send("GET", api).body)["users"]
        assert name not in [u["name"] for u in listed]
