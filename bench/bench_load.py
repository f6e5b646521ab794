"""Load: 200 websocket clients on live pages while 50 requests a second browse topics, messages and
groups for 60 seconds (``--duration``: an hour is 3600), all through a real console served as `make run`
serves it (console.serve: Daphne workers, by default one per core) with a viewer's session.

Reference in the same run: the same request mix at the same rate, for a shorter time, before any
websocket opens. The figures are the p50 and p99 latency with the websockets over the same without
(``ratio_*``); the run also counts requests answered per second, errors by kind (any non-2xx answer, a
connection error, no answer within 10 s), websockets that got their first fragment, pushes, disconnects,
samples the console's memory every second (RSS of the supervisor and of each worker, and their total:
start, end, max, and the least-squares slope in MB a minute over the second half of the run, after
warm-up, and over its last quarter), and measures the CPU of the console, of the load generator and of
the machine. The headline figures are ``console_rss_slope_after_warm_up_mb_per_min`` (the total's slope
over the second half; the goal is under 1 MB a minute) and ``console_errors`` (HTTP errors, websockets
that failed or were closed, over the loaded phase). A line every minute on stdout follows a long run.

The load comes from this one process (asyncio, aiohttp) on the same machine as the console. Requests
leave on a fixed schedule whatever the answers (open loop) and each latency counts from the moment
the request was due, so a slow answer cannot hide the requests queued behind it.

Without a bootstrap, the benchmark starts the embedded cluster (the launcher every benchmark uses) in
a data folder of its own: the shared benchmark cluster holds 2,000 topics and 5,000 groups once
topic_list and group_lag have run, which would measure those listings rather than the load.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import statistics
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
from kafka import KafkaAdminClient, KafkaProducer, TopicPartition
from kafka.admin import NewTopic, OffsetSpec
from kafka.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    LeaderNotAvailableError,
    NotCoordinatorError,
    NotLeaderForPartitionError,
    TopicAlreadyExistsError,
    UnknownBrokerIdError,
    UnknownTopicOrPartitionError,
)
from kafka.structs import OffsetAndMetadata

from bench.common import BASE_PORT, BENCH_VAR, ZOOKEEPER_PORT, percentile, write_result
from console.devserver import ServedConsole, console_process
from console.serve import default_workers

CLIENTS, RATE, DURATION_S, REFERENCE_S = 200, 50.0, 60.0, 20.0
LIVE_INTERVAL_S = 3.0  # the console's default KAZAMI_LIVE_INTERVAL
TIMEOUT_S = 10.0
FIRST_FRAGMENT_TIMEOUT_S = 30.0

TOPIC = "bench-load"  # browsed: 6 partitions x 10,000 messages
PARTITIONS = 6
MESSAGES_PER_PARTITION = 10_000
TAIL_TOPIC = "bench-load-tail"  # tailed: written to while the websockets watch
TAIL_PARTITIONS = 3
TAIL_RATE = 20  # messages a second into TAIL_TOPIC during the run
GROUPS = ("bench-load-readers", "bench-load-audit")

# The load benchmark's own cluster (see the docstring), next to the shared one's ports.
DATA = BENCH_VAR / "load-cluster"
OWN_ZOOKEEPER_PORT = ZOOKEEPER_PORT + 100
OWN_BASE_PORT = BASE_PORT + 100

VIEWER = ("bench-viewer", "bench-viewer-password-1")
PAGE = 50


# --- the cluster and its data ---------------------------------------------------------------


@contextlib.contextmanager
def own_cluster() -> Iterator[tuple[str, str]]:
    """The embedded cluster in DATA; yields (bootstrap, zookeeper) and stops it afterwards (data is kept)."""
    from broker.local import launcher

    layout = launcher.up(
        DATA, brokers=3, zookeeper_port=OWN_ZOOKEEPER_PORT, base_port=OWN_BASE_PORT, echo=lambda _: None
    )
    try:
        yield layout.bootstrap_servers, layout.zookeeper_connect
    finally:
        launcher.down(DATA, echo=lambda _: None)


def prepare(bootstrap: str, messages_per_partition: int) -> dict[int, int]:
    """TOPIC with at least ``messages_per_partition`` messages in each partition, TAIL_TOPIC, and GROUPS
    with committed offsets; returns TOPIC's {partition: end offset}. Leaves existing data alone."""
    servers = bootstrap.split(",")
    admin = KafkaAdminClient(bootstrap_servers=servers, bootstrap_timeout_ms=10_000, request_timeout_ms=60_000)
    try:
        replication = min(3, len(admin.describe_cluster()["brokers"]))
        for name, partitions in ((TOPIC, PARTITIONS), (TAIL_TOPIC, TAIL_PARTITIONS)):
            with contextlib.suppress(TopicAlreadyExistsError):
                admin.create_topics([NewTopic(name, partitions, replication)])
        admin.wait_for_topics([TOPIC, TAIL_TOPIC], timeout_ms=60_000)
        ends = _ends(admin, TOPIC, PARTITIONS)
        missing = {p: messages_per_partition - end for p, end in ends.items() if end < messages_per_partition}
        if missing:
            # Kafka's default batches of 16 KB, as most producers write them.
            producer = KafkaProducer(bootstrap_servers=servers, acks=1, linger_ms=5)
            body = '{"user_id":"u%05d","event":"%s","page":"/products/%d","n":%d}'
            events = ("view", "click", "cart", "buy")
            for p, count in missing.items():
                for i in range(count):
                    user = (i * 7 + p) % 5000
                    value = body % (user, events[i % 4], i % 997, i)
                    producer.send(TOPIC, key=b"u%05d" % user, value=value.encode(), partition=p)
            producer.flush(timeout=300)
            producer.close()
            ends = _ends(admin, TOPIC, PARTITIONS)
        tail = [TopicPartition(TAIL_TOPIC, p) for p in range(TAIL_PARTITIONS)]
        for n, group in enumerate(GROUPS):
            # Half-way through TOPIC (the second group further), and at the start of the tail topic, so
            # the lag of both grows while the tail is written to.
            offsets = {TopicPartition(TOPIC, p): OffsetAndMetadata(end // (2 + n), "", -1) for p, end in ends.items()}
            offsets.update(dict.fromkeys(tail, OffsetAndMetadata(0, "", -1)))
            for attempt in range(30):  # the first commit makes Kafka create __consumer_offsets
                try:
                    admin.alter_group_offsets(group, offsets)
                    break
                except (CoordinatorNotAvailableError, NotCoordinatorError, CoordinatorLoadInProgressError):
                    time.sleep(0.5 + attempt * 0.1)
        settled(admin)
        return ends
    finally:
        admin.close()


def settled(admin: KafkaAdminClient, timeout: float = 180) -> None:
    """Wait until every group's coordinator answers three times in a row: right after the cluster starts,
    the leaders of __consumer_offsets still move and a group's coordinator may answer NotCoordinator."""
    deadline, streak = time.monotonic() + timeout, 0
    while streak < 3:
        try:
            for group in GROUPS:
                admin.list_group_offsets(group)
            streak += 1
        except (CoordinatorNotAvailableError, NotCoordinatorError, CoordinatorLoadInProgressError):
            if time.monotonic() > deadline:
                raise
            streak = 0
        time.sleep(0.5)


def _ends(admin: KafkaAdminClient, topic: str, partitions: int, timeout: float = 60) -> dict[int, int]:
    """The end offsets; waits while a partition has no leader (right after the cluster started again, its
    leaders are still being elected: the request goes to leader -1) or while the broker asked for metadata
    does not know the topic yet (right after it was created, the other brokers learn of it a little later)."""
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    deadline = time.monotonic() + timeout
    while True:
        try:
            answer = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
            return {tp.partition: o.offset for tp, o in answer.items()}
        except (
            UnknownBrokerIdError,
            UnknownTopicOrPartitionError,
            LeaderNotAvailableError,
            NotLeaderForPartitionError,
        ):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


class TailWriter:
    """Writes TAIL_RATE messages a second into TAIL_TOPIC from a thread, so the tails have news."""

    def __init__(self, bootstrap: str) -> None:
        self._producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), acks=1, linger_ms=5)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tail-writer", daemon=True)
        self.sent = 0

    def __enter__(self) -> TailWriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._producer.close(timeout=10)

    def _run(self) -> None:
        while not self._stop.wait(1 / TAIL_RATE):
            value = b'{"n":%d,"at":%d}' % (self.sent, int(time.time() * 1000))
            self._producer.send(TAIL_TOPIC, key=b"k%d" % (self.sent % 100), value=value)
            self.sent += 1


# --- what the clients ask for -----------------------------------------------------------------


def request_mix(rng: random.Random, ends: dict[int, int]) -> list[tuple[str, int, Any]]:
    """(kind, weight, path maker) of the browsing mix: pages and their API twins."""
    base, api = "/clusters/local", "/api/clusters/local"

    def at() -> tuple[int, int]:
        p = rng.randrange(PARTITIONS)
        return p, rng.randrange(max(1, ends[p] - PAGE))

    def page_of_messages() -> str:
        p, o = at()
        return f"{base}/topics/{TOPIC}/partitions/{p}/?offset={o}&limit={PAGE}"

    def api_messages() -> str:
        p, o = at()
        return f"{api}/topics/{TOPIC}/partitions/{p}/messages?offset={o}&limit={PAGE}"

    def message_page() -> str:
        p, o = at()
        return f"{base}/topics/{TOPIC}/partitions/{p}/offsets/{o}/"

    def message_api() -> str:
        p, o = at()
        return f"{api}/topics/{TOPIC}/partitions/{p}/messages/{o}"

    return [
        ("topic_list_page", 2, lambda: f"{base}/topics/"),
        ("topic_list_api", 1, lambda: f"{api}/topics/"),
        ("topic_page", 2, lambda: f"{base}/topics/{rng.choice((TOPIC, TAIL_TOPIC))}/"),
        ("topic_api", 1, lambda: f"{api}/topics/{TOPIC}/"),
        ("messages_page", 5, page_of_messages),
        ("messages_api", 4, api_messages),
        ("message_page", 3, message_page),
        ("message_api", 1, message_api),
        ("group_list_page", 1, lambda: f"{base}/groups/"),
    ]


def schedule(mix: list[tuple[str, int, Any]], rng: random.Random, count: int) -> list[tuple[str, str]]:
    kinds = [kind for kind, weight, _ in mix for _ in range(weight)]
    makers = {kind: make for kind, _, make in mix}
    chosen = [rng.choice(kinds) for _ in range(count)]
    return [(kind, makers[kind]()) for kind in chosen]


def live_paths(clients: int) -> list[tuple[str, str]]:
    """(view, websocket path) for each client: a few tails, a fifth on group pages, the rest on the
    overview and the group list."""
    tails = max(1, clients // 25)
    group = clients // 5
    groups_list = (clients - tails - group) // 2
    overview = clients - tails - group - groups_list
    ws = "/ws/clusters/local"
    paths = [("overview", f"{ws}/overview/")] * overview + [("groups", f"{ws}/groups/")] * groups_list
    paths += [("group", f"{ws}/group/?group={GROUPS[i % len(GROUPS)]}") for i in range(group)]
    paths += [("tail", f"{ws}/topics/{TAIL_TOPIC}/tail/")] * tails
    return paths


# --- the clients ------------------------------------------------------------------------------


@dataclass
class Answer:
    kind: str
    due: float  # when it was to be sent (the event loop's clock)
    latency_s: float
    error: str | None  # None, "status_<code>", "timeout" or "connection"


@dataclass
class Watcher:
    view: str
    path: str
    first_s: float | None = None  # from opening to the first fragment
    pushes: int = 0  # messages after the first
    last_at: float = 0.0
    max_gap_s: float = 0.0
    error: str | None = None
    disconnected: bool = False
    close_code: int | None = None
    ws: aiohttp.ClientWebSocketResponse | None = field(default=None, repr=False)


async def log_in(url: str, username: str, password: str) -> str:
    """Through the login form, as a browser does; returns the session cookie's value."""
    jar = aiohttp.CookieJar(unsafe=True)  # unsafe: keep cookies of an IP address (127.0.0.1)
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(f"{url}/login/") as response:
            form = await response.text()
        found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        if found is None:
            raise RuntimeError("the login page has no CSRF token")
        data = {"username": username, "password": password, "csrfmiddlewaretoken": found.group(1)}
        async with session.post(f"{url}/login/", data=data, allow_redirects=False) as response:
            if response.status != 302:
                raise RuntimeError(f"logging in answered {response.status}, not a redirect")
        for cookie in jar:
            if cookie.key == "sessionid":
                return cookie.value
    raise RuntimeError("logging in set no session cookie")


async def fetch(session: aiohttp.ClientSession, url: str, kind: str, due: float) -> Answer:
    loop = asyncio.get_running_loop()
    error = None
    try:
        async with session.get(url, allow_redirects=False) as response:
            await response.read()
            if not 200 <= response.status < 300:
                error = f"status_{response.status}"
    except TimeoutError:
        error = "timeout"
    except aiohttp.ClientError:
        error = "connection"
    return Answer(kind, due, loop.time() - due, error)


async def browse(
    session: aiohttp.ClientSession,
    url: str,
    plan: list[tuple[str, str]],
    rate: float,
    sink: list[Answer] | None = None,
) -> list[Answer]:
    """Send ``plan`` at ``rate`` requests a second on a fixed schedule (open loop); each answer is also
    appended to ``sink`` as it arrives."""
    loop = asyncio.get_running_loop()
    started = loop.time() + 0.05
    tasks = []

    async def one(kind: str, path: str, due: float) -> Answer:
        answer = await fetch(session, url + path, kind, due)
        if sink is not None:
            sink.append(answer)
        return answer

    for i, (kind, path) in enumerate(plan):
        due = started + i / rate
        await asyncio.sleep(max(0.0, due - loop.time()))
        tasks.append(asyncio.create_task(one(kind, path, due)))
    return list(await asyncio.gather(*tasks))


async def watch(session: aiohttp.ClientSession, url: str, origin: str, watcher: Watcher, stop: asyncio.Event) -> None:
    """One live page: open, count the first fragment and every push until ``stop``."""
    loop = asyncio.get_running_loop()
    opened = loop.time()
    try:
        ws = await session.ws_connect(
            url.replace("http://", "ws://") + watcher.path,
            origin=origin,
            timeout=aiohttp.ClientWSTimeout(ws_close=5),
            max_msg_size=32 * 1024 * 1024,
        )
    except TimeoutError:
        watcher.error = "timeout"
        return
    except aiohttp.WSServerHandshakeError as exc:
        watcher.error = f"handshake_{exc.status}"
        return
    except aiohttp.ClientError:
        watcher.error = "connection"
        return
    watcher.ws = ws
    try:
        async for message in ws:
            now = loop.time()
            if message.type is aiohttp.WSMsgType.TEXT:
                if watcher.first_s is None:
                    watcher.first_s = now - opened
                else:
                    watcher.pushes += 1
                    watcher.max_gap_s = max(watcher.max_gap_s, now - watcher.last_at)
                watcher.last_at = now
            elif message.type is aiohttp.WSMsgType.ERROR:
                watcher.error = "ws_error"
                break
    except aiohttp.ClientError:
        watcher.error = "connection"
    if not stop.is_set():
        watcher.disconnected = True
        watcher.close_code = ws.close_code


class Memory:
    """The console's RSS every second, of each of its processes (the serving process and its workers), and
    CPU use by phase of the run: the console's, this load generator's (on the same machine) and the whole
    machine's."""

    def __init__(self, served: ServedConsole) -> None:
        self.pids = served.pids()
        self.names = process_names(served.pid, self.pids)
        self.phase = "start"
        self.samples: list[tuple[str, float, dict[int, float]]] = []  # (phase, time, {pid: RSS MB})
        self.marks: dict[str, tuple[float, ...]] = {}  # phase -> (wall, console, client, machine busy, total)
        self.gone: set[int] = set()  # console processes that exited during the run

    def rss_mb(self) -> dict[int, float]:
        found = {}
        for pid in self.pids:
            try:
                lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            except OSError:
                self.gone.add(pid)
                continue
            for line in lines:
                if line.startswith("VmRSS:"):
                    found[pid] = int(line.split()[1]) / 1024
        return found

    def threads(self) -> dict[int, int]:
        """Threads of each console process now."""
        found = {}
        for pid in self.pids:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("Threads:"):
                        found[pid] = int(line.split()[1])
        return found

    def cpu_s(self) -> float:
        total = 0.0
        for pid in self.pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                self.gone.add(pid)
                continue
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    @staticmethod
    def machine_s() -> tuple[float, float]:
        """(busy, total) CPU seconds of the whole machine since boot, all cores."""
        ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = ticks[3] + ticks[4]  # idle, iowait
        return (sum(ticks) - idle) / os.sysconf("SC_CLK_TCK"), sum(ticks) / os.sysconf("SC_CLK_TCK")

    def enter(self, phase: str) -> None:
        self.phase = phase
        client = os.times()
        self.marks[phase] = (time.monotonic(), self.cpu_s(), client.user + client.system, *self.machine_s())
        self.samples.append((phase, time.monotonic(), self.rss_mb()))

    def cpu(self, phase: str, until: str) -> dict[str, float]:
        """CPU use between the two marks, in % of one core (the machine's in % of all its cores)."""
        (t0, con0, cli0, busy0, all0), (t1, con1, cli1, busy1, all1) = self.marks[phase], self.marks[until]
        return {
            "console_pct_of_one_core": round(100 * (con1 - con0) / (t1 - t0), 1),
            "load_generator_pct_of_one_core": round(100 * (cli1 - cli0) / (t1 - t0), 1),
            "machine_pct_of_all_cores": round(100 * (busy1 - busy0) / max(all1 - all0, 1e-9), 1),
        }

    async def settle(self, idle_pct: float = 25, at_most_s: float = 30) -> None:
        """Wait until the console's CPU use over a second falls below ``idle_pct`` (at most ``at_most_s``)."""
        deadline = time.monotonic() + at_most_s
        while time.monotonic() < deadline:
            before = self.cpu_s()
            await asyncio.sleep(1)
            if 100 * (self.cpu_s() - before) < idle_pct:
                return

    async def sample(self) -> None:
        while True:
            await asyncio.sleep(1)
            self.samples.append((self.phase, time.monotonic(), self.rss_mb()))

    def loaded(self) -> dict[str, list[tuple[float, float]]]:
        """{process name: [(seconds into the loaded phase, RSS MB)]} and "total", over the loaded phase."""
        start = next(t for phase, t, _ in self.samples if phase == "loaded")
        series: dict[str, list[tuple[float, float]]] = {"total": []}
        for phase, t, by_pid in self.samples:
            if phase not in ("loaded", "end"):
                continue
            if set(by_pid) == set(self.pids):  # a sample with a process missing has no total
                series["total"].append((t - start, sum(by_pid.values())))
            for pid, mb in by_pid.items():
                series.setdefault(self.names[pid], []).append((t - start, mb))
        return series


def process_names(serving: int, pids: list[int]) -> dict[int, str]:
    """ "serve" for the serving process, "worker_<n>" for its workers (in order of pid)."""
    workers = sorted(pid for pid in pids if pid != serving)
    return {serving: "serve", **{pid: f"worker_{n}" for n, pid in enumerate(workers)}}


class Progress:
    """Answers as they arrive, and a line on stdout every ``every_s`` of the loaded phase (RSS, errors so far), so
    that a long run can be followed in its log."""

    def __init__(self, memory: Memory, every_s: float = 60.0) -> None:
        self.memory = memory
        self.every_s = every_s
        self.answers: list[Answer] = []
        self.watchers: list[Watcher] = []

    async def report(self) -> None:
        started = time.monotonic()
        while True:
            await asyncio.sleep(self.every_s)
            rss = self.memory.samples[-1][2] if self.memory.samples else {}
            names = self.memory.names
            errors = Counter(f"{a.error} on {a.kind}" for a in self.answers if a.error)
            dropped = dict(
                Counter(w.error or f"closed_{w.close_code}" for w in self.watchers if w.disconnected or w.error)
            )
            threads = {names[pid]: count for pid, count in self.memory.threads().items()}
            print(
                f"[load] {time.monotonic() - started:6.0f} s: {len(self.answers)} answered, errors {dict(errors)}, "
                f"websockets lost {dropped}, RSS MB "
                + ", ".join(f"{names[pid]} {mb:.1f}" for pid, mb in sorted(rss.items()))
                + f", total {sum(rss.values()):.1f}; threads {threads}",
                flush=True,
            )


# --- the run ----------------------------------------------------------------------------------


@dataclass
class Plan:
    clients: int
    rate: float
    duration_s: float
    reference_s: float
    ends: dict[int, int]
    seed: int = 42


async def load(served: ServedConsole, plan: Plan) -> dict[str, Any]:
    url = served.url
    origin = url  # the console's own origin, as a browser on its pages sends
    rng = random.Random(plan.seed)
    mix = request_mix(rng, plan.ends)
    cookie = await log_in(url, *VIEWER)
    headers = {"Cookie": f"sessionid={cookie}"}
    memory = Memory(served)
    http = aiohttp.ClientSession(
        headers=headers,
        cookie_jar=aiohttp.DummyCookieJar(),
        # At most 100 requests in flight, as from 100 browsers; waiting for a connection counts as latency.
        connector=aiohttp.TCPConnector(limit=100),
        timeout=aiohttp.ClientTimeout(total=TIMEOUT_S),
    )
    # Websockets get a pool of their own: they hold their connection for the whole run.
    sockets = aiohttp.ClientSession(
        headers=headers, cookie_jar=aiohttp.DummyCookieJar(), connector=aiohttp.TCPConnector(limit=0)
    )
    sampler = asyncio.create_task(memory.sample())
    stop = asyncio.Event()
    watchers = [Watcher(view, path) for view, path in live_paths(plan.clients)]
    watching: list[asyncio.Task[None]] = []
    progress = Progress(memory)
    progress.watchers = watchers
    reporter: asyncio.Task[None] | None = None
    try:
        memory.enter("warm_up")
        warm = await browse(http, url, [(kind, make()) for kind, _, make in mix], plan.rate)
        if failed := [a for a in warm if a.error]:
            raise RuntimeError(f"the console fails before any load: {failed[:3]}")

        memory.enter("reference")
        reference = await browse(http, url, schedule(mix, rng, int(plan.rate * plan.reference_s)), plan.rate)

        memory.enter("settling")
        await memory.settle()  # what the console still works on for the reference must not count below

        memory.enter("opening_websockets")
        opening = time.monotonic()
        watching = [asyncio.create_task(watch(sockets, url, origin, w, stop)) for w in watchers]
        deadline = opening + FIRST_FRAGMENT_TIMEOUT_S
        while time.monotonic() < deadline and any(w.first_s is None and w.error is None for w in watchers):
            await asyncio.sleep(0.1)
        all_open_s = time.monotonic() - opening

        memory.enter("loaded")
        reporter = asyncio.create_task(progress.report())
        plan_loaded = schedule(mix, rng, int(plan.rate * plan.duration_s))
        loaded = await browse(http, url, plan_loaded, plan.rate, progress.answers)
        memory.enter("end")
        ended = asyncio.get_running_loop().time()
    finally:
        stop.set()
        sampler.cancel()
        if reporter is not None:
            reporter.cancel()
        # All at once: one by one, a console that stopped answering costs each its close time-out (5 s).
        await asyncio.gather(*(w.ws.close() for w in watchers if w.ws is not None), return_exceptions=True)
        await asyncio.gather(*watching, return_exceptions=True)
        await http.close()
        await sockets.close()

    return {
        "reference_http_without_websockets": http_figures(reference),
        "console_http_with_websockets": http_figures(loaded),
        "console_websockets": ws_figures(watchers, all_open_s, ended, plan),
        "console_rss_mb": rss_figures(memory.loaded()["total"]),
        "console_rss_mb_by_process": {
            name: rss_figures(series) for name, series in memory.loaded().items() if name != "total"
        },
        "console_processes_exited": len(memory.gone),
        "loaded_wall_s": round(memory.marks["end"][0] - memory.marks["loaded"][0], 1),
        "console_cpu": {
            "reference": memory.cpu("reference", "settling"),
            "with_websockets": memory.cpu("loaded", "end"),
        },
        "by_kind_with_websockets": by_kind(loaded),
    }


def http_figures(answers: list[Answer], throughput: bool = True) -> dict[str, Any]:
    ms = [a.latency_s * 1000 for a in answers]
    errors = sum(1 for a in answers if a.error)
    # What the console served per second, from the first request due to the last answer: below the rate
    # once it cannot keep up.
    first_due = min(a.due for a in answers)
    span = max(a.due + a.latency_s for a in answers) - first_due
    answered = {"answered_per_s": round((len(answers) - errors) / span, 1)} if throughput and span > 0 else {}
    return {
        "requests": len(answers),
        **answered,
        "errors": errors,
        "errors_by_kind": dict(Counter(a.error for a in answers if a.error)),
        # Which requests failed (the page or API asked) and when, in seconds from the first request due.
        "errors_by_request": dict(Counter(f"{a.error} on {a.kind}" for a in answers if a.error)),
        "error_times_s": sorted(round(a.due - first_due, 1) for a in answers if a.error)[:50],
        "p50_ms": round(percentile(ms, 50), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "p99_ms": round(percentile(ms, 99), 1),
        "max_ms": round(max(ms), 1),
    }


def by_kind(answers: list[Answer]) -> dict[str, dict[str, Any]]:
    kinds = sorted({a.kind for a in answers})
    return {kind: http_figures([a for a in answers if a.kind == kind], throughput=False) for kind in kinds}


def ws_figures(watchers: list[Watcher], all_open_s: float, ended: float, plan: Plan) -> dict[str, Any]:
    first = [w.first_s * 1000 for w in watchers if w.first_s is not None]
    views: dict[str, Any] = {}
    for view in sorted({w.view for w in watchers}):
        these = [w for w in watchers if w.view == view]
        pushes = [w.pushes for w in these]
        views[view] = {
            "clients": len(these),
            "pushes_min": min(pushes),
            "pushes_median": statistics.median(pushes),
            # The longest silence of any client that got its first fragment, the end of the run included.
            "longest_gap_ms": round(
                1000 * max((max(w.max_gap_s, ended - w.last_at) for w in these if w.last_at), default=0)
            ),
        }
    return {
        "clients": len(watchers),
        "first_fragment": len(first),
        "with_pushes": sum(1 for w in watchers if w.pushes > 0),
        "pushes": sum(w.pushes for w in watchers),
        "disconnects": sum(1 for w in watchers if w.disconnected),
        "close_codes": dict(Counter(str(w.close_code) for w in watchers if w.disconnected)),
        "errors": sum(1 for w in watchers if w.error or w.first_s is None),
        "errors_by_kind": dict(
            Counter(w.error or "no_first_fragment" for w in watchers if w.error or w.first_s is None)
        ),
        "first_fragment_p50_ms": round(percentile(first, 50), 1) if first else None,
        "first_fragment_max_ms": round(max(first), 1) if first else None,
        "all_open_s": round(all_open_s, 2),
        "by_view": views,
    }


def slope_mb_per_min(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (seconds, MB) samples, in MB a minute (0 with fewer than two)."""
    if len(samples) < 2:
        return 0.0
    xs, ys = [t for t, _ in samples], [mb for _, mb in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return 60 * sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def rss_figures(samples: list[tuple[float, float]]) -> dict[str, Any]:
    """Start, end and max RSS over the loaded run, and the least-squares slope over its second half (after
    warm-up: caches, pools and the allocator's arenas fill in the first minutes) and over its last quarter."""
    values = [mb for _, mb in samples]
    if not values:
        return {"samples": 0}
    return {
        "start": round(values[0], 1),
        "end": round(values[-1], 1),
        "max": round(max(values), 1),
        "second_half_slope_mb_per_min": round(slope_mb_per_min(samples[len(samples) // 2 :]), 2),
        "last_quarter_slope_mb_per_min": round(slope_mb_per_min(samples[3 * len(samples) // 4 :]), 2),
        "samples": len(values),
    }


def run(
    bootstrap: str | None = None,
    zookeeper: str = "",
    clients: int = CLIENTS,
    rate: float = RATE,
    duration: float = DURATION_S,
    reference: float = REFERENCE_S,
    live_interval: float = LIVE_INTERVAL_S,
    messages_per_partition: int = MESSAGES_PER_PARTITION,
    write: bool = True,
    workers: int | None = None,
) -> dict[str, Any]:
    """The benchmark against the cluster at ``bootstrap`` (its own embedded cluster when None); writes
    bench/results/load.json when ``write``."""
    if bootstrap is None:
        with own_cluster() as (servers, zk):
            return run(
                servers, zk, clients, rate, duration, reference, live_interval, messages_per_partition, write, workers
            )
    ends = prepare(bootstrap, messages_per_partition)
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "ZOOKEEPER_CONNECT": zookeeper,
        "KAZAMI_CLUSTERS_FILE": "",
        "KAZAMI_ANONYMOUS_READ": "0",
        "KAZAMI_LIVE_INTERVAL": str(live_interval),
        "KAZAMI_LAG_SAMPLER": "1",
        "KAZAMI_MAX_AGE": "1.0",  # the console's default (the tests' environment asks every time)
    }
    plan = Plan(clients, rate, duration, reference, ends)
    var = Path(tempfile.mkdtemp(prefix="kazami-bench-load-"))
    workers = workers or default_workers()
    users = {VIEWER[0]: ("viewer", VIEWER[1])}
    # A long start is no failure of the load: the machine may be busy (and tracemalloc slows the imports).
    with console_process(var, settings, users, workers, start_timeout=180) as served, TailWriter(bootstrap):
        figures = asyncio.run(load(served, plan))
    with_ws, without = figures["console_http_with_websockets"], figures["reference_http_without_websockets"]
    sockets = figures["console_websockets"]
    result = {
        "clients": clients,
        "console_workers": workers,
        "rate_per_s": rate,
        "duration_s": duration,
        "reference_duration_s": reference,
        "live_interval_s": live_interval,
        "topic_messages": sum(ends.values()),
        # The headline: RSS growth after warm-up (both workers and their supervisor), and every error of the
        # loaded phase (HTTP errors, websockets that failed or were closed on their client).
        "console_rss_slope_after_warm_up_mb_per_min": figures["console_rss_mb"].get("second_half_slope_mb_per_min"),
        "console_errors": with_ws["errors"] + sockets["errors"] + sockets["disconnects"],
        **figures,
        "ratio_p50_with_to_without_websockets": round(with_ws["p50_ms"] / without["p50_ms"], 2),
        "ratio_p99_with_to_without_websockets": round(with_ws["p99_ms"] / without["p99_ms"], 2),
    }
    if write:
        write_result("load", result)
    return result
