"""Idle CPU: what the console costs the machine when nobody looks at it.

The console is served as `make run` serves it (``python -m console.serve``: the default number of Daphne
workers, one per core; the lag sampler and the replication watch on, as in production; the embedded
cluster's data folder named) against a small cluster of its own (``var/bench/idle-cluster``, ports next to
the load benchmark's; the load benchmark's data: two topics, two groups with committed offsets, ZooKeeper
mode, as `make run`'s demo), so it can run beside a long load run. Two windows of ``window`` seconds
each, after a warm-up:

- ``fresh``: right after the console started, no page ever opened;
- ``after_browsing``: after a viewer logged in, opened the main pages and a few live pages (websockets:
  overview, groups, a group, a tail) for a while, and closed them all, as a browser tab closed for the
  night. What a visit leaves behind (pollers, shared tails, clients of the clusters) must not keep working.

In each window the CPU time of the console's processes (the serving process and every worker, all their
threads, with their reaped children: utime + stime + cutime + cstime from /proc/<pid>/stat) is divided
by the wall time: percent of one core. The goal is at most 2% of a core.

References in the same windows, side by side (the machine is shared, so a ratio is what compares):

- the Kafka cluster the console watches, idling too: its three brokers and ZooKeeper (the JVMs'
  /proc figures the same way). ``ratio_console_to_one_broker`` is the console over the mean broker: an
  idle console should cost less than one idle broker of the cluster it shows;
- a bare Daphne (same Python, same Daphne, an ASGI app that answers nothing, no Django): the floor of an
  idle server process (Twisted's timers), times the console's number of workers.

The figures say percent of one core; with a ``window`` of 60 s a reading of 1% is 0.6 CPU seconds, so a
few hundredths of a percent is the /proc clock's resolution (10 ms).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

from bench.bench_load import GROUPS, TAIL_TOPIC, TOPIC, log_in, prepare
from bench.common import BASE_PORT, BENCH_VAR, REPO, ZOOKEEPER_PORT, write_result
from broker.local.layout import ClusterLayout
from console.devserver import ServedConsole, console_process, free_port
from console.serve import default_workers

DATA = BENCH_VAR / "idle-cluster"
OWN_ZOOKEEPER_PORT = ZOOKEEPER_PORT + 700  # 13881: clear of the load (13281) and failover (13381) clusters
OWN_BASE_PORT = BASE_PORT + 700  # 13792-13794

WINDOW_S = 60.0
WARM_UP_S = 20.0  # after start (migrations done, first lag sample and replication look taken)
BROWSE_S = 15.0  # how long the live pages stay open
SETTLE_S = 10.0  # after the last page closed, before the window
VIEWER = ("bench-idle-viewer", "quiet-evening-tab-2718")
GOAL_PCT = 2.0


async def bare_app(scope: dict[str, Any], receive: Callable[[], Awaitable[Any]], send: Any) -> None:
    """The reference's ASGI app: answers every HTTP request with an empty 204 (it is never asked)."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


def cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` (all its threads) and its reaped children; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


class Meter:
    """CPU seconds of named sets of processes between two marks."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self._start: dict[str, float] = {}
        self._at = 0.0

    def _now(self) -> dict[str, float]:
        return {name: sum(cpu_s(pid) for pid in pids) for name, pids in self.groups.items()}

    def start(self) -> None:
        self._start, self._at = self._now(), time.monotonic()

    def pct(self) -> tuple[float, dict[str, float]]:
        """(wall seconds since start, {group: % of one core})."""
        now, wall = self._now(), time.monotonic() - self._at
        return wall, {name: 100 * (now[name] - self._start[name]) / wall for name in self.groups}


@contextmanager
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


@contextmanager
def bare_daphne(var: Path) -> Any:
    """A bare Daphne serving :func:`bare_app` on a free port; yields its pid."""
    port = free_port()
    log = open(var / "bare-daphne.log", "wb")  # noqa: SIM115 - open for the server's lifetime
    process = subprocess.Popen(
        [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "bench.bench_idle:bare_app"],
        cwd=REPO,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        yield process.pid
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


async def browse(url: str, browse_s: float) -> dict[str, int]:
    """A viewer's visit: the main pages, then live pages open for ``browse_s`` seconds, then all closed.
    Returns what it got (pages answered 200, websockets that received something)."""
    cookie = await log_in(url, *VIEWER)
    headers = {"Cookie": f"sessionid={cookie}"}
    base, ws = "/clusters/local", "/ws/clusters/local"
    pages = ["/", f"{base}/", f"{base}/topics/", f"{base}/topics/{TOPIC}/", f"{base}/groups/"]
    pages += [f"{base}/groups/{GROUPS[0]}/", f"{base}/topics/{TOPIC}/partitions/0/?offset=0&limit=50"]
    live = [f"{ws}/overview/", f"{ws}/groups/", f"{ws}/group/?group={GROUPS[0]}", f"{ws}/topics/{TAIL_TOPIC}/tail/"]
    got = {"pages_ok": 0, "websockets_fed": 0}
    async with aiohttp.ClientSession(headers=headers, cookie_jar=aiohttp.DummyCookieJar()) as session:
        for path in pages:
            async with session.get(url + path) as response:
                await response.read()
                got["pages_ok"] += response.status == 200
        sockets = [await session.ws_connect(url.replace("http://", "ws://") + path, origin=url) for path in live]

        async def drain(socket: aiohttp.ClientWebSocketResponse) -> bool:
            fed = False
            deadline = asyncio.get_running_loop().time() + browse_s
            while (left := deadline - asyncio.get_running_loop().time()) > 0:
                try:
                    message = await socket.receive(timeout=left)
                except TimeoutError:
                    break
                if message.type is not aiohttp.WSMsgType.TEXT:
                    break
                fed = True
            await socket.close()
            return fed

        got["websockets_fed"] = sum(await asyncio.gather(*(drain(s) for s in sockets)))
    return got


def measure(meter: Meter, window: float) -> dict[str, float]:
    meter.start()
    time.sleep(window)
    wall, pct = meter.pct()
    return {"wall_s": round(wall, 1), **{f"{name}_pct_of_one_core": round(value, 2) for name, value in pct.items()}}


def run(
    window: float = WINDOW_S, warm_up: float = WARM_UP_S, workers: int | None = None, write: bool = True
) -> dict[str, Any]:
    """The benchmark on its own cluster (started if it is not running, stopped afterwards); writes
    bench/results/idle.json when ``write``."""
    workers = workers or default_workers()
    with own_cluster() as (bootstrap, zookeeper):
        prepare(bootstrap, 1000)
        layout = ClusterLayout.load(DATA)
        assert layout is not None
        brokers = [pid for name, pid in layout.pids.items() if name.startswith("broker-")]
        zookeeper_pids = [pid for name, pid in layout.pids.items() if name == "zookeeper"]
        settings = {  # as `make run` serves (the Makefile's run target), on this cluster
            "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "ZOOKEEPER_CONNECT": zookeeper,
            "KAZAMI_CLUSTERS_FILE": "",
            "KAZAMI_EMBEDDED_CLUSTER": str(DATA),
            "KAZAMI_LAG_SAMPLER": "1",
        }
        var = Path(tempfile.mkdtemp(prefix="kazami-bench-idle-"))
        users = {VIEWER[0]: ("viewer", VIEWER[1])}
        with console_process(var, settings, users, workers) as served, bare_daphne(var) as bare:
            pids = console_pids(served, workers)
            meter = Meter({"console": pids, "brokers": brokers, "zookeeper": zookeeper_pids, "bare_daphne": [bare]})
            time.sleep(warm_up)
            fresh = measure(meter, window)
            visit = asyncio.run(browse(served.url, BROWSE_S))
            time.sleep(SETTLE_S)
            after = measure(meter, window)
            if console_pids(served, workers) != pids:
                raise RuntimeError(f"a console worker restarted during the run; see {served.log}")
    windows = {"fresh": fresh, "after_browsing": after}
    worst = max(w["console_pct_of_one_core"] for w in windows.values())
    mean_broker = {k: w["brokers_pct_of_one_core"] / max(1, len(brokers)) for k, w in windows.items()}
    floor = max(w["bare_daphne_pct_of_one_core"] * workers for w in windows.values())
    result = {
        "console_workers": workers,
        "window_s": window,
        "warm_up_s": warm_up,
        "visit": visit,
        "windows": windows,
        "console_idle_pct_of_one_core": worst,
        "console_goal_pct_of_one_core": GOAL_PCT,
        "reference_one_broker_pct_of_one_core": round(max(mean_broker.values()), 2),
        "reference_bare_daphne_times_workers_pct_of_one_core": round(floor, 2),
        "ratio_console_to_one_broker": round(
            max(w["console_pct_of_one_core"] / max(mean_broker[k], 0.01) for k, w in windows.items()), 3
        ),
    }
    if write:
        write_result("idle", result)
    return result


def console_pids(served: ServedConsole, workers: int) -> list[int]:
    """The serving process and its ``workers`` Daphne workers (waits a moment for them to appear)."""
    deadline = time.monotonic() + 30
    while len(pids := served.pids()) < workers + 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    return sorted(pids)
